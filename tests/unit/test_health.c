/* test_health.c - the health states (insight/health.h): faults to
 * states, since, stickiness, XID repeats and their window, marking a
 * node healthy (audited), the preflight note and state.db across a
 * reopen. */
#include "insight/health.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "state/state.h"
#include "test.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#define T0 1700000000000LL
#define MIN 60000LL

static struct gp_health *open_h(const char *dir, unsigned repeat)
{
    struct gp_health_options o = {.xid_repeat = repeat, .xid_window_ms = 24 * 60 * MIN};
    struct gp_health *h = NULL;
    char err[256];
    if (gp_health_open(&h, dir, &o, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "open: %s", err);
    return h;
}

/* A view of n GPUs "0".. on node n1, with one point. */
static void view_of(struct gp_view *v, unsigned n, int64_t t)
{
    CHECK_INT(gp_view_init(v, 1, t, 1000), GP_OK);
    for (unsigned i = 0; i < n; i++) {
        struct gp_view_gpu *g = gp_view_add_gpu(v);
        snprintf(g->node, sizeof g->node, "n1");
        snprintf(g->gpu, sizeof g->gpu, "%u", i);
        snprintf(g->uuid, sizeof g->uuid, "GPU-%u", i);
    }
}

static void observe(struct gp_health *h, const char *gpu, const struct gp_fault *f)
{
    struct gp_observation o;
    memset(&o, 0, sizeof o);
    snprintf(o.key.node, sizeof o.key.node, "n1");
    snprintf(o.key.gpu, sizeof o.key.gpu, "%s", gpu);
    o.bad = true;
    o.faults[0] = f;
    o.nfaults = 1;
    CHECK_INT(gp_health_observe(h, &o), GP_OK);
}

/* The JSON of node n1 into out. */
static const char *doc(struct gp_health *h, struct gp_buf *b)
{
    gp_buf_reset(b);
    CHECK_INT(gp_health_json(h, "n1", b), GP_OK);
    return b->len ? b->data : "";
}

static void expect(const char *doc, const char *part)
{
    if (!strstr(doc, part))
        gp_test_fail(__FILE__, __LINE__, "no %s in %s", part, doc);
}

static void test_states(void)
{
    struct gp_health *h = open_h(NULL, 3);
    struct gp_view v;
    struct gp_buf b = {0};
    view_of(&v, 3, T0);
    CHECK_INT(gp_health_tick(h, &v, T0, true), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_HEALTHY);
    expect(doc(h, &b), "\"state\":\"healthy\",\"since\":1700000000,\"action\":\"none\"");
    /* a warning degrades, a critical fault makes unhealthy; the node is its worst GPU */
    observe(h, "0", gp_fault_cond(GP_FC_THROTTLED));
    observe(h, "1", gp_fault_cond(GP_FC_REMAP_FAILURE));
    observe(h, "2", gp_fault_cond(GP_FC_REMAP_UNCORRECTABLE)); /* info: no reason */
    CHECK_INT(gp_health_tick(h, &v, T0 + MIN, true), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_UNHEALTHY);
    const char *d = doc(h, &b);
    expect(d, "\"node\":\"n1\",\"state\":\"unhealthy\",\"since\":1700000060,\"action\":\"drain_inspect\"");
    expect(d, "{\"gpu\":\"0\",\"uuid\":\"GPU-0\",\"state\":\"degraded\",\"since\":1700000060,"
              "\"action\":\"drain_inspect\",\"reasons\":1}");
    expect(d, "{\"gpu\":\"2\",\"uuid\":\"GPU-2\",\"state\":\"healthy\",\"since\":1700000000,"
              "\"action\":\"none\",\"reasons\":0}");
    /* the strongest reason first: the remap failure before the throttling */
    CHECK(strstr(d, "\"fault\":\"row_remap_failure\"") < strstr(d, "\"fault\":\"throttling_persistent\""));
    expect(d, "\"fault\":\"row_remap_failure\",\"xid\":0,\"repeat\":false,\"count\":0,"
              "\"state\":\"unhealthy\",\"severity\":\"critical\",\"action\":\"drain_inspect\","
              "\"action_text\":\"drain the node and inspect the hardware\",\"sticky\":true,"
              "\"present\":true");
    expect(d, "\"fault\":\"throttling_persistent\",\"xid\":0,\"repeat\":false,\"count\":0,"
              "\"state\":\"degraded\",\"severity\":\"warning\",\"action\":\"drain_inspect\","
              "\"action_text\":\"drain the node and inspect the hardware\",\"sticky\":false");
    /* the same findings a minute later: since stays */
    observe(h, "0", gp_fault_cond(GP_FC_THROTTLED));
    observe(h, "1", gp_fault_cond(GP_FC_REMAP_FAILURE));
    CHECK_INT(gp_health_tick(h, &v, T0 + 2 * MIN, true), GP_OK);
    expect(doc(h, &b), "\"state\":\"degraded\",\"since\":1700000060,");
    /* a tick whose detectors did not all run drops nothing */
    CHECK_INT(gp_health_tick(h, &v, T0 + 3 * MIN, false), GP_OK);
    expect(doc(h, &b), "{\"gpu\":\"0\",\"uuid\":\"GPU-0\",\"state\":\"degraded\"");
    /* throttling clears by itself; the remap failure sticks, no longer present */
    CHECK_INT(gp_health_tick(h, &v, T0 + 4 * MIN, true), GP_OK);
    d = doc(h, &b);
    expect(d, "{\"gpu\":\"0\",\"uuid\":\"GPU-0\",\"state\":\"healthy\",\"since\":1700000240,");
    expect(d, "\"fault\":\"row_remap_failure\",\"xid\":0,\"repeat\":false,\"count\":0,"
              "\"state\":\"unhealthy\",\"severity\":\"critical\",\"action\":\"drain_inspect\","
              "\"action_text\":\"drain the node and inspect the hardware\",\"sticky\":true,"
              "\"present\":false");
    CHECK(!strstr(d, "throttling_persistent"));
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_UNHEALTHY);
    gp_view_free(&v);
    gp_buf_free(&b);
    gp_health_close(h);
}

