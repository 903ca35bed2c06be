/*
 * check.c - the preflight's checks over one frame, and how a result is
 * written (check.h).
 *
 * Each check looks at every GPU (MIG instances are covered by their
 * parent) and adds one failed item per GPU that fails it; when none
 * fails it adds one item for the node: ok, or skipped when no GPU gave
 * the reading it needs (an old driver, a card without ECC). The reasons
 * name the GPU, what was read and what was expected, so a drained node's
 * reason says what to fix.
 */
#include "check.h"

#include "lib/err.h"
#include "lib/gpumodels.h"
#include "lib/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gp_check_names[GP_CK__COUNT] = {
#define GP_CK_NAME_(id, name, act) name,
    GP_CHECKS(GP_CK_NAME_)
#undef GP_CK_NAME_
};

static const enum gp_fault_action own_action[GP_CK__COUNT] = {
#define GP_CK_ACT_(id, name, act) GP_FA_##act,
    GP_CHECKS(GP_CK_ACT_)
#undef GP_CK_ACT_
};

/* Clock-event reasons that hold the clocks down on a healthy idle node
 * never: power capping (software or brake), thermal slowdown, hardware
 * slowdown. Idle, sync boost and display settings are normal. */
#define HELD_DOWN (0x4u | 0x8u | 0x20u | 0x40u | 0x80u)

static struct gp_check_item *add(struct gp_check_result *r, enum gp_check_id id,
                                 enum gp_check_status st, const struct gp_gpu *g,
                                 const struct gp_fault *fault, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static struct gp_check_item *add(struct gp_check_result *r, enum gp_check_id id,
                                 enum gp_check_status st, const struct gp_gpu *g,
                                 const struct gp_fault *fault, const char *fmt, ...)
{
    if (r->n == r->cap) {
        unsigned cap = r->cap ? r->cap * 2 : 32;
        struct gp_check_item *n = realloc(r->items, cap * sizeof *n);
        if (!n)
            return NULL;
        r->items = n;
        r->cap = cap;
    }
    struct gp_check_item *it = &r->items[r->n++];
    memset(it, 0, sizeof *it);
    it->id = id;
    it->status = st;
    it->gpu = g ? (int)g->index : -1;
    if (g)
        snprintf(it->uuid, sizeof it->uuid, "%s", g->uuid);
    it->fault = fault;
    it->action = fault ? fault->action : own_action[id];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->reason, sizeof it->reason, fmt, ap);
    va_end(ap);
    if (st == GP_CHECK_FAILED) {
        r->failed++;
        if (it->action > r->action)
            r->action = it->action;
    } else if (st == GP_CHECK_SKIPPED) {
        r->skipped++;
    }
    return it;
}

/* The node-wide item of a check no GPU failed. */
#define NODE_ITEM(id, have, ...)                                                                   \
    ((have) ? add(r, id, GP_CHECK_OK, NULL, NULL, __VA_ARGS__)                                     \
            : add(r, id, GP_CHECK_SKIPPED, NULL, NULL, "no GPU gives this reading"))

static bool is_gpu(const struct gp_gpu *g)
{
    return g->mig_gi < 0;
}

/* A per-GPU reading check: fails a GPU whose field f is valid and above 0. */
static int counter_check(const struct gp_frame *f, struct gp_check_result *r, enum gp_check_id id,
                         enum gp_gpu_field field, enum gp_fault_cond cond, const char *what,
                         const char *okwhy)
{
    unsigned have = 0, failed = r->failed;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (!is_gpu(g) || g->lost || !gp_gpu_has(g, field))
            continue;
        have++;
        if (g->val[field] > 0 &&
            !add(r, id, GP_CHECK_FAILED, g, gp_fault_cond(cond), "GPU %u: %s (%.0f)", g->index, what,
                 g->val[field]))
            return GP_ENOMEM;
    }
    if (r->failed == failed && !NODE_ITEM(id, have, "%s on %u GPU%s", okwhy, have, have == 1 ? "" : "s"))
        return GP_ENOMEM;
    return GP_OK;
}

