/*
 * fakenvml.c - the exported NVML functions of the stand-in libnvidia-ml.so.1.
 *
 * Every function has NVML's exact name and signature and checks its
 * arguments the way the real library does where gpulse depends on it:
 * versioned structs (nvmlMemory_v2 must carry 0x02000028; GPM structs the
 * raw 1), INSUFFICIENT_SIZE with the needed count, NOT_FOUND for "no new
 * samples", per-entry return codes in field values. State comes from the
 * scenario named by $GPULSE_FAKENVML_SCENARIO, parsed at nvmlInit.
 *
 * Built twice (Makefile): the full Hopper-era library, and with
 * FAKENVML_OLD_DRIVER an old driver's library without any _v2/_v3,
 * MemoryInfo_v2, ClocksEventReasons, GPM or EventSetWait_v2 symbol.
 *
 * Each call: lock, count the call (fakenvml_calls), move the scenario's
 * timeline to the virtual clock, check the handle, the lost flag and the
 * injected faults, then answer. Two test hooks are exported besides NVML:
 * fakenvml_advance_ms() moves the virtual clock forward, and
 * fakenvml_calls() tells how often a function was called for a device.
 */
#include "fakenvml.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t fk_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fk_scenario fk_scn;
static int fk_refs;
static long long fk_mono0_ns, fk_offset_ns, fk_real0_us;

struct fk_count {
    const char *lit; /* the caller's literal, for the fast compare */
    char name[64];
    int dev;
    unsigned long n;
};
static struct fk_count fk_counts[512];
static unsigned fk_ncounts;

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static long long now_ns(void) { return mono_ns() - fk_mono0_ns + fk_offset_ns; }

/* Key of a device in the call counts: gpu index, 100 + 8*parent + slot for MIG, -1 none. */
static int dev_key(const struct fk_dev *d)
{
    if (!d)
        return -1;
    return d->is_mig ? 100 + 8 * d->parent + d->index : d->index;
}

static void count_call(const char *fn, const struct fk_dev *d)
{
    int k = dev_key(d);
    /* fn is a string literal: compare the pointer first, so counting
     * keeps the stand-in cheap in the agent's benchmark. */
    for (unsigned i = 0; i < fk_ncounts; i++)
        if (fk_counts[i].dev == k && fk_counts[i].lit == fn) {
            fk_counts[i].n++;
            return;
        }
    for (unsigned i = 0; i < fk_ncounts; i++)
        if (fk_counts[i].dev == k && strcmp(fk_counts[i].name, fn) == 0) {
            fk_counts[i].n++;
            return;
        }
    if (fk_ncounts < sizeof fk_counts / sizeof fk_counts[0]) {
        snprintf(fk_counts[fk_ncounts].name, sizeof fk_counts[0].name, "%s", fn);
        fk_counts[fk_ncounts].lit = fn;
        fk_counts[fk_ncounts].dev = k;
        fk_counts[fk_ncounts++].n = 1;
    }
}

static int find_fail(const struct fk_fail *arr, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(arr[i].name, name) == 0)
            return arr[i].code;
    return 0;
}

static int valid_dev(const struct fk_dev *d)
{
    const struct fk_dev *g = fk_scn.gpus, *m = fk_scn.migs;
    return d && ((d >= g && d < g + fk_scn.ngpus) || (d >= m && d < m + fk_scn.nmigs)) &&
           d->magic == FK_DEV_MAGIC;
}

static nvmlReturn_t leave(nvmlReturn_t rc)
{
    pthread_mutex_unlock(&fk_mu);
    return rc;
}

/* Locks; on a non-zero return the lock is already released. */
static nvmlReturn_t enter(const char *fn)
{
    pthread_mutex_lock(&fk_mu);
    count_call(fn, NULL);
    if (!fk_refs)
        return leave(FK_E_UNINITIALIZED);
    fk_scenario_advance(&fk_scn, now_ns());
    int code = find_fail(fk_scn.fails, fk_scn.nfails, fn);
    return code ? leave(code) : FK_SUCCESS;
}

static nvmlReturn_t enter_dev(const char *fn, struct fk_dev *d)
{
    pthread_mutex_lock(&fk_mu);
    if (!fk_refs)
        return leave(FK_E_UNINITIALIZED);
    if (!valid_dev(d))
        return leave(FK_E_INVALID_ARGUMENT);
    count_call(fn, d);
    fk_scenario_advance(&fk_scn, now_ns());
    if (d->lost || (d->is_mig && fk_scn.gpus[d->parent].lost))
        return leave(FK_E_GPU_IS_LOST);
    int code = find_fail(d->fails, d->nfails, fn);
    if (!code && d->is_mig)
        code = find_fail(fk_scn.gpus[d->parent].fails, fk_scn.gpus[d->parent].nfails, fn);
    if (!code)
        code = find_fail(fk_scn.fails, fk_scn.nfails, fn);
    return code ? leave(code) : FK_SUCCESS;
}