/* XID 13 counters of GPU 0 (count) and XID 48 of GPU 1 at tick t. */
static void tick_xids(struct gp_health *h, int64_t t, double c13, double c48)
{
    struct gp_view v;
    view_of(&v, 2, t);
    if (!isnan(c13))
        v.gpus[0].xids[v.gpus[0].nxids++] = (struct gp_view_xid){13, c13};
    if (!isnan(c48))
        v.gpus[1].xids[v.gpus[1].nxids++] = (struct gp_view_xid){48, c48};
    CHECK_INT(gp_health_tick(h, &v, t, true), GP_OK);
    gp_view_free(&v);
}

static void test_xid_repeats(void)
{
    struct gp_health *h = open_h(NULL, 3);
    struct gp_buf b = {0};
    /* counters there when the GPU is first seen are a baseline */
    tick_xids(h, T0, 5, NAN);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_HEALTHY);
    /* one application XID: degraded, restart the application */
    tick_xids(h, T0 + MIN, 6, NAN);
    const char *d = doc(h, &b);
    expect(d, "\"fault\":\"xid_13\",\"xid\":13,\"repeat\":false,\"count\":1,\"state\":\"degraded\","
              "\"severity\":\"warning\",\"action\":\"restart_app\"");
    expect(d, "\"sticky\":false");
    /* a counter that first appears on a known GPU counts from 0 (XID 48: sticky, unhealthy) */
    tick_xids(h, T0 + 2 * MIN, 6, 1);
    d = doc(h, &b);
    expect(d, "\"fault\":\"xid_48\",\"xid\":48,\"repeat\":false,\"count\":1,\"state\":\"unhealthy\","
              "\"severity\":\"critical\",\"action\":\"reset_gpu\"");
    /* a reset counter (the agent restarted) counts from its new value: the third XID 13 */
    tick_xids(h, T0 + 3 * MIN, 1, 1);
    tick_xids(h, T0 + 4 * MIN, 2, 1);
    d = doc(h, &b);
    expect(d, "\"fault\":\"xid_13\",\"xid\":13,\"repeat\":true,\"count\":3,\"state\":\"unhealthy\","
              "\"severity\":\"warning\",\"action\":\"drain_inspect\"");
    expect(d, "XID 13 graphics engine exception, 3 times in the window");
    CHECK(!strstr(d, "\"repeat\":false,\"count\":3")); /* the repeat replaces the single line */
    /* a day later the repeat and XID 48 stick; nothing new counted */
    tick_xids(h, T0 + 25 * 60 * MIN, 2, 1);
    d = doc(h, &b);
    expect(d, "\"fault\":\"xid_13\",\"xid\":13,\"repeat\":true");
    expect(d, "\"fault\":\"xid_48\"");
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_UNHEALTHY);
    gp_buf_free(&b);
    gp_health_close(h);

    /* below the repeat an application XID clears once the window passes it */
    h = open_h(NULL, 3);
    tick_xids(h, T0, 0, NAN);
    tick_xids(h, T0 + MIN, 2, NAN);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    tick_xids(h, T0 + 24 * 60 * MIN, 2, NAN);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    tick_xids(h, T0 + 24 * 60 * MIN + 2 * MIN, 2, NAN);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_HEALTHY);
    gp_health_close(h);

    /* health_xid_repeat 0: no repeats; 2 XIDs 13 stay a degraded GPU */
    h = open_h(NULL, 0);
    tick_xids(h, T0, 0, NAN);
    tick_xids(h, T0 + MIN, 5, NAN);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    gp_health_close(h);
}

