/*
 * nvml_read.c - one NVIDIA device's readings for one tick.
 *
 * Reads every GP_GPU_FIELDS value NVML can give, in the unit the metric
 * is exposed in (MiB for FB_*, W, mJ, MHz, Hz for *_CLOCK_MAX, %, ratios,
 * bytes/s), plus clock-event reasons, GPM profiling metrics and the
 * device's processes. Rules applied to every call:
 *  - NOT_SUPPORTED (or a missing symbol) leaves the validity bit unset
 *    and is remembered per device, so the call is not repeated each tick;
 *  - GPU_IS_LOST marks the device lost and stops reading it;
 *  - any other failure loses that reading and counts one error;
 *  - implausible values (utilization > 100 %, used > total, a process
 *    larger than the device) are dropped and counted.
 * Field values are batched: a fast set every tick (violations, memory
 * temperature, PCIe replay and byte counters) and a slow set (ECC,
 * retired pages, remapped rows) refreshed every gp_nvml_slow_interval_ms
 * and carried over, still valid, in between. A slow reading the field
 * values do not give (a driver without those ids answers NOT_SUPPORTED
 * per entry, or the whole call fails) is read through its dedicated
 * call instead: nvmlDeviceGetTotalEccErrors (ECC counts),
 * nvmlDeviceGetRetiredPages and ...PendingStatus (retired pages),
 * nvmlDeviceGetRemappedRows (remapped rows); same series, same values.
 * Nothing here allocates except when a process buffer has to grow.
 */
#include "lib/log.h"
#include "nvml_int.h"

#include <stdlib.h>
#include <string.h>

#define NV_MODULE "nvml"
#define MIB 1048576.0

#define BIT(c) (1u << (c))
#define USABLE(d, c) (!((d)->unsup & BIT(c)))

struct field_map {
    unsigned id;
    enum gp_gpu_field f;
    double scale;
};

static const struct field_map fast_fields[] = {
    {NVML_FI_DEV_PERF_POLICY_POWER, GPF_POWER_VIOLATION, 1e-3}, /* ns -> us */
    {NVML_FI_DEV_PERF_POLICY_THERMAL, GPF_THERMAL_VIOLATION, 1e-3},
    {NVML_FI_DEV_MEMORY_TEMP, GPF_MEMORY_TEMP, 1},
    {NVML_FI_DEV_PCIE_REPLAY_COUNTER, GPF_PCIE_REPLAY, 1},
    {NVML_FI_DEV_PCIE_COUNT_TX_BYTES, GPF_PCIE_TX_TOTAL, 1},
    {NVML_FI_DEV_PCIE_COUNT_RX_BYTES, GPF_PCIE_RX_TOTAL, 1},
};

static const struct field_map slow_fields[] = {
    {NVML_FI_DEV_ECC_SBE_VOL_TOTAL, GPF_ECC_SBE_VOL, 1},
    {NVML_FI_DEV_ECC_DBE_VOL_TOTAL, GPF_ECC_DBE_VOL, 1},
    {NVML_FI_DEV_ECC_SBE_AGG_TOTAL, GPF_ECC_SBE_AGG, 1},
    {NVML_FI_DEV_ECC_DBE_AGG_TOTAL, GPF_ECC_DBE_AGG, 1},
    {NVML_FI_DEV_RETIRED_SBE, GPF_RETIRED_SBE, 1},
    {NVML_FI_DEV_RETIRED_DBE, GPF_RETIRED_DBE, 1},
    {NVML_FI_DEV_RETIRED_PENDING, GPF_RETIRED_PENDING, 1},
    {NVML_FI_DEV_REMAPPED_COR, GPF_REMAP_COR, 1},
    {NVML_FI_DEV_REMAPPED_UNC, GPF_REMAP_UNC, 1},
    {NVML_FI_DEV_REMAPPED_FAILURE, GPF_REMAP_FAILURE, 1},
    {NVML_FI_DEV_REMAPPED_PENDING, GPF_REMAP_PENDING, 1},
};

#define NFAST (sizeof fast_fields / sizeof fast_fields[0])
#define NSLOW (sizeof slow_fields / sizeof slow_fields[0])

struct gpm_map {
    unsigned id;
    enum gp_gpu_field f;
    double scale;
    bool pct;
};

