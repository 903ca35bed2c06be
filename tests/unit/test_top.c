/* Tests of `gpulse top` without a terminal: layout, bars, numbers, sorting, keys, alerts, config. */
#include "agent/snapshot.h"
#include "lib/err.h"
#include "test.h"
#include "top/layout.h"
#include "top/top_agent.h"
#include "top/top_alerts.h"
#include "top/top_config.h"

#include <stdlib.h>

/* A frame of two H100s: GPU 0 with pids 300 (4 GiB) and 100 (8 GiB, job
 * train rank 1), GPU 1 with pid 200 (no host process: exited). */
static void make_frame(struct gp_frame *f, int64_t t_ms, double cpu_scale)
{
    gp_frame_reset(f);
    f->time_ms = t_ms;
    snprintf(f->hostname, sizeof f->hostname, "node-a");
    f->host.cpu_valid = true;
    f->host.ncpus = 4;
    /* 4 CPUs: per second 1 s user and 3 s idle -> 25 % busy */
    f->host.cpu_seconds[GP_CPU_USER] = 100 * cpu_scale;
    f->host.cpu_seconds[GP_CPU_IDLE] = 300 * cpu_scale;
    f->host.mem_valid = (1u << GP_MEM_TOTAL) | (1u << GP_MEM_AVAILABLE);
    f->host.mem_bytes[GP_MEM_TOTAL] = 64ull << 30;
    f->host.mem_bytes[GP_MEM_AVAILABLE] = 48ull << 30;
    f->host.load_valid = true;
    f->host.load[0] = 1.5;
    for (unsigned i = 0; i < 2; i++) {
        struct gp_gpu *g = gp_frame_add_gpu(f);
        g->index = i;
        g->job_idx = -1;
        snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3");
        gp_gpu_set(g, GPF_GPU_UTIL, i ? 97 : 42);
        gp_gpu_set(g, GPF_PROF_SM_ACTIVE, 0.5);
        gp_gpu_set(g, GPF_MEMORY_USED, (double)(i ? 76ull << 30 : 12ull << 30));
        gp_gpu_set(g, GPF_MEMORY_TOTAL, (double)(80ull << 30));
        gp_gpu_set(g, GPF_GPU_TEMP, 61);
        gp_gpu_set(g, GPF_POWER_USAGE, 350);
        gp_gpu_set(g, GPF_POWER_LIMIT, 700);
        gp_gpu_set(g, GPF_SM_CLOCK, 1755);
        gp_gpu_set(g, GPF_SM_CLOCK_MAX, 1980e6);
        g->clock_events_valid = true;
        g->clock_events = i ? 0x40 : 0x1; /* gpu_idle is no throttling: not flagged */
        gp_gpu_set(g, GPF_ECC_SBE_VOL, 0);
        gp_gpu_set(g, GPF_ECC_DBE_VOL, i);
    }
    f->gpus[1].nxids = 1;
    f->gpus[1].xids[0] = (struct gp_xid_count){48, 2};
    struct gp_gpu_proc *p = gp_gpu_add_proc(&f->gpus[0]);
    *p = (struct gp_gpu_proc){.pid = 300, .mem_valid = true, .mem_bytes = 4ull << 30};
    p = gp_gpu_add_proc(&f->gpus[0]);
    *p = (struct gp_gpu_proc){.pid = 100, .mem_valid = true, .mem_bytes = 8ull << 30, .util_valid = true,
                              .sm_util = 55};
    p = gp_gpu_add_proc(&f->gpus[1]);
    *p = (struct gp_gpu_proc){.pid = 200, .mem_valid = true, .mem_bytes = 1ull << 30};
    struct gp_proc *h = gp_frame_add_proc(f);
    h->pid = 300;
    h->uid = 0;
    snprintf(h->comm, sizeof h->comm, "python3");
    h->utime_s = 10 * cpu_scale;
    h->rss_bytes = 3ull << 30;
    h = gp_frame_add_proc(f);
    h->pid = 100;
    h->uid = 1000;
    snprintf(h->comm, sizeof h->comm, "torchrun");
    h->utime_s = 20 * cpu_scale;
    snprintf(h->jid.job, sizeof h->jid.job, "train");
    h->jid.rank = 1;
    gp_frame_sort_procs(f);
}

