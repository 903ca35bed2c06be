/*
 * test_expo_push.c - what the agent pushes is what /metrics shows.
 *
 * One frame, two sinks of the same walk: the text sink's exposition,
 * parsed back with the strict text parser (a scrape), and the series the
 * push builds (ingest/rw_build.h) viewed as the pusher encodes them.
 * Both are written as one canonical line per series (name, labels sorted
 * by name with empty values left out, the value's bits) and compared in
 * order: every family, label and value must agree. Frames: the simulated
 * fleet (jobs, steps, processes, with a process name that needs escaping)
 * and the stand-in NVML's scenarios (every field, events, MIG, a lost
 * GPU, jobs), with the pusher's own families added as the agent adds them.
 */
#include "agent/expo.h"
#include "ingest/push.h"
#include "ingest/rw_build.h"
#include "ingest/textparse.h"
#include "lib/bits.h"
#include "lib/err.h"
#include "lib/log.h"
#include "sources/source.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

#define FAKE_FULL GP_TEST_DATA_DIR "/../../build/fakenvml/full/libnvidia-ml.so.1"

/* Appends one canonical line per series of r to out. */
static void canon(struct gp_buf *out, const struct gp_batch *r)
{
    for (size_t i = 0; i < r->nseries; i++) {
        const struct gp_series *s = &r->series[i];
        for (size_t j = 0; j < s->nlabels; j++) {
            const struct gp_label *l = &s->labels[j];
            if (l->value.len)
                gp_buf_printf(out, "%.*s=\"%.*s\" ", (int)l->name.len, l->name.ptr, (int)l->value.len,
                              l->value.ptr);
        }
        double v = s->samples[0].value;
        /* NaN's bits differ (the text parser gives Prometheus's); a NaN is a NaN */
        char bits[24] = "NaN";
        if (v == v)
            snprintf(bits, sizeof bits, "%016llx", (unsigned long long)gp_f64_bits(v));
        gp_buf_printf(out, "= %s @%lld\n", bits, (long long)s->samples[0].timestamp_ms);
    }
}

/* Counts distinct __name__ values in a canonical text (they come grouped by family). */
static unsigned families(const char *canon_text)
{
    unsigned n = 0;
    char last[256] = "";
    for (const char *p = strstr(canon_text, "__name__=\""); p; p = strstr(p + 1, "__name__=\"")) {
        const char *v = p + 10, *e = strchr(v, '"');
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(e - v), v);
        n += strcmp(name, last) != 0;
        snprintf(last, sizeof last, "%s", name);
    }
    return n;
}

/* The walk as the agent makes it: the frame's families, then the pusher's. */
static int walk(struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f,
                const struct gp_expo_options *o, struct gp_push *p)
{
    struct gp_agent_stats st = {10, 1, 1700000000.5, 0.001};
    int rc = gp_expo_walk(x, s, f, o, &st);
    gp_push_walk_metrics(p, s);
    return rc ? rc : s->err;
}

static int accept_all(void *ctx, const struct gp_batch *req, char *msg, size_t msglen)
{
    (void)ctx, (void)req, (void)msg, (void)msglen;
    return 204;
}

/* Scraped and pushed series of f are the same, in every process-series
 * mode; returns the number of families (of the "all" mode). */
static unsigned check_same(const struct gp_frame *f, const char *what)
{
    struct gp_push_options po = {.local = accept_all, .queue_max = 1 << 20, .timeout_ms = 1000};
    struct gp_push *p;
    char err[512] = "";
    CHECK_INT(gp_push_start(&p, &po, err, sizeof err), GP_OK);
    unsigned fams = 0;
    const enum gp_proc_series modes[] = {GP_PROC_SERIES_GPU, GP_PROC_SERIES_ALL, GP_PROC_SERIES_NONE};
    for (int m = 0; m < 3; m++) {
        struct gp_expo_options o = {.hostname_label = m == 1 ? "hostname" : "Hostname", .process_series = modes[m]};
        struct gp_expo x = {0};
        struct gp_buf text, a, b;
        gp_buf_init(&text, 0);
        gp_buf_init(&a, 0);
        gp_buf_init(&b, 0);
        /* the scrape */
        struct gp_metric_text_sink ts;
        gp_metric_text_sink_init(&ts, &text);
        CHECK_INT(walk(&x, &ts.base, f, &o, p), GP_OK);
        struct gp_text_parser tp = {0};
        CHECK_INT(gp_text_parse(&tp, text.data, text.len, f->time_ms, err, sizeof err), GP_OK);
        canon(&a, &tp.req);
        /* the push */
        struct gp_rw_build rb = {0};
        struct gp_rw_build_sink ks;
        gp_rw_build_sink_init(&ks, &rb);
        CHECK_INT(walk(&x, &ks.base, f, &o, p), GP_OK);
        const struct gp_batch *req;
        CHECK_INT(gp_rw_build_view(&rb, f->time_ms, NULL, 0, &req), GP_OK);
        canon(&b, req);
        CHECK(tp.req.nseries > 0);
        if (tp.req.nseries != req->nseries || strcmp(a.data, b.data)) {
            size_t k = 0;
            while (a.data[k] && a.data[k] == b.data[k])
                k++;
            while (k && a.data[k - 1] != '\n')
                k--;
            gp_test_fail(__FILE__, __LINE__, "%s, mode %d: scraped %zu series, pushed %zu; first difference:\n"
                         "  scraped: %.300s\n  pushed:  %.300s", what, m, tp.req.nseries, req->nseries,
                         a.data + k, b.data + k);
        }
        if (m == 1)
            fams = families(a.data);
        gp_text_parser_free(&tp);
        gp_rw_build_free(&rb);
        gp_expo_free(&x);
        gp_buf_free(&text);
        gp_buf_free(&a);
        gp_buf_free(&b);
    }
    gp_push_stop(p);
    return fams;
}