/* A failed remap needs the card replaced; a pending one a reset. */
static int check_remap(const struct gp_frame *f, struct gp_check_result *r)
{
    unsigned have = 0, failed = r->failed;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (!is_gpu(g) || g->lost || !gp_gpu_has(g, GPF_REMAP_PENDING))
            continue;
        have++;
        bool fail = gp_gpu_has(g, GPF_REMAP_FAILURE) && g->val[GPF_REMAP_FAILURE] > 0;
        if ((fail || g->val[GPF_REMAP_PENDING] > 0) &&
            !add(r, GP_CK_REMAP, GP_CHECK_FAILED, g, gp_fault_cond(fail ? GP_FC_REMAP_FAILURE : GP_FC_REMAP_PENDING),
                 "GPU %u: %s", g->index, fail ? "a row remap failure" : "a row remap pending"))
            return GP_ENOMEM;
    }
    if (r->failed == failed && !NODE_ITEM(GP_CK_REMAP, have, "no row remap pending or failed on %u GPU%s", have,
                                           have == 1 ? "" : "s"))
        return GP_ENOMEM;
    return GP_OK;
}

static int check_present(const struct gp_frame *f, const struct gp_check_expect *e,
                         struct gp_check_result *r, unsigned ngpus)
{
    if (e->gpus && ngpus != e->gpus)
        return add(r, GP_CK_GPUS, GP_CHECK_FAILED, NULL, gp_fault_cond(GP_FC_LOST),
                   "%u GPU%s present, %u expected", ngpus, ngpus == 1 ? "" : "s", e->gpus)
                   ? GP_OK : GP_ENOMEM;
    if (!add(r, GP_CK_GPUS, GP_CHECK_OK, NULL, NULL, "%u GPU%s present%s", ngpus, ngpus == 1 ? "" : "s",
             e->gpus ? ", as expected" : " (no count expected)"))
        return GP_ENOMEM;
    unsigned failed = r->failed;
    if (e->model && *e->model) {
        for (unsigned i = 0; i < f->ngpus; i++) {
            const struct gp_gpu *g = &f->gpus[i];
            if (is_gpu(g) && !g->lost && !strcasestr(g->model, e->model) &&
                !add(r, GP_CK_MODEL, GP_CHECK_FAILED, g, NULL, "GPU %u is '%s', '%s' expected", g->index,
                     g->model, e->model))
                return GP_ENOMEM;
        }
        if (r->failed == failed && !add(r, GP_CK_MODEL, GP_CHECK_OK, NULL, NULL, "every GPU is a %s", e->model))
            return GP_ENOMEM;
    } else if (!add(r, GP_CK_MODEL, GP_CHECK_SKIPPED, NULL, NULL, "no model expected")) {
        return GP_ENOMEM;
    }
    failed = r->failed;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (is_gpu(g) && g->lost &&
            !add(r, GP_CK_LOST, GP_CHECK_FAILED, g, gp_fault_cond(GP_FC_LOST), "GPU %u fell off the bus%s%s%s",
                 g->index, g->pci_bus_id[0] ? " (" : "", g->pci_bus_id, g->pci_bus_id[0] ? ")" : ""))
            return GP_ENOMEM;
    }
    if (r->failed == failed && !add(r, GP_CK_LOST, GP_CHECK_OK, NULL, NULL, "every GPU answers"))
        return GP_ENOMEM;
    return GP_OK;
}

