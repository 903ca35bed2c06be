/*
 * kmsg_xid.h - XIDs from the kernel log, for a one-shot look back.
 *
 * NVML's event API only delivers XIDs that happen after a process
 * registers for them, so a check run before a job (gpulse check) cannot
 * learn from NVML what happened an hour ago. The driver also writes every
 * XID to the kernel log, as gpud reads them:
 *
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.
 *
 * This parser reads such lines in /dev/kmsg's record format
 * ("PRI,SEQ,USEC,FLAGS;MESSAGE", USEC microseconds since boot on the
 * monotonic clock) or dmesg's ("[ SECONDS.MICROS] MESSAGE"); a line with
 * neither prefix has no time (ts_us -1). The kernel log is outside data:
 * every field is checked, and a malformed Xid line is reported, never
 * guessed at (tests/unit/test_kmsg_xid.c, tests/fuzz/fuzz_kmsg_xid.c).
 */
#ifndef GP_SOURCES_KMSG_XID_H
#define GP_SOURCES_KMSG_XID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gp_kxid {
    int64_t ts_us;     /* since boot (CLOCK_MONOTONIC); -1 when the line has no time */
    unsigned domain;   /* PCI location of the GPU: domain:bus:device */
    unsigned bus, dev;
    unsigned xid;      /* the XID code */
};

/*
 * Parses one kernel log record (no newline). GP_OK: an XID line, *out
 * filled; GP_ENOTFOUND: a well-formed line that is not an XID (or a
 * continuation line); GP_EPARSE: a malformed record header or a
 * malformed XID line.
 */
int gp_kxid_parse(const char *rec, size_t len, struct gp_kxid *out);

/* true when x's GPU is the one at NVML bus id `bus` ("00000000:18:00.0"). */
bool gp_kxid_matches_bus(const struct gp_kxid *x, const char *bus);

/*
 * Reads kernel log records from fd until its end: /dev/kmsg (one record
 * a read, non-blocking, so the end is EAGAIN) when kmsg is true, else a
 * text file of lines. Calls cb for every XID record; counts malformed
 * XID lines in *malformed. GP_OK, or GP_EIO with err set when fd cannot
 * be read.
 */
int gp_kxid_scan_fd(int fd, bool kmsg, void (*cb)(void *ctx, const struct gp_kxid *x), void *ctx,
                    unsigned *malformed, char *err, size_t errlen);

#endif