static int count_rows(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

static void test_mark_healthy(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_health *h = open_h(dir, 3);
    struct gp_buf b = {0};
    tick_xids(h, T0, 0, 0);
    tick_xids(h, T0 + MIN, 1, 1);
    observe(h, "1", gp_fault_cond(GP_FC_LOST));
    tick_xids(h, T0 + 2 * MIN, 1, 1);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_UNHEALTHY);
    CHECK_INT(gp_health_mark_healthy(h, "n9", "bob", "", T0), GP_ENOTFOUND);
    CHECK_INT(gp_health_mark_healthy(h, "n1", "alice", "replaced GPU 1", T0 + 3 * MIN), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_HEALTHY);
    const char *d = doc(h, &b);
    expect(d, "\"node\":\"n1\",\"state\":\"healthy\",\"since\":1700000180,\"action\":\"none\",");
    expect(d, "\"reasons\":[]");
    sqlite3 *db;
    CHECK_INT(gp_state_open(&db, dir, NULL, 0), GP_OK);
    CHECK_INT(count_rows(db, "SELECT count(*) FROM audit WHERE kind='mark_healthy' AND node='n1'"
                             " AND decision='marked_healthy' AND at_ms=1700000180000 AND detail="
                             "'marked healthy by alice: replaced GPU 1; was unhealthy (GPU 0 xid_13,"
                             " GPU 1 xid_48, GPU 1 gpu_lost)'"),
              1);
    gp_state_close(db);
    /* the XIDs are forgotten (the counters do not move); a fault still
     * found comes back */
    observe(h, "1", gp_fault_cond(GP_FC_LOST));
    tick_xids(h, T0 + 4 * MIN, 1, 1);
    d = doc(h, &b);
    CHECK(!strstr(d, "xid_13") && !strstr(d, "xid_48"));
    expect(d, "\"fault\":\"gpu_lost\"");
    expect(d, "\"node\":\"n1\",\"state\":\"unhealthy\",\"since\":1700000240,\"action\":\"reboot\"");
    gp_buf_free(&b);
    gp_health_close(h);
}

