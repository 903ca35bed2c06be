/*
 * agent.h - `gpulse agent`: sampler + HTTP outputs, wired from the config.
 */
#ifndef GP_AGENT_H
#define GP_AGENT_H

#include "agent/config.h"

struct gp_agent;

/* Starts sampling and serving per c. Returns GP_OK with *out set, or an
 * error with detail. */
int gp_agent_start(struct gp_agent **out, const struct gp_agent_config *c, char *err, size_t errlen);
unsigned gp_agent_port(const struct gp_agent *a);
void gp_agent_stop(struct gp_agent *a); /* accepts NULL */

/* The `gpulse agent` command: parses args, runs until SIGINT/SIGTERM.
 * Returns the process exit status (0, 1 runtime failure, 2 usage/config). */
int gp_agent_main(int argc, char **argv);

#endif
