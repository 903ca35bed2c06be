/*
 * model.c - what the report says, before it is printed: the rows of the
 * job, GPU, step and host sections, the per-GPU table's cells and the
 * time split (report_int.h). Text and HTML print the same model.
 */
#include "report/report_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static struct gp_rp_row *row(struct gp_rp_section *s, const char *label)
{
    if (s->n >= GP_RP_ROWS) /* a programming error: the sections below are fixed */
        return &s->rows[GP_RP_ROWS - 1];
    struct gp_rp_row *r = &s->rows[s->n++];
    r->label = label;
    r->raw = NULL;
    r->v[0] = '\0';
    return r;
}

static void job_section(const json_t *doc, struct gp_rp_model *m)
{
    struct gp_rp_section *s = &m->sec[GP_RP_SEC_JOB];
    s->title = "Job";
    char a[64], b2[64];
    double v;
    struct gp_rp_row *r = row(s, "id");
    r->raw = gp_rp_str(doc, "id");
    if (!r->raw)
        snprintf(r->v, sizeof r->v, GP_RP_NA);
    r = row(s, "command");
    r->raw = gp_rp_str(doc, "command");
    if (!r->raw)
        snprintf(r->v, sizeof r->v, GP_RP_NA);
    r = row(s, "scheme");
    r->raw = gp_rp_str(doc, "scheme");
    if (!r->raw)
        snprintf(r->v, sizeof r->v, GP_RP_NA);

    const char *state = gp_rp_str(doc, "state");
    r = row(s, "state");
    bool have_exit = gp_rp_num(doc, "exit_status", &v);
    const json_t *sig = json_is_object(doc) ? json_object_get(doc, "signal") : NULL;
    gp_rp_fmt_signal(a, sizeof a, sig);
    bool have_sig = strcmp(a, GP_RP_NA) != 0;
    if (have_exit && fabs(v) < 1e9)
        snprintf(b2, sizeof b2, "exit status %d", (int)v);
    else if (have_exit)
        snprintf(b2, sizeof b2, "exit status %.6g", v);
    else
        snprintf(b2, sizeof b2, "exit status n/a");
    if (have_sig)
        snprintf(r->v, sizeof r->v, "%s, %s%s%s", state ? state : GP_RP_NA, a, have_exit ? ", " : "",
                 have_exit ? b2 : "");
    else
        snprintf(r->v, sizeof r->v, "%s, %s", state ? state : GP_RP_NA, b2);
    m->failed = state && (!strcmp(state, "failed") || !strcmp(state, "killed") || !strcmp(state, "lost"));

    double start = 0, end = 0;
    bool hs = gp_rp_num(doc, "start", &start), he = gp_rp_num(doc, "end", &end);
    snprintf(row(s, "started")->v, sizeof r->v, "%s", gp_rp_fmt_utc(a, sizeof a, hs, start));
    snprintf(row(s, "ended")->v, sizeof r->v, "%s", gp_rp_fmt_utc(a, sizeof a, he, end));
    hs = gp_rp_num(doc, "wall_seconds", &v);
    snprintf(row(s, "wall time")->v, sizeof r->v, "%s", gp_rp_fmt_hms(a, sizeof a, hs, v));

    const json_t *nodes = gp_rp_arr(doc, "nodes");
    r = row(s, "nodes");
    if (!nodes) {
        snprintf(r->v, sizeof r->v, GP_RP_NA);
    } else {
        size_t n = json_array_size(nodes), k = 0;
        k += (size_t)snprintf(r->v, sizeof r->v, "%zu", n);
        for (size_t i = 0; i < n && k < sizeof r->v; i++) {
            const json_t *x = json_array_get(nodes, i);
            if (i == 8) {
                k += (size_t)snprintf(r->v + k, sizeof r->v - k, ", ... (%zu more)", n - 8);
                break;
            }
            k += (size_t)snprintf(r->v + k, sizeof r->v - k, "%s%s", i ? ", " : " (",
                                  json_is_string(x) ? json_string_value(x) : GP_RP_NA);
        }
        if (n && k < sizeof r->v)
            snprintf(r->v + k, sizeof r->v - k, ")");
    }
    const json_t *ranks = gp_rp_arr(doc, "ranks");
    r = row(s, "ranks");
    if (ranks)
        snprintf(r->v, sizeof r->v, "%zu", json_array_size(ranks));
    else
        snprintf(r->v, sizeof r->v, GP_RP_NA);
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    r = row(s, "GPUs");
    if (gpus)
        snprintf(r->v, sizeof r->v, "%zu", json_array_size(gpus));
    else
        snprintf(r->v, sizeof r->v, GP_RP_NA);

    const json_t *t = gp_rp_obj(doc, "totals");
    bool ok = gp_rp_num(t, "gpu_hours", &v);
    if (!ok && gp_rp_num(t, "gpu_seconds", &v)) {
        ok = true;
        v /= 3600;
    }
    r = row(s, "GPU-hours");
    if (ok)
        snprintf(r->v, sizeof r->v, fabs(v) < 1e12 ? "%.2f" : "%.4g", v);
    else
        snprintf(r->v, sizeof r->v, GP_RP_NA);
    double cost, price;
    const char *cur = gp_rp_str(t, "currency");
    bool hc = gp_rp_num(t, "cost", &cost), hp = gp_rp_num(t, "price_per_gpu_hour", &price);
    r = row(s, "cost");
    if (hp)
        snprintf(r->v, sizeof r->v, "%s at %s per GPU-hour", gp_rp_fmt_money(a, sizeof a, hc, cost, cur),
                 gp_rp_fmt_money(b2, sizeof b2, true, price, cur));
    else
        snprintf(r->v, sizeof r->v, "%s (no price per GPU-hour configured)",
                 gp_rp_fmt_money(a, sizeof a, hc, cost, cur));
}