static int mig_on(const struct fk_dev *d)
{
    return d->is_mig || d->val[FK_MIG_MODE];
}

/* ---- test hooks ---- */

void fakenvml_advance_ms(unsigned ms)
{
    pthread_mutex_lock(&fk_mu);
    fk_offset_ns += (long long)ms * 1000000ll;
    pthread_mutex_unlock(&fk_mu);
}

unsigned long fakenvml_calls(const char *fn, int dev)
{
    unsigned long n = 0;
    pthread_mutex_lock(&fk_mu);
    for (unsigned i = 0; i < fk_ncounts; i++)
        if (fk_counts[i].dev == dev && strcmp(fk_counts[i].name, fn) == 0)
            n = fk_counts[i].n;
    pthread_mutex_unlock(&fk_mu);
    return n;
}

/* ---- lifecycle ---- */

static nvmlReturn_t do_init(const char *fn)
{
    pthread_mutex_lock(&fk_mu);
    count_call(fn, NULL);
    if (fk_refs) {
        fk_refs++;
        return leave(FK_SUCCESS);
    }
    const char *path = getenv("GPULSE_FAKENVML_SCENARIO");
    if (!path || !*path) {
        fprintf(stderr, "fakenvml: GPULSE_FAKENVML_SCENARIO is not set\n");
        return leave(FK_E_UNKNOWN);
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fakenvml: cannot open scenario %s\n", path);
        return leave(FK_E_UNKNOWN);
    }
    size_t cap = 4u << 20;
    char *text = malloc(cap);
    size_t len = text ? fread(text, 1, cap, f) : 0;
    int toobig = text && len == cap;
    fclose(f);
    if (!text || toobig) {
        free(text);
        fprintf(stderr, "fakenvml: scenario %s: %s\n", path, text ? "larger than 4 MiB" : "out of memory");
        return leave(FK_E_UNKNOWN);
    }
    char err[320];
    int rc = fk_scenario_parse(&fk_scn, text, len, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "fakenvml: scenario %s: %s\n", path, err);
        return leave(FK_E_UNKNOWN);
    }
    if (fk_scn.init_error) {
        int code = fk_scn.init_error;
        fk_scenario_free(&fk_scn);
        return leave(code);
    }
    fk_mono0_ns = mono_ns();
    fk_offset_ns = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fk_real0_us = (long long)ts.tv_sec * 1000000ll + ts.tv_nsec / 1000;
    fk_refs = 1;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlInit(void) { return do_init("nvmlInit"); }
#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlInit_v2(void) { return do_init("nvmlInit_v2"); }
#endif

nvmlReturn_t nvmlShutdown(void)
{
    pthread_mutex_lock(&fk_mu);
    if (!fk_refs)
        return leave(FK_E_UNINITIALIZED);
    if (--fk_refs == 0)
        fk_scenario_free(&fk_scn);
    return leave(FK_SUCCESS);
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case FK_SUCCESS: return "Success";
    case FK_E_UNINITIALIZED: return "Uninitialized";
    case FK_E_INVALID_ARGUMENT: return "Invalid Argument";
    case FK_E_NOT_SUPPORTED: return "Not Supported";
    case FK_E_NOT_FOUND: return "Not Found";
    case FK_E_INSUFFICIENT_SIZE: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    case FK_E_TIMEOUT: return "Timeout";
    case FK_E_FUNCTION_NOT_FOUND: return "Function Not Found";
    case FK_E_GPU_IS_LOST: return "GPU is lost";
    case FK_E_ARGUMENT_VERSION_MISMATCH: return "Argument Version Mismatch";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_str(char *dst, unsigned len, const char *src)
{
    if (!dst)
        return FK_E_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return FK_E_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return FK_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned length)
{
    nvmlReturn_t rc = enter("nvmlSystemGetDriverVersion");
    return rc ? rc : leave(copy_str(version, length, fk_scn.driver));
}

static nvmlReturn_t cuda_version(const char *fn, int *v)
{
    nvmlReturn_t rc = enter(fn);
    if (!rc && !v)
        rc = FK_E_INVALID_ARGUMENT;
    if (!rc)
        *v = (int)fk_scn.cuda;
    return rc ? rc : leave(FK_SUCCESS);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    return cuda_version("nvmlSystemGetCudaDriverVersion", v);
}

#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return cuda_version("nvmlSystemGetCudaDriverVersion_v2", v);
}
#endif

