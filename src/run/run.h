/*
 * run.h - `gpulse run [flags] -- CMD [ARG...]`: runs CMD as a tracked
 * training job and reports on it when it ends (run_cmd.c).
 */
#ifndef GP_RUN_H
#define GP_RUN_H

/* Returns CMD's exit status (or re-raises the signal that killed it);
 * 2 for usage or configuration errors, 127/126 when CMD cannot run. */
int gp_run_main(int argc, char **argv);

#endif
