/* top_agent.c - see top_agent.h. */
#include "top_agent.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "top/top_http.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 1024-node simulated fleet's snapshot is a few tens of MiB. */
#define MAX_ANSWER (64u << 20)

/* The parse's state: the first error wins, later checks are skipped. */
struct rd {
    char *err;
    size_t errlen;
    int rc;
};

static int bad(struct rd *r, const char *what, const char *why)
{
    if (r->rc == GP_OK)
        r->rc = gp_seterr(r->err, r->errlen, GP_EPARSE, "snapshot: %s %s", what, why);
    return r->rc;
}

/* Member key of o as a string into out (cut to outlen); absent leaves out. */
static void str(struct rd *r, const json_t *o, const char *key, char *out, size_t outlen)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return;
    if (!json_is_string(v)) {
        bad(r, key, "is not a string");
        return;
    }
    snprintf(out, outlen, "%s", json_string_value(v));
}

/* Member key of o as a number; absent or null: *ok false. */
static double num(struct rd *r, const json_t *o, const char *key, bool *ok)
{
    const json_t *v = json_object_get(o, key);
    *ok = false;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v)) {
        bad(r, key, "is not a number");
        return 0;
    }
    *ok = true;
    return json_number_value(v);
}

/* A count, pid or byte total: a non-negative integer up to max. */
static uint64_t uint_of(struct rd *r, const json_t *o, const char *key, uint64_t max)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) {
        bad(r, key, "is not a non-negative integer in range");
        return 0;
    }
    return (uint64_t)json_integer_value(v);
}

/* A rank, local rank or world size: an integer, or null for unknown (-1). */
static int32_t rank_of(struct rd *r, const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return -1;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
        bad(r, key, "is not a rank");
        return -1;
    }
    return (int32_t)json_integer_value(v);
}

static const json_t *member(struct rd *r, const json_t *o, const char *key, int want_array)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return NULL;
    if (want_array ? !json_is_array(v) : !json_is_object(v)) {
        bad(r, key, want_array ? "is not an array" : "is not an object");
        return NULL;
    }
    return v;
}

static void job_id(struct rd *r, const json_t *o, struct gp_job_id *id)
{
    memset(id, 0, sizeof *id);
    id->rank = id->local_rank = id->world_size = -1;
    str(r, o, "job", id->job, sizeof id->job);
    id->rank = rank_of(r, o, "rank");
}

static int index_of(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] && !strcmp(names[i], s))
            return (int)i;
    return -1;
}

static void gpu_procs(struct rd *r, const json_t *arr, struct gp_gpu *g)
{
    size_t i;
    const json_t *p;
    json_array_foreach(arr, i, p) {
        if (r->rc)
            return;
        if (!json_is_object(p)) {
            bad(r, "gpus[].processes[]", "is not an object");
            return;
        }
        struct gp_gpu_proc *gp = gp_gpu_add_proc(g);
        if (!gp) {
            r->rc = gp_seterr(r->err, r->errlen, GP_ENOMEM, "out of memory");
            return;
        }
        gp->pid = (uint32_t)uint_of(r, p, "pid", UINT32_MAX);
        bool ok, ok2;
        gp->mem_bytes = uint_of(r, p, "memory_bytes", INT64_MAX);
        gp->mem_valid = json_object_get(p, "memory_bytes") != NULL;
        gp->sm_util = 100 * num(r, p, "sm_ratio", &ok);
        gp->mem_util = 100 * num(r, p, "memory_util_ratio", &ok2);
        gp->util_valid = ok && ok2;
    }
}