static nvmlReturn_t get_count(const char *fn, unsigned *n)
{
    nvmlReturn_t rc = enter(fn);
    if (rc)
        return rc;
    if (!n)
        return leave(FK_E_INVALID_ARGUMENT);
    *n = fk_scn.ngpus;
    return leave(FK_SUCCESS);
}
nvmlReturn_t nvmlDeviceGetCount(unsigned *n) { return get_count("nvmlDeviceGetCount", n); }
#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) { return get_count("nvmlDeviceGetCount_v2", n); }
#endif

static nvmlReturn_t get_handle(const char *fn, unsigned idx, nvmlDevice_t *out)
{
    pthread_mutex_lock(&fk_mu);
    int ok = fk_refs && idx < fk_scn.ngpus && out;
    pthread_mutex_unlock(&fk_mu);
    if (!ok)
        return fk_refs ? FK_E_INVALID_ARGUMENT : FK_E_UNINITIALIZED;
    nvmlReturn_t rc = enter_dev(fn, &fk_scn.gpus[idx]);
    if (rc)
        return rc;
    *out = &fk_scn.gpus[idx];
    return leave(FK_SUCCESS);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *d)
{
    return get_handle("nvmlDeviceGetHandleByIndex", i, d);
}
#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    return get_handle("nvmlDeviceGetHandleByIndex_v2", i, d);
}
#endif

/* ---- identity ---- */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned length)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetName", d);
    return rc ? rc : leave(copy_str(name, length, d->name));
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned length)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetUUID", d);
    return rc ? rc : leave(copy_str(uuid, length, d->uuid));
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetMinorNumber", d);
    if (rc)
        return rc;
    if (!minor)
        return leave(FK_E_INVALID_ARGUMENT);
    *minor = (unsigned)d->val[FK_MINOR];
    return leave(FK_SUCCESS);
}

/* Fills the legacy prefix (busIdLegacy + ids: what pre-_v3 calls wrote), and busId for _v3. */
static nvmlReturn_t pci_info(const char *fn, nvmlDevice_t d, nvmlPciInfo_t *p, int v3)
{
    nvmlReturn_t rc = enter_dev(fn, d);
    if (rc)
        return rc;
    if (!p)
        return leave(FK_E_INVALID_ARGUMENT);
    const struct fk_dev *g = d->is_mig ? &fk_scn.gpus[d->parent] : d;
    unsigned dom = 0, bus = 0, dv = 0;
    if (sscanf(g->bus, "%x:%x:%x", &dom, &bus, &dv) != 3)
        dom = bus = dv = 0;
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.0", dom & 0xffff, bus & 0xff,
             dv & 0xff);
    p->domain = dom;
    p->bus = bus;
    p->device = dv;
    p->pciDeviceId = 0x233010deu;
    if (v3) {
        p->pciSubSystemId = 0x16c110deu;
        snprintf(p->busId, sizeof p->busId, "%s", g->bus);
    }
    return leave(FK_SUCCESS);
}
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    return pci_info("nvmlDeviceGetPciInfo", d, p, 0);
}
#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    return pci_info("nvmlDeviceGetPciInfo_v2", d, p, 0);
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    return pci_info("nvmlDeviceGetPciInfo_v3", d, p, 1);
}
#endif

/* ---- memory ---- */

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetMemoryInfo", d);
    if (rc)
        return rc;
    if (!m)
        return leave(FK_E_INVALID_ARGUMENT);
    unsigned long long t = d->val[FK_MEM_TOTAL], u = d->val[FK_MEM_USED] + d->val[FK_MEM_RESERVED];
    m->total = t;
    m->used = u;
    m->free = u < t ? t - u : 0;
    return leave(FK_SUCCESS);
}

#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetMemoryInfo_v2", d);
    if (rc)
        return rc;
    if (!m)
        return leave(FK_E_INVALID_ARGUMENT);
    if (m->version != FK_MEMORY_V2_VERSION) /* a bare 2 fails like the real driver */
        return leave(m->version == 2 ? FK_E_FUNCTION_NOT_FOUND : FK_E_ARGUMENT_VERSION_MISMATCH);
    unsigned long long t = d->val[FK_MEM_TOTAL], r = d->val[FK_MEM_RESERVED], u = d->val[FK_MEM_USED];
    m->total = t;
    m->reserved = r;
    m->used = u;
    m->free = r + u < t ? t - r - u : 0;
    return leave(FK_SUCCESS);
}
#endif