/* The activity source of the whole job: the GPUs' one source, or "mixed". */
static const char *overall_source(const json_t *doc)
{
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    const char *src = NULL;
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        const char *x = gp_rp_str(json_array_get(gpus, i), "activity_source");
        if (!x)
            continue;
        if (src && strcmp(src, x))
            return "mixed";
        src = x;
    }
    return src;
}

/* MFU beside activity (docs/jobs.md): the figure and what it divides,
 * or why it is n/a; then the gap to activity explained, when there is one. */
static void mfu_rows(const json_t *t, struct gp_rp_section *s)
{
    struct gp_rp_row *r = row(s, "MFU");
    double mfu, got, peak;
    const char *prec = gp_rp_str(t, "precision"), *why = gp_rp_str(t, "mfu_reason"),
               *gap = gp_rp_str(t, "mfu_gap");
    if (gp_rp_num(t, "mfu", &mfu) && gp_rp_num(t, "model_flops_per_second", &got) &&
        gp_rp_num(t, "peak_flops_per_second", &peak))
        snprintf(r->v, sizeof r->v, "%.1f%% (model %.4g TFLOP/s of a %.4g TFLOP/s %s peak)", mfu * 100,
                 got / 1e12, peak / 1e12, prec ? prec : GP_RP_NA);
    else
        snprintf(r->v, sizeof r->v, GP_RP_NA " (%s)", why ? why : "not computed");
    if (gap)
        row(s, "MFU gap")->raw = gap;
}

static void gpu_section(const json_t *doc, struct gp_rp_model *m)
{
    struct gp_rp_section *s = &m->sec[GP_RP_SEC_GPU];
    s->title = "GPUs";
    const json_t *t = gp_rp_obj(doc, "totals");
    char a[64], b2[64], c[64], d[64];
    double peak = 0, ratio = 0, v;
    bool hp = gp_rp_num(t, "peak_gpu_memory_bytes", &peak),
         hr = gp_rp_num(t, "peak_gpu_memory_ratio", &ratio);
    struct gp_rp_row *r = row(s, "peak memory");
    snprintf(r->v, sizeof r->v, "%s (%s of capacity)", gp_rp_fmt_bytes(a, sizeof a, hp, peak),
             gp_rp_fmt_pct(b2, sizeof b2, hr, ratio));
    bool ha = gp_rp_num(t, "activity_avg", &v);
    gp_rp_fmt_pct(a, sizeof a, ha, v);
    ha = gp_rp_num(t, "activity_p50", &v);
    gp_rp_fmt_pct(b2, sizeof b2, ha, v);
    ha = gp_rp_num(t, "activity_p90", &v);
    gp_rp_fmt_pct(c, sizeof c, ha, v);
    ha = gp_rp_num(t, "activity_p99", &v);
    gp_rp_fmt_pct(d, sizeof d, ha, v);
    const char *src = overall_source(doc);
    r = row(s, "activity");
    snprintf(r->v, sizeof r->v, "avg %s, p50 %s, p90 %s, p99 %s (time-weighted, source %s)", a, b2, c,
             d, src ? src : GP_RP_NA);
    mfu_rows(t, s);
}