static void gpu(struct rd *r, const json_t *o, struct gp_frame *f, struct gp_gpu *g,
                struct gp_job_id *jid)
{
    g->index = (unsigned)uint_of(r, o, "gpu", UINT32_MAX);
    str(r, o, "uuid", g->uuid, sizeof g->uuid);
    str(r, o, "pci_bus_id", g->pci_bus_id, sizeof g->pci_bus_id);
    str(r, o, "device", g->device, sizeof g->device);
    str(r, o, "model", g->model, sizeof g->model);
    str(r, o, "driver", g->driver, sizeof g->driver);
    char vendor[16] = "", node[sizeof g->node] = "";
    str(r, o, "vendor", vendor, sizeof vendor);
    g->vendor = !strcmp(vendor, gp_vendor_name(GP_VENDOR_AMD)) ? GP_VENDOR_AMD : GP_VENDOR_NVIDIA;
    str(r, o, "hostname", node, sizeof node);
    if (strcmp(node, f->hostname)) /* a simulated node's GPU */
        snprintf(g->node, sizeof g->node, "%s", node);
    g->simulated = json_is_true(json_object_get(o, "simulated"));
    g->lost = json_is_true(json_object_get(o, "lost"));
    if (json_object_get(o, "mig_gpu_instance")) {
        g->mig_gi = (int)uint_of(r, o, "mig_gpu_instance", INT32_MAX);
        str(r, o, "mig_profile", g->mig_profile, sizeof g->mig_profile);
    }
    job_id(r, o, jid);
    const json_t *m = member(r, o, "metrics", 0), *v;
    const char *k;
    json_object_foreach((json_t *)m, k, v) {
        for (int fi = 0; fi < GPF__COUNT; fi++)
            if (!strcmp(k, gp_gpu_fields[fi].name)) {
                if (!json_is_number(v))
                    bad(r, k, "is not a number");
                else
                    gp_gpu_set(g, (enum gp_gpu_field)fi, json_number_value(v));
                break;
            }
    }
    const json_t *reasons = member(r, o, "clock_event_reasons", 1);
    size_t i;
    if (reasons) {
        g->clock_events_valid = true;
        json_array_foreach(reasons, i, v)
            for (unsigned c = 0; c < gp_clock_event_count; c++)
                if (json_is_string(v) && !strcmp(json_string_value(v), gp_clock_event_names[c].name))
                    g->clock_events |= gp_clock_event_names[c].bit;
    }
    const json_t *x = member(r, o, "xid_errors", 0);
    json_object_foreach((json_t *)x, k, v) {
        char *end;
        unsigned long xid = strtoul(k, &end, 10);
        if (*end || !*k || xid > UINT32_MAX || !json_is_integer(v) || json_integer_value(v) < 0) {
            bad(r, "xid_errors", "has a bad entry");
            break;
        }
        if (g->nxids < GP_MAX_XIDS)
            g->xids[g->nxids++] = (struct gp_xid_count){(uint32_t)xid, (uint64_t)json_integer_value(v)};
    }
    const json_t *procs = member(r, o, "processes", 1);
    if (procs)
        gpu_procs(r, procs, g);
}

static void host(struct rd *r, const json_t *o, struct gp_host *h)
{
    const json_t *c = member(r, o, "cpu_seconds", 0), *v;
    const char *k;
    json_object_foreach((json_t *)c, k, v) {
        int m = index_of(gp_cpu_mode_names, GP_CPU__COUNT, k);
        if (m >= 0 && json_is_number(v))
            h->cpu_seconds[m] = json_number_value(v);
        h->cpu_valid = true;
    }
    h->ncpus = (unsigned)uint_of(r, o, "cpus", 1u << 20);
    const json_t *mem = member(r, o, "memory_bytes", 0);
    json_object_foreach((json_t *)mem, k, v) {
        int m = index_of(gp_mem_kind_names, GP_MEM__COUNT, k);
        if (m >= 0 && json_is_integer(v) && json_integer_value(v) >= 0) {
            h->mem_bytes[m] = (uint64_t)json_integer_value(v);
            h->mem_valid |= 1u << m;
        }
    }
    const json_t *psi = member(r, o, "pressure_stall_seconds", 0);
    for (int res = 0; res < GP_PSI__COUNT && psi; res++)
        for (int kind = 0; kind < GP_PSI_KIND__COUNT; kind++) {
            char key[32];
            snprintf(key, sizeof key, "%s_%s", gp_psi_resource_names[res], gp_psi_kind_names[kind]);
            bool ok;
            double s = num(r, psi, key, &ok);
            if (ok) {
                h->psi_seconds[res][kind] = s;
                h->psi_valid[res] |= (uint8_t)(1u << kind);
            }
        }
    const json_t *load = member(r, o, "load_average", 1);
    if (load && json_array_size(load) == 3) {
        h->load_valid = true;
        for (size_t i = 0; i < 3; i++)
            h->load[i] = json_number_value(json_array_get(load, i));
    }
}