/* ---- scalar readings ---- */

static nvmlReturn_t get_uint(const char *fn, nvmlDevice_t d, unsigned *out, enum fk_key k, int no_mig)
{
    nvmlReturn_t rc = enter_dev(fn, d);
    if (rc)
        return rc;
    if (!out)
        return leave(FK_E_INVALID_ARGUMENT);
    if (no_mig && mig_on(d))
        return leave(FK_E_NOT_SUPPORTED);
    *out = (unsigned)d->val[k];
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetUtilizationRates", d);
    if (rc)
        return rc;
    if (!u)
        return leave(FK_E_INVALID_ARGUMENT);
    if (mig_on(d))
        return leave(FK_E_NOT_SUPPORTED);
    u->gpu = (unsigned)d->val[FK_UTIL_GPU];
    u->memory = (unsigned)d->val[FK_UTIL_MEM];
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned *u, unsigned *period)
{
    nvmlReturn_t rc = get_uint("nvmlDeviceGetEncoderUtilization", d, u, FK_ENC, 1);
    if (!rc && period)
        *period = 167000;
    return rc;
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned *u, unsigned *period)
{
    nvmlReturn_t rc = get_uint("nvmlDeviceGetDecoderUtilization", d, u, FK_DEC, 1);
    if (!rc && period)
        *period = 167000;
    return rc;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *t)
{
    if (sensor != 0)
        return FK_E_INVALID_ARGUMENT;
    return get_uint("nvmlDeviceGetTemperature", d, t, FK_TEMP, 0);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *p)
{
    return get_uint("nvmlDeviceGetPowerUsage", d, p, FK_POWER, 0);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned *p)
{
    return get_uint("nvmlDeviceGetEnforcedPowerLimit", d, p, FK_POWER_LIMIT, 0);
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned *s)
{
    return get_uint("nvmlDeviceGetFanSpeed", d, s, FK_FAN, 0);
}

/* The PCIe link: a key the scenario leaves at 0 answers NOT_SUPPORTED
 * (no link generation or width is 0). */
static nvmlReturn_t get_link(const char *fn, nvmlDevice_t d, unsigned *out, enum fk_key k)
{
    nvmlReturn_t rc = enter_dev(fn, d);
    if (rc)
        return rc;
    if (!out)
        return leave(FK_E_INVALID_ARGUMENT);
    if (!d->val[k])
        return leave(FK_E_NOT_SUPPORTED);
    *out = (unsigned)d->val[k];
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned *g)
{
    return get_link("nvmlDeviceGetCurrPcieLinkGeneration", d, g, FK_PCIE_GEN);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned *g)
{
    return get_link("nvmlDeviceGetMaxPcieLinkGeneration", d, g, FK_PCIE_GEN_MAX);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned *w)
{
    return get_link("nvmlDeviceGetCurrPcieLinkWidth", d, w, FK_PCIE_WIDTH);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned *w)
{
    return get_link("nvmlDeviceGetMaxPcieLinkWidth", d, w, FK_PCIE_WIDTH_MAX);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *e)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetTotalEnergyConsumption", d);
    if (rc)
        return rc;
    if (!e)
        return leave(FK_E_INVALID_ARGUMENT);
    *e = d->val[FK_ENERGY];
    return leave(FK_SUCCESS);
}

static nvmlReturn_t clock_info(const char *fn, nvmlDevice_t d, int type, unsigned *c, int max)
{
    enum fk_key k;
    if (type == 0 || type == 1)
        k = max ? FK_CLOCK_SM_MAX : FK_CLOCK_SM;
    else if (type == 2)
        k = max ? FK_CLOCK_MEM_MAX : FK_CLOCK_MEM;
    else
        return FK_E_NOT_SUPPORTED;
    return get_uint(fn, d, c, k, 0);
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *c)
{
    return clock_info("nvmlDeviceGetClockInfo", d, type, c, 0);
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned *c)
{
    return clock_info("nvmlDeviceGetMaxClockInfo", d, type, c, 1);
}

