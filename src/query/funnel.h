/*
 * funnel.h - the fleet funnel over a range (docs/api.md "Fleet funnel"):
 * how much of the GPU time the fleet had was held by jobs, kept busy and
 * turned into work, what the idle part cost, by job, user and team, and
 * the zombie processes that hold GPU memory after their job ended. The
 * API's /api/v1/fleet/funnel renders it; the dashboard's fleet view reads
 * that route.
 *
 * Every GPU sample stands for one scrape step of time (as cost.h counts
 * held time), and with a sample's activity a (SM activity, else
 * utilization / 100):
 *   total      every sample of every GPU seen
 *   allocated  the samples of a series with a `job` label (a job's process
 *              held the GPU)
 *   active     allocated samples with a >= 0.05 (the job model's idle
 *              threshold: kernels ran)
 *   effective  the sum over allocated samples of a x step: the job model's
 *              activity-weighted use (its activity avg x GPU-seconds)
 * each as GPU-hours and as GPUs (GPU-hours / the range's hours: the
 * average number of GPUs over the range), so that
 * total >= allocated >= active >= effective.
 *   idle cost  priced by cost.h: an allocated sample with a < 0.05 costs
 *              its step x price (cost_idle); an unallocated sample costs
 *              it all (a GPU nobody holds is idle spend). By job, user and
 *              team, only the allocated part (no job, no owner).
 *   zombie     a process with GPU memory at its newest sample in the range
 *              that is more than GP_FUNNEL_ZOMBIE_GRACE_S after the end
 *              its job reported (gpulse_job_end_time_seconds on its node).
 *
 * Long ranges (docs/api.md "Fleet funnel"): the same figures from the
 * store's 1-minute rollups (count, min, max, sum per minute; no single
 * samples), over whole minutes. Exact from a minute: held time (count x
 * step), allocated time, effective time (sum) and cost; the idle/active
 * split too when the minute is all below or all at or above 0.05. A
 * minute with both (min < 0.05 <= max) is estimated as if its samples
 * were at min and max with the minute's mean; its held time is counted
 * in uncertain_s, the bound on the error of active time (and of idle
 * time, priced: of idle cost). A GPU's step is the median gap of its
 * newest raw samples where the caller has them, else 60 s over its mean
 * samples per full minute (equal when the scrape interval divides a
 * minute).
 *
 * Pure: the caller reads the store and hands in numbers and names.
 */
#ifndef GP_QUERY_FUNNEL_H
#define GP_QUERY_FUNNEL_H

#include "lib/buf.h"
#include "query/cost.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_FUNNEL_KEY_LEN 128
#define GP_FUNNEL_ZOMBIE_GRACE_S 30.0 /* a process may take this long to exit after its job ends */
/* Ranges longer than this (or reaching past the raw retention) are read
 * from the 1-minute rollups: a week of raw samples at hundreds of GPUs
 * is seconds of decoding, its rollups a fraction of it. */
#define GP_FUNNEL_RAW_MAX_MS (6LL * 3600 * 1000)

/* One GPU's samples in the range, all with the same job (or none). */
struct gp_funnel_gpu {
    const double *act; /* compute fraction per sample (clamped to 0-1; NaN: 0) */
    size_t n;
    int64_t step_ms;   /* what one sample stands for; <= 0: the GPU is not counted */
    double usd_hour;   /* <= 0: no price */
    const char *job;   /* "" or NULL: no job held it */
    const char *user;  /* the job's owner; "" or NULL unknown */
    const char *team;  /* the series' team label; "" or NULL none */
};

/* The same GPU's 1-minute rollups (ascending minutes, all with the same
 * job or none). */
struct gp_funnel_gpu_rollups {
    const struct gp_rollup *r;
    size_t n;
    double unit;      /* a value / unit is the compute fraction (utilization: 100; 0: 1) */
    int64_t step_ms;  /* what a sample stands for (the caller's median gap of raw
                       * samples); 0: gp_funnel_rollup_step's estimate */
    double usd_hour;  /* <= 0: no price */
    const char *job, *user, *team;
};