static void test_persist(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_health *h = open_h(dir, 2);
    struct gp_buf a = {0}, b = {0};
    tick_xids(h, T0, 0, 0);
    tick_xids(h, T0 + MIN, 1, NAN);
    observe(h, "1", gp_fault_cond(GP_FC_PCIE_DEGRADED));
    tick_xids(h, T0 + 2 * MIN, 1, 0);
    CHECK_INT(gp_health_note_preflight(h, "n1", false, "GPU 3: a row remap pending", T0 + 2 * MIN),
              GP_OK);
    doc(h, &a);
    expect(a.data, "\"preflight\":{\"ok\":false,\"summary\":\"GPU 3: a row remap pending\","
                   "\"at\":1700000120}");
    gp_health_close(h);
    h = open_h(dir, 2);
    CHECK_STR(doc(h, &b), a.data);
    /* the XID 13 counter's value came back: no recount; one more is the repeat */
    tick_xids(h, T0 + 3 * MIN, 1, 0);
    CHECK(!strstr(doc(h, &b), "\"repeat\":true"));
    tick_xids(h, T0 + 4 * MIN, 2, 0);
    expect(doc(h, &b), "\"fault\":\"xid_13\",\"xid\":13,\"repeat\":true,\"count\":2");
    /* the pcie reason stuck across the reopen (hardware, drain and inspect) */
    expect(doc(h, &b), "\"fault\":\"pcie_link_degraded\"");
    struct gp_buf all = {0};
    CHECK_INT(gp_health_json(h, NULL, &all), GP_OK);
    CHECK(all.len && all.data[0] == '[' && strstr(all.data, "\"node\":\"n1\""));
    CHECK_INT(gp_health_json(h, "n2", &all), GP_ENOTFOUND);
    gp_buf_free(&all);
    gp_buf_free(&a);
    gp_buf_free(&b);
    gp_health_close(h);
}

/* A failed preflight makes a healthy node degraded at once, through
 * ticks, a mark-healthy and a reopen, until a passing one; a worse GPU
 * state still wins. */
