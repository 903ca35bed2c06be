/*
 * expo.c - the walk of a frame that both the /metrics text and the
 * remote-write push are made from (lib/metric_sink.h).
 *
 * Families are walked one at a time: the family, then one sample per GPU
 * (or process, or mode) that has the reading. GPU label sets are built
 * once per walk (with their text form, for the text sink) and reused by
 * every family. Simulated GPUs carry simulated="true"; MIG instances
 * GPU_I_ID and GPU_I_PROFILE.
 *
 * Jobs (docs/jobs.md): a GPU's series carry the job and rank holding the
 * most memory on it (gpu->job_idx); each GPU therefore has two label
 * sets, one with its job for the GPU's own series and one without for
 * the per-process GPU series, which say their own process's job. Host
 * process series carry their process's job; the gpulse_job_* families
 * (one series per job and rank) come from frame->jobs.
 */
#include "expo.h"

#include "lib/err.h"
#include "lib/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gp_expo_free(struct gp_expo *x)
{
    if (!x)
        return;
    gp_buf_free(&x->labels);
    free(x->gpus);
    free(x->selected);
    memset(x, 0, sizeof *x);
}

/* A label set being built: up to GP_EXPO_MAX_LABELS pairs. */
static void add(struct gp_metric_label *l, size_t *n, const char *name, const char *value)
{
    if (*n < GP_EXPO_MAX_LABELS)
        l[(*n)++] = (struct gp_metric_label){name, value};
}

/* job and rank (rank when known) of id, when it names a job; rank's
 * digits go to num. */
static void job_labels(struct gp_metric_label *l, size_t *n, const struct gp_job_id *id, char num[16])
{
    if (!id->job[0])
        return;
    add(l, n, "job", id->job);
    if (id->rank >= 0) {
        snprintf(num, 16, "%d", (int)id->rank);
        add(l, n, "rank", num);
    }
}

static int build_gpu_labels(struct gp_expo *x, const struct gp_frame *f, const struct gp_expo_options *o)
{
    if (f->ngpus > x->cap_gpus) {
        struct gp_expo_gpu *p = realloc(x->gpus, f->ngpus * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        x->gpus = p;
        x->cap_gpus = f->ngpus;
    }
    if (!x->labels.max)
        gp_buf_init(&x->labels, 0);
    gp_buf_reset(&x->labels);
    struct gp_buf *b = &x->labels;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        struct gp_expo_gpu *e = &x->gpus[i];
        size_t n = 0;
        snprintf(e->idx, sizeof e->idx, "%u", g->index);
        add(e->l, &n, "gpu", e->idx);
        add(e->l, &n, "UUID", g->uuid);
        add(e->l, &n, "pci_bus_id", g->pci_bus_id);
        add(e->l, &n, "device", g->device);
        add(e->l, &n, "modelName", g->model);
        add(e->l, &n, o->hostname_label, g->node[0] ? g->node : f->hostname);
        if (g->mig_gi >= 0) {
            snprintf(e->gi, sizeof e->gi, "%d", g->mig_gi);
            add(e->l, &n, "GPU_I_PROFILE", g->mig_profile);
            add(e->l, &n, "GPU_I_ID", e->gi);
        }
        if (g->driver[0])
            add(e->l, &n, "DCGM_FI_DRIVER_VERSION", g->driver);
        add(e->l, &n, "vendor", gp_vendor_name(g->vendor));
        if (g->simulated)
            add(e->l, &n, "simulated", "true");
        e->base = (struct gp_metric_labels){e->l, n, NULL};
        /* the same again with the GPU's job, for its own series */
        if (g->job_idx >= 0 && (unsigned)g->job_idx < f->njobs)
            job_labels(e->l, &n, &f->jobs[g->job_idx].id, e->rank);
        e->own = (struct gp_metric_labels){e->l, n, NULL};
        /* text forms, each its own C string; pointers set once b stops moving */
        e->text_off[0] = b->len;
        gp_metric_labels_text(b, e->l, e->base.n);
        gp_buf_putc(b, '\0');
        e->text_off[1] = b->len;
        gp_metric_labels_text(b, e->l, e->own.n);
        gp_buf_putc(b, '\0');
    }
    if (b->err)
        return b->err;
    for (unsigned i = 0; i < f->ngpus; i++) {
        x->gpus[i].base.text = b->data + x->gpus[i].text_off[0];
        x->gpus[i].own.text = b->data + x->gpus[i].text_off[1];
    }
    return GP_OK;
}

