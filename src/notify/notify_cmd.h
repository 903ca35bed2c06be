/*
 * notify_cmd.h - `gpulse notify` (notify_cmd.c).
 */
#ifndef GP_NOTIFY_CMD_H
#define GP_NOTIFY_CMD_H

/* `gpulse notify SUBCOMMAND ...` with argv after "notify": the exit status
 * (0 sent, 1 the far end did not take it, 2 usage or config error). */
int gp_notify_main(int argc, char **argv);

#endif