static const struct gpm_map gpm_metrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, GPF_PROF_GR_ACTIVE, 0.01, true},
    {NVML_GPM_METRIC_SM_UTIL, GPF_PROF_SM_ACTIVE, 0.01, true},
    {NVML_GPM_METRIC_SM_OCCUPANCY, GPF_PROF_SM_OCCUPANCY, 0.01, true},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, GPF_PROF_TENSOR, 0.01, true},
    {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, GPF_TENSOR_HMMA, 0.01, true},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, GPF_PROF_DRAM, 0.01, true},
    {NVML_GPM_METRIC_FP64_UTIL, GPF_PROF_FP64, 0.01, true},
    {NVML_GPM_METRIC_FP32_UTIL, GPF_PROF_FP32, 0.01, true},
    {NVML_GPM_METRIC_FP16_UTIL, GPF_PROF_FP16, 0.01, true},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, GPF_PROF_PCIE_TX, MIB, false},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, GPF_PROF_PCIE_RX, MIB, false},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, GPF_PROF_NVLINK_RX, MIB, false},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, GPF_PROF_NVLINK_TX, MIB, false},
};
#define NGPM (sizeof gpm_metrics / sizeof gpm_metrics[0])

/* Counts one reading dropped as implausible or failed, and says why at debug level. */
static void drop(unsigned *errors, const struct gp_gpu *g, const char *why)
{
    (*errors)++;
    gp_log(GP_LOG_DEBUG, NV_MODULE, "reading dropped", "gpu=%u why=\"%s\"", g->index, why);
}

/* Sets a percentage, dropping (and counting) values above 100. */
static void set_pct(struct gp_gpu *g, enum gp_gpu_field f, double v, unsigned *errors)
{
    if (v > 100.0) {
        drop(errors, g, "utilization above 100%");
        return;
    }
    gp_gpu_set(g, f, v);
}

static bool field_value(const nvmlFieldValue_t *v, double *out)
{
    switch (v->valueType) {
    case NVML_VALUE_TYPE_DOUBLE: *out = v->value.dVal; return true;
    case NVML_VALUE_TYPE_UNSIGNED_INT: *out = v->value.uiVal; return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: *out = (double)v->value.ulVal; return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: *out = (double)v->value.ullVal; return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: *out = (double)v->value.sllVal; return true;
    case NVML_VALUE_TYPE_SIGNED_INT: *out = v->value.siVal; return true;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: *out = v->value.usVal; return true;
    default: return false;
    }
}

/*
 * One batched field-value call for the entries of map not yet known
 * unsupported (bits in *unsup). Valid results go to g, or to the carry
 * when carry is true. Returns -2 when the GPU was lost.
 */
static int read_fields(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g,
                       const struct field_map *map, unsigned n, uint32_t *unsup, bool carry,
                       unsigned *errors)
{
    nvmlFieldValue_t v[16];
    unsigned idx[16], k = 0;
    for (unsigned i = 0; i < n; i++)
        if (!(*unsup & BIT(i))) {
            memset(&v[k], 0, sizeof v[k]);
            v[k].fieldId = map[i].id;
            idx[k++] = i;
        }
    if (k == 0 || !USABLE(d, GP_NC_FIELDS))
        return 0;
    int c = gp_nvml__check(st, d, st->s.fields(d->h, (int)k, v), GP_NC_FIELDS, "nvmlDeviceGetFieldValues",
                           errors);
    if (c)
        return c;
    for (unsigned j = 0; j < k; j++) {
        const struct field_map *m = &map[idx[j]];
        double x;
        if (v[j].nvmlReturn == NVML_ERROR_NOT_SUPPORTED || v[j].nvmlReturn == NVML_ERROR_NO_PERMISSION) {
            *unsup |= BIT(idx[j]);
            continue;
        }
        if (v[j].nvmlReturn == NVML_ERROR_GPU_IS_LOST) {
            gp_nvml__mark_lost(st, d, errors);
            return -2;
        }
        if (v[j].nvmlReturn != NVML_SUCCESS || !field_value(&v[j], &x) || x < 0) {
            drop(errors, g, "field value failed");
            continue;
        }
        x *= m->scale;
        if (m->f == GPF_MEMORY_TEMP && x > 200) { /* not a plausible temperature */
            drop(errors, g, "memory temperature above 200 C");
            continue;
        }
        if (carry) {
            d->carry[m->f] = x;
            d->carry_valid[m->f / 64] |= 1ull << (m->f % 64);
        } else {
            gp_gpu_set(g, m->f, x);
        }
    }
    return 0;
}

