/*
 * top.h - `gpulse top`: a live terminal view of this node's GPUs, their
 * processes and jobs, host CPU and memory, and the server's alerts
 * (top.c; the layout without a terminal is layout.h).
 */
#ifndef GP_TOP_H
#define GP_TOP_H

/* 0 on success; 1 on a runtime failure; 2 on a usage or config error
 * (stdout not a terminal without --once included). */
int gp_top_main(int argc, char **argv);

#endif
