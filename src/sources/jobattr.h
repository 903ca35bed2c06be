/*
 * jobattr.h - pure parsers that name a process's job (docs/jobs.md,
 * "Attribution"): from the bytes of /proc/PID/environ and /proc/PID/cgroup.
 *
 * Like procfs_parse.h, each parser takes the raw bytes of one file (buf,
 * len: not NUL-terminated, never read past len) and touches no file
 * system, so the unit tests and the fuzz target drive them directly.
 * Values that become label values are sanitized here (printable ASCII or
 * valid printable UTF-8, at most GP_JOB_LEN-1 bytes, cut at a character
 * boundary); ranks are integers 0..2^31-1 or unknown (-1).
 */
#ifndef GP_JOBATTR_H
#define GP_JOBATTR_H

#include "frame.h"

#include <stddef.h>

/* No job, every rank unknown. */
void gp_jobattr_clear(struct gp_job_id *id);

/*
 * /proc/PID/environ: NUL-terminated KEY=VALUE entries. Fills *id (cleared
 * first): the job and scheme by the first of GPULSE_RUN_ID, GPULSE_JOB,
 * SLURM_JOB_ID, TORCHELASTIC_RUN_ID with a non-empty value (scheme NONE
 * when none), and rank, local rank and world size by their lookup orders
 * (a value that is not an integer in range counts as absent, so the next
 * variable of the order is consulted). An empty buffer (kernel threads,
 * zombies) is no job and GP_OK. GP_EPARSE, *id cleared, when the last
 * entry is not NUL-terminated (a cut or overwritten environment) or the
 * buffer is larger than GP_JOBATTR_ENVIRON_MAX.
 */
#define GP_JOBATTR_ENVIRON_MAX (4u * 1024 * 1024)
int gp_jobattr_parse_environ(const char *buf, size_t len, struct gp_job_id *id);

/*
 * /proc/PID/cgroup: v1 lines "N:controllers:/path" and the v2 line
 * "0::/path". When a path under a "kubepods" component names a pod (the
 * cgroupfs driver's "pod<uid>" component, the systemd driver's
 * "kubepods[-<qos>]-pod<uid_with_underscores>.slice"), sets id->job to
 * "pod-<uid>" (lowercase, dashes) and id->scheme to KUBERNETES and
 * returns GP_OK; the ranks are left alone. GP_ENOTFOUND (id untouched)
 * when no line names a pod; GP_EPARSE (id untouched) on a line of
 * another shape, a NUL byte, or a buffer over GP_JOBATTR_CGROUP_MAX.
 * A uid is 32 hex digits in the 8-4-4-4-12 pattern, or 32 bare hex
 * digits (static pods' config hash).
 */
#define GP_JOBATTR_CGROUP_MAX (256u * 1024)
int gp_jobattr_parse_cgroup(const char *buf, size_t len, struct gp_job_id *id);

/*
 * Copies src[0..len) into dst as a label value: printable ASCII and valid
 * printable UTF-8 kept, any other byte (controls, DEL, invalid or overlong
 * sequences, C1 controls, surrogates) replaced by '_', cut at a character
 * boundary to at most GP_JOB_LEN-1 bytes; dst is NUL-terminated. Returns
 * the length written.
 */
size_t gp_jobattr_sanitize(char dst[GP_JOB_LEN], const char *src, size_t len);

#endif
