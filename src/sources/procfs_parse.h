/*
 * procfs_parse.h - pure parsers of the /proc files the procfs source reads.
 *
 * Each parser takes the raw bytes of one file (buf, len: not necessarily
 * NUL-terminated, never read past len) and fills a caller's struct. They
 * touch no file system, so the unit tests and the fuzz target drive them
 * directly. All of them return GP_OK or GP_EPARSE and reject, rather than
 * guess at, anything the kernel would not write: NUL bytes, missing or
 * non-numeric fields, numbers that overflow 64 bits (or the unit
 * conversion), missing required lines. A missing final newline is
 * accepted when every needed field is complete (the source reads whole
 * files, so it never hands a parser a buffer cut short by its own read).
 * On GP_EPARSE the output may be partly written; the caller discards it.
 */
#ifndef GP_PROCFS_PARSE_H
#define GP_PROCFS_PARSE_H

#include "frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * /proc/stat: the aggregate "cpu" line (user nice system idle iowait irq
 * softirq steal, in clock ticks) becomes h->cpu_seconds using ticks (the
 * USER_HZ rate, > 0); the number of "cpuN" lines becomes h->ncpus;
 * sets h->cpu_valid. *btime (out) is the boot time in epoch seconds.
 * All three ("cpu", at least one "cpuN", "btime") are required.
 */
int gp_procfs_parse_stat(const char *buf, size_t len, long ticks, struct gp_host *h,
                         uint64_t *btime);

/*
 * /proc/meminfo: every GP_MEM_KINDS key present is stored in
 * h->mem_bytes (kB values times 1024; HugePages_Total is a count and is
 * stored as given) with its bit set in h->mem_valid. Other keys are
 * skipped. MemTotal is required.
 */
int gp_procfs_parse_meminfo(const char *buf, size_t len, struct gp_host *h);

/*
 * /proc/pressure/{cpu,memory,io}: the "some" and "full" lines' total=
 * (microseconds) become h->psi_seconds[res][kind] with the kind's bit set
 * in h->psi_valid[res]. "some" is required; "full" is optional (the cpu
 * file of kernels before 5.13 has none).
 */
int gp_procfs_parse_pressure(const char *buf, size_t len, enum gp_psi_resource res,
                             struct gp_host *h);

/* /proc/loadavg: "l1 l5 l15 running/total lastpid"; sets h->load, load_valid. */
int gp_procfs_parse_loadavg(const char *buf, size_t len, struct gp_host *h);

/* The fields of /proc/PID/stat the source uses; times in clock ticks. */
struct gp_procfs_pid_stat {
    uint32_t pid, ppid;
    uint32_t pgrp;          /* process group (field 5) */
    char comm[32];          /* control characters replaced by '?', truncated */
    char state;             /* 'R', 'S', 'D', 'Z', ... */
    uint64_t utime, stime;  /* clock ticks */
    uint32_t num_threads;
    uint64_t starttime;     /* clock ticks after boot */
    uint64_t vsize;         /* bytes */
    uint64_t rss_pages;     /* pages */
};

/*
 * /proc/PID/stat: "pid (comm) state ppid ..." through field 24 (rss).
 * comm may hold spaces, parentheses and newlines: it ends at the LAST
 * ')' of the buffer.
 */
int gp_procfs_parse_pid_stat(const char *buf, size_t len, struct gp_procfs_pid_stat *out);

/* The fields of /proc/PID/status the source uses. */
struct gp_procfs_pid_status {
    uint32_t uid;           /* real uid: first value of "Uid:" */
    uint32_t threads;       /* "Threads:" */
    bool nspid_valid;       /* "NSpid:" present (kernels >= 4.1) */
    uint32_t nspid;         /* the pid in the innermost pid namespace */
};

/* /proc/PID/status: "Uid:" and "Threads:" are required, "NSpid:" optional. */
int gp_procfs_parse_pid_status(const char *buf, size_t len, struct gp_procfs_pid_status *out);

/* /proc/PID/io: "read_bytes:" and "write_bytes:" are required. */
int gp_procfs_parse_pid_io(const char *buf, size_t len, uint64_t *read_bytes,
                           uint64_t *write_bytes);

/* /proc/PID/task/TID/children: pids separated by single blanks (the
 * kernel writes a trailing blank). Fills up to max pids into out, sets
 * *n; GP_ETOOBIG when there are more than max, GP_EPARSE on anything
 * else than digits and blanks, a 0 or a pid past 2^32-1. */
int gp_procfs_parse_children(const char *buf, size_t len, uint32_t *out, size_t max, size_t *n);

#endif
