/*
 * top_agent.h - `gpulse top --agent URL`: a running agent's view instead
 * of sampling here.
 *
 * The agent already serves its latest frame as JSON (GET
 * /api/v1/snapshot, agent/snapshot.h); this reads that document back
 * into a frame, so the layout draws a remote node exactly as a local one:
 * GPUs with their readings, clock-event reasons, XIDs and processes; the
 * host's CPU, memory, pressure and load; its processes and jobs; and the
 * state of its sources. Everything in the document is outside data:
 * types are checked, counts capped, strings cut to their fields, and the
 * layout keeps unprintable bytes off the terminal.
 */
#ifndef GP_TOP_AGENT_H
#define GP_TOP_AGENT_H

#include "sources/frame.h"

#include <stddef.h>

/* Caps on one snapshot: the simulator's largest fleet fits. */
#define GP_TOP_AGENT_MAX_GPUS 16384
#define GP_TOP_AGENT_MAX_PROCS 65536
#define GP_TOP_AGENT_MAX_JOBS 16384

/*
 * Parses a snapshot document into f (reset first; the caller owns f and
 * frees it with gp_frame_free). GP_OK, GP_EPARSE with detail naming the
 * bad member, or GP_ENOMEM.
 */
int gp_top_snapshot_parse(const char *json, size_t len, struct gp_frame *f, char *err, size_t errlen);

/*
 * GETs AGENT/api/v1/snapshot and parses it into f. No token: agents serve
 * it to anyone, and a server's read token is not the agent's to see.
 * GP_OK, or GP_ENET / GP_EPARSE / GP_ECONFIG with detail that names the
 * agent's URL.
 */
int gp_top_agent_fetch(const char *agent, struct gp_frame *f, char *err, size_t errlen);

#endif
