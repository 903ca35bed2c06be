/*
 * attempts.h - what `gpulse run --job NAME` remembers of the job's earlier
 * attempts, so a restart under the same name reports the job's goodput
 * across restarts and counts the steps it repeats as lost work
 * (docs/jobs.md "Goodput").
 *
 * One small JSON file per job, `<dir>/<job>.json`:
 *   {"job": "bert-1", "attempts": 2, "last_step": 3000,
 *    "wall_seconds": 7200.5, "seconds": {"startup": 40.1, ...}}
 * with the goodput parts summed over the attempts so far. Parsing is
 * strict (a file someone edited or truncated is refused with the reason,
 * and gpulse run then starts the job afresh); writing is the caller's
 * (an atomic rename).
 */
#ifndef GP_RUN_ATTEMPTS_H
#define GP_RUN_ATTEMPTS_H

#include "lib/buf.h"
#include "query/goodput.h"

#include <stddef.h>

struct gp_attempts {
    unsigned attempts;            /* earlier runs of the job; 0: none */
    double last_step;             /* the highest step number they reached; -1 none */
    struct gp_goodput_figures f;  /* their parts and wall, summed */
};

/* No attempt yet. */
void gp_attempts_init(struct gp_attempts *a);

/* The file of job under dir; dir "" is $XDG_STATE_HOME/gpulse/jobs, else
 * $HOME/.local/state/gpulse/jobs. GP_OK, or GP_ECONFIG (no HOME, or the
 * path too long) with detail. */
int gp_attempts_path(const char *dir, const char *job, char *out, size_t outlen, char *err,
                     size_t errlen);

/* Parses a file's len bytes for job into *a. GP_OK, or GP_EPARSE with
 * detail (not JSON, another job's, a field missing or out of range). */
int gp_attempts_parse(const char *text, size_t len, const char *job, struct gp_attempts *a,
                      char *err, size_t errlen);

/* Appends the file's text for job to out. */
void gp_attempts_render(struct gp_buf *out, const char *job, const struct gp_attempts *a);

#endif
