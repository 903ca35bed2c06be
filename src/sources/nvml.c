/*
 * nvml.c - the NVIDIA source: loading NVML, enumerating devices, ticks.
 *
 * NVML is reached only through dlopen/dlsym (no nvml.h, no link-time
 * dependency), so gpulse runs on machines without NVIDIA's driver and
 * tests run it against a stand-in library (tests/fakenvml). Every symbol
 * is resolved once at open, newest versioned name first; a missing one
 * makes its readings unsupported (validity bit unset), never a crash.
 *
 * Parts:
 *  - load: library choice, symbol table, nvmlInit and its failure modes
 *    (no library / no driver / no GPU = GP_ENODEV, "not here");
 *  - enumeration: identity of each GPU, its MIG instances (one frame GPU
 *    per instance, after its parent), XID event registration, GPM setup;
 *  - tick: drain queued XID events without blocking, then read every
 *    device (nvml_read.c). A lost GPU stays in every frame with its
 *    identity and lost=true and is never called again.
 *  - close: GPM samples, event set, nvmlShutdown, dlclose.
 */
#include "nvml.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "nvml_int.h"
#include "source.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t gp_nvml_slow_interval_ms = 10000;

#define NV_MODULE "nvml"

const char *gp_nvml__errstr(const struct gp_nvml *st, nvmlReturn_t rc)
{
    const char *s = st && st->s.error_string ? st->s.error_string(rc) : NULL;
    return s ? s : "unknown NVML error";
}

/* ---- symbols ---- */

/* First of up to three names that the library exports; *ver = 3, 2, 1 for the slot used. */
static void *sym3(void *lib, int *ver, const char *a, const char *b, const char *c)
{
    const char *names[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        if (!names[i])
            continue;
        void *p = dlsym(lib, names[i]);
        if (p) {
            if (i > 0)
                gp_log(GP_LOG_DEBUG, NV_MODULE, "older NVML symbol used", "symbol=%s wanted=%s",
                       names[i], a);
            if (ver)
                *ver = 3 - i;
            return p;
        }
    }
    gp_log(GP_LOG_DEBUG, NV_MODULE, "symbol missing, its readings are unsupported", "symbol=%s", a);
    return NULL;
}

/* First of a NULL-terminated list of names that the library exports. */
static void *sym_list(void *lib, const char *const *names)
{
    return sym3(lib, NULL, names[0], names[1], names[1] ? names[2] : NULL);
}

#define SYM(field, type, ...) st->s.field = (type)sym_list(st->lib, (const char *const[]){__VA_ARGS__, NULL, NULL})