/* The labels of GPU i's own series (with its job). */
static const struct gp_metric_labels *gpu_labels(const struct gp_expo *x, unsigned i)
{
    return &x->gpus[i].own;
}

static void walk_gpu_fields(struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f)
{
    for (int fi = 0; fi < GPF__COUNT; fi++) {
        const struct gp_gpu_field_info *info = &gp_gpu_fields[fi];
        int any = 0;
        for (unsigned i = 0; i < f->ngpus; i++) {
            const struct gp_gpu *g = &f->gpus[i];
            if (g->lost || !gp_gpu_has(g, (enum gp_gpu_field)fi))
                continue;
            if (!any)
                s->family(s, info->name, info->help, info->type == GP_COUNTER ? "counter" : "gauge");
            any = 1;
            s->sample(s, info->name, gpu_labels(x, i), NULL, 0, g->val[fi]);
        }
    }
}

static void walk_gpu_extras(struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f)
{
    char num[16];
    int any = 0;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (g->lost || !g->clock_events_valid)
            continue;
        if (!any)
            gp_metric_family(s, GP_M_GPU_CLOCK_EVENT_REASONS);
        any = 1;
        for (unsigned r = 0; r < gp_clock_event_count; r++)
            gp_metric_sample(s, GP_M_GPU_CLOCK_EVENT_REASONS, gpu_labels(x, i), "reason",
                             gp_clock_event_names[r].name, (g->clock_events & gp_clock_event_names[r].bit) ? 1 : 0);
    }
    any = 0;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        for (unsigned k = 0; k < g->nxids && k < GP_MAX_XIDS; k++) {
            if (!any)
                gp_metric_family(s, GP_M_GPU_XID_ERRORS);
            any = 1;
            snprintf(num, sizeof num, "%u", g->xids[k].xid);
            gp_metric_sample(s, GP_M_GPU_XID_ERRORS, gpu_labels(x, i), "xid", num, (double)g->xids[k].count);
        }
    }
    if (f->ngpus)
        gp_metric_family(s, GP_M_GPU_LOST);
    for (unsigned i = 0; i < f->ngpus; i++)
        gp_metric_sample(s, GP_M_GPU_LOST, gpu_labels(x, i), NULL, NULL, f->gpus[i].lost ? 1 : 0);
}

/* pid, comm[, job, rank] of a process (p NULL: a GPU process the host
 * table lacks, comm ""); the numbers go to pid and rank. */
static size_t proc_labels(struct gp_metric_label *l, const struct gp_proc *p, uint32_t pidv, char pid[16],
                          char rank[16])
{
    size_t n = 0;
    snprintf(pid, 16, "%u", pidv);
    add(l, &n, "pid", pid);
    add(l, &n, "comm", p ? p->comm : "");
    if (p)
        job_labels(l, &n, &p->jid, rank);
    return n;
}

