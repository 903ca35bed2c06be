/*
 * layout.h - `gpulse top`'s picture of a frame, without a terminal.
 *
 * The view turns sampled frames into what the screen shows: host CPU %
 * and per-process CPU % from the difference of two frames, one row per
 * process and GPU, sorted and scrolled as the keys say. The renderer lays
 * the view out into a grid of cells (a character and an attribute each)
 * for a given width and height: which process columns fit, how wide the
 * bars are, which GPU facts are dropped on a narrow terminal. top.c only
 * paints that grid with ncurses, or prints it as text (--once), so all of
 * this is tested without a terminal.
 *
 * Everything here is ASCII: one byte, one cell.
 */
#ifndef GP_TOP_LAYOUT_H
#define GP_TOP_LAYOUT_H

#include "lib/buf.h"
#include "sources/frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Cell attributes; top.c maps them to colours (or to bold/reverse only). */
enum gp_top_attr {
    GP_TA_NORMAL,
    GP_TA_TITLE,  /* "gpulse top", "GPU 0": bold */
    GP_TA_DIM,    /* labels, n/a */
    GP_TA_OK,     /* bar fill below 60 % */
    GP_TA_WARN,   /* bar fill 60-85 %, throttling */
    GP_TA_CRIT,   /* bar fill above 85 %, ECC/XID, lost GPU, errors */
    GP_TA_HEADER, /* the process table's header and the status line: reverse */
    GP_TA__COUNT
};

/* Process table columns, in display order. X(id, --sort name, title, width,
 * drop rank, sort key). Narrow terminals drop the columns of highest drop
 * rank first; 0: never. */
#define GP_TOP_COLS(X)                            \
    X(PID, "pid", "PID", 7, 0, 'P')               \
    X(USER, "user", "USER", 9, 7, 'U')            \
    X(JOB, "job", "JOB", 14, 3, 'J')              \
    X(RANK, "rank", "RANK", 4, 4, 0)              \
    X(GPU, "gpu", "GPU", 3, 0, 'G')               \
    X(GPUMEM, "gpumem", "GPU MEM", 8, 0, 'M')     \
    X(SM, "sm", "SM%", 4, 5, 'S')                 \
    X(CPU, "cpu", "CPU%", 6, 6, 'C')              \
    X(RSS, "rss", "RSS", 6, 8, 0)                 \
    X(COMMAND, "command", "COMMAND", 8, 0, 0)

enum gp_top_col {
#define GP_TOP_COL_ENUM_(id, name, title, width, drop, key) GP_TC_##id,
    GP_TOP_COLS(GP_TOP_COL_ENUM_)
#undef GP_TOP_COL_ENUM_
    GP_TC__COUNT
};

/* Column title ("GPU MEM") and --sort name ("gpumem"). */
const char *gp_top_col_title(enum gp_top_col c);
const char *gp_top_col_name(enum gp_top_col c);
/* Parses a --sort name; -1 when unknown. */
int gp_top_col_parse(const char *name);

/* One process on one GPU (a process on two GPUs has two rows, as nvtop shows it). */
struct gp_top_proc {
    uint32_t pid;
    unsigned gpu;
    bool host;               /* found in /proc: user, CPU, RSS and command are known */
    uint32_t uid;
    char user[32];
    char job[GP_JOB_LEN];    /* "": none */
    int32_t rank;            /* -1: unknown */
    bool mem_valid, sm_valid, cpu_valid;
    uint64_t gpu_mem_bytes;
    double sm_pct, cpu_pct;
    uint64_t rss_bytes;
    char comm[32];
};

#define GP_TOP_MAX_ALERTS 32

/* Active alerts of this node, as the server answered them (top_alerts.c). */
struct gp_top_alert {
    char severity[16], state[16], kind[64], where[96], summary[256];
};
struct gp_top_alerts {
    unsigned n;      /* kept, at most GP_TOP_MAX_ALERTS */
    unsigned total;  /* the server's count */
    unsigned firing;
    struct gp_top_alert a[GP_TOP_MAX_ALERTS];
};