static bool carried(const struct gp_nvml_dev *d, enum gp_gpu_field f)
{
    return (d->carry_valid[f / 64] >> (f % 64)) & 1u;
}

/* Carries a reading a dedicated call gave; says so once per GPU. */
static void carry_dedicated(struct gp_nvml_dev *d, enum gp_gpu_field f, double v)
{
    d->carry[f] = v;
    d->carry_valid[f / 64] |= 1ull << (f % 64);
    if (!d->said_dedicated) {
        d->said_dedicated = true;
        gp_log(GP_LOG_INFO, NV_MODULE,
               "ECC and retirement counters read through their own NVML calls: field values do not offer them",
               "gpu=%u", d->index);
    }
}

/*
 * The slow set's dedicated calls, for each reading the field values left
 * unset (see the top comment). A call answering NOT_SUPPORTED (ECC mode
 * off, a pre-Ampere card without row remapping) is not asked again.
 * Returns -2 when the GPU was lost.
 */
static int read_slow_dedicated(struct gp_nvml *st, struct gp_nvml_dev *d, unsigned *errors)
{
    static const struct {
        int type, counter;
        enum gp_gpu_field f;
    } ecc[] = {
        {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, GPF_ECC_SBE_VOL},
        {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, GPF_ECC_DBE_VOL},
        {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, GPF_ECC_SBE_AGG},
        {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, GPF_ECC_DBE_AGG},
    };
    for (size_t i = 0; i < sizeof ecc / sizeof ecc[0]; i++) {
        if (carried(d, ecc[i].f) || !USABLE(d, GP_NC_ECC))
            continue;
        unsigned long long n = 0;
        int c = gp_nvml__check(st, d, st->s.ecc_total(d->h, ecc[i].type, ecc[i].counter, &n), GP_NC_ECC,
                               "nvmlDeviceGetTotalEccErrors", errors);
        if (c == -2)
            return c;
        if (c == 0)
            carry_dedicated(d, ecc[i].f, (double)n);
    }
    static const struct {
        int cause;
        enum gp_gpu_field f;
    } retired[] = {
        {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, GPF_RETIRED_SBE},
        {NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, GPF_RETIRED_DBE},
    };
    for (size_t i = 0; i < sizeof retired / sizeof retired[0]; i++) {
        if (carried(d, retired[i].f) || !USABLE(d, GP_NC_RETIRED))
            continue;
        /* a room of 0 asks for the count only: INSUFFICIENT_SIZE then says how many */
        unsigned long long addr[1];
        unsigned n = 0;
        nvmlReturn_t rc = st->s.retired(d->h, retired[i].cause, &n, addr);
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE)
            rc = NVML_SUCCESS;
        int c = gp_nvml__check(st, d, rc, GP_NC_RETIRED, "nvmlDeviceGetRetiredPages", errors);
        if (c == -2)
            return c;
        if (c == 0)
            carry_dedicated(d, retired[i].f, n);
    }
    if (!carried(d, GPF_RETIRED_PENDING) && USABLE(d, GP_NC_RETIRED_PENDING)) {
        int pending = 0;
        int c = gp_nvml__check(st, d, st->s.retired_pending(d->h, &pending), GP_NC_RETIRED_PENDING,
                               "nvmlDeviceGetRetiredPagesPendingStatus", errors);
        if (c == -2)
            return c;
        if (c == 0)
            carry_dedicated(d, GPF_RETIRED_PENDING, pending == NVML_FEATURE_ENABLED ? 1 : 0);
    }
    if (USABLE(d, GP_NC_REMAP) &&
        (!carried(d, GPF_REMAP_COR) || !carried(d, GPF_REMAP_UNC) || !carried(d, GPF_REMAP_FAILURE) ||
         !carried(d, GPF_REMAP_PENDING))) {
        unsigned cor = 0, unc = 0, pending = 0, failure = 0;
        int c = gp_nvml__check(st, d, st->s.remapped(d->h, &cor, &unc, &pending, &failure), GP_NC_REMAP,
                               "nvmlDeviceGetRemappedRows", errors);
        if (c == -2)
            return c;
        if (c == 0) {
            if (!carried(d, GPF_REMAP_COR))
                carry_dedicated(d, GPF_REMAP_COR, cor);
            if (!carried(d, GPF_REMAP_UNC))
                carry_dedicated(d, GPF_REMAP_UNC, unc);
            if (!carried(d, GPF_REMAP_FAILURE))
                carry_dedicated(d, GPF_REMAP_FAILURE, failure ? 1 : 0);
            if (!carried(d, GPF_REMAP_PENDING))
                carry_dedicated(d, GPF_REMAP_PENDING, pending ? 1 : 0);
        }
    }
    return 0;
}

