/*
 * expo.h - a frame as Prometheus text exposition format 0.0.4.
 *
 * GPU readings keep dcgm-exporter's names and labels (gpu, UUID,
 * pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION) so
 * existing dashboards work; everything else is gpulse_* in base units.
 * Every family has HELP and TYPE, every name+label set appears once, and
 * label values are escaped (process names contain anything).
 */
#ifndef GP_EXPO_H
#define GP_EXPO_H

#include "ingest/textparse.h"
#include "lib/buf.h"
#include "sources/frame.h"

enum gp_proc_series { GP_PROC_SERIES_GPU, GP_PROC_SERIES_ALL, GP_PROC_SERIES_NONE };

struct gp_expo_options {
    const char *hostname_label;        /* "Hostname" or "hostname" */
    enum gp_proc_series process_series;
    /* `gpulse run`: its job's info series carries command= (what the
     * server's job document shows); NULL otherwise */
    const char *run_job, *run_command;
};

/* Agent-level counters shown next to the frame. */
struct gp_agent_stats {
    uint64_t ticks;
    uint64_t overruns;
    double start_time_s;
    double last_tick_duration_s;
};

/* Scratch memory reused across renders; zero-initialise, free with gp_expo_free. */
struct gp_expo {
    struct gp_buf labels;   /* per-GPU label strings, back to back */
    unsigned *label_off;    /* offset of GPU i's labels in `labels` */
    unsigned cap_gpus;
    unsigned char *selected; /* per host process: emit its series */
    unsigned cap_procs;
};

void gp_expo_free(struct gp_expo *x);

/* Appends the whole exposition of f to out. Returns GP_OK or out->err. */
int gp_expo_render(struct gp_expo *x, struct gp_buf *out, const struct gp_frame *f,
                   const struct gp_expo_options *o, const struct gp_agent_stats *st);

/*
 * Appends the step telemetry families of f->steps (docs/jobs.md) and, when
 * the steps source is active, its self counters (expo_steps.c). Returns
 * GP_OK or out->err.
 */
int gp_expo_render_steps(struct gp_buf *out, const struct gp_frame *f, const struct gp_expo_options *o);

/*
 * A GPU's readings normalized by its model (expo_norm.c). A value < 0 is
 * absent (the reading, or the capability it is divided by, is unknown);
 * sources are static strings, NULL with their value absent. model is the
 * table row, NULL for a model the table does not know.
 */
struct gp_gpumodel;
struct gp_expo_norm {
    const struct gp_gpumodel *model;
    double compute;            /* 0-1 */
    double memory;             /* used / total, 0-1 */
    double bandwidth;          /* 0-1 */
    double power;              /* draw / limit (may pass 1 for a moment) */
    double clock;              /* SM clock / max */
    double effective_tflops;
    const char *compute_source;   /* "sm_active" | "gpu_util" */
    const char *bandwidth_source; /* "dram_active" | "mem_copy_util" */
    const char *effective_basis;  /* "pipes" | "compute_ratio" */
};

/* Normalizes g's readings into *out (overwritten). */
void gp_expo_normalize(const struct gp_gpu *g, struct gp_expo_norm *out);

/*
 * Appends the normalized families (gpulse_gpu_*_ratio, effective and peak
 * TFLOP/s, H100-equivalents, model_known) of f's GPUs, with the GPU label
 * sets that gp_expo_render built in x. Returns GP_OK or out->err.
 */
int gp_expo_render_norm(const struct gp_expo *x, struct gp_buf *out, const struct gp_frame *f);

/*
 * Marks which host processes get series: with GP_PROC_SERIES_GPU, the
 * followed ones (p->followed: on a GPU, a root to follow, or a
 * descendant of one, such as dataloader workers). sel must have
 * f->nprocs entries. Returns the number selected.
 */
unsigned gp_expo_select_procs(const struct gp_frame *f, enum gp_proc_series mode, unsigned char *sel);

#endif