static void steps_section(const json_t *doc, struct gp_rp_model *m)
{
    struct gp_rp_section *s = &m->sec[GP_RP_SEC_STEPS];
    s->title = "Steps";
    struct gp_rp_row *r;
    const json_t *t = gp_rp_obj(doc, "totals");
    const json_t *st = gp_rp_obj(t, "step_seconds");
    char f[5][48];
    double v;
    bool ok = gp_rp_num(t, "steps", &v);
    gp_rp_fmt_count(row(s, "steps")->v, 512, ok, v);
    static const char *const keys[] = {"mean", "p50", "p90", "p99", "max"};
    for (int i = 0; i < 5; i++) {
        ok = gp_rp_num(st, keys[i], &v);
        gp_rp_fmt_short(f[i], sizeof f[i], ok, v);
    }
    snprintf(row(s, "step time")->v, 512, "mean %s, p50 %s, p90 %s, p99 %s, max %s", f[0], f[1], f[2],
             f[3], f[4]);
    static const char *const rates[] = {"samples_per_second", "tokens_per_second", "steps_per_second"};
    for (int i = 0; i < 3; i++) {
        ok = gp_rp_num(t, rates[i], &v);
        gp_rp_fmt_rate(f[i], sizeof f[i], ok, v);
    }
    snprintf(row(s, "throughput")->v, 512, "%s samples/s, %s tokens/s, %s steps/s", f[0], f[1], f[2]);
    double samples, tokens;
    bool hs = gp_rp_num(t, "samples", &samples), ht = gp_rp_num(t, "tokens", &tokens);
    snprintf(row(s, "processed")->v, 512, "%s samples, %s tokens",
             gp_rp_fmt_count(f[0], sizeof f[0], hs, samples),
             gp_rp_fmt_count(f[1], sizeof f[1], ht, tokens));
    ok = gp_rp_num(t, "data_wait_ratio", &v);
    snprintf(row(s, "data wait")->v, 512, "%s of step time", gp_rp_fmt_pct(f[0], sizeof f[0], ok, v));
    /* the training loss the clients sent with their steps */
    static const char *const losses[] = {"loss_first", "loss_last", "loss_min"};
    bool any = false;
    for (int i = 0; i < 3; i++) {
        ok = gp_rp_num(t, losses[i], &v);
        any |= ok;
        gp_rp_fmt_sig(f[i], sizeof f[i], ok, v);
    }
    r = row(s, "loss");
    if (any)
        snprintf(r->v, 512, "first %s, last %s, lowest %s", f[0], f[1], f[2]);
    else
        snprintf(r->v, 512, "n/a (no step reported a loss)");
}

/* docs/jobs.md "Goodput": the share, then each part of the wall time. */
static void goodput_section(const json_t *doc, struct gp_rp_model *m)
{
    static const char *const parts[][2] = {
        {"startup", "start-up"},     {"productive", "productive"}, {"data_wait", "data wait"},
        {"checkpoint", "checkpoint"}, {"evaluation", "evaluation"}, {"other", "other phases"},
        {"lost", "lost work"},       {"idle", "idle"}};
    struct gp_rp_section *s = &m->sec[GP_RP_SEC_GOODPUT];
    s->title = "Goodput (share of the ranks' wall time)";
    const json_t *g = gp_rp_obj(doc, "goodput"), *secs = gp_rp_obj(g, "seconds");
    double ratio, wall, n, last;
    if (!g || !gp_rp_num(g, "wall_seconds", &wall)) {
        snprintf(row(s, "goodput")->v, 512, "n/a (no process reported a step or phase)");
        return;
    }
    char a[48], b2[48], c[48], d[48];
    bool hr = gp_rp_num(g, "ratio", &ratio), hn = gp_rp_num(g, "attempts", &n),
         hl = gp_rp_num(g, "last_step", &last);
    const char *big = gp_rp_str(g, "biggest_badput");
    const char *bigname = NULL;
    for (size_t i = 0; big && i < sizeof parts / sizeof parts[0]; i++)
        if (!strcmp(big, parts[i][0]))
            bigname = parts[i][1];
    snprintf(row(s, "goodput")->v, 512, "%s of %s over %s attempt%s (last step %s)",
             gp_rp_fmt_pct(a, sizeof a, hr, ratio), gp_rp_fmt_short(b2, sizeof b2, true, wall),
             gp_rp_fmt_count(c, sizeof c, hn, n), hn && n == 1 ? "" : "s",
             gp_rp_fmt_count(d, sizeof d, hl, last));
    snprintf(row(s, "top badput")->v, 512, "%s", bigname ? bigname : "none");
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        double v;
        bool ok = gp_rp_num(secs, parts[i][0], &v);
        snprintf(row(s, parts[i][1])->v, 512, "%s (%s)", gp_rp_fmt_short(a, sizeof a, ok, v),
                 gp_rp_fmt_pct(b2, sizeof b2, ok && wall > 0, wall > 0 ? v / wall : 0));
    }
}