static int check_xids(const struct gp_frame *f, const struct gp_check_expect *e,
                      const struct gp_check_xids *xs, struct gp_check_result *r)
{
    if (!xs || !xs->read)
        return add(r, GP_CK_XID, GP_CHECK_SKIPPED, NULL, NULL, "%s",
                   xs && xs->why[0] ? xs->why : "the kernel log was not read") ? GP_OK : GP_ENOMEM;
    unsigned failed = r->failed, recent = 0;
    int64_t window_us = e->xid_window_ms * 1000;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (!is_gpu(g))
            continue;
        /* the strongest hardware XID of this GPU in the window, and how many */
        const struct gp_fault *worst = NULL;
        unsigned count = 0;
        int64_t newest = -1;
        for (unsigned k = 0; k < xs->n; k++) {
            const struct gp_kxid *x = &xs->x[k];
            if (x->ts_us < 0 || xs->now_us - x->ts_us > window_us || !gp_kxid_matches_bus(x, g->pci_bus_id))
                continue;
            recent++;
            const struct gp_fault *fx = gp_fault_xid(x->xid);
            /* an application's XID (13, 31, ...) was the last job's fault, not the node's */
            if (!fx->hardware || fx->action == GP_FA_NONE)
                continue;
            count++;
            if (x->ts_us > newest)
                newest = x->ts_us;
            worst = gp_fault_stronger(worst, fx);
        }
        if (worst && !add(r, GP_CK_XID, GP_CHECK_FAILED, g, worst, "GPU %u: %s, %u in the last %.0f h, newest %.0f min ago",
                          g->index, worst->title, count, (double)e->xid_window_ms / 3.6e6,
                          (double)(xs->now_us - newest) / 6e7))
            return GP_ENOMEM;
    }
    if (r->failed == failed &&
        !add(r, GP_CK_XID, GP_CHECK_OK, NULL, NULL, "no hardware XID in the last %.0f h (%u other XID%s: the application's, or asking nothing)%s",
             (double)e->xid_window_ms / 3.6e6, recent, recent == 1 ? "" : "s",
             xs->malformed ? "; some kernel log lines were malformed" : ""))
        return GP_ENOMEM;
    return GP_OK;
}

static int check_link_clocks(const struct gp_frame *f, struct gp_check_result *r)
{
    unsigned have = 0, failed = r->failed;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (!is_gpu(g) || g->lost || !gp_gpu_has(g, GPF_PCIE_LINK_WIDTH) || !gp_gpu_has(g, GPF_PCIE_MAX_LINK_WIDTH))
            continue;
        have++;
        /* width only: an idle link steps its generation down to save
         * power, and a node before its job is idle */
        if (g->val[GPF_PCIE_LINK_WIDTH] < g->val[GPF_PCIE_MAX_LINK_WIDTH] &&
            !add(r, GP_CK_PCIE, GP_CHECK_FAILED, g, gp_fault_cond(GP_FC_PCIE_DEGRADED),
                 "GPU %u: PCIe link x%.0f of x%.0f", g->index, g->val[GPF_PCIE_LINK_WIDTH],
                 g->val[GPF_PCIE_MAX_LINK_WIDTH]))
            return GP_ENOMEM;
    }
    if (r->failed == failed && !NODE_ITEM(GP_CK_PCIE, have, "PCIe links at their maximum width on %u GPU%s", have,
                                           have == 1 ? "" : "s"))
        return GP_ENOMEM;
    have = 0;
    failed = r->failed;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (!is_gpu(g) || g->lost || !g->clock_events_valid)
            continue;
        have++;
        uint64_t held = g->clock_events & HELD_DOWN;
        if (!held)
            continue;
        char names[160] = "";
        size_t len = 0;
#define GP_CE_NAME_(bit, name)                                                                     \
    if ((held & (bit)) && len < sizeof names)                                                      \
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", name);
        GP_CLOCK_EVENTS(GP_CE_NAME_)
#undef GP_CE_NAME_
        if (!add(r, GP_CK_CLOCKS, GP_CHECK_FAILED, g, gp_fault_cond(GP_FC_THROTTLED), "GPU %u: clocks held down (%s)",
                 g->index, names))
            return GP_ENOMEM;
    }
    if (r->failed == failed && !NODE_ITEM(GP_CK_CLOCKS, have, "no clocks held down on %u GPU%s", have, have == 1 ? "" : "s"))
        return GP_ENOMEM;
    return GP_OK;
}