/* Keys the view understands; top.c maps ncurses' codes onto these. */
enum {
    GP_TOP_KEY_UP = 0x101, GP_TOP_KEY_DOWN, GP_TOP_KEY_PGUP, GP_TOP_KEY_PGDN, GP_TOP_KEY_HOME,
    GP_TOP_KEY_END, GP_TOP_KEY_ESC
};
enum gp_top_action { GP_TOP_NONE, GP_TOP_REDRAW, GP_TOP_QUIT };

struct gp_top_prev_cpu {
    uint32_t pid;
    double cpu_s;
};

struct gp_top_view {
    /* what the keys change */
    enum gp_top_col sort;
    bool reverse;
    unsigned scroll;         /* first process row shown */
    bool help;
    int64_t interval_ms;

    /* from the last two frames (gp_top_view_update) */
    bool cpu_valid;
    double cpu_pct;
    unsigned nprocs, cap_procs;
    struct gp_top_proc *procs;

    /* the previous frame's CPU times, by pid (sorted) */
    int64_t prev_ms;
    bool prev_host_valid;
    double prev_busy_s, prev_total_s;
    unsigned nprev, cap_prev;
    struct gp_top_prev_cpu *prev;

    /* alerts: shown when a server is configured */
    bool alerts_on;
    bool alerts_valid;        /* alerts holds an answer */
    struct gp_top_alerts alerts;
    char alerts_err[200];     /* the last fetch's error, "" when it worked */
    char status[200];         /* one line for the status bar */

    /* user names for uids (getpwuid in top.c); NULL: numbers */
    const char *(*user_name)(uint32_t uid, void *ctx);
    void *user_ctx;
};

void gp_top_view_init(struct gp_top_view *v);
void gp_top_view_free(struct gp_top_view *v); /* accepts a zeroed view */

/* Takes a new frame: CPU % against the previous one, the process rows,
 * sorted. GP_OK or GP_ENOMEM. */
int gp_top_view_update(struct gp_top_view *v, const struct gp_frame *f);

/* Sorts rows by column c (numbers largest first, names and ids
 * ascending; reverse flips), ties by pid then GPU. */
void gp_top_sort(struct gp_top_proc *rows, unsigned n, enum gp_top_col c, bool reverse);

/* Applies one key (page: process rows on screen, for paging). */
enum gp_top_action gp_top_view_key(struct gp_top_view *v, int key, unsigned page);

/* The next interval up (dir > 0) or down from ms on the 100ms..60s ladder. */
int64_t gp_top_interval_step(int64_t ms, int dir);

/* A grid of cells, rows of width w. */
struct gp_top_screen {
    unsigned w, nrows, cap_rows;
    char *text;               /* nrows * w */
    unsigned char *attr;      /* nrows * w, enum gp_top_attr */
    int err;                  /* GP_ENOMEM once a row could not be added */
};

void gp_top_screen_free(struct gp_top_screen *s);
const char *gp_top_screen_row(const struct gp_top_screen *s, unsigned row); /* w bytes, no NUL */

/*
 * Lays out view v of frame f into s: width w (at least 20 is useful),
 * height h rows exactly, the process table scrolled and a status line
 * at the bottom; h == 0: every row, no status line (the --once text).
 * GP_OK or GP_ENOMEM.
 */
int gp_top_render(const struct gp_top_view *v, const struct gp_frame *f, struct gp_top_screen *s,
                  unsigned w, unsigned h);

/* Process rows the table shows at height h (for paging). */
unsigned gp_top_page_rows(const struct gp_top_view *v, const struct gp_frame *f, unsigned h);

/* Appends s as text: one line per row, trailing blanks cut. */
void gp_top_screen_text(const struct gp_top_screen *s, struct gp_buf *out);

/*
 * Which process columns fit in width w (on[c] set for each shown one),
 * dropping by rank; returns the width left for COMMAND (at least its
 * minimum).
 */
unsigned gp_top_columns(unsigned w, bool on[GP_TC__COUNT]);

/* "[|||||     45%]": exactly width bytes (width >= 2) plus a NUL into out,
 * fraction clamped to 0..1, label right-aligned inside (cut when it does
 * not fit). *fill gets the number of bar characters. */
void gp_top_bar(char *out, unsigned width, double frac, const char *label, unsigned *fill);

/* Bytes as "512B", "64K", "1.5G", "12G" (binary units). */
void gp_top_fmt_bytes(char *out, size_t n, uint64_t bytes);

#endif