static nvmlReturn_t clock_reasons(const char *fn, nvmlDevice_t d, unsigned long long *r)
{
    nvmlReturn_t rc = enter_dev(fn, d);
    if (rc)
        return rc;
    if (!r)
        return leave(FK_E_INVALID_ARGUMENT);
    *r = d->val[FK_CLOCK_EVENTS];
    return leave(FK_SUCCESS);
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r)
{
    return clock_reasons("nvmlDeviceGetCurrentClocksThrottleReasons", d, r);
}
#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r)
{
    return clock_reasons("nvmlDeviceGetCurrentClocksEventReasons", d, r);
}
#endif

/* ---- field values ---- */

/* Field id -> (key, value type); valueType 1 = uint, 3 = ull. */
static int field_map(unsigned id, enum fk_key *k, int *type)
{
    static const struct {
        unsigned id;
        enum fk_key k;
        int type;
    } map[] = {
        {3, FK_ECC_SBE_VOL, 3},      {4, FK_ECC_DBE_VOL, 3},       {5, FK_ECC_SBE_AGG, 3},
        {6, FK_ECC_DBE_AGG, 3},      {29, FK_RETIRED_SBE, 1},      {30, FK_RETIRED_DBE, 1},
        {31, FK_RETIRED_PENDING, 1}, {74, FK_VIOLATION_POWER, 3},  {75, FK_VIOLATION_THERMAL, 3},
        {82, FK_MEM_TEMP, 1},        {83, FK_ENERGY, 3},           {94, FK_PCIE_REPLAY, 1},
        {142, FK_REMAP_COR, 1},      {143, FK_REMAP_UNC, 1},       {144, FK_REMAP_PENDING, 1},
        {145, FK_REMAP_FAILURE, 1},  {197, FK_PCIE_TX, 3},         {198, FK_PCIE_RX, 3},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].id == id) {
            *k = map[i].k;
            *type = map[i].type;
            return 1;
        }
    return 0;
}

/* The ECC, retired-page and remapped-row field ids (`ecc_fields absent`). */
static int ecc_field(unsigned id)
{
    return (id >= 3 && id <= 6) || (id >= 29 && id <= 31) || (id >= 142 && id <= 145);
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *values)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetFieldValues", d);
    if (rc)
        return rc;
    if (count < 0 || (count > 0 && !values))
        return leave(FK_E_INVALID_ARGUMENT);
    long long ts = fk_real0_us + now_ns() / 1000;
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *v = &values[i];
        enum fk_key k;
        int type;
        char fname[32];
        snprintf(fname, sizeof fname, "field%u", v->fieldId);
        int code = find_fail(d->fails, d->nfails, fname);
        if (!code)
            code = find_fail(fk_scn.fails, fk_scn.nfails, fname);
        v->timestamp = ts;
        v->latencyUsec = 0;
        if (!code && !field_map(v->fieldId, &k, &type))
            code = FK_E_NOT_SUPPORTED;
        if (!code && fk_scn.no_ecc_fields && ecc_field(v->fieldId))
            code = FK_E_NOT_SUPPORTED; /* a driver without these ids: the dedicated calls answer */
        v->nvmlReturn = code;
        if (code)
            continue;
        v->valueType = type;
        if (type == 1)
            v->value.uiVal = (unsigned)d->val[k];
        else
            v->value.ullVal = d->val[k];
    }
    return leave(FK_SUCCESS);
}

/* ---- ECC, retired pages, remapped rows: the dedicated calls ---- */

/* errorType: 0 corrected (single-bit), 1 uncorrected (double-bit);
 * counterType: 0 volatile, 1 aggregate (nvmlMemoryErrorType_t,
 * nvmlEccCounterType_t). Arguments in NVML's order, so a caller that
 * swaps them reads another counter of the scenario. */
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int errorType, int counterType,
                                         unsigned long long *eccCounts)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetTotalEccErrors", d);
    if (rc)
        return rc;
    if (!eccCounts || errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
        return leave(FK_E_INVALID_ARGUMENT);
    static const enum fk_key keys[2][2] = {{FK_ECC_SBE_VOL, FK_ECC_SBE_AGG},
                                           {FK_ECC_DBE_VOL, FK_ECC_DBE_AGG}};
    *eccCounts = d->val[keys[errorType][counterType]];
    return leave(FK_SUCCESS);
}