static void test_columns_by_width(void)
{
    bool on[GP_TC__COUNT];
    unsigned cmd = gp_top_columns(200, on);
    for (int c = 0; c < GP_TC__COUNT; c++)
        CHECK(on[c]);
    CHECK(cmd > 8);
    cmd = gp_top_columns(80, on); /* 78 columns with COMMAND at its minimum: all fit */
    for (int c = 0; c < GP_TC__COUNT; c++)
        CHECK(on[c]);
    CHECK_INT(cmd, 10);
    /* 70 columns: RSS and USER go first (highest drop rank), the rest fits */
    cmd = gp_top_columns(70, on);
    CHECK(!on[GP_TC_RSS]);
    CHECK(!on[GP_TC_USER]);
    CHECK(on[GP_TC_JOB] && on[GP_TC_CPU] && on[GP_TC_SM] && on[GP_TC_PID] && on[GP_TC_GPUMEM]);
    CHECK(cmd >= 8);
    /* 30 columns: only what is never dropped */
    cmd = gp_top_columns(30, on);
    CHECK(on[GP_TC_PID] && on[GP_TC_GPU] && on[GP_TC_GPUMEM] && on[GP_TC_COMMAND]);
    CHECK(!on[GP_TC_JOB] && !on[GP_TC_RANK] && !on[GP_TC_SM] && !on[GP_TC_CPU]);
    CHECK_INT(cmd, 9); /* 7 + 3 + 8 + 8 and three blanks: one column left over for COMMAND */
}

static void test_bar(void)
{
    char b[64];
    unsigned fill;
    gp_top_bar(b, 12, 0.5, "50%", &fill);
    CHECK_STR(b, "[|||||  50%]");
    CHECK_INT(fill, 5);
    gp_top_bar(b, 12, 1.7, "170%", &fill); /* clamped; the label wins over the fill */
    CHECK_STR(b, "[||||||170%]");
    CHECK_INT(fill, 6);
    gp_top_bar(b, 12, -1, "", &fill);
    CHECK_STR(b, "[          ]");
    CHECK_INT(fill, 0);
    gp_top_bar(b, 12, NAN, "x", &fill);
    CHECK_STR(b, "[         x]");
    gp_top_bar(b, 6, 0.2, "a long label", &fill); /* cut to the inside */
    CHECK_STR(b, "[a lo]");
    CHECK_INT(fill, 0);
    gp_top_bar(b, 2, 1, "x", &fill);
    CHECK_STR(b, "[]");
    gp_top_bar(b, 22, 0.25, NULL, &fill);
    CHECK_STR(b, "[|||||               ]");
    CHECK_INT(fill, 5);
}

static void test_fmt_bytes(void)
{
    char s[16];
    gp_top_fmt_bytes(s, sizeof s, 0);
    CHECK_STR(s, "0B");
    gp_top_fmt_bytes(s, sizeof s, 1023);
    CHECK_STR(s, "1023B");
    gp_top_fmt_bytes(s, sizeof s, 1024);
    CHECK_STR(s, "1.0K");
    gp_top_fmt_bytes(s, sizeof s, 1536);
    CHECK_STR(s, "1.5K");
    gp_top_fmt_bytes(s, sizeof s, 10ull << 20);
    CHECK_STR(s, "10M");
    gp_top_fmt_bytes(s, sizeof s, 85520809984ull); /* an H100's 79.6 GiB */
    CHECK_STR(s, "80G");
    gp_top_fmt_bytes(s, sizeof s, (uint64_t)(9.97 * 1073741824.0)); /* never "10.0G" */
    CHECK_STR(s, "10G");
    gp_top_fmt_bytes(s, sizeof s, 3ull << 40);
    CHECK_STR(s, "3.0T");
    gp_top_fmt_bytes(s, sizeof s, UINT64_MAX);
    CHECK_STR(s, "16E");
}

