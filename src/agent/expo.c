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

void gp_expo_escape(struct gp_buf *out, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        if (*s == '\\')
            rep = "\\\\";
        else if (*s == '"')
            rep = "\\\"";
        else if (*s == '\n')
            rep = "\\n";
        if (rep) {
            gp_buf_append(out, run, (size_t)(s - run));
            gp_buf_puts(out, rep);
            run = s + 1;
        }
    }
    gp_buf_append(out, run, (size_t)(s - run));
}

static void label(struct gp_buf *b, const char *name, const char *value, int *first)
{
    if (!*first)
        gp_buf_putc(b, ',');
    *first = 0;
    gp_buf_puts(b, name);
    gp_buf_puts(b, "=\"");
    gp_expo_escape(b, value);
    gp_buf_putc(b, '"');
}

static void family(struct gp_buf *b, const char *name, const char *type, const char *help)
{
    gp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one unlabelled series. */
static void scalar(struct gp_buf *b, const char *name, const char *type, const char *help, double v)
{
    family(b, name, type, help);
    gp_buf_puts(b, name);
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
                family(b, info->name, info->type == GP_COUNTER ? "counter" : "gauge", info->help);
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
            family(b, "gpulse_gpu_clock_event_reasons", "gauge",
                   "1 while the clocks are held down for this reason (NVML clock-event reasons).");
        any = 1;
        for (unsigned r = 0; r < gp_clock_event_count; r++) {
            snprintf(extra, sizeof extra, "reason=\"%s\"", gp_clock_event_names[r].name);
            sample(b, "gpulse_gpu_clock_event_reasons", gpu_labels(x, f, i), extra,
                   (g->clock_events & gp_clock_event_names[r].bit) ? 1 : 0);
        }
    }
    any = 0;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        for (unsigned k = 0; k < g->nxids && k < GP_MAX_XIDS; k++) {
            if (!any)
                family(b, "gpulse_gpu_xid_errors_total", "counter",
                       "XID error events seen since the agent started, by XID code.");
            any = 1;
            snprintf(extra, sizeof extra, "xid=\"%u\"", g->xids[k].xid);
            sample(b, "gpulse_gpu_xid_errors_total", gpu_labels(x, f, i), extra, (double)g->xids[k].count);
        }
    }
    if (f->ngpus)
        family(b, "gpulse_gpu_lost", "gauge", "1 when the GPU has fallen off the bus (NVML GPU_IS_LOST).");
    for (unsigned i = 0; i < f->ngpus; i++)
        sample(b, "gpulse_gpu_lost", gpu_labels(x, f, i), NULL, f->gpus[i].lost ? 1 : 0);
}

/* pid="..",comm=".."[,job="..",rank=".."] for a GPU process (comm and
 * job from the host table when known). */
static void proc_labels(struct gp_buf *b, const struct gp_frame *f, uint32_t pid)
{
    const struct gp_proc *p = gp_frame_find_proc(f, pid);
    gp_buf_printf(b, "pid=\"%u\",comm=\"", pid);
    gp_expo_escape(b, p ? p->comm : "");
    gp_buf_putc(b, '"');
    int first = 0;
    if (p)
        job_labels(b, &p->jid, &first);
}

