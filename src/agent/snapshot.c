/*
 * snapshot.c - JSON of a frame, built with jansson (escaping done right).
 *
 * Jobs (docs/jobs.md): every process with a job says its job and rank
 * (null when unknown), every GPU the job holding the most memory on it,
 * and "jobs" lists one object per job and rank, with the values of the
 * gpulse_job_* families.
 */
#include "snapshot.h"

#include "lib/err.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Sets "job" and "rank" of o from id (rank null when unknown); nothing
 * when id names no job. */
static void set_job(json_t *o, const struct gp_job_id *id)
{
    if (!id->job[0])
        return;
    json_object_set_new(o, "job", json_string(id->job));
    json_object_set_new(o, "rank", id->rank >= 0 ? json_integer(id->rank) : json_null());
}

static json_t *job_json(const struct gp_job *j)
{
    json_t *o = json_object();
    set_job(o, &j->id);
    if (j->node[0])
        json_object_set_new(o, "node", json_string(j->node)); /* a simulated job's node */
    json_object_set_new(o, "scheme", json_string(j->id.scheme < GP_JOB__COUNT
                                                     ? gp_job_scheme_names[j->id.scheme] : "none"));
    json_object_set_new(o, "local_rank",
                        j->id.local_rank >= 0 ? json_integer(j->id.local_rank) : json_null());
    json_object_set_new(o, "world_size",
                        j->id.world_size >= 0 ? json_integer(j->id.world_size) : json_null());
    json_object_set_new(o, "start_time_seconds", json_real(j->start_time_s));
    json_object_set_new(o, "processes", json_integer(j->nprocs));
    json_object_set_new(o, "cpu_seconds", json_real(j->cpu_seconds));
    json_object_set_new(o, "resident_memory_bytes", json_integer((json_int_t)j->rss_bytes));
    json_object_set_new(o, "gpus", json_integer(j->ngpus));
    json_object_set_new(o, "gpu_memory_bytes",
                        j->gpu_mem_valid ? json_integer((json_int_t)j->gpu_memory_bytes) : json_null());
    json_object_set_new(o, "gpu_sm_ratio", j->sm_valid ? json_real(j->sm_ratio) : json_null());
    return o;
}

static json_t *gpu_json(const struct gp_frame *f, const struct gp_gpu *g)
{
    json_t *o = json_object();
    json_object_set_new(o, "gpu", json_integer(g->index));
    json_object_set_new(o, "uuid", json_string(g->uuid));
    json_object_set_new(o, "pci_bus_id", json_string(g->pci_bus_id));
    json_object_set_new(o, "device", json_string(g->device));
    json_object_set_new(o, "model", json_string(g->model));
    json_object_set_new(o, "vendor", json_string(gp_vendor_name(g->vendor)));
    json_object_set_new(o, "driver", json_string(g->driver));
    json_object_set_new(o, "hostname", json_string(g->node[0] ? g->node : f->hostname));
    json_object_set_new(o, "simulated", json_boolean(g->simulated));
    if (g->mig_gi >= 0) {
        json_object_set_new(o, "mig_gpu_instance", json_integer(g->mig_gi));
        json_object_set_new(o, "mig_profile", json_string(g->mig_profile));
    }
    json_object_set_new(o, "lost", json_boolean(g->lost));
    if (g->job_idx >= 0 && (unsigned)g->job_idx < f->njobs)
        set_job(o, &f->jobs[g->job_idx].id);
    json_t *vals = json_object();
    for (int fi = 0; fi < GPF__COUNT && !g->lost; fi++)
        if (gp_gpu_has(g, (enum gp_gpu_field)fi))
            json_object_set_new(vals, gp_gpu_fields[fi].name, json_real(g->val[fi]));
    json_object_set_new(o, "metrics", vals);
    if (g->clock_events_valid && !g->lost) {
        json_t *r = json_array();
        for (unsigned i = 0; i < gp_clock_event_count; i++)
            if (g->clock_events & gp_clock_event_names[i].bit)
                json_array_append_new(r, json_string(gp_clock_event_names[i].name));
        json_object_set_new(o, "clock_event_reasons", r);
    }
    json_t *x = json_object();
    for (unsigned i = 0; i < g->nxids && i < GP_MAX_XIDS; i++) {
        char k[16];
        snprintf(k, sizeof k, "%u", g->xids[i].xid);
        json_object_set_new(x, k, json_integer((json_int_t)g->xids[i].count));
    }
    json_object_set_new(o, "xid_errors", x);
    json_t *procs = json_array();
    for (unsigned i = 0; i < g->nprocs && !g->lost; i++) {
        const struct gp_gpu_proc *p = &g->procs[i];
        const struct gp_proc *hp = gp_frame_find_proc(f, p->pid);
        json_t *po = json_object();
        json_object_set_new(po, "pid", json_integer(p->pid));
        json_object_set_new(po, "comm", json_string(hp ? hp->comm : ""));
        if (hp)
            set_job(po, &hp->jid);
        if (p->mem_valid)
            json_object_set_new(po, "memory_bytes", json_integer((json_int_t)p->mem_bytes));
        if (p->util_valid) {
            json_object_set_new(po, "sm_ratio", json_real(p->sm_util / 100.0));
            json_object_set_new(po, "memory_util_ratio", json_real(p->mem_util / 100.0));
        }
        json_array_append_new(procs, po);
    }
    json_object_set_new(o, "processes", procs);
    return o;
}