static void test_sort(void)
{
    struct gp_top_proc r[5];
    memset(r, 0, sizeof r);
    uint32_t pids[] = {5, 3, 9, 1, 7};
    uint64_t mem[] = {100, 300, 200, 300, 0};
    for (int i = 0; i < 5; i++) {
        r[i].pid = pids[i];
        r[i].gpu = (unsigned)(i % 2);
        r[i].mem_valid = i != 4; /* pid 7: unknown memory */
        r[i].gpu_mem_bytes = mem[i];
        r[i].rank = -1;
    }
    snprintf(r[0].job, sizeof r[0].job, "b");
    snprintf(r[2].job, sizeof r[2].job, "a");
    gp_top_sort(r, 5, GP_TC_GPUMEM, false); /* largest first, ties by pid, unknown last */
    CHECK_INT(r[0].pid, 1);
    CHECK_INT(r[1].pid, 3);
    CHECK_INT(r[2].pid, 9);
    CHECK_INT(r[3].pid, 5);
    CHECK_INT(r[4].pid, 7);
    gp_top_sort(r, 5, GP_TC_GPUMEM, true);
    CHECK_INT(r[0].pid, 7);
    CHECK_INT(r[4].pid, 1);
    gp_top_sort(r, 5, GP_TC_PID, false);
    for (int i = 0; i < 4; i++)
        CHECK(r[i].pid < r[i + 1].pid);
    gp_top_sort(r, 5, GP_TC_JOB, false); /* a, b, then the jobless by pid */
    CHECK_STR(r[0].job, "a");
    CHECK_STR(r[1].job, "b");
    CHECK_INT(r[2].pid, 1);
    CHECK_INT(r[4].pid, 7);
    CHECK_INT(gp_top_col_parse("gpumem"), GP_TC_GPUMEM);
    CHECK_INT(gp_top_col_parse("command"), GP_TC_COMMAND);
    CHECK_INT(gp_top_col_parse("GPUMEM"), -1);
    CHECK_STR(gp_top_col_name(GP_TC_RSS), "rss");
}

static void test_view_update_cpu(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    struct gp_top_view v;
    gp_top_view_init(&v);
    make_frame(&f, 1000000, 1.0);
    CHECK_INT(gp_top_view_update(&v, &f), GP_OK);
    CHECK(!v.cpu_valid); /* one frame: no rate yet */
    CHECK_INT(v.nprocs, 3);
    CHECK_INT(v.procs[0].pid, 100); /* 8 GiB first */
    CHECK_STR(v.procs[0].job, "train");
    CHECK_INT(v.procs[0].rank, 1);
    CHECK_STR(v.procs[0].user, "1000"); /* no name lookup given */
    CHECK(!v.procs[0].cpu_valid);
    CHECK(!v.procs[2].host); /* pid 200 is gone from /proc */
    CHECK_INT(v.procs[2].pid, 200);
    /* 2 s later: host counters x1.02 -> 2 s user, 6 s idle: 25 %;
     * pid 100 used 0.4 s of CPU in 2 s: 20 %; pid 300 0.2 s: 10 % */
    make_frame(&f, 1002000, 1.02);
    CHECK_INT(gp_top_view_update(&v, &f), GP_OK);
    CHECK(v.cpu_valid);
    CHECK_DBL(v.cpu_pct, 25.0, 1e-9);
    CHECK_INT(v.procs[0].pid, 100);
    CHECK(v.procs[0].cpu_valid);
    CHECK_DBL(v.procs[0].cpu_pct, 20.0, 1e-9);
    CHECK_DBL(v.procs[1].cpu_pct, 10.0, 1e-9);
    gp_top_view_free(&v);
    gp_frame_free(&f);
}

/* The rendered grid as text (static buffer). */
static const char *text_of(const struct gp_top_screen *s)
{
    static char out[65536];
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_top_screen_text(s, &b);
    snprintf(out, sizeof out, "%s", b.data ? b.data : "");
    gp_buf_free(&b);
    return out;
}

