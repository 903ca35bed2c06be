/*
 * expo.c - Prometheus text rendering of a frame.
 *
 * Families are written one at a time: HELP, TYPE, then one line per GPU
 * (or process, or mode) that has the reading. GPU label sets are built
 * once per render and reused by every family. Simulated GPUs carry
 * simulated="true"; MIG instances GPU_I_ID and GPU_I_PROFILE.
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
    free(x->label_off);
    free(x->selected);
    memset(x, 0, sizeof *x);
}

static void label(struct gp_buf *b, const char *name, const char *value, int *first)
{
    if (!*first)
        gp_buf_putc(b, ',');
    *first = 0;
    gp_buf_puts(b, name);
    gp_buf_puts(b, "=\"");
    gp_metric_escape(b, value);
    gp_buf_putc(b, '"');
}

/* A family of one unlabelled series. */
static void scalar(struct gp_buf *b, enum gp_metric m, double v)
{
    gp_metric_head(b, m);
    gp_buf_puts(b, gp_metric_name(m));
    gp_buf_putc(b, ' ');
    gp_buf_put_double(b, v);
    gp_buf_putc(b, '\n');
}

/* name{labels[,extra]} value\n */
static void sample(struct gp_buf *b, const char *name, const char *labels, const char *extra,
                   double v)
{
    gp_buf_puts(b, name);
    gp_buf_putc(b, '{');
    gp_buf_puts(b, labels);
    if (extra && *extra) {
        if (*labels)
            gp_buf_putc(b, ',');
        gp_buf_puts(b, extra);
    }
    gp_buf_puts(b, "} ");
    gp_buf_put_double(b, v);
    gp_buf_putc(b, '\n');
}

/* job="..",rank=".." (rank when known) of id, when it names a job. */
static void job_labels(struct gp_buf *b, const struct gp_job_id *id, int *first)
{
    if (!id->job[0])
        return;
    label(b, "job", id->job, first);
    if (id->rank >= 0) {
        char r[16];
        snprintf(r, sizeof r, "%d", (int)id->rank);
        label(b, "rank", r, first);
    }
}

static int build_gpu_labels(struct gp_expo *x, const struct gp_frame *f, const struct gp_expo_options *o)
{
    if (f->ngpus > x->cap_gpus) {
        unsigned *p = realloc(x->label_off, 2 * f->ngpus * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        x->label_off = p;
        x->cap_gpus = f->ngpus;
    }
    if (!x->labels.max)
        gp_buf_init(&x->labels, 0);
    gp_buf_reset(&x->labels);
    struct gp_buf *b = &x->labels;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        char idx[16], gi[16];
        int first = 1;
        x->label_off[i] = (unsigned)b->len;
        snprintf(idx, sizeof idx, "%u", g->index);
        label(b, "gpu", idx, &first);
        label(b, "UUID", g->uuid, &first);
        label(b, "pci_bus_id", g->pci_bus_id, &first);
        label(b, "device", g->device, &first);
        label(b, "modelName", g->model, &first);
        label(b, o->hostname_label, g->node[0] ? g->node : f->hostname, &first);
        if (g->mig_gi >= 0) {
            snprintf(gi, sizeof gi, "%d", g->mig_gi);
            label(b, "GPU_I_PROFILE", g->mig_profile, &first);
            label(b, "GPU_I_ID", gi, &first);
        }
        if (g->driver[0])
            label(b, "DCGM_FI_DRIVER_VERSION", g->driver, &first);
        label(b, "vendor", gp_vendor_name(g->vendor), &first);
        if (g->simulated)
            label(b, "simulated", "true", &first);
        gp_buf_putc(b, '\0'); /* each label set is its own C string */
        /* the same again with the GPU's job, for its own series */
        size_t base = x->label_off[i], blen = b->len - 1 - base;
        x->label_off[f->ngpus + i] = (unsigned)b->len;
        if (b->err || gp_buf_reserve(b, blen) != GP_OK)
            break;
        gp_buf_append(b, b->data + base, blen); /* reserved: the source does not move */
        if (g->job_idx >= 0 && (unsigned)g->job_idx < f->njobs)
            job_labels(b, &f->jobs[g->job_idx].id, &first);
        gp_buf_putc(b, '\0');
    }
    return b->err;
}

/* The labels of GPU i's own series (with its job). */
static const char *gpu_labels(const struct gp_expo *x, const struct gp_frame *f, unsigned i)
{
    return x->labels.data + x->label_off[f->ngpus + i];
}