/* Memory: v2 (reserved apart) where it works, else v1 (used includes reserved). */
static int read_memory(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, unsigned *errors)
{
    unsigned long long total = 0, used = 0, freeb = 0, reserved = 0;
    bool have_reserved = false, ok = false;
    if (USABLE(d, GP_NC_MEM2)) {
        nvmlMemory_v2_t m;
        memset(&m, 0, sizeof m);
        m.version = nvmlMemory_v2;
        int c = gp_nvml__check(st, d, st->s.mem2(d->h, &m), GP_NC_MEM2, "nvmlDeviceGetMemoryInfo_v2",
                               errors);
        if (c < 0)
            return c;
        if (c == 0) {
            total = m.total, used = m.used, freeb = m.free, reserved = m.reserved;
            have_reserved = ok = true;
        }
    }
    if (!ok && USABLE(d, GP_NC_MEM1)) {
        nvmlMemory_t m;
        memset(&m, 0, sizeof m);
        int c = gp_nvml__check(st, d, st->s.mem1(d->h, &m), GP_NC_MEM1, "nvmlDeviceGetMemoryInfo", errors);
        if (c)
            return c < 0 ? c : 0;
        total = m.total, used = m.used, freeb = m.free;
        ok = true;
    }
    if (!ok || total == 0) /* unified-memory parts report 0 */
        return 0;
    if (used > total || freeb > total || (have_reserved && reserved > total)) {
        drop(errors, g, "memory used above total");
        return 0;
    }
    d->mem_total = total;
    gp_gpu_set(g, GPF_MEMORY_TOTAL, (double)total);
    gp_gpu_set(g, GPF_MEMORY_USED, (double)used);
    gp_gpu_set(g, GPF_FB_USED, (double)used / MIB);
    gp_gpu_set(g, GPF_FB_FREE, (double)freeb / MIB);
    if (have_reserved)
        gp_gpu_set(g, GPF_FB_RESERVED, (double)reserved / MIB);
    return 0;
}

/* A plain unsigned reading: value * scale into f. */
static int read_uint(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, nvml_dev_uint_fn fn,
                     int call, const char *what, enum gp_gpu_field f, double scale, unsigned *errors)
{
    if (!USABLE(d, call))
        return 0;
    unsigned v = 0;
    int c = gp_nvml__check(st, d, fn(d->h, &v), call, what, errors);
    if (c == 0)
        gp_gpu_set(g, f, v * scale);
    return c < -1 ? c : 0;
}

static int read_clock(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, bool max, int type,
                      int call, enum gp_gpu_field f, double scale, unsigned *errors)
{
    if (!USABLE(d, call))
        return 0;
    unsigned v = 0;
    nvml_dev_enum_uint_fn fn = max ? st->s.max_clock : st->s.clock;
    int c = gp_nvml__check(st, d, fn(d->h, type, &v), call,
                           max ? "nvmlDeviceGetMaxClockInfo" : "nvmlDeviceGetClockInfo", errors);
    if (c == 0) {
        if (max) {
            d->carry[f] = v * scale;
            d->carry_valid[f / 64] |= 1ull << (f % 64);
        } else {
            gp_gpu_set(g, f, v * scale);
        }
    }
    return c < -1 ? c : 0;
}