/* cause: 0 multiple single-bit errors, 1 a double-bit error
 * (nvmlPageRetirementCause_t). *pageCount in: the room in addresses
 * (0 to size); out: the pages of that cause. INSUFFICIENT_SIZE with the
 * needed count when the room is short, as the real library answers. */
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned *pageCount,
                                       unsigned long long *addresses)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetRetiredPages", d);
    if (rc)
        return rc;
    if (!pageCount || cause < 0 || cause > 1 || (*pageCount && !addresses))
        return leave(FK_E_INVALID_ARGUMENT);
    unsigned n = (unsigned)d->val[cause ? FK_RETIRED_DBE : FK_RETIRED_SBE];
    unsigned room = *pageCount;
    *pageCount = n;
    if (room < n)
        return leave(FK_E_INSUFFICIENT_SIZE);
    for (unsigned i = 0; i < n; i++)
        addresses[i] = 0x100000ull * (i + 1) + (unsigned long long)cause;
    return leave(FK_SUCCESS);
}

/* isPending: nvmlEnableState_t, 0 disabled, 1 enabled. */
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *isPending)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetRetiredPagesPendingStatus", d);
    if (rc)
        return rc;
    if (!isPending)
        return leave(FK_E_INVALID_ARGUMENT);
    *isPending = d->val[FK_RETIRED_PENDING] ? 1 : 0;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corrRows, unsigned *uncRows,
                                       unsigned *isPending, unsigned *failureOccurred)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetRemappedRows", d);
    if (rc)
        return rc;
    if (!corrRows || !uncRows || !isPending || !failureOccurred)
        return leave(FK_E_INVALID_ARGUMENT);
    if (mig_on(d))
        return leave(FK_E_NOT_SUPPORTED); /* "NOT_SUPPORTED if MIG is enabled" */
    *corrRows = (unsigned)d->val[FK_REMAP_COR];
    *uncRows = (unsigned)d->val[FK_REMAP_UNC];
    *isPending = d->val[FK_REMAP_PENDING] ? 1 : 0;
    *failureOccurred = d->val[FK_REMAP_FAILURE] ? 1 : 0;
    return leave(FK_SUCCESS);
}

/* ---- MIG ---- */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *cur, unsigned *pending)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetMigMode", d);
    if (rc)
        return rc;
    if (!cur || !pending)
        return leave(FK_E_INVALID_ARGUMENT);
    if (d->is_mig)
        return leave(FK_E_NOT_SUPPORTED);
    *cur = *pending = (unsigned)d->val[FK_MIG_MODE];
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned *n)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetMaxMigDeviceCount", d);
    if (rc)
        return rc;
    if (!n)
        return leave(FK_E_INVALID_ARGUMENT);
    *n = d->is_mig || !d->val[FK_MIG_MODE] ? 0 : FK_MAX_MIG_SLOTS;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned idx, nvmlDevice_t *out)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetMigDeviceHandleByIndex", d);
    if (rc)
        return rc;
    if (!out || d->is_mig || idx >= FK_MAX_MIG_SLOTS)
        return leave(FK_E_INVALID_ARGUMENT);
    struct fk_dev *m = d->val[FK_MIG_MODE] ? fk_scenario_mig(&fk_scn, d->index, (int)idx) : NULL;
    if (!m)
        return leave(FK_E_NOT_FOUND);
    *out = m;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned *id)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetGpuInstanceId", d);
    if (rc)
        return rc;
    if (!id)
        return leave(FK_E_INVALID_ARGUMENT);
    if (!d->is_mig)
        return leave(FK_E_NOT_SUPPORTED);
    *id = (unsigned)d->val[FK_GI];
    return leave(FK_SUCCESS);
}

/* ---- processes ---- */

/* True for drivers 535.43-535.86, whose _v3 wrote 32-byte entries. */
static int r535_stride_bug(void)
{
    unsigned major = 0, minor = 0;
    const char *p = fk_scn.driver;
    while (*p >= '0' && *p <= '9')
        major = major * 10 + (unsigned)(*p++ - '0');
    if (*p++ != '.')
        return 0;
    while (*p >= '0' && *p <= '9')
        minor = minor * 10 + (unsigned)(*p++ - '0');
    return major == 535 && minor >= 43 && minor <= 86;
}

