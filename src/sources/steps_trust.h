/*
 * steps_trust.h - who may speak for which job on the step socket
 * (docs/steps.md "Who may report for a job").
 *
 * The kernel tells the steps source each sender's pid and uid; these
 * functions read the sender's process and the job's processes under the
 * procfs root (a parameter, so tests use a fake tree) and say whose job
 * it is. The decision itself, with the table of names claimed only by
 * step clients, lives in steps.c.
 */
#ifndef GP_STEPS_TRUST_H
#define GP_STEPS_TRUST_H

#include "frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Why records were refused; the order is the metric's reason label's. */
#define GP_STEPS_REFUSALS(X)                                                 \
    X(UID_MISMATCH, "uid_mismatch")   /* the job's processes run as another uid */ \
    X(JOB_CLAIMED, "job_claimed")     /* a sender of another uid named the job first */ \
    X(NOT_IN_JOB, "not_in_job")       /* gpulse run's socket: not its command's tree nor its user */

enum gp_steps_refusal {
    GP_STEPS_ALLOWED = 0,
#define GP_STEPS_REF_ENUM_(id, name) GP_STEPS_##id,
    GP_STEPS_REFUSALS(GP_STEPS_REF_ENUM_)
#undef GP_STEPS_REF_ENUM_
    GP_STEPS__NREFUSALS
};

/* The reason label of r ("uid_mismatch"...); "" for GP_STEPS_ALLOWED. */
const char *gp_steps_refusal_name(enum gp_steps_refusal r);

struct gp_steps_trust; /* an open procfs root and a reusable read buffer */

/* Opens proc_root (NULL: "/proc"). NULL when it cannot be opened or out of
 * memory; the caller frees with gp_steps_trust_free. */
struct gp_steps_trust *gp_steps_trust_new(const char *proc_root);
void gp_steps_trust_free(struct gp_steps_trust *t); /* accepts NULL */

/*
 * The job pid's records count for by its own process tree: the job of
 * its environment or cgroup (jobattr.h), else of its nearest ancestor
 * that has one, as the jobs source names it. Sets job ("" when none) and
 * *in_follow (when follow is not NULL: whether pid or an ancestor is one
 * of follow[0..nfollow), gpulse run's command).
 */
void gp_steps_trust_tree(struct gp_steps_trust *t, uint32_t pid, const uint32_t *follow,
                         size_t nfollow, char job[GP_JOB_LEN], bool *in_follow);

/*
 * The owner of job: the real uid of the earliest-started process whose
 * own environment or cgroup names it (the first to claim the name keeps
 * it). Returns true with *uid set, false when no process names it (or
 * none is readable: an unprivileged agent sees only its own user's).
 * Reads every process of the tree: call it when a sender is new or
 * names a job, not per record.
 */
bool gp_steps_trust_owner(struct gp_steps_trust *t, const char *job, uint32_t *uid);

#endif