static void walk_gpu_procs(struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f)
{
    static const enum gp_metric fams[] = {
        GP_M_GPU_PROC_MEMORY,
        GP_M_GPU_PROC_SM,
        GP_M_GPU_PROC_MEMUTIL,
    };
    struct gp_metric_label extra[4];
    char pid[16], rank[16];
    for (int k = 0; k < 3; k++) {
        int any = 0;
        for (unsigned i = 0; i < f->ngpus; i++) {
            const struct gp_gpu *g = &f->gpus[i];
            if (g->lost)
                continue;
            for (unsigned j = 0; j < g->nprocs; j++) {
                const struct gp_gpu_proc *p = &g->procs[j];
                double v;
                if (k == 0 && p->mem_valid)
                    v = (double)p->mem_bytes;
                else if (k == 1 && p->util_valid)
                    v = p->sm_util / 100.0;
                else if (k == 2 && p->util_valid)
                    v = p->mem_util / 100.0;
                else
                    continue;
                if (!any)
                    gp_metric_family(s, fams[k]);
                any = 1;
                size_t n = proc_labels(extra, gp_frame_find_proc(f, p->pid), p->pid, pid, rank);
                s->sample(s, gp_metric_name(fams[k]), &x->gpus[i].base, extra, n, v);
            }
        }
    }
}

static void walk_host(struct gp_metric_sink *s, const struct gp_frame *f)
{
    const struct gp_host *h = &f->host;
    if (h->cpu_valid) {
        gp_metric_family(s, GP_M_HOST_CPU);
        for (int m = 0; m < GP_CPU__COUNT; m++)
            gp_metric_sample(s, GP_M_HOST_CPU, NULL, "mode", gp_cpu_mode_names[m], h->cpu_seconds[m]);
        gp_metric_family(s, GP_M_HOST_CPUS);
        gp_metric_sample(s, GP_M_HOST_CPUS, NULL, NULL, NULL, h->ncpus);
    }
    if (h->mem_valid & ~(1u << GP_MEM_HUGEPAGES_TOTAL)) {
        gp_metric_family(s, GP_M_HOST_MEMORY);
        for (int m = 0; m < GP_MEM__COUNT; m++) {
            if (m == GP_MEM_HUGEPAGES_TOTAL || !(h->mem_valid & (1u << m)))
                continue;
            gp_metric_sample(s, GP_M_HOST_MEMORY, NULL, "kind", gp_mem_kind_names[m], (double)h->mem_bytes[m]);
        }
    }
    if (h->mem_valid & (1u << GP_MEM_HUGEPAGES_TOTAL)) {
        gp_metric_family(s, GP_M_HOST_HUGEPAGES);
        gp_metric_sample(s, GP_M_HOST_HUGEPAGES, NULL, NULL, NULL, (double)h->mem_bytes[GP_MEM_HUGEPAGES_TOTAL]);
    }
    int any = 0;
    for (int r = 0; r < GP_PSI__COUNT; r++)
        for (int k = 0; k < GP_PSI_KIND__COUNT; k++) {
            if (!(h->psi_valid[r] & (1u << k)))
                continue;
            if (!any)
                gp_metric_family(s, GP_M_HOST_PRESSURE);
            any = 1;
            const struct gp_metric_label e[2] = {{"resource", gp_psi_resource_names[r]},
                                                 {"kind", gp_psi_kind_names[k]}};
            s->sample(s, gp_metric_name(GP_M_HOST_PRESSURE), NULL, e, 2, h->psi_seconds[r][k]);
        }
    if (h->load_valid) {
        static const char *const win[] = {"1m", "5m", "15m"};
        gp_metric_family(s, GP_M_HOST_LOAD);
        for (int i = 0; i < 3; i++)
            gp_metric_sample(s, GP_M_HOST_LOAD, NULL, "window", win[i], h->load[i]);
    }
}

unsigned gp_expo_select_procs(const struct gp_frame *f, enum gp_proc_series mode, unsigned char *sel)
{
    unsigned n = 0;
    for (unsigned i = 0; i < f->nprocs; i++)
        sel[i] = mode == GP_PROC_SERIES_ALL;
    if (mode != GP_PROC_SERIES_GPU)
        return mode == GP_PROC_SERIES_ALL ? f->nprocs : 0;
    /* procfs marked the followed trees: GPU processes, roots, descendants */
    for (unsigned i = 0; i < f->nprocs; i++)
        n += sel[i] = f->procs[i].followed;
    return n;
}