/* GPU i's labels without its job (per-process GPU series). */
static const char *gpu_base_labels(const struct gp_expo *x, unsigned i)
{
    return x->labels.data + x->label_off[i];
}

static void render_gpu_fields(struct gp_expo *x, struct gp_buf *b, const struct gp_frame *f)
{
    for (int fi = 0; fi < GPF__COUNT; fi++) {
        const struct gp_gpu_field_info *info = &gp_gpu_fields[fi];
        int any = 0;
        for (unsigned i = 0; i < f->ngpus; i++) {
            const struct gp_gpu *g = &f->gpus[i];
            if (g->lost || !gp_gpu_has(g, (enum gp_gpu_field)fi))
                continue;
            if (!any)
                gp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", info->name, info->help, info->name,
                              info->type == GP_COUNTER ? "counter" : "gauge");
            any = 1;
            sample(b, info->name, gpu_labels(x, f, i), NULL, g->val[fi]);
        }
    }
}

static void render_gpu_extras(struct gp_expo *x, struct gp_buf *b, const struct gp_frame *f)
{
    char extra[128];
    int any = 0;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        if (g->lost || !g->clock_events_valid)
            continue;
        if (!any)
            gp_metric_head(b, GP_M_GPU_CLOCK_EVENT_REASONS);
        any = 1;
        for (unsigned r = 0; r < gp_clock_event_count; r++) {
            snprintf(extra, sizeof extra, "reason=\"%s\"", gp_clock_event_names[r].name);
            sample(b, gp_metric_name(GP_M_GPU_CLOCK_EVENT_REASONS), gpu_labels(x, f, i), extra,
                   (g->clock_events & gp_clock_event_names[r].bit) ? 1 : 0);
        }
    }
    any = 0;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        for (unsigned k = 0; k < g->nxids && k < GP_MAX_XIDS; k++) {
            if (!any)
                gp_metric_head(b, GP_M_GPU_XID_ERRORS);
            any = 1;
            snprintf(extra, sizeof extra, "xid=\"%u\"", g->xids[k].xid);
            sample(b, gp_metric_name(GP_M_GPU_XID_ERRORS), gpu_labels(x, f, i), extra,
                   (double)g->xids[k].count);
        }
    }
    if (f->ngpus)
        gp_metric_head(b, GP_M_GPU_LOST);
    for (unsigned i = 0; i < f->ngpus; i++)
        sample(b, gp_metric_name(GP_M_GPU_LOST), gpu_labels(x, f, i), NULL, f->gpus[i].lost ? 1 : 0);
}

/* pid="..",comm=".."[,job="..",rank=".."] for a GPU process (comm and
 * job from the host table when known). */
static void proc_labels(struct gp_buf *b, const struct gp_frame *f, uint32_t pid)
{
    const struct gp_proc *p = gp_frame_find_proc(f, pid);
    gp_buf_printf(b, "pid=\"%u\",comm=\"", pid);
    gp_metric_escape(b, p ? p->comm : "");
    gp_buf_putc(b, '"');
    int first = 0;
    if (p)
        job_labels(b, &p->jid, &first);
}

static void render_gpu_procs(struct gp_expo *x, struct gp_buf *b, const struct gp_frame *f)
{
    static const enum gp_metric fams[] = {
        GP_M_GPU_PROC_MEMORY,
        GP_M_GPU_PROC_SM,
        GP_M_GPU_PROC_MEMUTIL,
    };
    struct gp_buf extra;
    gp_buf_init(&extra, 4096);
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
                    gp_metric_head(b, fams[k]);
                any = 1;
                gp_buf_reset(&extra);
                proc_labels(&extra, f, p->pid);
                sample(b, gp_metric_name(fams[k]), gpu_base_labels(x, i), extra.data, v);
            }
        }
    }
    gp_buf_free(&extra);
}