static int check_thermal_power(const struct gp_frame *f, const struct gp_check_expect *e,
                               struct gp_check_result *r)
{
    unsigned have = 0, failed = r->failed;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (!is_gpu(g) || g->lost || !gp_gpu_has(g, GPF_GPU_TEMP))
            continue;
        have++;
        if (e->max_temp_c && g->val[GPF_GPU_TEMP] >= e->max_temp_c &&
            !add(r, GP_CK_TEMP, GP_CHECK_FAILED, g, NULL, "GPU %u at %.0f °C before its job, %u °C at most",
                 g->index, g->val[GPF_GPU_TEMP], e->max_temp_c))
            return GP_ENOMEM;
    }
    if (r->failed == failed &&
        !NODE_ITEM(GP_CK_TEMP, have, "every GPU below %u °C", e->max_temp_c))
        return GP_ENOMEM;
    have = 0;
    failed = r->failed;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        const struct gp_gpumodel *m = is_gpu(g) && !g->lost ? gp_gpumodel_find(g->model) : NULL;
        if (!m || !m->power_limit_w || !gp_gpu_has(g, GPF_POWER_LIMIT) || g->val[GPF_POWER_LIMIT] <= 0)
            continue;
        have++;
        double want = m->power_limit_w * e->min_power_pct / 100.0;
        if (g->val[GPF_POWER_LIMIT] < want &&
            !add(r, GP_CK_POWER, GP_CHECK_FAILED, g, NULL, "GPU %u: power limit %.0f W, below %u %% of the %s's %.0f W",
                 g->index, g->val[GPF_POWER_LIMIT], e->min_power_pct, m->short_name, m->power_limit_w))
            return GP_ENOMEM;
    }
    if (r->failed == failed &&
        !NODE_ITEM(GP_CK_POWER, have, "power limits at least %u %% of the model's default", e->min_power_pct))
        return GP_ENOMEM;
    return GP_OK;
}

static int check_driver(const struct gp_frame *f, const struct gp_check_expect *e, struct gp_check_result *r)
{
    if (!e->driver || !*e->driver)
        return add(r, GP_CK_DRIVER, GP_CHECK_SKIPPED, NULL, NULL,
                   "no fleet driver version known (give --driver-version or a server with GPUs)")
                   ? GP_OK : GP_ENOMEM;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (is_gpu(g) && g->driver[0] && strcmp(g->driver, e->driver))
            return add(r, GP_CK_DRIVER, GP_CHECK_FAILED, NULL, NULL, "driver %s, the fleet's is %s (%s)", g->driver,
                       e->driver, e->driver_source ? e->driver_source : "expected")
                       ? GP_OK : GP_ENOMEM;
    }
    return add(r, GP_CK_DRIVER, GP_CHECK_OK, NULL, NULL, "driver %s, as the fleet's (%s)", e->driver,
               e->driver_source ? e->driver_source : "expected")
               ? GP_OK : GP_ENOMEM;
}

/* NVML's 12040 as "12.4". */
static void cuda_text(int v, char *out, size_t len)
{
    snprintf(out, len, "%d.%d", v / 1000, v % 1000 / 10);
}

static int check_cuda(const struct gp_frame *f, const struct gp_check_expect *e, struct gp_check_result *r)
{
    if (!e->cuda || !*e->cuda)
        return add(r, GP_CK_CUDA, GP_CHECK_SKIPPED, NULL, NULL, "no fleet CUDA version given (cuda_version)")
                   ? GP_OK : GP_ENOMEM;
    char have[24];
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (!is_gpu(g) || g->cuda_version <= 0)
            continue;
        cuda_text(g->cuda_version, have, sizeof have);
        if (strcmp(have, e->cuda))
            return add(r, GP_CK_CUDA, GP_CHECK_FAILED, NULL, NULL, "the driver's CUDA is %s, the fleet's is %s", have,
                       e->cuda)
                       ? GP_OK : GP_ENOMEM;
        return add(r, GP_CK_CUDA, GP_CHECK_OK, NULL, NULL, "the driver's CUDA is %s, as the fleet's", have)
                   ? GP_OK : GP_ENOMEM;
    }
    return add(r, GP_CK_CUDA, GP_CHECK_SKIPPED, NULL, NULL, "NVML does not say the driver's CUDA version")
               ? GP_OK : GP_ENOMEM;
}