static int read_basic(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, unsigned *errors)
{
    const struct gp_nvml_syms *s = &st->s;
    int c;
    if (USABLE(d, GP_NC_UTIL)) {
        nvmlUtilization_t u = {0, 0};
        c = gp_nvml__check(st, d, s->util(d->h, &u), GP_NC_UTIL, "nvmlDeviceGetUtilizationRates", errors);
        if (c == -2)
            return c;
        if (c == 0) {
            set_pct(g, GPF_GPU_UTIL, u.gpu, errors);
            set_pct(g, GPF_MEM_COPY_UTIL, u.memory, errors);
        }
    }
    for (int k = 0; k < 2; k++) {
        int call = k ? GP_NC_DEC : GP_NC_ENC;
        if (!USABLE(d, call))
            continue;
        unsigned u = 0, period = 0;
        c = gp_nvml__check(st, d, (k ? s->dec : s->enc)(d->h, &u, &period), call,
                           k ? "nvmlDeviceGetDecoderUtilization" : "nvmlDeviceGetEncoderUtilization",
                           errors);
        if (c == -2)
            return c;
        if (c == 0)
            set_pct(g, k ? GPF_DEC_UTIL : GPF_ENC_UTIL, u, errors);
    }
    if (USABLE(d, GP_NC_TEMP)) {
        unsigned t = 0;
        c = gp_nvml__check(st, d, s->temp(d->h, NVML_TEMPERATURE_GPU, &t), GP_NC_TEMP,
                           "nvmlDeviceGetTemperature", errors);
        if (c == -2)
            return c;
        if (c == 0) {
            if (t > 200)
                drop(errors, g, "temperature above 200 C");
            else
                gp_gpu_set(g, GPF_GPU_TEMP, t);
        }
    }
    if (read_uint(st, d, g, s->power, GP_NC_POWER, "nvmlDeviceGetPowerUsage", GPF_POWER_USAGE, 1e-3,
                  errors) ||
        read_uint(st, d, g, s->power_limit, GP_NC_PLIMIT, "nvmlDeviceGetEnforcedPowerLimit",
                  GPF_POWER_LIMIT, 1e-3, errors) ||
        read_uint(st, d, g, s->fan, GP_NC_FAN, "nvmlDeviceGetFanSpeed", GPF_FAN_SPEED, 0.01, errors) ||
        /* the link as trained now and the most the card and slot allow: a
         * link below its maximum is a fault (insight/faults.h) */
        read_uint(st, d, g, s->pcie_gen, GP_NC_PCIE_GEN, "nvmlDeviceGetCurrPcieLinkGeneration",
                  GPF_PCIE_LINK_GEN, 1, errors) ||
        read_uint(st, d, g, s->pcie_gen_max, GP_NC_PCIE_GEN_MAX, "nvmlDeviceGetMaxPcieLinkGeneration",
                  GPF_PCIE_MAX_LINK_GEN, 1, errors) ||
        read_uint(st, d, g, s->pcie_width, GP_NC_PCIE_WIDTH, "nvmlDeviceGetCurrPcieLinkWidth",
                  GPF_PCIE_LINK_WIDTH, 1, errors) ||
        read_uint(st, d, g, s->pcie_width_max, GP_NC_PCIE_WIDTH_MAX, "nvmlDeviceGetMaxPcieLinkWidth",
                  GPF_PCIE_MAX_LINK_WIDTH, 1, errors))
        return -2;
    if (USABLE(d, GP_NC_ENERGY)) {
        unsigned long long e = 0;
        c = gp_nvml__check(st, d, s->energy(d->h, &e), GP_NC_ENERGY,
                           "nvmlDeviceGetTotalEnergyConsumption", errors);
        if (c == -2)
            return c;
        if (c == 0)
            gp_gpu_set(g, GPF_TOTAL_ENERGY, (double)e);
    }
    if (read_clock(st, d, g, false, NVML_CLOCK_SM, GP_NC_CLK_SM, GPF_SM_CLOCK, 1, errors) ||
        read_clock(st, d, g, false, NVML_CLOCK_MEM, GP_NC_CLK_MEM, GPF_MEM_CLOCK, 1, errors))
        return -2;
    if (USABLE(d, GP_NC_EVENTS)) {
        unsigned long long r = 0;
        c = gp_nvml__check(st, d, s->clock_events(d->h, &r), GP_NC_EVENTS,
                           "nvmlDeviceGetCurrentClocksEventReasons", errors);
        if (c == -2)
            return c;
        if (c == 0) {
            g->clock_events_valid = true;
            g->clock_events = r;
        }
    }
    return 0;
}