static void proc(struct rd *r, const json_t *o, struct gp_proc *p)
{
    bool ok;
    p->pid = (uint32_t)uint_of(r, o, "pid", UINT32_MAX);
    p->ppid = (uint32_t)uint_of(r, o, "ppid", UINT32_MAX);
    p->uid = (uint32_t)uint_of(r, o, "uid", UINT32_MAX);
    str(r, o, "comm", p->comm, sizeof p->comm);
    char state[4] = "";
    str(r, o, "state", state, sizeof state);
    p->state = state[0];
    p->threads = (uint32_t)uint_of(r, o, "threads", UINT32_MAX);
    p->utime_s = num(r, o, "cpu_user_seconds", &ok);
    p->stime_s = num(r, o, "cpu_system_seconds", &ok);
    p->start_time_s = num(r, o, "start_time_seconds", &ok);
    p->rss_bytes = uint_of(r, o, "resident_memory_bytes", INT64_MAX);
    p->vsize_bytes = uint_of(r, o, "virtual_memory_bytes", INT64_MAX);
    job_id(r, o, &p->jid);
}

static void job(struct rd *r, const json_t *o, struct gp_job *j)
{
    bool ok;
    job_id(r, o, &j->id);
    char scheme[32] = "";
    str(r, o, "scheme", scheme, sizeof scheme);
    int s = index_of(gp_job_scheme_names, GP_JOB__COUNT, scheme);
    j->id.scheme = (uint8_t)(s >= 0 ? s : 0);
    j->id.local_rank = rank_of(r, o, "local_rank");
    j->id.world_size = rank_of(r, o, "world_size");
    str(r, o, "node", j->node, sizeof j->node);
    j->start_time_s = num(r, o, "start_time_seconds", &ok);
    j->nprocs = (unsigned)uint_of(r, o, "processes", UINT32_MAX);
    j->cpu_seconds = num(r, o, "cpu_seconds", &ok);
    j->rss_bytes = uint_of(r, o, "resident_memory_bytes", INT64_MAX);
    j->ngpus = (unsigned)uint_of(r, o, "gpus", UINT32_MAX);
    j->gpu_memory_bytes = uint_of(r, o, "gpu_memory_bytes", INT64_MAX);
    j->gpu_mem_valid = json_is_integer(json_object_get(o, "gpu_memory_bytes"));
    j->sm_ratio = num(r, o, "gpu_sm_ratio", &j->sm_valid);
}

static int cmp_pid(const void *a, const void *b)
{
    uint32_t x = ((const struct gp_proc *)a)->pid, y = ((const struct gp_proc *)b)->pid;
    return x < y ? -1 : x > y;
}

/* Checks one array member of root against its cap; NULL when absent. */
static const json_t *list(struct rd *r, const json_t *root, const char *key, size_t cap)
{
    const json_t *a = member(r, root, key, 1);
    if (a && json_array_size(a) > cap)
        bad(r, key, "has too many entries");
    return r->rc ? NULL : a;
}