static void host_section(const json_t *doc, struct gp_rp_model *m)
{
    struct gp_rp_section *s = &m->sec[GP_RP_SEC_HOST];
    s->title = "Host";
    const json_t *t = gp_rp_obj(doc, "totals");
    char a[48], b2[48];
    double v, cs;
    bool ok = gp_rp_num(t, "host_cpu_avg_cores", &v), hcs = gp_rp_num(t, "host_cpu_seconds", &cs);
    if (ok)
        snprintf(a, sizeof a, fabs(v) < 1e12 ? "%.2f" : "%.4g", v);
    else
        snprintf(a, sizeof a, GP_RP_NA);
    snprintf(row(s, "CPU")->v, 512, "%s cores on average (%s CPU-seconds)", a,
             gp_rp_fmt_count(b2, sizeof b2, hcs, hcs ? round(cs) : 0));
    ok = gp_rp_num(t, "host_rss_peak_bytes", &v);
    gp_rp_fmt_bytes(row(s, "RSS peak")->v, 512, ok, v);
}

void gp_rp_model_build(const json_t *doc, struct gp_rp_model *m)
{
    memset(m, 0, sizeof *m);
    job_section(doc, m);
    gpu_section(doc, m);
    steps_section(doc, m);
    goodput_section(doc, m);
    host_section(doc, m);
}

bool gp_rp_alert(const json_t *entry, struct gp_rp_alert *a)
{
    const char *kind = gp_rp_str(entry, "kind"), *sev = gp_rp_str(entry, "severity"),
               *state = gp_rp_str(entry, "state");
    if (!json_is_object(entry) || !kind)
        return false;
    snprintf(a->tag, sizeof a->tag, "alert %s, %s, %s", kind, sev ? sev : GP_RP_NA, state ? state : GP_RP_NA);
    a->text = gp_rp_str(entry, "summary");
    if (!a->text)
        a->text = kind;
    a->evidence = gp_rp_str(entry, "evidence");
    a->firing = state && !strcmp(state, "firing");
    return true;
}

const char *const gp_rp_gpu_titles[GP_RP_GPU_COLS] = {
    "NODE", "GPU", "MODEL", "PEAK MEM", "CAPACITY", "PEAK %", "ACTIVITY", "SOURCE"};
const unsigned char gp_rp_gpu_widths[GP_RP_GPU_COLS] = {14, 5, 26, 10, 10, 7, 9, 10};

/* Formats o[key]; separate statements, as C leaves the order of arguments open. */
static void bytes_at(char *out, size_t n, const json_t *o, const char *key)
{
    double v = 0;
    bool ok = gp_rp_num(o, key, &v);
    gp_rp_fmt_bytes(out, n, ok, v);
}

static void pct_at(char *out, size_t n, const json_t *o, const char *key)
{
    double v = 0;
    bool ok = gp_rp_num(o, key, &v);
    gp_rp_fmt_pct(out, n, ok, v);
}