static void test_render_wide_and_narrow(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    struct gp_top_view v;
    gp_top_view_init(&v);
    struct gp_top_screen s = {0};
    make_frame(&f, 1000000, 1.0);
    gp_top_view_update(&v, &f);
    make_frame(&f, 1002000, 1.02);
    gp_top_view_update(&v, &f);

    CHECK_INT(gp_top_render(&v, &f, &s, 160, 0), GP_OK);
    const char *t = text_of(&s);
    CHECK_CONTAINS(t, "gpulse top  node-a");
    CHECK_CONTAINS(t, "GPU 0 NVIDIA H100 80GB HBM3  61C  350/700W");
    CHECK_CONTAINS(t, "SM 1755/1980MHz");
    CHECK_CONTAINS(t, "THROTTLE hw_thermal_slowdown  ECC sbe 0 dbe 1  XID 48(x2)");
    CHECK(!strstr(t, "gpu_idle"));
    CHECK(strstr(t, "ECC") > strstr(t, "GPU 1 ")); /* GPU 0: no errors, no flag */
    CHECK_CONTAINS(t, "42%]");
    CHECK_CONTAINS(t, "12.0/80.0G]");
    CHECK_CONTAINS(t, "25.0%]");
    CHECK_CONTAINS(t, "16G/64G]");
    CHECK_CONTAINS(t, "load 1.50");
    CHECK_CONTAINS(t, "USER");
    CHECK_CONTAINS(t, "RSS");
    CHECK_CONTAINS(t, "8192MiB");
    CHECK_CONTAINS(t, "torchrun");
    /* the bar fill takes its level's attribute: GPU 1 at 97 % is critical */
    int crit = 0;
    for (unsigned r = 0; r < s.nrows; r++)
        for (unsigned c = 0; c < s.w; c++)
            crit += s.attr[r * s.w + c] == GP_TA_CRIT;
    CHECK(crit > 10);

    /* 50 columns, 20 rows: every row exactly 50 wide, the status line last,
     * columns dropped, nothing wrapped onto a second row */
    CHECK_INT(gp_top_render(&v, &f, &s, 50, 20), GP_OK);
    CHECK_INT(s.nrows, 20);
    CHECK_INT(s.w, 50);
    t = text_of(&s);
    CHECK(!strstr(t, "USER"));
    CHECK(!strstr(t, "RSS"));
    CHECK(!strstr(t, "CPU%"));
    CHECK_CONTAINS(t, "torchrun");
    CHECK_CONTAINS(t, "GPU 0 NVIDIA H100 80GB HBM3  61C");
    CHECK(!strstr(t, "SM 1755")); /* clocks dropped whole, not cut */
    CHECK_CONTAINS(gp_top_screen_row(&s, 19), " h help");
    CHECK_INT(s.attr[19 * 50], GP_TA_HEADER);

    /* 30 columns: one bar per GPU, still one line each */
    CHECK_INT(gp_top_render(&v, &f, &s, 30, 14), GP_OK);
    t = text_of(&s);
    CHECK_CONTAINS(t, "MEM [");
    CHECK(!strstr(t, "UTIL ["));

    /* so short that the processes do not fit: the status line stays */
    CHECK_INT(gp_top_render(&v, &f, &s, 80, 4), GP_OK);
    CHECK_INT(s.nrows, 4);
    CHECK_CONTAINS(gp_top_screen_row(&s, 3), "h help");
    gp_top_screen_free(&s);
    gp_top_view_free(&v);
    gp_frame_free(&f);
}

/* Every size from 1x0 to 40x8: exactly h rows (all of them when h is 0),
 * each exactly w wide, the status line last, never a crash. */
static void test_render_tiny_terminals(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    struct gp_top_view v;
    gp_top_view_init(&v);
    v.alerts_on = true;
    snprintf(v.alerts_err, sizeof v.alerts_err, "alerts: a long error message that does not fit anywhere at all");
    struct gp_top_screen s = {0};
    make_frame(&f, 1000000, 1.0);
    gp_top_view_update(&v, &f);
    for (unsigned w = 1; w <= 40; w++)
        for (unsigned h = 0; h <= 8; h++) {
            v.help = h % 2;
            CHECK_INT(gp_top_render(&v, &f, &s, w, h), GP_OK);
            CHECK_INT(s.w, w);
            if (h)
                CHECK_INT(s.nrows, h);
            else
                CHECK(s.nrows > 8);
            if (h > 1)
                CHECK_INT(s.attr[(h - 1) * w], GP_TA_HEADER);
        }
    gp_top_screen_free(&s);
    gp_top_view_free(&v);
    gp_frame_free(&f);
}

