/*
 * expo.h - a frame's exposition: one walk of the frame (gp_expo_walk)
 * that decides every family, label set and value, handed to a sink
 * (lib/metric_sink.h): Prometheus text 0.0.4 for /metrics
 * (gp_expo_render), remote-write series for the push (expo_push.h).
 *
 * GPU readings keep dcgm-exporter's names and labels (gpu, UUID,
 * pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION) so
 * existing dashboards work; everything else is gpulse_* in base units.
 * Every family has HELP and TYPE, every name+label set appears once, and
 * label values are escaped (process names contain anything).
 */
#ifndef GP_EXPO_H
#define GP_EXPO_H

#include "lib/buf.h"
#include "lib/metric_sink.h"
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

/* Labels in one GPU label set, job and rank included. */
#define GP_EXPO_MAX_LABELS 16

/* One GPU's label sets for a walk: base (identity) and own (with its job). */
struct gp_expo_gpu {
    struct gp_metric_label l[GP_EXPO_MAX_LABELS];
    char idx[16], gi[16], rank[16]; /* the numbers the labels point to */
    struct gp_metric_labels base, own;
    size_t text_off[2]; /* of base's and own's text in gp_expo.labels */
};

/* Scratch memory reused across walks; zero-initialise, free with gp_expo_free. */
struct gp_expo {
    struct gp_buf labels;    /* the GPU label sets' text forms, back to back */
    struct gp_expo_gpu *gpus;
    unsigned cap_gpus;
    unsigned char *selected; /* per host process: emit its series */
    unsigned cap_procs;
};

void gp_expo_free(struct gp_expo *x);

/* Walks the whole exposition of f into s: every family once, then its
 * samples. Label values point into f, x and static tables: valid during
 * the call only. Returns GP_OK, GP_ENOMEM or s->err. */
int gp_expo_walk(struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f,
                 const struct gp_expo_options *o, const struct gp_agent_stats *st);

/* Appends the whole exposition of f to out as text (gp_expo_walk into
 * the text sink). Returns GP_OK or an error code. */
int gp_expo_render(struct gp_expo *x, struct gp_buf *out, const struct gp_frame *f,
                   const struct gp_expo_options *o, const struct gp_agent_stats *st);

/*
 * Walks the step telemetry families of f->steps (docs/jobs.md) and, when
 * the steps source is active, its self counters (expo_steps.c) into s.
 * Returns s->err.
 */
int gp_expo_walk_steps(struct gp_metric_sink *s, const struct gp_frame *f, const struct gp_expo_options *o);

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
 * Walks the normalized families (gpulse_gpu_*_ratio, effective and peak
 * TFLOP/s, H100-equivalents, model_known) of f's GPUs into s, with the GPU
 * label sets that gp_expo_walk built in x. Returns s->err.
 */
int gp_expo_walk_norm(const struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f);

/*
 * Marks which host processes get series: with GP_PROC_SERIES_GPU, the
 * followed ones (p->followed: on a GPU, a root to follow, or a
 * descendant of one, such as dataloader workers). sel must have
 * f->nprocs entries. Returns the number selected.
 */
unsigned gp_expo_select_procs(const struct gp_frame *f, enum gp_proc_series mode, unsigned char *sel);

#endif