static void test_preflight_state(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_health *h = open_h(dir, 3);
    struct gp_buf b = {0};
    tick_xids(h, T0, 0, 0);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_HEALTHY);
    CHECK_INT(gp_health_note_preflight(h, "n1", false, "1 check failed: reset the GPU", T0 + MIN), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    expect(doc(h, &b), "\"node\":\"n1\",\"state\":\"degraded\",\"since\":1700000060,");
    tick_xids(h, T0 + 2 * MIN, 0, 0);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    CHECK_INT(gp_health_mark_healthy(h, "n1", "alice", "", T0 + 3 * MIN), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    /* a GPU fault above the floor wins, and the floor is back when it goes */
    observe(h, "1", gp_fault_cond(GP_FC_LOST));
    tick_xids(h, T0 + 4 * MIN, 0, 0);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_UNHEALTHY);
    CHECK_INT(gp_health_mark_healthy(h, "n1", "alice", "", T0 + 5 * MIN), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    gp_health_close(h);
    h = open_h(dir, 3);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    tick_xids(h, T0 + 6 * MIN, 0, 0);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_DEGRADED);
    CHECK_INT(gp_health_note_preflight(h, "n1", true, "all checks passed", T0 + 7 * MIN), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n1"), GP_HS_HEALTHY);
    expect(doc(h, &b), "\"state\":\"healthy\",\"since\":1700000420,");
    /* a node known only from its failed preflight (no GPUs yet) */
    CHECK_INT(gp_health_note_preflight(h, "n5", false, "0 GPUs present", T0 + 8 * MIN), GP_OK);
    CHECK_INT(gp_health_node_state(h, "n5"), GP_HS_DEGRADED);
    /* /metrics' counts (gpulse_health_*) */
    observe(h, "1", gp_fault_cond(GP_FC_LOST));
    tick_xids(h, T0 + 9 * MIN, 0, 0);
    struct gp_health_stats hs;
    gp_health_stats(h, &hs);
    CHECK_INT(hs.nodes[GP_HS_HEALTHY], 0);
    CHECK_INT(hs.nodes[GP_HS_DEGRADED], 1);
    CHECK_INT(hs.nodes[GP_HS_UNHEALTHY], 1);
    CHECK_INT(hs.gpus[GP_HS_HEALTHY], 1);
    CHECK_INT(hs.gpus[GP_HS_DEGRADED], 0);
    CHECK_INT(hs.gpus[GP_HS_UNHEALTHY], 1);
    CHECK_INT(hs.preflight_failed, 1);
    gp_buf_free(&b);
    gp_health_close(h);
}

/* A view of the GPUs "node/gpu" in list (NULL-terminated), at t. */
static void tick_fleet(struct gp_health *h, int64_t t, const char *const *list)
{
    struct gp_view v;
    CHECK_INT(gp_view_init(&v, 1, t, 1000), GP_OK);
    for (; *list; list++) {
        struct gp_view_gpu *g = gp_view_add_gpu(&v);
        const char *slash = strchr(*list, '/');
        snprintf(g->node, sizeof g->node, "%.*s", (int)(slash - *list), *list);
        snprintf(g->gpu, sizeof g->gpu, "%s", slash + 1);
        snprintf(g->uuid, sizeof g->uuid, "GPU-%s", *list);
    }
    CHECK_INT(gp_health_tick(h, &v, t, true), GP_OK);
    gp_view_free(&v);
}

static int db_count(const char *dir, const char *sql)
{
    sqlite3 *db;
    CHECK_INT(gp_state_open(&db, dir, NULL, 0), GP_OK);
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    gp_state_close(db);
    return n;
}

/* GPUs and nodes that left the fleet are forgotten after forget_ms (a
 * node with a newer preflight stays), in memory and in state.db; a mark-
 * healthy forgets a node none of whose GPUs is in the view at once. */
static void test_forget(void)
{
    const int64_t DAY = 24 * 60 * MIN;
    const char *dir = gp_test_tmpdir();
    struct gp_health_options o = {.xid_repeat = 3, .xid_window_ms = DAY, .forget_ms = 7 * DAY};
    struct gp_health *h;
    char err[256];
    CHECK_INT(gp_health_open(&h, dir, &o, err, sizeof err), GP_OK);
    struct gp_buf b = {0};
    static const char *const all[] = {"n1/0", "n1/1", "n2/0", NULL}, *const n1[] = {"n1/0", NULL};
    tick_fleet(h, T0, all);
    observe(h, "1", gp_fault_cond(GP_FC_LOST));
    tick_fleet(h, T0 + MIN, all);
    CHECK_INT(gp_health_note_preflight(h, "n3", false, "0 GPUs present", T0 + 6 * DAY), GP_OK);
    tick_fleet(h, T0 + 7 * DAY, n1); /* not yet: seen 7 days ago to the minute */
    CHECK_INT(gp_health_json(h, "n2", &b), GP_OK);
    CHECK_INT(db_count(dir, "SELECT count(*) FROM health_gpus"), 3);
    tick_fleet(h, T0 + 7 * DAY + 2 * MIN, n1);
    gp_buf_reset(&b);
    CHECK_INT(gp_health_json(h, "n2", &b), GP_ENOTFOUND);
    CHECK(gp_health_knows(h, "n1") && !gp_health_knows(h, "n2") && gp_health_knows(h, "n3"));
    const char *d = doc(h, &b);
    CHECK(!strstr(d, "\"gpu\":\"1\""));
    expect(d, "\"state\":\"healthy\""); /* GPU 1's lost reason left with it */
    CHECK_INT(db_count(dir, "SELECT count(*) FROM health_gpus"), 1);
    CHECK_INT(db_count(dir, "SELECT count(*) FROM health_reasons"), 0);
    CHECK_INT(db_count(dir, "SELECT count(*) FROM health_nodes WHERE node IN ('n1', 'n3')"), 2);
    CHECK_INT(db_count(dir, "SELECT count(*) FROM health_nodes"), 2);
    /* n3, known by its preflight only, goes 7 days after it */
    tick_fleet(h, T0 + 13 * DAY + 2 * MIN, n1);
    CHECK(!gp_health_knows(h, "n3"));
    /* a GPU that comes back is new; finding still works after compaction */
    static const char *const back[] = {"n1/0", "n2/0", "n9/4", NULL};
    tick_fleet(h, T0 + 14 * DAY, back);
    CHECK(gp_health_knows(h, "n2") && gp_health_knows(h, "n9"));
    tick_fleet(h, T0 + 14 * DAY + MIN, back);
    struct gp_health_stats hs;
    gp_health_stats(h, &hs);
    CHECK_INT(hs.gpus[GP_HS_HEALTHY], 3);
    CHECK_INT(hs.nodes[GP_HS_HEALTHY], 3);
    /* mark-healthy of n2 while it is out of the view: forgotten at once */
    static const char *const without_n2[] = {"n1/0", "n9/4", NULL};
    tick_fleet(h, T0 + 14 * DAY + 2 * MIN, without_n2);
    CHECK_INT(gp_health_mark_healthy(h, "n1", "bob", "", T0 + 14 * DAY + 3 * MIN), GP_OK);
    CHECK(gp_health_knows(h, "n1")); /* in the view: kept */
    CHECK_INT(gp_health_mark_healthy(h, "n2", "bob", "decommissioned", T0 + 14 * DAY + 3 * MIN), GP_OK);
    CHECK(!gp_health_knows(h, "n2"));
    gp_health_close(h);
    CHECK_INT(gp_health_open(&h, dir, &o, err, sizeof err), GP_OK);
    CHECK(gp_health_knows(h, "n1") && !gp_health_knows(h, "n2") && gp_health_knows(h, "n9"));
    CHECK_INT(db_count(dir, "SELECT count(*) FROM health_gpus"), 2);
    gp_health_stats(h, &hs);
    CHECK_INT(hs.gpus[GP_HS_HEALTHY], 2);
    gp_buf_free(&b);
    gp_health_close(h);
}

static void test_options(void)
{
    struct gp_health *h;
    char err[128];
    struct gp_health_options o = {.xid_repeat = 3, .xid_window_ms = 0};
    CHECK_INT(gp_health_open(&h, NULL, &o, err, sizeof err), GP_EUSAGE);
    CHECK_STR(err, "health_xid_window must be above 0");
    o = (struct gp_health_options){.xid_repeat = 33, .xid_window_ms = MIN};
    CHECK_INT(gp_health_open(&h, NULL, &o, err, sizeof err), GP_EUSAGE);
}

/* A tick stays linear in the fleet: 10,000 GPUs on 1,250 nodes, 100 of
 * them throttled, one with a new XID; the first tick writes every GPU
 * to state.db, later ones only what changed. */
static void test_bench(void)
{
    struct gp_health *h = open_h(gp_test_tmpdir(), 3);
    struct gp_view v;
    CHECK_INT(gp_view_init(&v, 1, T0, 1000), GP_OK);
    for (unsigned i = 0; i < 10000; i++) {
        struct gp_view_gpu *g = gp_view_add_gpu(&v);
        snprintf(g->node, sizeof g->node, "node-%u", i / 8);
        snprintf(g->gpu, sizeof g->gpu, "%u", i % 8);
        g->xids[g->nxids++] = (struct gp_view_xid){13, 0};
    }
    int64_t t0 = gp_mono_ns();
    CHECK_INT(gp_health_tick(h, &v, T0, true), GP_OK);
    int64_t t1 = gp_mono_ns();
    double steady = 0;
    for (int k = 1; k <= 3; k++) {
        for (unsigned i = 0; i < 100; i++) {
            struct gp_observation o = {.bad = true, .nfaults = 1};
            snprintf(o.key.node, sizeof o.key.node, "%s", v.gpus[i * 97].node);
            snprintf(o.key.gpu, sizeof o.key.gpu, "%s", v.gpus[i * 97].gpu);
            o.faults[0] = gp_fault_cond(GP_FC_THROTTLED);
            CHECK_INT(gp_health_observe(h, &o), GP_OK);
        }
        v.gpus[k].xids[0].count = 1;
        int64_t a = gp_mono_ns();
        CHECK_INT(gp_health_tick(h, &v, T0 + k * MIN, true), GP_OK);
        steady += (double)(gp_mono_ns() - a) / 3e6;
    }
    CHECK_INT(gp_health_node_state(h, "node-0"), GP_HS_DEGRADED);
    printf("  health tick of 10000 GPUs: first %.1f ms (all written), steady %.1f ms\n",
           (double)(t1 - t0) / 1e6, steady);
    CHECK(steady < 2000);
    gp_view_free(&v);
    gp_health_close(h);
}

const struct gp_test gp_tests_health[] = {
    {"bench", test_bench},
    {"states", test_states},
    {"xid_repeats", test_xid_repeats},
    {"mark_healthy", test_mark_healthy},
    {"persist", test_persist},
    {"preflight_state", test_preflight_state},
    {"forget", test_forget},
    {"options", test_options},
    {0},
};