/* GPM: one sample per tick into the ping-pong pair; metrics from the previous and this one. */
static int read_gpm(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, unsigned *errors)
{
    nvmlGpmSample_t cur = d->gpm[d->gpm_cur], prev = d->gpm[d->gpm_cur ^ 1];
    nvmlReturn_t rc = st->s.gpm_get(d->h, cur);
    int c = gp_nvml__check(st, d, rc, GP_NC_GPM, "nvmlGpmSampleGet", errors);
    if (c) {
        if (c == 1)
            d->gpm_on = false;
        d->gpm_have_prev = false;
        return c < -1 ? c : 0;
    }
    bool had_prev = d->gpm_have_prev;
    d->gpm_have_prev = true;
    d->gpm_cur ^= 1;
    if (!had_prev) /* first sample: nothing to compare yet (absent, not 0) */
        return 0;
    nvmlGpmMetricsGet_t *m = st->gpm_req;
    memset(m, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + NGPM * sizeof m->metrics[0]);
    m->version = NVML_GPM_METRICS_GET_VERSION;
    m->numMetrics = NGPM;
    m->sample1 = prev;
    m->sample2 = cur;
    for (unsigned i = 0; i < NGPM; i++)
        m->metrics[i].metricId = gpm_metrics[i].id;
    c = gp_nvml__check(st, d, st->s.gpm_metrics(m), GP_NC__COUNT, "nvmlGpmMetricsGet", errors);
    if (c == 1) /* ARGUMENT_VERSION_MISMATCH and friends: GPM unsupported here */
        d->gpm_on = false;
    if (c)
        return c < -1 ? c : 0;
    for (unsigned i = 0; i < NGPM; i++) {
        const struct gpm_map *gm = &gpm_metrics[i];
        const nvmlGpmMetric_t *x = &m->metrics[i];
        if (x->nvmlReturn == NVML_ERROR_NOT_SUPPORTED)
            continue;
        if (x->nvmlReturn != NVML_SUCCESS || !(x->value >= 0) || (gm->pct && x->value > 100.0)) {
            drop(errors, g, "GPM metric failed or out of range");
            continue;
        }
        gp_gpu_set(g, gm->f, x->value * gm->scale);
    }
    return 0;
}

/* Makes room for n process entries (32 bytes each); false when out of memory. */
static bool grow_procbuf(struct gp_nvml *st, unsigned n)
{
    if (n <= st->proc_cap)
        return true;
    if (n > 65536)
        return false;
    unsigned char *p = realloc(st->procbuf, (size_t)n * 32);
    if (!p)
        return false;
    st->procbuf = p;
    st->proc_cap = n;
    return true;
}

static int read_procs(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, unsigned *errors)
{
    if (!USABLE(d, GP_NC_PROCS))
        return 0;
    unsigned n = 0;
    nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 4 && rc == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
        n = st->proc_cap;
        rc = st->s.procs(d->h, &n, st->procbuf);
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE && !grow_procbuf(st, n + 16)) {
            drop(errors, g, "process buffer cannot grow");
            return 0;
        }
    }
    int c = gp_nvml__check(st, d, rc, GP_NC_PROCS, "nvmlDeviceGetComputeRunningProcesses", errors);
    if (c)
        return c < -1 ? c : 0;
    if (n > st->proc_cap)
        n = st->proc_cap;
    size_t stride = st->s.procs_ver == 1 ? sizeof(nvmlProcessInfo_v1_t) : sizeof(nvmlProcessInfo_v2_t);
    for (unsigned i = 0; i < n; i++) {
        nvmlProcessInfo_v1_t p; /* pid and usedGpuMemory sit at the same offsets in every layout */
        memcpy(&p, st->procbuf + i * stride, sizeof p);
        if (p.pid == 0) {
            if (i > 0 && st->s.procs_ver == 3) {
                /* Drivers 535.43-535.86 write 32-byte entries from _v3: only the first is right. */
                if (!st->warned_stride)
                    gp_log(GP_LOG_WARN, NV_MODULE,
                           "driver returns a broken process list (535.43-535.86 _v3 stride); "
                           "only the first process per GPU is reported",
                           "driver=%s", st->driver);
                st->warned_stride = true;
                break;
            }
            drop(errors, g, "process with pid 0");
            continue;
        }
        bool mem_ok = p.usedGpuMemory != NVML_VALUE_NOT_AVAILABLE;
        if (mem_ok && d->mem_total && p.usedGpuMemory > d->mem_total) {
            drop(errors, g, "process memory above device total");
            continue;
        }
        struct gp_gpu_proc *gp = gp_gpu_add_proc(g);
        if (!gp) {
            drop(errors, g, "out of memory for a process");
            return 0;
        }
        gp->pid = p.pid;
        gp->mem_valid = mem_ok;
        gp->mem_bytes = mem_ok ? p.usedGpuMemory : 0;
    }
    return 0;
}