static void render_host(struct gp_buf *b, const struct gp_frame *f)
{
    const struct gp_host *h = &f->host;
    char extra[96];
    if (h->cpu_valid) {
        gp_metric_head(b, GP_M_HOST_CPU);
        for (int m = 0; m < GP_CPU__COUNT; m++) {
            snprintf(extra, sizeof extra, "mode=\"%s\"", gp_cpu_mode_names[m]);
            sample(b, gp_metric_name(GP_M_HOST_CPU), "", extra, h->cpu_seconds[m]);
        }
        gp_metric_head(b, GP_M_HOST_CPUS);
        gp_buf_printf(b, "%s %u\n", gp_metric_name(GP_M_HOST_CPUS), h->ncpus);
    }
    if (h->mem_valid & ~(1u << GP_MEM_HUGEPAGES_TOTAL)) {
        gp_metric_head(b, GP_M_HOST_MEMORY);
        for (int m = 0; m < GP_MEM__COUNT; m++) {
            if (m == GP_MEM_HUGEPAGES_TOTAL || !(h->mem_valid & (1u << m)))
                continue;
            snprintf(extra, sizeof extra, "kind=\"%s\"", gp_mem_kind_names[m]);
            sample(b, gp_metric_name(GP_M_HOST_MEMORY), "", extra, (double)h->mem_bytes[m]);
        }
    }
    if (h->mem_valid & (1u << GP_MEM_HUGEPAGES_TOTAL)) {
        gp_metric_head(b, GP_M_HOST_HUGEPAGES);
        gp_buf_printf(b, "%s %llu\n", gp_metric_name(GP_M_HOST_HUGEPAGES),
                      (unsigned long long)h->mem_bytes[GP_MEM_HUGEPAGES_TOTAL]);
    }
    int any = 0;
    for (int r = 0; r < GP_PSI__COUNT; r++)
        for (int k = 0; k < GP_PSI_KIND__COUNT; k++) {
            if (!(h->psi_valid[r] & (1u << k)))
                continue;
            if (!any)
                gp_metric_head(b, GP_M_HOST_PRESSURE);
            any = 1;
            snprintf(extra, sizeof extra, "resource=\"%s\",kind=\"%s\"", gp_psi_resource_names[r], gp_psi_kind_names[k]);
            sample(b, gp_metric_name(GP_M_HOST_PRESSURE), "", extra, h->psi_seconds[r][k]);
        }
    if (h->load_valid) {
        static const char *const win[] = {"1m", "5m", "15m"};
        gp_metric_head(b, GP_M_HOST_LOAD);
        for (int i = 0; i < 3; i++) {
            snprintf(extra, sizeof extra, "window=\"%s\"", win[i]);
            sample(b, gp_metric_name(GP_M_HOST_LOAD), "", extra, h->load[i]);
        }
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

/* {pid="..",comm=".."[,job="..",rank=".."] of a host process, unclosed. */
static void host_proc_labels(struct gp_buf *b, const struct gp_proc *p)
{
    gp_buf_printf(b, "{pid=\"%u\",comm=\"", p->pid);
    gp_metric_escape(b, p->comm);
    gp_buf_putc(b, '"');
    int first = 0;
    job_labels(b, &p->jid, &first);
}

/* The per-job families of docs/jobs.md: one series per job and rank. */
static void render_jobs(struct gp_buf *b, const struct gp_frame *f, const struct gp_expo_options *o)
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
    char num[16];
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        int any = 0;
        for (unsigned i = 0; i < f->njobs; i++) {
            const struct gp_job *j = &f->jobs[i];
            if (!j->id.job[0] || (k == 6 && !j->gpu_mem_valid) || (k == 7 && !j->sm_valid))
                continue;
            if (!any)
                gp_metric_head(b, fams[k]);
            any = 1;
            int first = 1;
            gp_buf_puts(b, gp_metric_name(fams[k]));
            gp_buf_putc(b, '{');
            job_labels(b, &j->id, &first);
            label(b, o->hostname_label, j->node[0] ? j->node : f->hostname, &first);
            if (k == 0) {
                label(b, "scheme", j->id.scheme < GP_JOB__COUNT ? gp_job_scheme_names[j->id.scheme] : "none",
                      &first);
                if (j->id.local_rank >= 0) {
                    snprintf(num, sizeof num, "%d", (int)j->id.local_rank);
                    label(b, "local_rank", num, &first);
                }
                if (j->id.world_size >= 0) {
                    snprintf(num, sizeof num, "%d", (int)j->id.world_size);
                    label(b, "world_size", num, &first);
                }
                if (o->run_job && o->run_command && !strcmp(j->id.job, o->run_job))
                    label(b, "command", o->run_command, &first);
            }
            double v = k == 0 ? 1 : k == 1 ? j->start_time_s : k == 2 ? (double)j->nprocs :
                       k == 3 ? j->cpu_seconds : k == 4 ? (double)j->rss_bytes :
                       k == 5 ? (double)j->ngpus : k == 6 ? (double)j->gpu_memory_bytes : j->sm_ratio;
            gp_buf_puts(b, "} ");
            gp_buf_put_double(b, v);
            gp_buf_putc(b, '\n');
        }
    }
}