/* The per-job families of docs/jobs.md: one series per job and rank. */
static void walk_jobs(struct gp_metric_sink *s, const struct gp_frame *f, const struct gp_expo_options *o)
{
    if (!f->njobs)
        return;
    static const enum gp_metric fams[] = {
        GP_M_JOB_INFO,
        GP_M_JOB_START,
        GP_M_JOB_PROCESSES,
        GP_M_JOB_CPU,
        GP_M_JOB_RSS,
        GP_M_JOB_GPUS,
        GP_M_JOB_GPU_MEMORY,
        GP_M_JOB_GPU_SM,
    };
    char rank[16], lr[16], ws[16];
    struct gp_metric_label l[8];
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        int any = 0;
        for (unsigned i = 0; i < f->njobs; i++) {
            const struct gp_job *j = &f->jobs[i];
            if (!j->id.job[0] || (k == 6 && !j->gpu_mem_valid) || (k == 7 && !j->sm_valid))
                continue;
            if (!any)
                gp_metric_family(s, fams[k]);
            any = 1;
            size_t n = 0;
            job_labels(l, &n, &j->id, rank);
            add(l, &n, o->hostname_label, j->node[0] ? j->node : f->hostname);
            if (k == 0) {
                add(l, &n, "scheme", j->id.scheme < GP_JOB__COUNT ? gp_job_scheme_names[j->id.scheme] : "none");
                if (j->id.local_rank >= 0) {
                    snprintf(lr, sizeof lr, "%d", (int)j->id.local_rank);
                    add(l, &n, "local_rank", lr);
                }
                if (j->id.world_size >= 0) {
                    snprintf(ws, sizeof ws, "%d", (int)j->id.world_size);
                    add(l, &n, "world_size", ws);
                }
                if (o->run_job && o->run_command && !strcmp(j->id.job, o->run_job))
                    add(l, &n, "command", o->run_command);
            }
            double v = k == 0 ? 1 : k == 1 ? j->start_time_s : k == 2 ? (double)j->nprocs :
                       k == 3 ? j->cpu_seconds : k == 4 ? (double)j->rss_bytes :
                       k == 5 ? (double)j->ngpus : k == 6 ? (double)j->gpu_memory_bytes : j->sm_ratio;
            const struct gp_metric_labels set = {l, n, NULL};
            s->sample(s, gp_metric_name(fams[k]), &set, NULL, 0, v);
        }
    }
}

static int walk_procs(struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f,
                      enum gp_proc_series mode)
{
    if (mode == GP_PROC_SERIES_NONE || !f->nprocs)
        return GP_OK;
    if (f->nprocs > x->cap_procs) {
        unsigned char *sel = realloc(x->selected, f->nprocs);
        if (!sel)
            return GP_ENOMEM;
        x->selected = sel;
        x->cap_procs = f->nprocs;
    }
    if (!gp_expo_select_procs(f, mode, x->selected))
        return GP_OK;
    static const enum gp_metric fams[] = {
        GP_M_PROC_INFO,
        GP_M_PROC_CPU,
        GP_M_PROC_RSS,
        GP_M_PROC_VSIZE,
        GP_M_PROC_THREADS,
        GP_M_PROC_START,
        GP_M_PROC_IO_READ,
        GP_M_PROC_IO_WRITE,
    };
    struct gp_metric_label l[8];
    char pid[16], rank[16], ppid[16], uid[16], state[2];
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        int any = 0;
        const char *name = gp_metric_name(fams[k]);
        for (unsigned i = 0; i < f->nprocs; i++) {
            const struct gp_proc *p = &f->procs[i];
            if (!x->selected[i] || (k >= 6 && !p->io_valid))
                continue;
            if (!any)
                gp_metric_family(s, fams[k]);
            any = 1;
            size_t n = proc_labels(l, p, p->pid, pid, rank);
            const struct gp_metric_labels set = {l, n, NULL};
            switch (k) {
            case 0: {
                snprintf(ppid, sizeof ppid, "%u", p->ppid);
                snprintf(uid, sizeof uid, "%u", p->uid);
                state[0] = p->state ? p->state : '?';
                state[1] = '\0';
                const struct gp_metric_label e[3] = {{"ppid", ppid}, {"uid", uid}, {"state", state}};
                s->sample(s, name, &set, e, 3, 1);
                break;
            }
            case 1:
                gp_metric_sample(s, fams[k], &set, "mode", "user", p->utime_s);
                gp_metric_sample(s, fams[k], &set, "mode", "system", p->stime_s);
                break;
            default: {
                double v = k == 2 ? (double)p->rss_bytes : k == 3 ? (double)p->vsize_bytes :
                           k == 4 ? (double)p->threads : k == 5 ? p->start_time_s :
                           k == 6 ? (double)p->io_read_bytes : (double)p->io_write_bytes;
                s->sample(s, name, &set, NULL, 0, v);
            }
            }
        }
    }
    return GP_OK;
}