static json_t *host_json(const struct gp_host *h)
{
    json_t *o = json_object();
    if (h->cpu_valid) {
        json_t *c = json_object();
        for (int m = 0; m < GP_CPU__COUNT; m++)
            json_object_set_new(c, gp_cpu_mode_names[m], json_real(h->cpu_seconds[m]));
        json_object_set_new(o, "cpu_seconds", c);
        json_object_set_new(o, "cpus", json_integer(h->ncpus));
    }
    json_t *m = json_object();
    for (int k = 0; k < GP_MEM__COUNT; k++)
        if (h->mem_valid & (1u << k))
            json_object_set_new(m, gp_mem_kind_names[k], json_integer((json_int_t)h->mem_bytes[k]));
    json_object_set_new(o, "memory_bytes", m);
    json_t *p = json_object();
    for (int r = 0; r < GP_PSI__COUNT; r++)
        for (int k = 0; k < GP_PSI_KIND__COUNT; k++)
            if (h->psi_valid[r] & (1u << k)) {
                char key[32];
                snprintf(key, sizeof key, "%s_%s", gp_psi_resource_names[r], gp_psi_kind_names[k]);
                json_object_set_new(p, key, json_real(h->psi_seconds[r][k]));
            }
    json_object_set_new(o, "pressure_stall_seconds", p);
    if (h->load_valid)
        json_object_set_new(o, "load_average", json_pack("[fff]", h->load[0], h->load[1], h->load[2]));
    return o;
}

static json_t *proc_json(const struct gp_proc *p)
{
    char state[2] = {p->state ? p->state : '?', 0};
    json_t *o = json_pack("{s:I,s:I,s:I,s:s,s:s,s:I,s:f,s:f,s:f,s:I,s:I}", "pid", (json_int_t)p->pid,
                          "ppid", (json_int_t)p->ppid, "uid", (json_int_t)p->uid, "comm", p->comm,
                          "state", state, "threads", (json_int_t)p->threads, "cpu_user_seconds",
                          p->utime_s, "cpu_system_seconds", p->stime_s, "start_time_seconds",
                          p->start_time_s, "resident_memory_bytes", (json_int_t)p->rss_bytes,
                          "virtual_memory_bytes", (json_int_t)p->vsize_bytes);
    if (o)
        set_job(o, &p->jid);
    if (o && p->io_valid) {
        json_object_set_new(o, "io_read_bytes", json_integer((json_int_t)p->io_read_bytes));
        json_object_set_new(o, "io_write_bytes", json_integer((json_int_t)p->io_write_bytes));
    }
    return o;
}

int gp_snapshot_render(struct gp_buf *out, const struct gp_frame *f, const struct gp_expo_options *o,
                       const struct gp_agent_stats *st)
{
    json_t *root = json_object();
    json_object_set_new(root, "version", json_string(GP_VERSION));
    json_object_set_new(root, "hostname", json_string(f->hostname));
    json_object_set_new(root, "time_ms", json_integer(f->time_ms));
    json_object_set_new(root, "seq", json_integer((json_int_t)f->seq));
    json_object_set_new(root, "tick_duration_seconds", json_real(f->tick_duration_s));
    json_object_set_new(root, "ticks", json_integer((json_int_t)st->ticks));
    json_object_set_new(root, "overruns", json_integer((json_int_t)st->overruns));
    json_t *gpus = json_array();
    for (unsigned i = 0; i < f->ngpus; i++)
        json_array_append_new(gpus, gpu_json(f, &f->gpus[i]));
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(root, "host", host_json(&f->host));
    unsigned char *sel = f->nprocs ? malloc(f->nprocs) : NULL;
    json_t *procs = json_array();
    if (f->nprocs && !sel) {
        json_decref(root);
        json_decref(procs);
        return GP_ENOMEM;
    }
    if (sel)
        gp_expo_select_procs(f, o->process_series, sel);
    for (unsigned i = 0; i < f->nprocs; i++)
        if (sel[i])
            json_array_append_new(procs, proc_json(&f->procs[i]));
    free(sel);
    json_object_set_new(root, "processes", procs);
    json_t *jobs = json_array();
    for (unsigned i = 0; i < f->njobs; i++)
        json_array_append_new(jobs, job_json(&f->jobs[i]));
    json_object_set_new(root, "jobs", jobs);
    json_t *srcs = json_object();
    for (int s = 0; s < GP_SRC__COUNT; s++)
        json_object_set_new(srcs, gp_source_names[s],
                            json_pack("{s:b,s:I,s:f}", "active", f->src[s].active, "errors_total",
                                      (json_int_t)f->src[s].errors_total, "sample_duration_seconds",
                                      f->src[s].duration_s));
    json_object_set_new(root, "sources", srcs);
    char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text)
        return GP_ENOMEM;
    gp_buf_puts(out, text);
    gp_buf_putc(out, '\n');
    free(text);
    return out->err;
}