void gp_rp_gpu_cells(const json_t *gpu, char cells[GP_RP_GPU_COLS][96])
{
    double ratio = 0;
    const char *node = gp_rp_str(gpu, "node"), *id = gp_rp_str(gpu, "gpu"),
               *model = gp_rp_str(gpu, "model"), *src = gp_rp_str(gpu, "activity_source");
    double idn;
    snprintf(cells[0], 96, "%s", node ? node : GP_RP_NA);
    if (id)
        snprintf(cells[1], 96, "%s", id);
    else if (gp_rp_num(gpu, "gpu", &idn) && fabs(idn) < 1e9)
        snprintf(cells[1], 96, "%d", (int)idn);
    else
        snprintf(cells[1], 96, GP_RP_NA);
    snprintf(cells[2], 96, "%s", model ? model : GP_RP_NA);
    bytes_at(cells[3], 96, gpu, "peak_memory_bytes");
    bytes_at(cells[4], 96, gpu, "memory_total_bytes");
    bool hr = gp_rp_gpu_peak_ratio(gpu, &ratio);
    gp_rp_fmt_pct(cells[5], 96, hr, ratio);
    pct_at(cells[6], 96, gpu, "activity_avg");
    snprintf(cells[7], 96, "%s", src ? src : GP_RP_NA);
}

void gp_rp_gpu_total_cells(const json_t *doc, char cells[GP_RP_GPU_COLS][96])
{
    const json_t *t = gp_rp_obj(doc, "totals");
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    snprintf(cells[0], 96, "all");
    snprintf(cells[1], 96, "%zu", json_array_size(gpus));
    snprintf(cells[2], 96, " ");
    bytes_at(cells[3], 96, t, "peak_gpu_memory_bytes");
    /* the capacity of the GPU that peaked highest is not in totals: sum is not meaningful */
    double cap = 0;
    bool same = json_array_size(gpus) > 0;
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        double c;
        if (!gp_rp_num(json_array_get(gpus, i), "memory_total_bytes", &c) || (i && c != cap))
            same = false;
        cap = c;
    }
    gp_rp_fmt_bytes(cells[4], 96, same, cap);
    pct_at(cells[5], 96, t, "peak_gpu_memory_ratio");
    pct_at(cells[6], 96, t, "activity_avg");
    const char *src = overall_source(doc);
    snprintf(cells[7], 96, "%s", src ? src : GP_RP_NA);
}

const char *const gp_rp_rank_titles[GP_RP_RANK_COLS] = {
    "RANK", "NODE", "STEP MEAN", "STEP BEST", "RELATIVE", "INDIVIDUAL", "MFU"};
const unsigned char gp_rp_rank_widths[GP_RP_RANK_COLS] = {6, 14, 10, 10, 9, 11, 8};

static void score_at(char *out, size_t n, const json_t *o, const char *key)
{
    double v = 0;
    if (gp_rp_num(o, key, &v))
        snprintf(out, n, "%.2f", v);
    else
        snprintf(out, n, GP_RP_NA);
}

bool gp_rp_rank_cells(const json_t *rank, char cells[GP_RP_RANK_COLS][96])
{
    double v, mean;
    const char *node = gp_rp_str(rank, "node");
    bool has_rank = gp_rp_num(rank, "rank", &v), has_mean = gp_rp_num(rank, "step_seconds_mean", &mean);
    if (!has_rank && !has_mean)
        return false;
    if (has_rank && fabs(v) < 1e9)
        snprintf(cells[0], 96, "%d", (int)v);
    else
        snprintf(cells[0], 96, GP_RP_NA);
    snprintf(cells[1], 96, "%s", node ? node : GP_RP_NA);
    gp_rp_fmt_short(cells[2], 96, has_mean, mean);
    bool ok = gp_rp_num(rank, "step_seconds_best", &v);
    gp_rp_fmt_short(cells[3], 96, ok, v);
    score_at(cells[4], 96, rank, "straggler_relative");
    score_at(cells[5], 96, rank, "straggler_individual");
    pct_at(cells[6], 96, rank, "mfu");
    return true;
}

bool gp_rp_ranks_shown(const json_t *doc)
{
    return json_array_size(gp_rp_arr(doc, "ranks")) > 1;
}

static double clamp01(double x)
{
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

void gp_rp_split(const json_t *doc, struct gp_rp_split *s)
{
    const json_t *t = gp_rp_obj(doc, "totals");
    memset(s, 0, sizeof *s);
    s->have_compute = gp_rp_num(t, "activity_avg", &s->compute);
    s->have_wait = gp_rp_num(t, "data_wait_ratio", &s->wait);
    s->compute = clamp01(s->compute);
    s->wait = clamp01(s->wait);
    if (s->have_compute) {
        if (s->wait > 1 - s->compute)
            s->wait = 1 - s->compute;
        s->idle = clamp01(1 - s->compute - s->wait);
    }
}