static nvmlReturn_t running_procs(const char *fn, nvmlDevice_t d, unsigned *count, void *infos, int ver)
{
    nvmlReturn_t rc = enter_dev(fn, d);
    if (rc)
        return rc;
    if (!count)
        return leave(FK_E_INVALID_ARGUMENT);
    unsigned n = d->nprocs;
    if (*count < n || (n && !infos)) {
        *count = n;
        return leave(FK_E_INSUFFICIENT_SIZE);
    }
    unsigned gi = d->is_mig ? (unsigned)d->val[FK_GI] : 0xFFFFFFFFu;
    unsigned ci = d->is_mig ? 0 : 0xFFFFFFFFu;
    for (unsigned i = 0; i < n; i++) {
        const struct fk_proc *p = &d->procs[i];
        if (ver == 1) {
            nvmlProcessInfo_v1_t *o = (nvmlProcessInfo_v1_t *)infos + i;
            o->pid = p->pid;
            o->usedGpuMemory = p->mem;
        } else if (ver == 3 && r535_stride_bug()) {
            fk_procinfo_r535_t *o = (fk_procinfo_r535_t *)infos + i;
            o->pid = p->pid;
            o->usedGpuMemory = p->mem;
            o->gpuInstanceId = gi;
            o->computeInstanceId = ci;
            o->usedGpuCcProtectedMemory = 0;
        } else {
            nvmlProcessInfo_t *o = (nvmlProcessInfo_t *)infos + i;
            o->pid = p->pid;
            o->usedGpuMemory = p->mem;
            o->gpuInstanceId = gi;
            o->computeInstanceId = ci;
        }
    }
    *count = n;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned *n, nvmlProcessInfo_v1_t *p)
{
    return running_procs("nvmlDeviceGetComputeRunningProcesses", d, n, p, 1);
}
#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned *n, nvmlProcessInfo_t *p)
{
    return running_procs("nvmlDeviceGetComputeRunningProcesses_v2", d, n, p, 2);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *n, nvmlProcessInfo_t *p)
{
    return running_procs("nvmlDeviceGetComputeRunningProcesses_v3", d, n, p, 3);
}
#endif

/*
 * Samples appear every 100 ms of the virtual clock (the driver's sample
 * period); only processes with non-zero utilization have one.
 */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *out,
                                             unsigned *count, unsigned long long last_seen)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceGetProcessUtilization", d);
    if (rc)
        return rc;
    if (!count)
        return leave(FK_E_INVALID_ARGUMENT);
    if (mig_on(d))
        return leave(FK_E_NOT_SUPPORTED);
    unsigned long long ts =
        (unsigned long long)fk_real0_us + (unsigned long long)(now_ns() / 100000000ll) * 100000ull;
    unsigned n = 0;
    for (unsigned i = 0; i < d->nprocs; i++)
        n += d->procs[i].sm || d->procs[i].memutil;
    if (n == 0 || ts <= last_seen)
        return leave(FK_E_NOT_FOUND);
    if (!out || *count < n) {
        *count = n;
        return leave(FK_E_INSUFFICIENT_SIZE);
    }
    unsigned j = 0;
    for (unsigned i = 0; i < d->nprocs; i++) {
        const struct fk_proc *p = &d->procs[i];
        if (!p->sm && !p->memutil)
            continue;
        out[j].pid = p->pid;
        out[j].timeStamp = ts;
        out[j].smUtil = p->sm;
        out[j].memUtil = p->memutil;
        out[j].encUtil = out[j].decUtil = 0;
        j++;
    }
    *count = n;
    return leave(FK_SUCCESS);
}

/* ---- events ---- */

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    nvmlReturn_t rc = enter("nvmlEventSetCreate");
    if (rc)
        return rc;
    if (!set)
        return leave(FK_E_INVALID_ARGUMENT);
    struct fk_evset *s = calloc(1, sizeof *s);
    if (!s)
        return leave(FK_E_MEMORY);
    s->magic = FK_EVSET_MAGIC;
    *set = s;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
    nvmlReturn_t rc = enter_dev("nvmlDeviceRegisterEvents", d);
    if (rc)
        return rc;
    if (!set || set->magic != FK_EVSET_MAGIC)
        return leave(FK_E_INVALID_ARGUMENT);
    if (d->is_mig || (types & ~0xbull))
        return leave(FK_E_NOT_SUPPORTED);
    d->evset = set;
    d->evmask |= types;
    return leave(FK_SUCCESS);
}