/* A process whose name needs every escape of the text format. */
static void add_odd_process(struct gp_frame *f)
{
    struct gp_proc *hp = gp_frame_add_proc(f);
    CHECK(hp);
    hp->pid = 4242;
    hp->ppid = 1;
    snprintf(hp->comm, sizeof hp->comm, "a \"b\"\\c\nd");
    hp->state = 'R';
    hp->followed = true;
    hp->io_valid = true;
    hp->jid.rank = hp->jid.local_rank = hp->jid.world_size = -1;
    gp_frame_sort_procs(f);
}

static void test_simulated(void)
{
    const char *specs[] = {"1x8xH100", "2x4xA100,1x8xMI300X"};
    for (int k = 0; k < 2; k++) {
        struct gp_frame f;
        gp_frame_init(&f);
        char err[512] = "";
        struct gp_source_config cfg = {.simulate = specs[k], .hostname = "node-a", .seed = 7,
                                       .interval_ms = 1000};
        void *sim = NULL;
        unsigned errors = 0;
        CHECK_INT(gp_source_simulate.open(&cfg, &sim, err, sizeof err), GP_OK);
        snprintf(f.hostname, sizeof f.hostname, "node-a");
        for (int t = 0; t < 3; t++) { /* a few ticks: counters, steps and jobs under way */
            gp_frame_reset(&f);
            f.time_ms = 1700000000000 + 1000 * t;
            CHECK_INT(gp_source_simulate.sample(sim, &f, &errors), GP_OK);
        }
        add_odd_process(&f);
        f.src[GP_SRC_SIMULATE].active = true;
        unsigned fams = check_same(&f, specs[k]);
        CHECK(fams >= 40);
        gp_source_simulate.close(sim);
        gp_frame_free(&f);
    }
}

static void test_fake_nvml(void)
{
    if (access(FAKE_FULL, R_OK) != 0)
        gp_test_fail(__FILE__, __LINE__, "%s missing: build the stand-in NVML first (make fakenvml)", FAKE_FULL);
    gp_log_min = GP_LOG_ERROR;
    const char *scns[] = {"h100x8.scn", "events.scn", "mig.scn", "lost.scn", "jobs.scn"};
    for (size_t k = 0; k < sizeof scns / sizeof scns[0]; k++) {
        char rel[64];
        snprintf(rel, sizeof rel, "nvml/%s", scns[k]);
        setenv("GPULSE_FAKENVML_SCENARIO", gp_test_data(rel), 1);
        struct gp_source_config cfg = {.nvml_library = FAKE_FULL, .gpm = true, .interval_ms = 1000};
        void *st = NULL;
        char err[512] = "";
        CHECK_INT(gp_source_nvml.open(&cfg, &st, err, sizeof err), GP_OK);
        struct gp_frame f;
        gp_frame_init(&f);
        snprintf(f.hostname, sizeof f.hostname, "gpu-node-1");
        unsigned errors = 0;
        for (int t = 0; t < 2; t++) {
            gp_frame_reset(&f);
            f.time_ms = 1700000000000 + 1000 * t;
            CHECK_INT(gp_source_nvml.sample(st, &f, &errors), GP_OK);
        }
        add_odd_process(&f);
        f.src[GP_SRC_NVML].active = true;
        unsigned fams = check_same(&f, scns[k]);
        CHECK(fams >= 20);
        gp_source_nvml.close(st);
        gp_frame_free(&f);
    }
}

const struct gp_test gp_tests_expo_push[] = {
    {"simulated", test_simulated},
    {"fake_nvml", test_fake_nvml},
    {0},
};
