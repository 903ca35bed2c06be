/*
 * report_int.h - what the report's files share: typed reads of the job
 * document (a missing, null or mistyped field is "unknown"), formatting
 * of numbers for people, escaping of document strings for a terminal and
 * for HTML, and the model that the text and HTML renderers both print
 * (rows of label and value, the GPU table's cells, the time split), so
 * the two forms cannot drift apart.
 */
#ifndef GP_REPORT_INT_H
#define GP_REPORT_INT_H

#include "lib/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* --- reading the document ------------------------------------------- */

/* A finite number at o[key] into *v; false when unknown. */
bool gp_rp_num(const json_t *o, const char *key, double *v);
/* The string at o[key], or NULL (borrowed from the document). */
const char *gp_rp_str(const json_t *o, const char *key);
/* o[key] when it is an object / array, else NULL (borrowed). */
const json_t *gp_rp_obj(const json_t *o, const char *key);
const json_t *gp_rp_arr(const json_t *o, const char *key);
/* A GPU's peak memory ratio: peak_memory_ratio, else peak / total. */
bool gp_rp_gpu_peak_ratio(const json_t *gpu, double *r);

/* --- formatting: each writes "n/a" when !ok, returns out ------------- */

#define GP_RP_NA "n/a"
char *gp_rp_fmt_bytes(char *out, size_t n, bool ok, double v);       /* 37.3 GiB */
char *gp_rp_fmt_pct(char *out, size_t n, bool ok, double ratio);     /* 47.0% */
char *gp_rp_fmt_hms(char *out, size_t n, bool ok, double seconds);   /* 1:02:03 */
char *gp_rp_fmt_short(char *out, size_t n, bool ok, double seconds); /* 290 ms */
char *gp_rp_fmt_count(char *out, size_t n, bool ok, double v);       /* 12,000 */
char *gp_rp_fmt_rate(char *out, size_t n, bool ok, double v);        /* 106.7 */
char *gp_rp_fmt_sig(char *out, size_t n, bool ok, double v);         /* 0.01234: 4 digits (a loss) */
char *gp_rp_fmt_money(char *out, size_t n, bool ok, double v, const char *currency);
char *gp_rp_fmt_utc(char *out, size_t n, bool ok, double epoch);    /* 2026-11-23 10:15:00 UTC */
/* "signal 9 (SIGKILL)" from a number or a name; "n/a" when unknown. */
char *gp_rp_fmt_signal(char *out, size_t n, const json_t *sig);

/* --- escaping --------------------------------------------------------- */

/* Display columns of s as the text renderer prints it (one per code point). */
size_t gp_rp_cols(const char *s);
/*
 * Appends s for a terminal: control characters (C0, DEL, C1) and broken
 * UTF-8 become '?', so a document cannot send escape sequences. At most
 * maxcols columns; a longer s ends in "...". Returns the columns written.
 */
size_t gp_rp_text_put(struct gp_buf *b, const char *s, size_t maxcols);
/* Appends s and pads with spaces to exactly cols columns (cut if longer). */
void gp_rp_text_cell(struct gp_buf *b, const char *s, size_t cols);
/*
 * Appends s word-wrapped: the cursor is at column `col`, continuation
 * lines start with `indent` spaces, no line passes `width` columns.
 * Ends with a newline.
 */
void gp_rp_text_wrap(struct gp_buf *b, const char *s, size_t col, size_t indent, size_t width);
/* Appends s escaped for HTML text and attribute values (& < > " ');
 * control characters and broken UTF-8 become U+FFFD. */
void gp_rp_html_put(struct gp_buf *b, const char *s);

/* --- the model both renderers print ----------------------------------- */

#define GP_RP_ROWS 16
struct gp_rp_row {
    const char *label;
    const char *raw; /* a document string shown whole, or NULL: then v */
    char v[512];
};
struct gp_rp_section {
    const char *title;
    int n;
    struct gp_rp_row rows[GP_RP_ROWS];
};
enum { GP_RP_SEC_JOB, GP_RP_SEC_GPU, GP_RP_SEC_STEPS, GP_RP_SEC_GOODPUT, GP_RP_SEC_HOST, GP_RP_NSEC };
struct gp_rp_model {
    struct gp_rp_section sec[GP_RP_NSEC];
    bool failed;  /* state failed, killed or lost */
};
/* Fills m from doc (m is overwritten; rows borrow strings from doc). */
void gp_rp_model_build(const json_t *doc, struct gp_rp_model *m);

/*
 * One of the job's active alerts (an entry of the document's `alerts`,
 * as GET /api/v1/alerts gives it), as the advice lists it: the tag
 * "alert KIND, SEVERITY, STATE", the summary (else the kind) and the
 * evidence (NULL when none). Strings are borrowed from the entry or
 * live in a. False when the entry is not an alert object.
 */
struct gp_rp_alert {
    char tag[160];
    const char *text, *evidence;
    bool firing;
};
bool gp_rp_alert(const json_t *entry, struct gp_rp_alert *a);

/* The per-GPU table: column titles and widths, and one GPU's cells. */
#define GP_RP_GPU_COLS 8
extern const char *const gp_rp_gpu_titles[GP_RP_GPU_COLS];
extern const unsigned char gp_rp_gpu_widths[GP_RP_GPU_COLS];
void gp_rp_gpu_cells(const json_t *gpu, char cells[GP_RP_GPU_COLS][96]);
/* The "all GPUs" row from totals. */
void gp_rp_gpu_total_cells(const json_t *doc, char cells[GP_RP_GPU_COLS][96]);

/* The per-rank table (docs/jobs.md: straggler scores and MFU per rank),
 * shown for a job of several ranks: titles, widths, and one rank's cells;
 * false for an entry that is no rank (no rank number and no step: a
 * launcher such as torchrun's agent). */
#define GP_RP_RANK_COLS 7
extern const char *const gp_rp_rank_titles[GP_RP_RANK_COLS];
extern const unsigned char gp_rp_rank_widths[GP_RP_RANK_COLS];
bool gp_rp_rank_cells(const json_t *rank, char cells[GP_RP_RANK_COLS][96]);
/* The ranks table is shown: the document has more than one rank. */
bool gp_rp_ranks_shown(const json_t *doc);

/*
 * Where the time went, as shares of wall time on the GPUs: compute is
 * activity_avg; data wait is data_wait_ratio, capped at 1 - compute
 * (a GPU waiting for data is idle); idle is the rest. Without GPU
 * activity only the data wait (as a share of step time) is known.
 */
struct gp_rp_split {
    bool have_compute, have_wait;
    double compute, wait, idle;
};
void gp_rp_split(const json_t *doc, struct gp_rp_split *s);

#endif