/* A job, user or team: the allocated time and its cost. */
struct gp_funnel_group {
    char key[GP_FUNNEL_KEY_LEN]; /* "": unknown (user, team) */
    unsigned gpus;               /* GPU series counted (a GPU per job it served) */
    double idle_s;               /* GPU-seconds at activity < 0.05 */
    struct gp_cost_acc acc;
};

struct gp_funnel_groups {
    struct gp_funnel_group *g;
    size_t n, cap;
};

struct gp_funnel_zombie {
    char node[GP_FUNNEL_KEY_LEN], gpu[32], pid[32], comm[64], job[GP_FUNNEL_KEY_LEN];
    double memory_bytes;
    int64_t seen_ms;     /* its newest sample */
    double job_end_s;    /* the end its job reported, epoch s */
};

struct gp_funnel {
    int64_t start_ms, end_ms;
    double total_s, allocated_s, active_s, effective_s; /* GPU-seconds */
    bool rollups;       /* read from the 1-minute rollups */
    double uncertain_s; /* allocated GPU-seconds whose idle/active split is estimated */
    unsigned estimated; /* other estimates: steps, zombies' values from rollups */
    struct gp_cost_acc all, allocated, unallocated;
    struct gp_funnel_groups by_job, by_user, by_team;
    struct gp_funnel_zombie *zombies;
    size_t nzombies, zcap;
};

/* Empty, over [start_ms, end_ms]. */
void gp_funnel_init(struct gp_funnel *f, int64_t start_ms, int64_t end_ms);

/* Adds one GPU's samples. GP_OK or GP_ENOMEM. */
int gp_funnel_add(struct gp_funnel *f, const struct gp_funnel_gpu *g);

/* Adds one GPU's rollups (sets f->rollups). GP_OK or GP_ENOMEM. */
int gp_funnel_add_rollups(struct gp_funnel *f, const struct gp_funnel_gpu_rollups *g);

/* What one sample stands for in rollups r[0..n): 60 s over the mean count
 * of the minutes with a minute on each side; with none, of the fullest
 * minute. 0 when there is no sample. *exact: those counts were all equal. */
int64_t gp_funnel_rollup_step(const struct gp_rollup *r, size_t n, bool *exact);

/* The values, in a series' own unit (a value / unit is the compute
 * fraction), on whose sides a minute's split depends: 0, the idle
 * threshold and 1. A minute whose samples straddle none of them
 * (gp_storage_read_rollups_all's cuts) splits the same whatever its min
 * and max within that side. Returns how many (GP_FUNNEL_CUTS). */
#define GP_FUNNEL_CUTS 3
size_t gp_funnel_rollup_cuts(double unit, double cuts[GP_FUNNEL_CUTS]);

/* Whether a process holding memory_bytes at seen_ms is a zombie of a job
 * that reported its end at job_end_s (NaN: never). */
bool gp_funnel_is_zombie(double memory_bytes, int64_t seen_ms, double job_end_s);

/* Adds z when it is a zombie (gp_funnel_is_zombie); GP_OK or GP_ENOMEM. */
int gp_funnel_zombie(struct gp_funnel *f, const struct gp_funnel_zombie *z);

/* The idle cost: allocated idle + unallocated, NaN when nothing was priced. */
double gp_funnel_idle_cost(const struct gp_funnel *f);

/* Sorts the groups (idle cost, highest first) and zombies (memory,
 * largest first); call once before reading them or rendering. */
void gp_funnel_sort(struct gp_funnel *f);

/* Appends the funnel as a JSON object (docs/api.md). */
void gp_funnel_json(const struct gp_funnel *f, struct gp_buf *out);

void gp_funnel_free(struct gp_funnel *f);

#endif
