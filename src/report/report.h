/*
 * report.h - the end-of-run report of a training job (issue 4 part 4).
 *
 * One renderer for the job document of docs/jobs.md, whoever built it:
 * `gpulse run` builds the document in-process, `gpulse report JOB` fetches
 * it from the server (GET /api/v1/jobs/ID?series=1). The document is a
 * jansson object; every field may be missing or null, which means
 * "unknown" and is shown as "n/a", never as 0. Renderers accept any JSON
 * value (a fuzz target feeds them arbitrary documents): a field of the
 * wrong type counts as unknown.
 *
 * Three forms, the same sections (job, GPUs, steps, host, where the time
 * went, what to change):
 *   - text: for a terminal, at most 100 columns, no color unless asked;
 *   - JSON: the document itself, pretty-printed (advice included);
 *   - HTML: one self-contained file (inline CSS and SVG charts drawn
 *     here, no script, no network), light/dark by prefers-color-scheme.
 *
 * Advice is added to the document by gp_report_advise() from fixed rules
 * (below); call it before rendering. The renderers only show what the
 * document's `advice` array holds.
 */
#ifndef GP_REPORT_H
#define GP_REPORT_H

#include "lib/buf.h"

#include <jansson.h>
#include <stdbool.h>

struct gp_report_opts {
    bool color; /* ANSI bold headings and a red failure line (text only) */
};

/*
 * Advice: the recommendations of insight/recommend.h (its diagnosis tree
 * adds communication_bound, no_tensor_cores, memory_bound and
 * oversized_gpu where the document has the numbers), then the ending
 * rule. Rules, each added at most once (an entry of the same `kind`
 * already in `advice` is kept and the rule skipped; entries of other
 * kinds are kept too). The thresholds are GP_REPORT_* below.
 *   failed | killed | lost  state says the job did not finish well; put
 *                           first, before any tuning advice.
 *   memory_high   some GPU peaked above 90% of its memory: OOM risk.
 *   data_wait     data_wait_ratio > 0.2: the input pipeline is the limit.
 *   low_activity  activity_avg < 0.5 with steps > 0 and a known
 *                 data_wait_ratio <= 0.2: the GPU work is too small.
 *   memory_low    every GPU (at least one, each ratio known) peaked
 *                 below 30% of its memory: a larger batch, or a smaller
 *                 or shared card.
 * Each entry is {"kind", "text", "evidence"}; evidence holds the numbers.
 * A missing or non-array `advice` becomes an array. Returns GP_OK,
 * GP_EPARSE when doc is not an object, GP_ENOMEM.
 */
/* equal to recommend.h's GP_REC_* of the same names */
#define GP_REPORT_DATA_WAIT_HIGH 0.2
#define GP_REPORT_ACTIVITY_LOW 0.5
#define GP_REPORT_MEMORY_LOW 0.3
#define GP_REPORT_MEMORY_HIGH 0.9
int gp_report_advise(json_t *doc);

/*
 * Each renderer appends to out (the caller owns and frees it) and returns
 * GP_OK, GP_EPARSE when doc is not an object, or the buffer's latched
 * error (GP_ENOMEM, GP_ETOOBIG). doc is not modified.
 */
int gp_report_text(struct gp_buf *out, const json_t *doc, const struct gp_report_opts *o);
int gp_report_json(struct gp_buf *out, const json_t *doc);
int gp_report_html(struct gp_buf *out, const json_t *doc);

/*
 * Adds the job's active alerts to doc as `alerts`: the pending and firing
 * entries of GET SERVER/api/v1/alerts?job=JOB&state=active (bearer token
 * when token is non-empty), as the server gives them. The renderers list
 * them first under "What to change", so a report never says "nothing"
 * while an alert fires on the job; without `alerts` they say that no
 * server gave them. GP_OK, or GP_ENET / GP_EPARSE / GP_ENOMEM with detail in
 * err (doc is then unchanged).
 */
int gp_report_add_alerts(json_t *doc, const char *server, const char *token, const char *job, char *err,
                         size_t errlen);

/* `gpulse report JOB ...`: exit status 0, 1 (runtime failure), 2 (usage). */
int gp_report_main(int argc, char **argv);

/*
 * The fleet funnel's report (funnel.c): d is the data object of GET
 * /api/v1/fleet/funnel; link the dashboard's URL of it ("" or NULL none).
 * Writes the subject and appends the text and HTML bodies. GP_OK,
 * GP_EPARSE (d is not a funnel) or the buffers' error.
 */
int gp_report_funnel(const json_t *d, const char *link, char *subject, size_t sublen,
                     struct gp_buf *text, struct gp_buf *html);

#endif