int gp_check_eval(const struct gp_frame *f, const struct gp_check_expect *e,
                  const struct gp_check_xids *xs, struct gp_check_result *r)
{
    memset(r, 0, sizeof *r);
    unsigned ngpus = 0;
    for (unsigned i = 0; i < f->ngpus; i++)
        ngpus += is_gpu(&f->gpus[i]);
    int rc = check_present(f, e, r, ngpus);
    if (!rc)
        rc = counter_check(f, r, GP_CK_ECC, GPF_ECC_DBE_VOL, GP_FC_ECC_DBE,
                           "uncorrectable ECC errors since the last reset", "no uncorrectable ECC error");
    if (!rc)
        rc = counter_check(f, r, GP_CK_RETIRE, GPF_RETIRED_PENDING, GP_FC_RETIRED_PENDING,
                           "pages pending retirement", "no page pending retirement");
    if (!rc)
        rc = check_remap(f, r);
    if (!rc)
        rc = check_xids(f, e, xs, r);
    if (!rc)
        rc = check_link_clocks(f, r);
    if (!rc)
        rc = check_thermal_power(f, e, r);
    if (!rc)
        rc = check_driver(f, e, r);
    if (!rc)
        rc = check_cuda(f, e, r);
    if (rc)
        gp_check_result_free(r);
    return rc;
}

void gp_check_result_free(struct gp_check_result *r)
{
    free(r->items);
    memset(r, 0, sizeof *r);
}

int gp_check_exit_code(const struct gp_check_result *r)
{
    return r->failed ? 1 : 0;
}

static const char *status_name(enum gp_check_status s)
{
    return s == GP_CHECK_OK ? "ok" : s == GP_CHECK_FAILED ? "failed" : "skipped";
}

void gp_check_json(const struct gp_check_result *r, const char *node, int64_t time_ms, unsigned ngpus,
                   struct gp_buf *b)
{
    gp_buf_puts(b, "{\"node\":");
    gp_json_str(b, node, strlen(node));
    gp_buf_puts(b, ",\"time\":");
    gp_json_time(b, time_ms);
    gp_buf_printf(b, ",\"status\":\"%s\",\"action\":\"%s\",\"gpus\":%u,\"failed\":%u,\"skipped\":%u,\"checks\":[",
                  r->failed ? "failed" : "ok", gp_fault_action_names[r->action], ngpus, r->failed, r->skipped);
    for (unsigned i = 0; i < r->n; i++) {
        const struct gp_check_item *it = &r->items[i];
        gp_buf_printf(b, "%s{\"check\":\"%s\",\"status\":\"%s\"", i ? "," : "", gp_check_names[it->id],
                      status_name(it->status));
        if (it->gpu >= 0) {
            gp_buf_printf(b, ",\"gpu\":%d,\"uuid\":", it->gpu);
            gp_json_str(b, it->uuid, strlen(it->uuid));
        }
        gp_buf_puts(b, ",\"reason\":");
        gp_json_str(b, it->reason, strlen(it->reason));
        if (it->status == GP_CHECK_FAILED) {
            gp_buf_printf(b, ",\"action\":\"%s\"", gp_fault_action_names[it->action]);
            if (it->fault) {
                gp_buf_puts(b, ",\"fault\":");
                gp_json_str(b, it->fault->name, strlen(it->fault->name));
                gp_buf_printf(b, ",\"severity\":\"%s\"", gp_severity_names[it->fault->severity]);
            }
        }
        gp_buf_puts(b, "}");
    }
    gp_buf_puts(b, "]}\n");
}

void gp_check_text(const struct gp_check_result *r, const char *node, struct gp_buf *b)
{
    for (int pass = 0; pass < 3; pass++) {
        enum gp_check_status want = pass == 0 ? GP_CHECK_FAILED : pass == 1 ? GP_CHECK_SKIPPED : GP_CHECK_OK;
        for (unsigned i = 0; i < r->n; i++) {
            const struct gp_check_item *it = &r->items[i];
            if (it->status != want)
                continue;
            gp_buf_printf(b, "%-7s %-24s %s", want == GP_CHECK_FAILED ? "FAILED" : want == GP_CHECK_SKIPPED ? "skipped" : "ok",
                          gp_check_names[it->id], it->reason);
            if (want == GP_CHECK_FAILED)
                gp_buf_printf(b, ": %s", gp_fault_action_words[it->action]);
            gp_buf_puts(b, "\n");
        }
    }
    if (r->failed)
        gp_buf_printf(b, "%s: %u check%s failed: %s\n", node, r->failed, r->failed == 1 ? "" : "s",
                      gp_fault_action_words[r->action]);
    else
        gp_buf_printf(b, "%s: ready (%u skipped)\n", node, r->skipped);
}
