/*
 * cost.h - what GPU time costs: prices per model, the cost of a job so far
 * and the parts of it that bought nothing, the projected cost to finish,
 * and the fleet's current spend and use in H100-equivalents.
 *
 * Prices. A model's price per GPU-hour (USD) is, in this order: the
 * server's `gpu_prices` entry for it ("H100=2.9,A100=1.8,default=2.0"),
 * the model table's default (lib/gpumodels.h, price_usd_hour), the list's
 * `default=`, the older single `gpu_hour_price` key, else unknown (0, and
 * cost null). Entries name a model as the table does (short name, alias
 * or the driver's device name, ignoring case); an entry for a model the
 * table does not know must be the driver's full device name (it holds a
 * blank: "NVIDIA Foo 48GB=1.1"), so that a typo such as "H10=2" is an
 * error rather than a price that never applies.
 *
 * The arithmetic (docs/api.md "Cost"): a GPU's samples each stand for one
 * scrape step of held time (the job document's gpu_seconds), so
 *   cost                  = held hours x price
 *   cost_idle             = hours of samples with activity < 0.05 x price
 *   cost_unused_compute   = sum over samples of (1 - activity) x step x price
 * activity being the compute fraction (SM activity, else utilization).
 *
 * Everything here is pure: the callers (the job model's query/jobdoc.c,
 * server/cost_api.c) read the store and hand in numbers. It lives beside
 * the job model, below the detectors, so every screen reads one figure.
 */
#ifndef GP_QUERY_COST_H
#define GP_QUERY_COST_H

#include "lib/buf.h"

#include "query/jobmodel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* lib/gpumodels.h; not included here: it brings sources/frame.h, whose
 * struct gp_job the server's jobs.h also defines. */
struct gp_gpumodel;

#define GP_PRICES_MAX 64
#define GP_PRICE_NAME_LEN 96
#define GP_COST_IDLE_ACTIVITY GP_JOBMODEL_IDLE_ACTIVITY /* one threshold, the job model's */

struct gp_price {
    char name[GP_PRICE_NAME_LEN];   /* as written */
    const struct gp_gpumodel *model; /* its table row; NULL: a device name the table lacks */
    double usd;
};

struct gp_prices {
    struct gp_price e[GP_PRICES_MAX];
    size_t n;
    double fallback;  /* USD for models without a price: default=, else gpu_hour_price; 0 none */
};

/*
 * Parses a price list into *p (overwritten): comma-separated MODEL=USD,
 * blanks around either allowed, at most GP_PRICES_MAX entries, each model
 * once, USD a number from 0 to 1000000; `default=USD` sets the fallback,
 * which is otherwise gpu_hour_price (0: none). NULL or "" is an empty
 * list. GP_OK, or GP_ECONFIG with detail in err (p is then empty).
 */
int gp_prices_parse(struct gp_prices *p, const char *list, double gpu_hour_price, char *err,
                    size_t errlen);

/*
 * The price per GPU-hour of a GPU whose modelName is model[0..len) (not
 * NUL-terminated; NULL/0 for unknown): see the order above. 0 when it has
 * none. p NULL: table defaults only.
 */
double gp_prices_of(const struct gp_prices *p, const char *model, size_t len);

/* Cost of GPU time, accumulated GPU by GPU. Zero-initialise. */
struct gp_cost_acc {
    double gpu_seconds;     /* held time */
    double cost;            /* USD over the GPUs with a price */
    double cost_idle;       /* USD of samples with activity < 0.05 */
    double cost_unused;     /* USD of (1 - activity) */
    double priced_seconds;  /* the held time that had a price */
    unsigned unpriced;      /* GPUs added without a price */
    bool activity;          /* some GPU had activity samples */
};

/*
 * Adds one GPU: n samples each standing for step_ms of held time, act[i]
 * its compute fraction (clamped to 0-1), or act NULL when only memory was
 * seen (held time and cost, no idle or unused share). usd_hour <= 0: no
 * price, time counted and the GPU noted as unpriced.
 */
void gp_cost_add_gpu(struct gp_cost_acc *a, const double *act, size_t n, int64_t step_ms,
                     double usd_hour);

/* The same for time already split (the funnel's 1-minute rollups):
 * held_s of held time, idle_s of it at activity < 0.05, unused_s the
 * sum of (1 - activity) x time; activity false as act NULL above. */
void gp_cost_add_time(struct gp_cost_acc *a, double held_s, double idle_s, double unused_s,
                      double usd_hour, bool activity);

/* The totals of a as numbers, NaN where unknown (no price; no activity). */
double gp_cost_total(const struct gp_cost_acc *a);
double gp_cost_idle(const struct gp_cost_acc *a);
double gp_cost_unused(const struct gp_cost_acc *a);

/*
 * Projected time and cost to finish: the job is at step `step` of
 * `target`, runs at steps_per_second lately and costs cost_per_hour
 * while it runs. *seconds_left = (target - step) / rate and
 * *cost_total = cost_so_far + seconds_left / 3600 x cost_per_hour; a job
 * at or past its target has 0 left. Both NaN when anything needed is
 * unknown (target <= 0, rate <= 0, a NaN). Returns 1 when projected.
 */
int gp_cost_project(double cost_so_far, double cost_per_hour, double target, double step,
                    double steps_per_second, double *seconds_left, double *cost_total);

/* One GPU's current state, for the fleet totals. */
struct gp_fleet_gpu {
    const char *model;         /* modelName, NUL-terminated ("" unknown) */
    double activity;           /* compute fraction; NaN unknown */
    double effective_tflops;   /* the agent's series; NaN: activity x peak tensor */
    bool allocated;            /* a job holds it */
};

struct gp_fleet_totals {
    char model[GP_PRICE_NAME_LEN]; /* short name, the driver's name when unknown; "" overall */
    unsigned gpus, busy, idle, allocated, allocated_idle, unknown_activity, unknown_model;
    double effective_tflops, peak_tflops;
    double h100_total, h100_allocated, h100_used;
    double cost_per_hour, idle_cost_per_hour, wasted_cost_per_hour;
    unsigned unpriced;
};

/* The fleet: overall and per model (in the order first seen). Zero-initialise. */
struct gp_fleet {
    struct gp_fleet_totals all;
    struct gp_fleet_totals *models;
    size_t nmodels, cap;
};

/*
 * Adds one GPU to the totals (busy: activity >= 0.05; idle: below;
 * allocated-idle: idle and held by a job; used H100-equivalents: its
 * H100-equivalents x activity; wasted cost: price x (1 - activity)).
 * GP_OK or GP_ENOMEM (a new model's row).
 */
int gp_fleet_add(struct gp_fleet *fl, const struct gp_fleet_gpu *g, const struct gp_prices *p);

/* Appends {"overall": {...}, "models": [{...}]} to out; _members without
 * the braces, for a caller that adds members of its own. */
void gp_fleet_json(const struct gp_fleet *fl, struct gp_buf *out);
void gp_fleet_json_members(const struct gp_fleet *fl, struct gp_buf *out);

/* Frees the per-model rows; fl is then empty. Accepts a zeroed fleet. */
void gp_fleet_free(struct gp_fleet *fl);

#endif