int gp_top_snapshot_parse(const char *json, size_t len, struct gp_frame *f, char *err, size_t errlen)
{
    gp_frame_reset(f);
    f->hostname[0] = '\0';
    memset(f->src, 0, sizeof f->src);
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return gp_seterr(err, errlen, GP_EPARSE, "snapshot: not JSON (line %d: %s)", je.line, je.text);
    struct rd r = {err, errlen, GP_OK};
    struct gp_job_id *gjid = NULL;
    if (!json_is_object(root) || !json_is_array(json_object_get(root, "gpus"))) {
        bad(&r, "document", "is not an agent's snapshot (an object with \"gpus\")");
        goto done;
    }
    str(&r, root, "hostname", f->hostname, sizeof f->hostname);
    f->seq = uint_of(&r, root, "seq", UINT64_MAX >> 1);
    f->time_ms = (int64_t)uint_of(&r, root, "time_ms", INT64_MAX);
    bool ok;
    f->tick_duration_s = num(&r, root, "tick_duration_seconds", &ok);
    const json_t *gpus = list(&r, root, "gpus", GP_TOP_AGENT_MAX_GPUS);
    const json_t *procs = list(&r, root, "processes", GP_TOP_AGENT_MAX_PROCS);
    const json_t *jobs = list(&r, root, "jobs", GP_TOP_AGENT_MAX_JOBS);
    size_t i;
    const json_t *o;
    if (gpus && json_array_size(gpus) && !(gjid = calloc(json_array_size(gpus), sizeof *gjid))) {
        r.rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    json_array_foreach(gpus, i, o) {
        struct gp_gpu *g = r.rc ? NULL : json_is_object(o) ? gp_frame_add_gpu(f) : NULL;
        if (!r.rc && !json_is_object(o))
            bad(&r, "gpus[]", "is not an object");
        else if (!r.rc && !g)
            r.rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        if (r.rc)
            goto done;
        gpu(&r, o, f, g, &gjid[i]);
    }
    const json_t *h = member(&r, root, "host", 0);
    if (h)
        host(&r, h, &f->host);
    json_array_foreach(procs, i, o) {
        struct gp_proc *p = r.rc ? NULL : json_is_object(o) ? gp_frame_add_proc(f) : NULL;
        if (!r.rc && !json_is_object(o))
            bad(&r, "processes[]", "is not an object");
        else if (!r.rc && !p)
            r.rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        if (r.rc)
            goto done;
        proc(&r, o, p);
    }
    if (f->nprocs) /* the frame finds processes by binary search */
        qsort(f->procs, f->nprocs, sizeof *f->procs, cmp_pid);
    json_array_foreach(jobs, i, o) {
        struct gp_job *j = r.rc ? NULL : json_is_object(o) ? gp_frame_add_job(f) : NULL;
        if (!r.rc && !json_is_object(o))
            bad(&r, "jobs[]", "is not an object");
        else if (!r.rc && !j)
            r.rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        if (r.rc)
            goto done;
        job(&r, o, j);
    }
    /* a GPU names its job by job and rank; the frame by index */
    for (unsigned g = 0; g < f->ngpus && !r.rc; g++)
        for (unsigned j = 0; j < f->njobs && gjid[g].job[0]; j++)
            if (!strcmp(f->jobs[j].id.job, gjid[g].job) && f->jobs[j].id.rank == gjid[g].rank) {
                f->gpus[g].job_idx = (int)j;
                break;
            }
    const json_t *srcs = member(&r, root, "sources", 0), *v;
    const char *k;
    json_object_foreach((json_t *)srcs, k, v) {
        int s = index_of(gp_source_names, GP_SRC__COUNT, k);
        if (s < 0 || !json_is_object(v))
            continue;
        f->src[s].active = json_is_true(json_object_get(v, "active"));
        f->src[s].errors_total = uint_of(&r, v, "errors_total", UINT64_MAX >> 1);
        f->src[s].duration_s = num(&r, v, "sample_duration_seconds", &ok);
    }
done:
    free(gjid);
    json_decref(root);
    if (r.rc)
        gp_frame_reset(f);
    return r.rc;
}

int gp_top_agent_fetch(const char *agent, struct gp_frame *f, char *err, size_t errlen)
{
    size_t al = strlen(agent);
    while (al && agent[al - 1] == '/')
        al--;
    char url[1024];
    if ((size_t)snprintf(url, sizeof url, "%.*s/api/v1/snapshot", (int)al, agent) >= sizeof url)
        return gp_seterr(err, errlen, GP_ECONFIG, "agent URL too long");
    struct gp_buf body;
    gp_buf_init(&body, MAX_ANSWER);
    long status = 0;
    char detail[400];
    int rc = gp_top_http_get("snapshot", url, NULL, &body, &status, detail, sizeof detail);
    if (rc)
        gp_seterr(err, errlen, rc, "agent %.*s: %s", (int)al, agent, detail);
    else if (status != 200)
        rc = gp_seterr(err, errlen, GP_ENET, "agent %.*s: GET /api/v1/snapshot answered %ld%s", (int)al,
                       agent, status,
                       status == 404 || status == 401
                           ? " (not a gpulse agent or gpulse up? gpulse server serves no snapshot)"
                           : "");
    else if ((rc = gp_top_snapshot_parse(body.data ? body.data : "", body.len, f, detail, sizeof detail)))
        gp_seterr(err, errlen, rc, "agent %.*s: %s", (int)al, agent, detail);
    gp_buf_free(&body);
    return rc;
}