static void walk_self(struct gp_metric_sink *s, const struct gp_frame *f, const struct gp_agent_stats *st)
{
    gp_metric_family(s, GP_M_SOURCE_UP);
    for (int i = 0; i < GP_SRC__COUNT; i++)
        gp_metric_sample(s, GP_M_SOURCE_UP, NULL, "source", gp_source_names[i], f->src[i].active ? 1 : 0);
    gp_metric_family(s, GP_M_SOURCE_ERRORS);
    for (int i = 0; i < GP_SRC__COUNT; i++)
        gp_metric_sample(s, GP_M_SOURCE_ERRORS, NULL, "source", gp_source_names[i], (double)f->src[i].errors_total);
    gp_metric_family(s, GP_M_SOURCE_DURATION);
    for (int i = 0; i < GP_SRC__COUNT; i++)
        if (f->src[i].active)
            gp_metric_sample(s, GP_M_SOURCE_DURATION, NULL, "source", gp_source_names[i], f->src[i].duration_s);
    static const enum gp_metric scalars[] = {GP_M_SCRAPE_DURATION, GP_M_AGENT_TICKS, GP_M_AGENT_OVERRUNS,
                                             GP_M_AGENT_LAST_SAMPLE, GP_M_AGENT_START};
    const double v[] = {f->tick_duration_s, (double)st->ticks, (double)st->overruns,
                        (double)f->time_ms / 1000.0, st->start_time_s};
    for (int i = 0; i < 5; i++) {
        gp_metric_family(s, scalars[i]);
        gp_metric_sample(s, scalars[i], NULL, NULL, NULL, v[i]);
    }
    gp_metric_family(s, GP_M_BUILD_INFO);
    gp_metric_sample(s, GP_M_BUILD_INFO, NULL, "version", GP_VERSION, 1);
}

int gp_expo_walk(struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f,
                 const struct gp_expo_options *o, const struct gp_agent_stats *st)
{
    int rc = build_gpu_labels(x, f, o);
    if (rc)
        return rc;
    walk_gpu_fields(x, s, f);
    walk_gpu_extras(x, s, f);
    gp_expo_walk_norm(x, s, f);
    walk_gpu_procs(x, s, f);
    walk_host(s, f);
    if ((rc = walk_procs(x, s, f, o->process_series)))
        return rc;
    walk_jobs(s, f, o);
    gp_expo_walk_steps(s, f, o);
    walk_self(s, f, st);
    return s->err;
}

int gp_expo_render(struct gp_expo *x, struct gp_buf *out, const struct gp_frame *f,
                   const struct gp_expo_options *o, const struct gp_agent_stats *st)
{
    struct gp_metric_text_sink t;
    gp_metric_text_sink_init(&t, out);
    int rc = gp_expo_walk(x, &t.base, f, o, st);
    return rc ? rc : out->err;
}