static void test_keys_scroll_help(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    struct gp_top_view v;
    gp_top_view_init(&v);
    struct gp_top_screen s = {0};
    make_frame(&f, 1000000, 1.0);
    gp_top_view_update(&v, &f);
    CHECK_INT(gp_top_view_key(&v, 'P', 2), GP_TOP_REDRAW);
    CHECK_INT(v.sort, GP_TC_PID);
    CHECK_INT(v.procs[0].pid, 100);
    CHECK_INT(gp_top_view_key(&v, 'P', 2), GP_TOP_REDRAW); /* again: reversed */
    CHECK(v.reverse);
    CHECK_INT(v.procs[0].pid, 300);
    CHECK_INT(gp_top_view_key(&v, 'r', 2), GP_TOP_REDRAW);
    CHECK(!v.reverse);
    CHECK_INT(gp_top_view_key(&v, '>', 2), GP_TOP_REDRAW);
    CHECK_INT(v.sort, GP_TC_USER);
    CHECK_INT(gp_top_view_key(&v, '<', 2), GP_TOP_REDRAW);
    CHECK_INT(gp_top_view_key(&v, '<', 2), GP_TOP_REDRAW);
    CHECK_INT(v.sort, GP_TC_COMMAND); /* wraps round */
    CHECK_INT(gp_top_view_key(&v, 'P', 2), GP_TOP_REDRAW);
    /* scrolling: 3 rows, 2 on screen: at most 1 down */
    CHECK_INT(gp_top_view_key(&v, GP_TOP_KEY_PGDN, 2), GP_TOP_REDRAW);
    CHECK_INT(v.scroll, 1);
    gp_top_view_key(&v, GP_TOP_KEY_DOWN, 2);
    CHECK_INT(v.scroll, 1);
    unsigned page = gp_top_page_rows(&v, &f, 12);
    CHECK_INT(page, 12 - (2 + 1 + 4) - 2);
    CHECK_INT(gp_top_render(&v, &f, &s, 100, 12), GP_OK);
    const char *t = text_of(&s);
    CHECK(!strstr(t, "torchrun")); /* pid 100 scrolled off */
    CHECK_CONTAINS(t, "   200 -");
    gp_top_view_key(&v, GP_TOP_KEY_HOME, 2);
    CHECK_INT(v.scroll, 0);
    gp_top_view_key(&v, GP_TOP_KEY_UP, 2);
    CHECK_INT(v.scroll, 0);
    CHECK_INT(gp_top_view_key(&v, 'h', 2), GP_TOP_REDRAW);
    CHECK_INT(gp_top_render(&v, &f, &s, 100, 30), GP_OK);
    t = text_of(&s);
    CHECK_CONTAINS(t, "Keys");
    CHECK_CONTAINS(t, "q            quit");
    CHECK(!strstr(t, "COMMAND"));
    CHECK_INT(gp_top_view_key(&v, GP_TOP_KEY_ESC, 2), GP_TOP_REDRAW);
    CHECK(!v.help);
    CHECK_INT(gp_top_view_key(&v, GP_TOP_KEY_ESC, 2), GP_TOP_NONE);
    CHECK_INT(gp_top_view_key(&v, 'x', 2), GP_TOP_NONE);
    CHECK_INT(gp_top_view_key(&v, 'q', 2), GP_TOP_QUIT);
    /* the interval ladder */
    v.interval_ms = 1000;
    gp_top_view_key(&v, '+', 2);
    CHECK_INT(v.interval_ms, 2000);
    gp_top_view_key(&v, '-', 2);
    gp_top_view_key(&v, '-', 2);
    CHECK_INT(v.interval_ms, 500);
    CHECK_INT(gp_top_interval_step(100, -1), 100);
    CHECK_INT(gp_top_interval_step(60000, 1), 60000);
    CHECK_INT(gp_top_interval_step(1500, 1), 2000);
    gp_top_screen_free(&s);
    gp_top_view_free(&v);
    gp_frame_free(&f);
}

static void test_render_alerts_and_lost(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    struct gp_top_view v;
    gp_top_view_init(&v);
    struct gp_top_screen s = {0};
    make_frame(&f, 1000000, 1.0);
    f.gpus[1].lost = true;
    gp_top_view_update(&v, &f);
    CHECK_INT(v.nprocs, 2); /* a lost GPU's processes are not shown */
    v.alerts_on = true;
    const char *j = "{\"status\":\"success\",\"data\":[{\"kind\":\"gpu_hot\",\"severity\":\"critical\","
                    "\"state\":\"firing\",\"labels\":{\"node\":\"node-a\",\"gpu\":\"1\"},\"summary\":\"GPU 1 "
                    "of node-a at 90 C\"}]}";
    char err[200];
    CHECK_INT(gp_top_alerts_parse(j, strlen(j), &v.alerts, err, sizeof err), GP_OK);
    v.alerts_valid = true;
    snprintf(v.alerts_err, sizeof v.alerts_err, "alerts: the server answered 401: unauthorized");
    CHECK_INT(gp_top_render(&v, &f, &s, 120, 30), GP_OK);
    const char *t = text_of(&s);
    CHECK_CONTAINS(t, "GPU 1 NVIDIA H100 80GB HBM3  LOST");
    CHECK_CONTAINS(t, "1 alert");
    CHECK_CONTAINS(t, "ALERTS  1 active, 1 firing");
    CHECK_CONTAINS(t, "critical firing  gpu_hot gpu 1  GPU 1 of node-a at 90 C");
    CHECK_CONTAINS(gp_top_screen_row(&s, 29), "| alerts: the server answered 401: unauthorized");
    CHECK_CONTAINS(t, "ALERTS  1 active, 1 firing  alerts: the server answered 401"); /* --once has no status line */
    /* no GPUs at all */
    gp_frame_reset(&f);
    gp_top_view_update(&v, &f);
    CHECK_INT(gp_top_render(&v, &f, &s, 120, 0), GP_OK);
    t = text_of(&s);
    CHECK_CONTAINS(t, "no GPUs found");
    CHECK_CONTAINS(t, "no processes on the GPUs");
    gp_top_screen_free(&s);
    gp_top_view_free(&v);
    gp_frame_free(&f);
}