static nvmlReturn_t event_wait(const char *fn, nvmlEventSet_t set, void *data, int v2)
{
    nvmlReturn_t rc = enter(fn);
    if (rc)
        return rc;
    if (!set || set->magic != FK_EVSET_MAGIC || !data)
        return leave(FK_E_INVALID_ARGUMENT);
    if (set->head == set->tail) /* never blocks: the virtual clock moves only by the test */
        return leave(FK_E_TIMEOUT);
    const nvmlEventData_t *e = &set->q[set->head++ % FK_EVQ];
    if (v2) {
        *(nvmlEventData_t *)data = *e;
    } else {
        fk_eventdata_v1_t *o = data;
        o->device = e->device;
        o->eventType = e->eventType;
        o->eventData = e->eventData;
    }
    return leave(FK_SUCCESS);
}
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, fk_eventdata_v1_t *data, unsigned timeout_ms)
{
    (void)timeout_ms;
    return event_wait("nvmlEventSetWait", set, data, 0);
}
#ifndef FAKENVML_OLD_DRIVER
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms)
{
    (void)timeout_ms;
    return event_wait("nvmlEventSetWait_v2", set, data, 1);
}
#endif

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    pthread_mutex_lock(&fk_mu);
    count_call("nvmlEventSetFree", NULL);
    if (!set || set->magic != FK_EVSET_MAGIC)
        return leave(FK_E_INVALID_ARGUMENT);
    for (unsigned i = 0; i < fk_scn.ngpus; i++)
        if (fk_scn.gpus[i].evset == set) {
            fk_scn.gpus[i].evset = NULL;
            fk_scn.gpus[i].evmask = 0;
        }
    set->magic = 0;
    free(set);
    return leave(FK_SUCCESS);
}

/* ---- GPM ---- */
#ifndef FAKENVML_OLD_DRIVER

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *s)
{
    nvmlReturn_t rc = enter_dev("nvmlGpmQueryDeviceSupport", d);
    if (rc)
        return rc;
    if (!s)
        return leave(FK_E_INVALID_ARGUMENT);
    if (s->version != 1) /* raw 1, not an encoded struct version */
        return leave(FK_E_ARGUMENT_VERSION_MISMATCH);
    s->isSupportedDevice = (unsigned)d->gpm;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *out)
{
    nvmlReturn_t rc = enter("nvmlGpmSampleAlloc");
    if (rc)
        return rc;
    if (!out)
        return leave(FK_E_INVALID_ARGUMENT);
    struct fk_gpm_sample *s = calloc(1, sizeof *s);
    if (!s)
        return leave(FK_E_MEMORY);
    s->magic = FK_GPM_MAGIC;
    *out = s;
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
    pthread_mutex_lock(&fk_mu);
    count_call("nvmlGpmSampleFree", NULL);
    if (!s || s->magic != FK_GPM_MAGIC)
        return leave(FK_E_INVALID_ARGUMENT);
    s->magic = 0;
    free(s);
    return leave(FK_SUCCESS);
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s)
{
    nvmlReturn_t rc = enter_dev("nvmlGpmSampleGet", d);
    if (rc)
        return rc;
    if (!s || s->magic != FK_GPM_MAGIC)
        return leave(FK_E_INVALID_ARGUMENT);
    if (!d->gpm)
        return leave(FK_E_NOT_SUPPORTED);
    long long t = now_ns();
    fk_gpm_integrate(d, t);
    s->dev = d;
    s->t_ns = t;
    memcpy(s->acc, d->gpm_acc, sizeof s->acc);
    return leave(FK_SUCCESS);
}

/* Rates from two samples: (counter2 - counter1) / (t2 - t1); sample2 must be newer. */
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m)
{
    nvmlReturn_t rc = enter("nvmlGpmMetricsGet");
    if (rc)
        return rc;
    if (!m)
        return leave(FK_E_INVALID_ARGUMENT);
    if (m->version != 1)
        return leave(FK_E_ARGUMENT_VERSION_MISMATCH);
    const struct fk_gpm_sample *a = m->sample1, *b = m->sample2;
    if (m->numMetrics == 0 || m->numMetrics > FK_GPM_METRIC_MAX || !a || !b ||
        a->magic != FK_GPM_MAGIC || b->magic != FK_GPM_MAGIC || !a->dev || a->dev != b->dev ||
        b->t_ns <= a->t_ns)
        return leave(FK_E_INVALID_ARGUMENT);
    double dt = (double)(b->t_ns - a->t_ns) / 1e9;
    const struct fk_dev *d = a->dev;
    for (unsigned i = 0; i < m->numMetrics; i++) {
        nvmlGpmMetric_t *x = &m->metrics[i];
        unsigned id = x->metricId;
        memset(&x->metricInfo, 0, sizeof x->metricInfo);
        char fname[32];
        snprintf(fname, sizeof fname, "gpm%u", id);
        int code = find_fail(d->fails, d->nfails, fname);
        if (!code && (id >= FK_GPM_IDS || !d->gpm_has[id]))
            code = FK_E_NOT_SUPPORTED;
        x->nvmlReturn = code;
        x->value = code ? 0 : (b->acc[id] - a->acc[id]) / dt;
    }
    return leave(FK_SUCCESS);
}
#endif
