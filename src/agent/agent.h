/*
 * agent.h - `gpulse agent`: sampler + HTTP outputs, wired from the config.
 */
#ifndef GP_AGENT_H
#define GP_AGENT_H

#include "agent/config.h"
#include "agent/sampler.h"
#include "sources/steps_proto.h"
#include "lib/buf.h"

#include <stdint.h>

struct gp_agent;

/* Starts sampling and serving per c. Returns GP_OK with *out set, or an
 * error with detail. */
int gp_agent_start(struct gp_agent **out, const struct gp_agent_config *c, char *err, size_t errlen);
unsigned gp_agent_port(const struct gp_agent *a); /* 0 without HTTP */

/*
 * `gpulse up` runs the agent inside the server's process: no listener of
 * its own (the server serves its /metrics), and each tick's series handed
 * to the server in-process through `write`: the tick's decoded batch
 * (canonical labels, one sample per series; no snappy, no protobuf),
 * answered with the HTTP status a remote-write receiver would give (204,
 * 400, 429, 503...) and a reason in msg. It is called from the pusher's
 * own thread for the target "local" (never from the sampling thread),
 * with the same retry and drop rules as a URL target, and must stay
 * callable until gp_agent_stop returns (the stop lets a healthy target
 * drain for up to 5 s).
 */
struct gp_batch;
typedef int (*gp_agent_local_write)(void *ctx, const struct gp_batch *batch, char *msg, size_t msglen);
struct gp_agent_embed {
    int no_http;
    gp_agent_local_write write; /* NULL: no in-process target */
    void *write_ctx;
    /* `gpulse run`: called on the sampling thread after every tick (after
     * the push), with the frame just published; must not block for long. */
    gp_sampler_hook tick_hook;
    void *tick_ctx;
    const uint32_t *follow;     /* pids procfs follows with their descendants */
    size_t nfollow;             /*   (the array outlives the agent) */
    /* called from the step socket's receiver thread for every good record */
    void (*step_observer)(void *ctx, uint32_t pid, const struct gp_steps_record *r);
    void *step_observer_ctx;
    /* `gpulse run`: the step socket is the job's own; a sender counts when
     * it is root, gpulse run's user or in the follow pids' tree */
    bool steps_per_job;
    /* `gpulse run`: its job id and command line, carried on the job's
     * info series (the strings outlive the agent) */
    const char *run_job, *run_command;
};
int gp_agent_start_embedded(struct gp_agent **out, const struct gp_agent_config *c,
                            const struct gp_agent_embed *e, char *err, size_t errlen);

/* Appends the exposition of the newest frame, as /metrics serves it.
 * GP_OK or an error code. */
int gp_agent_render_metrics(struct gp_agent *a, struct gp_buf *out);

/* Appends the newest frame as JSON, as /api/v1/snapshot serves it (for
 * `gpulse up`, whose agent serves no HTTP). GP_OK or an error code. */
int gp_agent_render_snapshot(struct gp_agent *a, struct gp_buf *out);
void gp_agent_stop(struct gp_agent *a); /* accepts NULL */

/* The `gpulse agent` command: parses args, runs until SIGINT/SIGTERM.
 * Returns the process exit status (0, 1 runtime failure, 2 usage/config). */
int gp_agent_main(int argc, char **argv);

#endif