static void render_gpu_procs(struct gp_expo *x, struct gp_buf *b, const struct gp_frame *f)
{
    static const struct {
        const char *name, *help;
    } fams[] = {
        {"gpulse_gpu_process_memory_bytes", "GPU memory used by the process."},
        {"gpulse_gpu_process_sm_ratio", "Share of the GPU's SM time the process used over the last sample period."},
        {"gpulse_gpu_process_memory_util_ratio",
         "Share of time the process read or wrote GPU memory over the last sample period."},
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
                    family(b, fams[k].name, "gauge", fams[k].help);
                any = 1;
                gp_buf_reset(&extra);
                proc_labels(&extra, f, p->pid);
                sample(b, fams[k].name, gpu_base_labels(x, i), extra.data, v);
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
        family(b, "gpulse_host_cpu_seconds_total", "counter", "Host CPU time spent in each mode, summed over CPUs.");
        for (int m = 0; m < GP_CPU__COUNT; m++) {
            snprintf(extra, sizeof extra, "mode=\"%s\"", gp_cpu_mode_names[m]);
            sample(b, "gpulse_host_cpu_seconds_total", "", extra, h->cpu_seconds[m]);
        }
        family(b, "gpulse_host_cpus", "gauge", "Number of online CPUs.");
        gp_buf_printf(b, "gpulse_host_cpus %u\n", h->ncpus);
    }
    if (h->mem_valid & ~(1u << GP_MEM_HUGEPAGES_TOTAL)) {
        family(b, "gpulse_host_memory_bytes", "gauge", "Host memory by kind, from /proc/meminfo.");
        for (int m = 0; m < GP_MEM__COUNT; m++) {
            if (m == GP_MEM_HUGEPAGES_TOTAL || !(h->mem_valid & (1u << m)))
                continue;
            snprintf(extra, sizeof extra, "kind=\"%s\"", gp_mem_kind_names[m]);
            sample(b, "gpulse_host_memory_bytes", "", extra, (double)h->mem_bytes[m]);
        }
    }
    if (h->mem_valid & (1u << GP_MEM_HUGEPAGES_TOTAL)) {
        family(b, "gpulse_host_hugepages", "gauge", "Number of huge pages in the pool.");
        gp_buf_printf(b, "gpulse_host_hugepages %llu\n", (unsigned long long)h->mem_bytes[GP_MEM_HUGEPAGES_TOTAL]);
    }
    int any = 0;
    for (int r = 0; r < GP_PSI__COUNT; r++)
        for (int k = 0; k < GP_PSI_KIND__COUNT; k++) {
            if (!(h->psi_valid[r] & (1u << k)))
                continue;
            if (!any)
                family(b, "gpulse_host_pressure_stall_seconds_total", "counter",
                       "Time tasks stalled waiting for a resource (Linux PSI).");
            any = 1;
            snprintf(extra, sizeof extra, "resource=\"%s\",kind=\"%s\"", gp_psi_resource_names[r], gp_psi_kind_names[k]);
            sample(b, "gpulse_host_pressure_stall_seconds_total", "", extra, h->psi_seconds[r][k]);
        }
    if (h->load_valid) {
        static const char *const win[] = {"1m", "5m", "15m"};
        family(b, "gpulse_host_load_average", "gauge", "Host load average over a window.");
        for (int i = 0; i < 3; i++) {
            snprintf(extra, sizeof extra, "window=\"%s\"", win[i]);
            sample(b, "gpulse_host_load_average", "", extra, h->load[i]);
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
    gp_expo_escape(b, p->comm);
    gp_buf_putc(b, '"');
    int first = 0;
    job_labels(b, &p->jid, &first);
}

/* The per-job families of docs/jobs.md: one series per job and rank. */
static void render_jobs(struct gp_buf *b, const struct gp_frame *f, const struct gp_expo_options *o)
{
    if (!f->njobs)
        return;
    static const struct {
        const char *name, *type, *help;
    } fams[] = {
        {"gpulse_job_info", "gauge", "A job (and rank) with processes on this node; value 1."},
        {"gpulse_job_start_time_seconds", "gauge", "Earliest start of the job's processes, since the epoch."},
        {"gpulse_job_processes", "gauge", "Live processes in the job's tree."},
        {"gpulse_job_cpu_seconds_total", "counter",
         "User and system CPU time of the job's tree, exited processes included."},
        {"gpulse_job_resident_memory_bytes", "gauge", "Resident memory of the job's tree."},
        {"gpulse_job_gpus", "gauge", "GPUs the job holds memory on or runs on."},
        {"gpulse_job_gpu_memory_bytes", "gauge", "GPU memory of the job's processes."},
        {"gpulse_job_gpu_sm_ratio", "gauge", "SM share of the job's processes, summed over GPUs."},
    };
    char num[16];
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        int any = 0;
        for (unsigned i = 0; i < f->njobs; i++) {
            const struct gp_job *j = &f->jobs[i];
            if (!j->id.job[0] || (k == 6 && !j->gpu_mem_valid) || (k == 7 && !j->sm_valid))
                continue;
            if (!any)
                family(b, fams[k].name, fams[k].type, fams[k].help);
            any = 1;
            int first = 1;
            gp_buf_puts(b, fams[k].name);
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
    static const struct {
        const char *name, *type, *help;
    } fams[] = {
        {"gpulse_process_info", "gauge", "Process identity: parent pid, user id and state; value 1."},
        {"gpulse_process_cpu_seconds_total", "counter", "CPU time of the process by mode."},
        {"gpulse_process_resident_memory_bytes", "gauge", "Resident set size of the process."},
        {"gpulse_process_virtual_memory_bytes", "gauge", "Virtual memory size of the process."},
        {"gpulse_process_threads", "gauge", "Number of threads of the process."},
        {"gpulse_process_start_time_seconds", "gauge", "Start time of the process since the epoch."},
        {"gpulse_process_io_read_bytes_total", "counter", "Bytes the process read from storage."},
        {"gpulse_process_io_write_bytes_total", "counter", "Bytes the process wrote to storage."},
    };
    char lab[160];
    for (size_t k = 0; k < sizeof fams / sizeof fams[0]; k++) {
        int any = 0;
        for (unsigned i = 0; i < f->nprocs; i++) {
            const struct gp_proc *p = &f->procs[i];
            if (!x->selected[i] || (k >= 6 && !p->io_valid))
                continue;
            if (!any)
                family(b, fams[k].name, fams[k].type, fams[k].help);
            any = 1;
            gp_buf_puts(b, fams[k].name);
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
                gp_buf_puts(b, fams[k].name);
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
    family(b, "gpulse_source_up", "gauge", "1 when the source found something to sample and is sampling it.");
    for (int s = 0; s < GP_SRC__COUNT; s++) {
        snprintf(extra, sizeof extra, "source=\"%s\"", gp_source_names[s]);
        sample(b, "gpulse_source_up", "", extra, f->src[s].active ? 1 : 0);
    }
    family(b, "gpulse_source_errors_total", "counter",
           "Readings a source had to skip: vanished processes, garbled files, driver errors.");
    for (int s = 0; s < GP_SRC__COUNT; s++) {
        snprintf(extra, sizeof extra, "source=\"%s\"", gp_source_names[s]);
        sample(b, "gpulse_source_errors_total", "", extra, (double)f->src[s].errors_total);
    }
    family(b, "gpulse_source_sample_duration_seconds", "gauge", "Time the source's last sample took.");
    for (int s = 0; s < GP_SRC__COUNT; s++) {
        if (!f->src[s].active)
            continue;
        snprintf(extra, sizeof extra, "source=\"%s\"", gp_source_names[s]);
        sample(b, "gpulse_source_sample_duration_seconds", "", extra, f->src[s].duration_s);
    }
    scalar(b, "gpulse_scrape_duration_seconds", "gauge", "Time the last sampling tick took, all sources.",
           f->tick_duration_s);
    scalar(b, "gpulse_agent_ticks_total", "counter", "Sampling ticks since the agent started.",
           (double)st->ticks);
    scalar(b, "gpulse_agent_tick_overruns_total", "counter",
           "Ticks skipped because sampling took longer than the interval.", (double)st->overruns);
    scalar(b, "gpulse_agent_last_sample_timestamp_seconds", "gauge", "When the latest frame was sampled.",
           (double)f->time_ms / 1000.0);
    scalar(b, "gpulse_agent_start_time_seconds", "gauge", "When the agent started, since the epoch.",
           st->start_time_s);
    family(b, "gpulse_build_info", "gauge", "gpulse version; value 1.");
    gp_buf_printf(b, "gpulse_build_info{version=\"%s\"} 1\n", GP_VERSION);
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
