/*
 * recommend.h - recommendations: a diagnosis tree over a job document
 * (docs/jobs.md) and, optionally, the alert kinds firing for the job and
 * its detectors' observations (detect.h). Each recommendation says what
 * to change and why, with the numbers behind it, an estimated saving
 * (time or money, with how it was estimated) and a confidence.
 *
 * One module answers for every place that advises: the end-of-run report
 * of `gpulse run` and `gpulse report` (src/report/advise.c calls
 * gp_recommend) and GET /api/v1/recommendations on the server. The tree
 * is a pure function of its inputs; it keeps nothing.
 *
 * The tree (thresholds below; "known" = the document has the number):
 *
 *   ending        state failed | killed | lost: said first, before tuning
 *   memory_high   some GPU peaked above 90 % of its memory: OOM risk ->
 *                 activation checkpointing, smaller micro-batch, lower
 *                 precision (the capacity side of "memory bound")
 *   data_wait     data_wait_ratio > 0.2, or dataloader_starvation firing:
 *                 data-loading bound -> DataLoader workers, pin_memory,
 *                 prefetch
 *   GPU underused (activity_avg known < 0.5), not data bound:
 *     communication_bound  NVLink/PCIe busy (link_busy_avg > 0.5), two
 *                 ranks or more, steps even across ranks (no straggler
 *                 firing, rank_step_spread unknown or <= 0.15) -> larger
 *                 compute/communication ratio (gradient accumulation,
 *                 larger micro-batch, overlap)
 *     low_activity  else, with steps > 0, a known data_wait_ratio and SM
 *                 occupancy unknown or < 0.5 -> larger batch, fused
 *                 kernels, torch.compile
 *   no_tensor_cores  a card with tensor cores, busy (activity >= 0.3) and
 *                 tensor_active_avg known < 0.01, or tensor_cores_unused
 *                 firing -> mixed precision, dimensions multiple of 8
 *   memory_bound  dram_active_avg > 0.6, or memory_bandwidth_bound
 *                 firing -> lower precision, fused element-wise kernels
 *   small job on a big card: every GPU peaked < 30 % of its memory:
 *     oversized_gpu  and activity_avg known < 0.4 -> a smaller card or a
 *                 share of this one (MIG, MPS), with the money saved
 *     memory_low  else -> a larger batch would use the card
 *
 * Optional document fields the tree reads where present (null or
 * missing: unknown): totals.sm_occupancy_avg, totals.tensor_active_avg,
 * totals.dram_active_avg, totals.link_busy_avg (NVLink or PCIe
 * throughput over the card's peak, the busier), totals.rank_step_spread
 * (slowest rank's mean step time over the median rank's, minus 1).
 *
 * Each entry appended to the advice array:
 *   {"kind", "title", "text", "evidence" (one line of the numbers),
 *    "numbers": {name: value...}, "series": [names...],
 *    "saving": {"type": "time"|"money"|"none", "fraction", "seconds",
 *               "usd", "usd_per_gpu_hour", "method"} (absent values null),
 *    "confidence": 0..1}
 * An entry whose kind is already in the array is not added again, so
 * advising twice, or advising what the server advised, changes nothing.
 *
 * Money: the saving of a smaller card is (price of the job's card - price
 * of the cheapest card in the model table that holds the job's peak
 * memory with GP_REC_HEADROOM to spare) x the job's GPU-hours. Prices
 * come from the `prices` argument (a model's short or device name and
 * its USD per GPU-hour); the job's own card falls back to the document's
 * price_per_gpu_hour. Without both prices the saving is "none" with the
 * reason in its method.
 */
#ifndef GP_INSIGHT_RECOMMEND_H
#define GP_INSIGHT_RECOMMEND_H

#include <jansson.h>
#include <stddef.h>

/* insight/detect.h and lib/gpumodels.h: only pointers are needed here. */
struct gp_observation;
struct gp_gpumodel;
struct gp_prices;

#define GP_REC_DATA_WAIT_HIGH 0.2
#define GP_REC_ACTIVITY_LOW 0.5
#define GP_REC_OCCUPANCY_LOW 0.5
#define GP_REC_LINK_BUSY 0.5
#define GP_REC_RANK_SPREAD_EVEN 0.15
#define GP_REC_TENSOR_UNUSED 0.01
#define GP_REC_TENSOR_BUSY 0.3
#define GP_REC_DRAM_BUSY 0.6
#define GP_REC_MEMORY_LOW 0.3
#define GP_REC_SMALL_ACTIVITY 0.4
#define GP_REC_MEMORY_HIGH 0.9
#define GP_REC_HEADROOM 0.2      /* a smaller card must hold peak x (1 + this) */
#define GP_REC_ACTIVITY_TARGET 0.8 /* what a well-fed job reaches, for time savings */

struct gp_rec_in {
    const json_t *doc;                 /* the job document (borrowed) */
    const char *const *firing;         /* alert kinds firing for the job */
    size_t nfiring;
    const struct gp_observation *obs;  /* the job's observations, bad or not */
    size_t nobs;
    const struct gp_prices *prices;    /* query/cost.h; NULL: the model table's */
};

/*
 * Runs the tree and appends its recommendations to `advice` (a JSON
 * array the caller owns). Borrowed inputs. GP_OK, GP_EPARSE (doc is not
 * an object, advice not an array) or GP_ENOMEM.
 */
int gp_recommend(const struct gp_rec_in *in, json_t *advice);

/*
 * The price per GPU-hour of model m (query/cost.h's order: the list,
 * the model table, the fallback), or NaN when m is NULL or has none.
 */
double gp_rec_price_of(const struct gp_prices *prices, const struct gp_gpumodel *m);

/*
 * The smaller-card saving: the cheapest priced model that holds
 * peak_bytes x (1 + GP_REC_HEADROOM) and costs less than cur_price.
 * *alt is that model (NULL when none); returns cur_price - its price
 * (USD per GPU-hour), or 0 when none.
 */
double gp_rec_smaller_card(const struct gp_prices *prices, double peak_bytes, double cur_price,
                           const struct gp_gpumodel **alt);

#endif