static void render_procs(struct gp_expo *x, struct gp_buf *b, const struct gp_frame *f,
                         enum gp_proc_series mode)
{
    if (mode == GP_PROC_SERIES_NONE || !f->nprocs)
        return;
    if (f->nprocs > x->cap_procs) {
        unsigned char *s = realloc(x->selected, f->nprocs);
        if (!s) {
            b->err = GP_ENOMEM;
            return;
        }
        x->selected = s;
        x->cap_procs = f->nprocs;
    }
    if (!gp_expo_select_procs(f, mode, x->selected))
        return;
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
    char lab[160];
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        int any = 0;
        for (unsigned i = 0; i < f->nprocs; i++) {
            const struct gp_proc *p = &f->procs[i];
            if (!x->selected[i] || (k >= 6 && !p->io_valid))
                continue;
            if (!any)
                gp_metric_head(b, fams[k]);
            any = 1;
            gp_buf_puts(b, gp_metric_name(fams[k]));
            host_proc_labels(b, p);
            switch (k) {
            case 0:
                snprintf(lab, sizeof lab, ",ppid=\"%u\",uid=\"%u\",state=\"%c\"} 1\n", p->ppid, p->uid,
                         p->state ? p->state : '?');
                gp_buf_puts(b, lab);
                break;
            case 1:
                gp_buf_puts(b, ",mode=\"user\"} ");
                gp_buf_put_double(b, p->utime_s);
                gp_buf_putc(b, '\n');
                gp_buf_puts(b, gp_metric_name(fams[k]));
                host_proc_labels(b, p);
                gp_buf_puts(b, ",mode=\"system\"} ");
                gp_buf_put_double(b, p->stime_s);
                gp_buf_putc(b, '\n');
                break;
            default: {
                double v = k == 2 ? (double)p->rss_bytes : k == 3 ? (double)p->vsize_bytes :
                           k == 4 ? (double)p->threads : k == 5 ? p->start_time_s :
                           k == 6 ? (double)p->io_read_bytes : (double)p->io_write_bytes;
                gp_buf_puts(b, "} ");
                gp_buf_put_double(b, v);
                gp_buf_putc(b, '\n');
            }
            }
        }
    }
}

static void render_self(struct gp_buf *b, const struct gp_frame *f, const struct gp_agent_stats *st)
{
    char extra[64];
    gp_metric_head(b, GP_M_SOURCE_UP);
    for (int s = 0; s < GP_SRC__COUNT; s++) {
        snprintf(extra, sizeof extra, "source=\"%s\"", gp_source_names[s]);
        sample(b, gp_metric_name(GP_M_SOURCE_UP), "", extra, f->src[s].active ? 1 : 0);
    }
    gp_metric_head(b, GP_M_SOURCE_ERRORS);
    for (int s = 0; s < GP_SRC__COUNT; s++) {
        snprintf(extra, sizeof extra, "source=\"%s\"", gp_source_names[s]);
        sample(b, gp_metric_name(GP_M_SOURCE_ERRORS), "", extra, (double)f->src[s].errors_total);
    }
    gp_metric_head(b, GP_M_SOURCE_DURATION);
    for (int s = 0; s < GP_SRC__COUNT; s++) {
        if (!f->src[s].active)
            continue;
        snprintf(extra, sizeof extra, "source=\"%s\"", gp_source_names[s]);
        sample(b, gp_metric_name(GP_M_SOURCE_DURATION), "", extra, f->src[s].duration_s);
    }
    scalar(b, GP_M_SCRAPE_DURATION,
           f->tick_duration_s);
    scalar(b, GP_M_AGENT_TICKS,
           (double)st->ticks);
    scalar(b, GP_M_AGENT_OVERRUNS, (double)st->overruns);
    scalar(b, GP_M_AGENT_LAST_SAMPLE,
           (double)f->time_ms / 1000.0);
    scalar(b, GP_M_AGENT_START,
           st->start_time_s);
    gp_metric_head(b, GP_M_BUILD_INFO);
    gp_buf_printf(b, "%s{version=\"%s\"} 1\n", gp_metric_name(GP_M_BUILD_INFO), GP_VERSION);
}

int gp_expo_render(struct gp_expo *x, struct gp_buf *out, const struct gp_frame *f,
                   const struct gp_expo_options *o, const struct gp_agent_stats *st)
{
    int rc = build_gpu_labels(x, f, o);
    if (rc)
        return rc;
    render_gpu_fields(x, out, f);
    render_gpu_extras(x, out, f);
    gp_expo_render_norm(x, out, f);
    render_gpu_procs(x, out, f);
    render_host(out, f);
    render_procs(x, out, f, o->process_series);
    render_jobs(out, f, o);
    gp_expo_render_steps(out, f, o);
    render_self(out, f, st);
    return out->err;
}