static void resolve(struct gp_nvml *st)
{
    int ver = 0;
    SYM(init, nvml_void_fn, "nvmlInit_v2", "nvmlInit");
    SYM(shutdown, nvml_void_fn, "nvmlShutdown");
    SYM(error_string, nvml_errstr_fn, "nvmlErrorString");
    SYM(driver_version, nvml_str_fn, "nvmlSystemGetDriverVersion");
    SYM(cuda_version, nvml_intp_fn, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
    SYM(count, nvml_uintp_fn, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    SYM(handle, nvml_handle_fn, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    SYM(name, nvml_dev_str_fn, "nvmlDeviceGetName");
    SYM(uuid, nvml_dev_str_fn, "nvmlDeviceGetUUID");
    SYM(minor, nvml_dev_uint_fn, "nvmlDeviceGetMinorNumber");
    st->s.pci = (nvml_dev_pci_fn)sym3(st->lib, &ver, "nvmlDeviceGetPciInfo_v3",
                                      "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo");
    st->s.pci_ver = ver;
    SYM(mem2, nvml_dev_mem2_fn, "nvmlDeviceGetMemoryInfo_v2");
    SYM(mem1, nvml_dev_mem_fn, "nvmlDeviceGetMemoryInfo");
    SYM(util, nvml_dev_util_fn, "nvmlDeviceGetUtilizationRates");
    SYM(enc, nvml_dev_uint2_fn, "nvmlDeviceGetEncoderUtilization");
    SYM(dec, nvml_dev_uint2_fn, "nvmlDeviceGetDecoderUtilization");
    SYM(temp, nvml_dev_enum_uint_fn, "nvmlDeviceGetTemperature");
    SYM(clock, nvml_dev_enum_uint_fn, "nvmlDeviceGetClockInfo");
    SYM(max_clock, nvml_dev_enum_uint_fn, "nvmlDeviceGetMaxClockInfo");
    SYM(power, nvml_dev_uint_fn, "nvmlDeviceGetPowerUsage");
    SYM(power_limit, nvml_dev_uint_fn, "nvmlDeviceGetEnforcedPowerLimit");
    SYM(fan, nvml_dev_uint_fn, "nvmlDeviceGetFanSpeed");
    SYM(pcie_gen, nvml_dev_uint_fn, "nvmlDeviceGetCurrPcieLinkGeneration");
    SYM(pcie_gen_max, nvml_dev_uint_fn, "nvmlDeviceGetMaxPcieLinkGeneration");
    SYM(pcie_width, nvml_dev_uint_fn, "nvmlDeviceGetCurrPcieLinkWidth");
    SYM(pcie_width_max, nvml_dev_uint_fn, "nvmlDeviceGetMaxPcieLinkWidth");
    SYM(energy, nvml_dev_ull_fn, "nvmlDeviceGetTotalEnergyConsumption");
    SYM(clock_events, nvml_dev_ull_fn, "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons");
    SYM(fields, nvml_dev_fields_fn, "nvmlDeviceGetFieldValues");
    SYM(ecc_total, nvml_dev_ecc_total_fn, "nvmlDeviceGetTotalEccErrors");
    SYM(retired, nvml_dev_retired_fn, "nvmlDeviceGetRetiredPages");
    SYM(retired_pending, nvml_dev_retired_pending_fn, "nvmlDeviceGetRetiredPagesPendingStatus");
    SYM(remapped, nvml_dev_remapped_fn, "nvmlDeviceGetRemappedRows");
    SYM(mig_mode, nvml_dev_uint2_fn, "nvmlDeviceGetMigMode");
    SYM(max_mig, nvml_dev_uint_fn, "nvmlDeviceGetMaxMigDeviceCount");
    SYM(gi_id, nvml_dev_uint_fn, "nvmlDeviceGetGpuInstanceId");
    SYM(mig_handle, nvml_dev_idx_handle_fn, "nvmlDeviceGetMigDeviceHandleByIndex");
    st->s.procs = (nvml_dev_procs_fn)sym3(st->lib, &ver, "nvmlDeviceGetComputeRunningProcesses_v3",
                                          "nvmlDeviceGetComputeRunningProcesses_v2",
                                          "nvmlDeviceGetComputeRunningProcesses");
    st->s.procs_ver = ver;
    SYM(proc_util, nvml_dev_putil_fn, "nvmlDeviceGetProcessUtilization");
    SYM(ev_create, nvml_evset_create_fn, "nvmlEventSetCreate");
    SYM(ev_free, nvml_evset_free_fn, "nvmlEventSetFree");
    SYM(ev_register, nvml_register_fn, "nvmlDeviceRegisterEvents");
    /* The plain wait fills a 24-byte prefix of nvmlEventData_t: same offsets. */
    SYM(ev_wait, nvml_evwait_fn, "nvmlEventSetWait_v2", "nvmlEventSetWait");
    SYM(gpm_support, nvml_gpm_support_fn, "nvmlGpmQueryDeviceSupport");
    SYM(gpm_alloc, nvml_gpm_alloc_fn, "nvmlGpmSampleAlloc");
    SYM(gpm_free, nvml_gpm_free_fn, "nvmlGpmSampleFree");
    SYM(gpm_get, nvml_gpm_get_fn, "nvmlGpmSampleGet");
    SYM(gpm_metrics, nvml_gpm_metrics_fn, "nvmlGpmMetricsGet");
}

/* ---- error classification ---- */

void gp_nvml__mark_lost(struct gp_nvml *st, struct gp_nvml_dev *d, unsigned *errors)
{
    if (d->lost)
        return;
    d->lost = true;
    (*errors)++;
    char q[128];
    gp_log(GP_LOG_WARN, NV_MODULE, "GPU is lost, no further readings from it", "gpu=%u uuid=%s%s",
           d->index, gp_log_quote(q, sizeof q, d->uuid), d->parent >= 0 ? " mig=true" : "");
    if (d->parent < 0) /* its MIG instances went with it */
        for (unsigned i = 0; i < st->ndev; i++)
            if (st->dev[i].parent == (int)(d - st->dev))
                st->dev[i].lost = true;
}

int gp_nvml__check(struct gp_nvml *st, struct gp_nvml_dev *d, nvmlReturn_t rc, int call,
                   const char *what, unsigned *errors)
{
    switch (rc) {
    case NVML_SUCCESS:
        return 0;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        if (call >= 0 && call < GP_NC__COUNT)
            d->unsup |= 1u << call;
        gp_log(GP_LOG_DEBUG, NV_MODULE, "reading unsupported on this device", "gpu=%u call=%s rc=%d",
               d->index, what, rc);
        return 1;
    case NVML_ERROR_GPU_IS_LOST:
        gp_nvml__mark_lost(st, d, errors);
        return -2;
    default:
        (*errors)++;
        gp_log(GP_LOG_DEBUG, NV_MODULE, "NVML call failed", "gpu=%u call=%s rc=%d err=\"%s\"",
               d->index, what, rc, gp_nvml__errstr(st, rc));
        return -1;
    }
}

/* ---- enumeration ---- */

static struct gp_nvml_dev *add_dev(struct gp_nvml *st)
{
    if (st->ndev == st->cap_dev) {
        unsigned nc = st->cap_dev ? st->cap_dev * 2 : 8;
        struct gp_nvml_dev *nd = realloc(st->dev, nc * sizeof *nd);
        if (!nd)
            return NULL;
        st->dev = nd;
        st->cap_dev = nc;
    }
    struct gp_nvml_dev *d = &st->dev[st->ndev++];
    memset(d, 0, sizeof *d);
    d->parent = -1;
    d->mig_gi = -1;
    return d;
}

/* Copies src into dst (capacity cap), truncating; always terminated. */
static void cpy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Copies an NVML string answer, making sure it is terminated. */
static void get_str(nvml_dev_str_fn fn, nvmlDevice_t h, char *out, size_t cap)
{
    out[0] = '\0';
    if (fn && fn(h, out, (unsigned)cap) != NVML_SUCCESS)
        out[0] = '\0';
    out[cap - 1] = '\0';
}

static void identify(struct gp_nvml *st, struct gp_nvml_dev *d)
{
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    get_str(st->s.name, d->h, name, sizeof name);
    cpy(d->model, sizeof d->model, name[0] ? name : "NVIDIA GPU");
    get_str(st->s.uuid, d->h, d->uuid, sizeof d->uuid);
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    if (st->s.pci && st->s.pci(d->h, &pci) == NVML_SUCCESS) {
        pci.busId[sizeof pci.busId - 1] = '\0';
        if (st->s.pci_ver == 3 && pci.busId[0])
            cpy(d->bus, sizeof d->bus, pci.busId);
        else /* older layouts: the same ids at the same offsets; use the 8-digit domain form */
            snprintf(d->bus, sizeof d->bus, "%08X:%02X:%02X.0", pci.domain, pci.bus & 0xff,
                     pci.device & 0xff);
    }
    unsigned minor = d->index;
    if (st->s.minor && st->s.minor(d->h, &minor) != NVML_SUCCESS)
        minor = d->index;
    snprintf(d->device, sizeof d->device, "nvidia%u", minor);
}

/* Adds one frame device per MIG instance of GPU pi, right after it. */
static int enumerate_mig(struct gp_nvml *st, unsigned pi)
{
    struct gp_nvml_dev *p = &st->dev[pi];
    unsigned cur = 0, pending = 0, max = 0;
    if (!st->s.mig_mode || st->s.mig_mode(p->h, &cur, &pending) != NVML_SUCCESS ||
        cur != NVML_DEVICE_MIG_ENABLE)
        return GP_OK;
    p->mig_enabled = true;
    if (!st->s.max_mig || !st->s.mig_handle || st->s.max_mig(p->h, &max) != NVML_SUCCESS)
        return GP_OK;
    for (unsigned i = 0; i < max && i < 64; i++) {
        nvmlDevice_t mh;
        nvmlReturn_t rc = st->s.mig_handle(st->dev[pi].h, i, &mh);
        if (rc == NVML_ERROR_NOT_FOUND)
            continue; /* empty slot */
        if (rc != NVML_SUCCESS) {
            gp_log(GP_LOG_DEBUG, NV_MODULE, "MIG handle unavailable", "gpu=%u slot=%u rc=%d",
                   st->dev[pi].index, i, rc);
            continue;
        }
        struct gp_nvml_dev *m = add_dev(st);
        if (!m)
            return GP_ENOMEM;
        p = &st->dev[pi]; /* add_dev may have moved the array */
        m->h = mh;
        m->parent = (int)pi;
        m->index = p->index;
        cpy(m->bus, sizeof m->bus, p->bus);
        cpy(m->device, sizeof m->device, p->device);
        cpy(m->model, sizeof m->model, p->model);
        get_str(st->s.uuid, mh, m->uuid, sizeof m->uuid);
        if (!m->uuid[0])
            cpy(m->uuid, sizeof m->uuid, p->uuid);
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        get_str(st->s.name, mh, name, sizeof name);
        const char *prof = strstr(name, " MIG ");
        cpy(m->mig_profile, sizeof m->mig_profile, prof ? prof + 5 : name);
        unsigned gi = i;
        if (st->s.gi_id && st->s.gi_id(mh, &gi) != NVML_SUCCESS)
            gi = i;
        m->mig_gi = (int)gi;
    }
    return GP_OK;
}

/* Registers XID events on every GPU; on none = XID unsupported. */
static void setup_events(struct gp_nvml *st)
{
    if (!st->s.ev_create || !st->s.ev_register || !st->s.ev_wait || !st->s.ev_free)
        return;
    if (st->s.ev_create(&st->evset) != NVML_SUCCESS) {
        st->evset = NULL;
        return;
    }
    for (unsigned i = 0; i < st->ndev; i++) {
        struct gp_nvml_dev *d = &st->dev[i];
        if (d->parent >= 0 || d->lost)
            continue;
        /* XID alone: an unsupported ECC type would make the whole mask fail. */
        nvmlReturn_t rc = st->s.ev_register(d->h, nvmlEventTypeXidCriticalError, st->evset);
        if (rc == NVML_SUCCESS)
            st->xid_on = true;
        else
            gp_log(GP_LOG_DEBUG, NV_MODULE, "XID events unavailable", "gpu=%u rc=%d", d->index, rc);
    }
    if (!st->xid_on) {
        st->s.ev_free(st->evset);
        st->evset = NULL;
    }
}

/* GPM (Hopper+): two samples per supporting GPU. */
static int setup_gpm(struct gp_nvml *st)
{
    const struct gp_nvml_syms *s = &st->s;
    if (!s->gpm_support || !s->gpm_alloc || !s->gpm_free || !s->gpm_get || !s->gpm_metrics)
        return GP_OK;
    for (unsigned i = 0; i < st->ndev; i++) {
        struct gp_nvml_dev *d = &st->dev[i];
        if (d->parent >= 0 || d->lost)
            continue;
        nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
        nvmlReturn_t rc = s->gpm_support(d->h, &sup);
        if (rc != NVML_SUCCESS || !sup.isSupportedDevice) {
            gp_log(GP_LOG_DEBUG, NV_MODULE, "GPM unsupported", "gpu=%u rc=%d", d->index, rc);
            continue;
        }
        if (s->gpm_alloc(&d->gpm[0]) != NVML_SUCCESS) {
            d->gpm[0] = NULL;
            continue;
        }
        if (s->gpm_alloc(&d->gpm[1]) != NVML_SUCCESS) {
            s->gpm_free(d->gpm[0]);
            d->gpm[0] = d->gpm[1] = NULL;
            continue;
        }
        d->gpm_on = true;
        if (!st->gpm_req) {
            st->gpm_req = calloc(1, sizeof *st->gpm_req);
            if (!st->gpm_req)
                return GP_ENOMEM;
        }
    }
    return GP_OK;
}

static void nvml_close(void *state)
{
    struct gp_nvml *st = state;
    if (!st)
        return;
    for (unsigned i = 0; i < st->ndev; i++)
        for (int k = 0; k < 2; k++)
            if (st->dev[i].gpm[k] && st->s.gpm_free)
                st->s.gpm_free(st->dev[i].gpm[k]);
    if (st->evset && st->s.ev_free)
        st->s.ev_free(st->evset);
    if (st->inited && st->s.shutdown)
        st->s.shutdown();
    if (st->lib)
        dlclose(st->lib);
    free(st->dev);
    free(st->gpm_req);
    free(st->procbuf);
    free(st->ubuf);
    free(st);
}

static int open_fail(struct gp_nvml *st, int code, char *err, size_t errlen, const char *msg)
{
    gp_seterr(err, errlen, code, "%s", msg);
    nvml_close(st);
    return code;
}

static int nvml_open(const struct gp_source_config *cfg, void **state, char *err, size_t errlen)
{
    char msg[512];
    *state = NULL;
    struct gp_nvml *st = calloc(1, sizeof *st);
    if (!st)
        return gp_seterr(err, errlen, GP_ENOMEM, "nvml: out of memory");
    const char *path = cfg && cfg->nvml_library && *cfg->nvml_library ? cfg->nvml_library : NULL;
    if (!path) {
        const char *env = getenv("GPULSE_NVML_LIBRARY");
        path = env && *env ? env : "libnvidia-ml.so.1";
    }
    cpy(st->path, sizeof st->path, path);
    st->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!st->lib) {
        const char *de = dlerror();
        snprintf(msg, sizeof msg, "cannot load NVML library \"%s\": %s", path, de ? de : "not found");
        return open_fail(st, GP_ENODEV, err, errlen, msg);
    }
    resolve(st);
    if (!st->s.init || !st->s.shutdown || !st->s.count || !st->s.handle) {
        snprintf(msg, sizeof msg, "\"%s\" lacks nvmlInit/nvmlDeviceGetCount: not an NVML library", path);
        return open_fail(st, GP_ENODEV, err, errlen, msg);
    }
    nvmlReturn_t rc = st->s.init();
    if (rc != NVML_SUCCESS) {
        bool absent = rc == NVML_ERROR_DRIVER_NOT_LOADED || rc == NVML_ERROR_LIBRARY_NOT_FOUND;
        snprintf(msg, sizeof msg, "nvmlInit failed: %s (%d)%s", gp_nvml__errstr(st, rc), rc,
                 absent ? ": NVIDIA driver not loaded" : "");
        return open_fail(st, absent ? GP_ENODEV : GP_EIO, err, errlen, msg);
    }
    st->inited = true;
    if (!st->s.driver_version ||
        st->s.driver_version(st->driver, sizeof st->driver) != NVML_SUCCESS)
        snprintf(st->driver, sizeof st->driver, "unknown");
    st->driver[sizeof st->driver - 1] = '\0';
    if (!st->s.cuda_version || st->s.cuda_version(&st->cuda) != NVML_SUCCESS || st->cuda < 0)
        st->cuda = 0;
    unsigned n = 0;
    rc = st->s.count(&n);
    if (rc != NVML_SUCCESS || n == 0) {
        snprintf(msg, sizeof msg, "no NVIDIA GPU found (nvmlDeviceGetCount: %s)",
                 rc ? gp_nvml__errstr(st, rc) : "0 devices");
        return open_fail(st, GP_ENODEV, err, errlen, msg);
    }
    unsigned ngpus = 0, nmig = 0;
    for (unsigned i = 0; i < n && i < 1024; i++) {
        nvmlDevice_t h = NULL;
        rc = st->s.handle(i, &h);
        if (rc != NVML_SUCCESS && rc != NVML_ERROR_GPU_IS_LOST) {
            gp_log(GP_LOG_WARN, NV_MODULE, "GPU skipped: no handle", "gpu=%u rc=%d err=\"%s\"", i, rc,
                   gp_nvml__errstr(st, rc));
            continue;
        }
        struct gp_nvml_dev *d = add_dev(st);
        if (!d)
            return open_fail(st, GP_ENOMEM, err, errlen, "nvml: out of memory");
        d->index = i;
        d->h = h;
        ngpus++;
        if (rc == NVML_ERROR_GPU_IS_LOST) {
            unsigned ignored = 0;
            snprintf(d->device, sizeof d->device, "nvidia%u", i);
            gp_nvml__mark_lost(st, d, &ignored);
            continue;
        }
        identify(st, d);
        unsigned before = st->ndev;
        if (enumerate_mig(st, st->ndev - 1))
            return open_fail(st, GP_ENOMEM, err, errlen, "nvml: out of memory");
        nmig += st->ndev - before;
    }
    if (ngpus == 0)
        return open_fail(st, GP_ENODEV, err, errlen, "no usable NVIDIA GPU (no device handle)");
    /* Missing symbols: those readings are unsupported everywhere, never asked. */
    uint32_t absent = 0;
    const struct gp_nvml_syms *s = &st->s;
    const void *fns[GP_NC__COUNT] = {
        [GP_NC_UTIL] = (void *)s->util, [GP_NC_ENC] = (void *)s->enc, [GP_NC_DEC] = (void *)s->dec,
        [GP_NC_MEM2] = (void *)s->mem2, [GP_NC_MEM1] = (void *)s->mem1, [GP_NC_TEMP] = (void *)s->temp,
        [GP_NC_POWER] = (void *)s->power, [GP_NC_PLIMIT] = (void *)s->power_limit,
        [GP_NC_ENERGY] = (void *)s->energy, [GP_NC_CLK_SM] = (void *)s->clock,
        [GP_NC_CLK_MEM] = (void *)s->clock, [GP_NC_CLKMAX_SM] = (void *)s->max_clock,
        [GP_NC_CLKMAX_MEM] = (void *)s->max_clock, [GP_NC_EVENTS] = (void *)s->clock_events,
        [GP_NC_FAN] = (void *)s->fan, [GP_NC_FIELDS] = (void *)s->fields, [GP_NC_PROCS] = (void *)s->procs,
        [GP_NC_PUTIL] = (void *)s->proc_util, [GP_NC_GPM] = (void *)s->gpm_get,
        [GP_NC_ECC] = (void *)s->ecc_total, [GP_NC_RETIRED] = (void *)s->retired,
        [GP_NC_RETIRED_PENDING] = (void *)s->retired_pending, [GP_NC_REMAP] = (void *)s->remapped,
        [GP_NC_PCIE_GEN] = (void *)s->pcie_gen, [GP_NC_PCIE_GEN_MAX] = (void *)s->pcie_gen_max,
        [GP_NC_PCIE_WIDTH] = (void *)s->pcie_width, [GP_NC_PCIE_WIDTH_MAX] = (void *)s->pcie_width_max,
    };
    for (int c = 0; c < GP_NC__COUNT; c++)
        if (!fns[c])
            absent |= 1u << c;
    for (unsigned i = 0; i < st->ndev; i++)
        st->dev[i].unsup |= absent;

    setup_events(st);
    if (cfg && cfg->gpm && setup_gpm(st))
        return open_fail(st, GP_ENOMEM, err, errlen, "nvml: out of memory");
    st->proc_cap = 64;
    st->ucap = 64;
    st->procbuf = calloc(st->proc_cap, 32); /* 32: room for the 535.43-535.86 stride */
    st->ubuf = calloc(st->ucap, sizeof *st->ubuf);
    if (!st->procbuf || !st->ubuf)
        return open_fail(st, GP_ENOMEM, err, errlen, "nvml: out of memory");
    bool gpm = false;
    for (unsigned i = 0; i < st->ndev; i++)
        gpm |= st->dev[i].gpm_on;
    char q[300];
    gp_log(GP_LOG_INFO, NV_MODULE, "NVML loaded",
           "library=%s driver=%s gpus=%u mig_instances=%u gpm=%s xid_events=%s process_util=%s "
           "memory_v2=%s",
           gp_log_quote(q, sizeof q, st->path), st->driver, ngpus, nmig, gpm ? "on" : "off",
           st->xid_on ? "on" : "off", s->proc_util ? "on" : "off", s->mem2 ? "on" : "off");
    *state = st;
    return GP_OK;
}

/* ---- tick ---- */

static void record_xid(struct gp_nvml_dev *d, unsigned long long xid)
{
    d->has_xid = true;
    d->last_xid = (double)xid;
    for (unsigned i = 0; i < d->nxids; i++)
        if (d->xids[i].xid == xid) {
            d->xids[i].count++;
            return;
        }
    if (d->nxids < GP_MAX_XIDS) {
        d->xids[d->nxids].xid = (uint32_t)xid;
        d->xids[d->nxids++].count = 1;
    }
}

/* Drains queued events with a zero timeout: never blocks the tick. */
static void drain_events(struct gp_nvml *st, unsigned *errors)
{
    for (int k = 0; k < 4096; k++) {
        nvmlEventData_t e;
        memset(&e, 0, sizeof e);
        nvmlReturn_t rc = st->s.ev_wait(st->evset, &e, 0);
        if (rc == NVML_ERROR_TIMEOUT)
            return;
        if (rc != NVML_SUCCESS) {
            (*errors)++;
            gp_log(GP_LOG_DEBUG, NV_MODULE, "event wait failed", "rc=%d", rc);
            return;
        }
        if (!(e.eventType & nvmlEventTypeXidCriticalError))
            continue;
        for (unsigned i = 0; i < st->ndev; i++)
            if (st->dev[i].parent < 0 && st->dev[i].h == e.device) {
                record_xid(&st->dev[i], e.eventData);
                gp_log(GP_LOG_WARN, NV_MODULE, "XID error", "gpu=%u xid=%llu", st->dev[i].index,
                       e.eventData);
                break;
            }
    }
}

static int nvml_sample(void *state, struct gp_frame *f, unsigned *errors)
{
    struct gp_nvml *st = state;
    int64_t now = gp_mono_ms();
    bool slow = !st->slow_done || now - st->last_slow_ms >= gp_nvml_slow_interval_ms;
    if (slow) {
        st->slow_done = true;
        st->last_slow_ms = now;
    }
    if (st->xid_on)
        drain_events(st, errors);
    for (unsigned i = 0; i < st->ndev; i++) {
        struct gp_nvml_dev *d = &st->dev[i];
        struct gp_gpu *g = gp_frame_add_gpu(f);
        if (!g)
            return GP_ENOMEM;
        g->vendor = GP_VENDOR_NVIDIA;
        g->index = d->index;
        memcpy(g->uuid, d->uuid, sizeof g->uuid);
        memcpy(g->pci_bus_id, d->bus, sizeof g->pci_bus_id);
        memcpy(g->device, d->device, sizeof g->device);
        memcpy(g->model, d->model, sizeof g->model);
        cpy(g->driver, sizeof g->driver, st->driver);
        g->cuda_version = st->cuda;
        g->mig_gi = d->mig_gi;
        memcpy(g->mig_profile, d->mig_profile, sizeof g->mig_profile);
        if (!d->lost)
            gp_nvml__read_device(st, d, g, slow, errors);
        if (d->lost) { /* lost before or during this read: identity only */
            memset(g->valid, 0, sizeof g->valid);
            g->clock_events_valid = false;
            g->nprocs = 0;
            g->lost = true;
        }
        const struct gp_nvml_dev *x = d->parent >= 0 ? NULL : d; /* XIDs belong to the GPU */
        if (x) {
            if (x->has_xid && !d->lost)
                gp_gpu_set(g, GPF_XID_ERRORS, x->last_xid);
            g->nxids = x->nxids;
            memcpy(g->xids, x->xids, sizeof g->xids);
        }
    }
    return GP_OK;
}

const struct gp_source_ops gp_source_nvml = {
    .name = "nvml",
    .id = GP_SRC_NVML,
    .open = nvml_open,
    .sample = nvml_sample,
    .close = nvml_close,
};