static void test_alerts_parse_malformed(void)
{
    struct gp_top_alerts a;
    char err[200];
    const char *bad[] = {
        "", "{", "[]", "null", "{\"status\":\"success\"}", "{\"status\":\"success\",\"data\":{}}",
        "{\"status\":\"success\",\"data\":[1]}", "{\"status\":1,\"data\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(gp_top_alerts_parse(bad[i], strlen(bad[i]), &a, err, sizeof err), GP_EPARSE);
    const char *e = "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"bad node\\u001b[31m\"}";
    CHECK_INT(gp_top_alerts_parse(e, strlen(e), &a, err, sizeof err), GP_EPARSE);
    CHECK_STR(err, "bad node [31m"); /* the escape byte is gone */
    /* wrong types inside an alert are blanks, not errors; a terminal
     * escape in a summary is neutralised */
    const char *odd = "{\"status\":\"success\",\"data\":[{\"kind\":5,\"labels\":[],\"summary\":\"a\\u001b]0;x\\u0007b\"}]}";
    CHECK_INT(gp_top_alerts_parse(odd, strlen(odd), &a, err, sizeof err), GP_OK);
    CHECK_INT(a.total, 1);
    CHECK_STR(a.a[0].kind, "");
    CHECK_STR(a.a[0].summary, "a ]0;x b");
    /* more alerts than kept: counted all the same */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_buf_puts(&b, "{\"status\":\"success\",\"data\":[");
    for (int i = 0; i < 40; i++)
        gp_buf_printf(&b, "%s{\"state\":\"%s\",\"kind\":\"k%d\"}", i ? "," : "", i % 2 ? "firing" : "pending", i);
    gp_buf_puts(&b, "]}");
    CHECK_INT(gp_top_alerts_parse(b.data, b.len, &a, err, sizeof err), GP_OK);
    CHECK_INT(a.total, 40);
    CHECK_INT(a.n, GP_TOP_MAX_ALERTS);
    CHECK_INT(a.firing, 20);
    CHECK_STR(a.a[31].kind, "k31");
    gp_buf_free(&b);
}

static void test_fetch_unreachable(void)
{
    /* nothing listens on port 1 of loopback: an error with detail, no crash */
    struct gp_top_alerts a;
    char err[200];
    int rc = gp_top_alerts_fetch("http://127.0.0.1:1", "n", "", &a, err, sizeof err);
    CHECK_INT(rc, GP_ENET);
    CHECK_CONTAINS(err, "alerts: ");
}

static void test_config(void)
{
    struct gp_top_config t;
    struct gp_agent_config a;
    bool help = false;
    char err[300];
    gp_top_config_defaults(&t, &a);
    CHECK_STR(a.steps_socket, "");
    char *argv[] = {"-n", "3", "--sort", "cpu", "--simulate", "1x4xH100", "--no-color"};
    CHECK_INT(gp_top_config_from_args(&t, &a, 7, argv, &help, err, sizeof err), GP_OK);
    CHECK_INT(t.iterations, 3);
    CHECK_STR(t.sort, "cpu");
    CHECK_STR(a.simulate, "1x4xH100");
    CHECK(!t.color);
    CHECK_INT(gp_top_config_validate(&t, &a, err, sizeof err), GP_OK);
    snprintf(t.sort, sizeof t.sort, "memory");
    CHECK_INT(gp_top_config_validate(&t, &a, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "sort 'memory'");
    gp_top_config_defaults(&t, &a);
    snprintf(t.server, sizeof t.server, "ftp://x");
    CHECK_INT(gp_top_config_validate(&t, &a, err, sizeof err), GP_ECONFIG);
    gp_top_config_defaults(&t, &a);
    char *bad[] = {"--bogus"};
    CHECK(gp_top_config_from_args(&t, &a, 1, bad, &help, err, sizeof err) != GP_OK);
    /* --agent: a URL, and not with --simulate (whose view would it be?) */
    gp_top_config_defaults(&t, &a);
    snprintf(t.agent, sizeof t.agent, "127.0.0.1:9401");
    CHECK_INT(gp_top_config_validate(&t, &a, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "agent '127.0.0.1:9401' must start with http://");
    snprintf(t.agent, sizeof t.agent, "http://127.0.0.1:9401");
    CHECK_INT(gp_top_config_validate(&t, &a, err, sizeof err), GP_OK);
    snprintf(a.simulate, sizeof a.simulate, "1x1xH100");
    CHECK_INT(gp_top_config_validate(&t, &a, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "agent and simulate are both set");
}

/* The agent's snapshot of a frame (render + JSON, as /api/v1/snapshot)
 * into a frame again. */
static void snapshot_of(const struct gp_frame *f, struct gp_frame *out)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_expo_options o = {.hostname_label = "Hostname", .process_series = GP_PROC_SERIES_ALL};
    struct gp_agent_stats st = {0};
    CHECK_INT(gp_snapshot_render(&b, f, &o, &st), GP_OK);
    char err[300] = "";
    int rc = gp_top_snapshot_parse(b.data, b.len, out, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "parse of the agent's own snapshot: %s", err);
    gp_buf_free(&b);
}

/* --agent: a remote node's frames, through its snapshot, draw exactly as
 * the same frames sampled here (GPUs, readings, throttling, XIDs,
 * processes with users and CPU %, jobs, host). */
static void test_agent_snapshot_roundtrip(void)
{
    struct gp_frame f, r;
    gp_frame_init(&f);
    gp_frame_init(&r);
    struct gp_top_view vl, vr;
    gp_top_view_init(&vl);
    gp_top_view_init(&vr);
    struct gp_top_screen sl = {0}, sr = {0};
    for (int k = 0; k < 2; k++) {
        make_frame(&f, 1000000 + 2000 * k, 1.0 + 0.02 * k);
        struct gp_job *j = gp_frame_add_job(&f);
        snprintf(j->id.job, sizeof j->id.job, "train");
        j->id.rank = 1;
        j->id.local_rank = j->id.world_size = -1;
        f.gpus[0].job_idx = 0;
        snapshot_of(&f, &r);
        gp_top_view_update(&vl, &f);
        gp_top_view_update(&vr, &r);
    }
    CHECK_STR(r.hostname, "node-a");
    CHECK_INT(r.ngpus, 2);
    CHECK_INT(r.nprocs, 2);
    CHECK_INT(r.gpus[0].job_idx, 0);
    CHECK_INT(r.gpus[1].job_idx, -1);
    CHECK_STR(r.jobs[0].id.job, "train");
    CHECK_INT(r.gpus[1].xids[0].xid, 48);
    CHECK_DBL(r.gpus[0].procs[1].sm_util, 55, 1e-9);
    CHECK_INT(gp_top_render(&vl, &f, &sl, 160, 0), GP_OK);
    CHECK_INT(gp_top_render(&vr, &r, &sr, 160, 0), GP_OK);
    char local[65536];
    snprintf(local, sizeof local, "%s", text_of(&sl));
    CHECK_STR(text_of(&sr), local);
    CHECK_CONTAINS(local, "torchrun");
    gp_top_screen_free(&sl);
    gp_top_screen_free(&sr);
    gp_top_view_free(&vl);
    gp_top_view_free(&vr);
    gp_frame_free(&f);
    gp_frame_free(&r);
}

/* Whatever a peer answers, a clear error names the bad member, and the
 * frame is left empty. */
static void test_agent_snapshot_malformed(void)
{
    static const char *const bad[][2] = {
        {"", "not JSON"},
        {"{", "not JSON"},
        {"[]", "not an agent's snapshot"},
        {"{\"gpus\":{}}", "not an agent's snapshot"},
        {"{\"gpus\":[],\"gpus\":[]}", "not JSON"},
        {"{\"gpus\":[1]}", "gpus[] is not an object"},
        {"{\"gpus\":[{\"gpu\":-1}]}", "gpu is not a non-negative integer"},
        {"{\"gpus\":[{\"model\":5}]}", "model is not a string"},
        {"{\"gpus\":[{\"metrics\":{\"DCGM_FI_DEV_GPU_UTIL\":\"9\"}}]}",
         "DCGM_FI_DEV_GPU_UTIL is not a number"},
        {"{\"gpus\":[{\"metrics\":[]}]}", "metrics is not an object"},
        {"{\"gpus\":[{\"xid_errors\":{\"abc\":1}}]}", "xid_errors has a bad entry"},
        {"{\"gpus\":[{\"processes\":[{\"pid\":1,\"sm_ratio\":\"a\"}]}]}", "sm_ratio is not a number"},
        {"{\"gpus\":[{\"processes\":[7]}]}", "gpus[].processes[] is not an object"},
        {"{\"gpus\":[],\"host\":[]}", "host is not an object"},
        {"{\"gpus\":[],\"processes\":[{\"pid\":\"1\"}]}", "pid is not a non-negative integer"},
        {"{\"gpus\":[],\"processes\":{}}", "processes is not an array"},
        {"{\"gpus\":[],\"jobs\":[{\"rank\":\"x\"}]}", "rank is not a rank"},
        {"{\"gpus\":[],\"hostname\":[]}", "hostname is not a string"},
    };
    struct gp_frame f;
    gp_frame_init(&f);
    char err[300];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        make_frame(&f, 1000, 1.0); /* what a failed parse must not leave behind */
        int rc = gp_top_snapshot_parse(bad[i][0], strlen(bad[i][0]), &f, err, sizeof err);
        if (rc != GP_EPARSE || !strstr(err, bad[i][1]) || f.ngpus || f.nprocs)
            gp_test_fail(__FILE__, __LINE__, "%s: rc %d, \"%s\", %u GPUs", bad[i][0], rc, err, f.ngpus);
    }
    /* more GPUs than any agent serves: refused before any is read */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_buf_puts(&b, "{\"gpus\":[{}");
    for (unsigned i = 0; i < GP_TOP_AGENT_MAX_GPUS; i++)
        gp_buf_puts(&b, ",{}");
    gp_buf_puts(&b, "]}");
    CHECK_INT(gp_top_snapshot_parse(b.data, b.len, &f, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "gpus has too many entries");
    gp_buf_free(&b);
    /* the smallest snapshot: no GPUs (a machine without one) */
    CHECK_INT(gp_top_snapshot_parse("{\"gpus\":[]}", 11, &f, err, sizeof err), GP_OK);
    CHECK_INT(f.ngpus, 0);
    gp_frame_free(&f);
}

static void test_agent_fetch_unreachable(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    char err[300];
    CHECK_INT(gp_top_agent_fetch("http://127.0.0.1:1/", &f, err, sizeof err), GP_ENET);
    CHECK_CONTAINS(err, "agent http://127.0.0.1:1: snapshot: ");
    gp_frame_free(&f);
}

/* docs/top.md names every top key and its flag. */
static void test_docs_name_every_key(void)
{
    const char *doc = gp_test_repo_text("docs/top.md");
    struct gp_top_config t;
    struct gp_cfg_section s = gp_top_cfg_section(&t);
    for (size_t i = 0; i < s.nkeys; i++) {
        char needle[80];
        snprintf(needle, sizeof needle, "--%s", s.keys[i].flag);
        if (!strstr(doc, needle))
            gp_test_fail(__FILE__, __LINE__, "docs/top.md lacks %s", needle);
        snprintf(needle, sizeof needle, "`%s`", s.keys[i].yaml);
        if (!strstr(doc, needle))
            gp_test_fail(__FILE__, __LINE__, "docs/top.md lacks %s", needle);
    }
}

const struct gp_test gp_tests_top[] = {
    {"columns_by_width", test_columns_by_width},
    {"bar", test_bar},
    {"fmt_bytes", test_fmt_bytes},
    {"sort", test_sort},
    {"view_update_cpu", test_view_update_cpu},
    {"render_wide_and_narrow", test_render_wide_and_narrow},
    {"render_tiny_terminals", test_render_tiny_terminals},
    {"keys_scroll_help", test_keys_scroll_help},
    {"render_alerts_and_lost", test_render_alerts_and_lost},
    {"alerts_parse_malformed", test_alerts_parse_malformed},
    {"fetch_unreachable", test_fetch_unreachable},
    {"agent_snapshot_roundtrip", test_agent_snapshot_roundtrip},
    {"agent_snapshot_malformed", test_agent_snapshot_malformed},
    {"agent_fetch_unreachable", test_agent_fetch_unreachable},
    {"config", test_config},
    {"docs_name_every_key", test_docs_name_every_key},
    {0},
};