/*
 * Per-process SM/memory utilization since the last sample seen. NOT_FOUND
 * = no new samples: utilization not valid this tick. After a successful
 * call, listed processes without a sample were idle (0 %).
 */
static int read_proc_util(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, unsigned *errors)
{
    if (!USABLE(d, GP_NC_PUTIL) || g->nprocs == 0 || d->mig_enabled)
        return 0;
    unsigned n = st->ucap;
    nvmlReturn_t rc = st->s.proc_util(d->h, st->ubuf, &n, d->last_seen_ts);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE && n > st->ucap && n <= 65536) {
        nvmlProcessUtilizationSample_t *nb = realloc(st->ubuf, (size_t)(n + 16) * sizeof *nb);
        if (!nb) {
            drop(errors, g, "utilization buffer cannot grow");
            return 0;
        }
        st->ubuf = nb;
        st->ucap = n + 16;
        n = st->ucap;
        rc = st->s.proc_util(d->h, st->ubuf, &n, d->last_seen_ts);
    }
    if (rc == NVML_ERROR_NOT_FOUND)
        return 0;
    int c = gp_nvml__check(st, d, rc, GP_NC_PUTIL, "nvmlDeviceGetProcessUtilization", errors);
    if (c)
        return c < -1 ? c : 0;
    if (n > st->ucap)
        n = st->ucap;
    for (unsigned j = 0; j < g->nprocs; j++) {
        g->procs[j].util_valid = true;
        g->procs[j].sm_util = g->procs[j].mem_util = 0;
    }
    unsigned long long newest = d->last_seen_ts;
    for (unsigned i = 0; i < n; i++) {
        const nvmlProcessUtilizationSample_t *u = &st->ubuf[i];
        if (u->timeStamp <= d->last_seen_ts)
            continue;
        if (u->smUtil > 100 || u->memUtil > 100) {
            drop(errors, g, "process utilization above 100%");
            continue;
        }
        if (u->timeStamp > newest)
            newest = u->timeStamp;
        for (unsigned j = 0; j < g->nprocs; j++)
            if (g->procs[j].pid == u->pid) {
                g->procs[j].sm_util = u->smUtil;
                g->procs[j].mem_util = u->memUtil;
            }
    }
    d->last_seen_ts = newest;
    return 0;
}

void gp_nvml__read_device(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, bool slow,
                          unsigned *errors)
{
    bool mig_instance = d->parent >= 0;
    if (read_memory(st, d, g, errors) == -2)
        return;
    if (!mig_instance) {
        if (read_basic(st, d, g, errors) == -2)
            return;
        gp_gpu_set(g, GPF_MIG_MODE, d->mig_enabled ? 1 : 0);
        if (read_fields(st, d, g, fast_fields, NFAST, &d->fast_unsup, false, errors) == -2)
            return;
        if (slow) {
            memset(d->carry_valid, 0, sizeof d->carry_valid);
            if (read_fields(st, d, g, slow_fields, NSLOW, &d->slow_unsup, true, errors) == -2 ||
                read_slow_dedicated(st, d, errors) == -2 ||
                read_clock(st, d, g, true, NVML_CLOCK_SM, GP_NC_CLKMAX_SM, GPF_SM_CLOCK_MAX, 1e6,
                           errors) ||
                read_clock(st, d, g, true, NVML_CLOCK_MEM, GP_NC_CLKMAX_MEM, GPF_MEM_CLOCK_MAX, 1e6,
                           errors))
                return;
        }
        for (int f = 0; f < GPF__COUNT; f++)
            if ((d->carry_valid[f / 64] >> (f % 64)) & 1u)
                gp_gpu_set(g, (enum gp_gpu_field)f, d->carry[f]);
        if (d->gpm_on && read_gpm(st, d, g, errors) == -2)
            return;
    }
    if (read_procs(st, d, g, errors) == -2)
        return;
    if (!mig_instance)
        read_proc_util(st, d, g, errors);
}
