/*
 * test_recommend.c - the diagnosis tree of insight/recommend.h: every
 * branch where it fires (with its numbers and saving checked) and where
 * it stays silent, firing alerts and observations as triggers, and the
 * smaller-card money arithmetic.
 */
#include "insight/detect.h"
#include "query/cost.h"
#include "insight/recommend.h"
#include "lib/err.h"
#include "lib/gpumodels.h"
#include "test.h"

#include <jansson.h>
#include <stdlib.h>

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *d = json_loads(text, 0, &je);
    if (!d)
        gp_test_fail(__FILE__, __LINE__, "bad test JSON: %s", je.text);
    return d;
}

/* Runs the tree; returns the advice array (caller decrefs) and the kinds in out. */
static json_t *run(const char *doc, const char *const *firing, size_t nf, const struct gp_prices *p,
                   char *out, size_t n)
{
    json_t *d = parse(doc), *adv = json_array();
    struct gp_rec_in in = {.doc = d, .firing = firing, .nfiring = nf, .prices = p};
    CHECK_INT(gp_recommend(&in, adv), GP_OK);
    out[0] = 0;
    size_t k = 0;
    for (size_t i = 0; i < json_array_size(adv); i++)
        k += (size_t)snprintf(out + k, n - k, "%s%s", i ? "," : "",
                              json_string_value(json_object_get(json_array_get(adv, i), "kind")));
    json_decref(d);
    return adv;
}

static const json_t *entry(const json_t *adv, const char *kind)
{
    for (size_t i = 0; i < json_array_size(adv); i++) {
        const json_t *e = json_array_get(adv, i);
        if (!strcmp(json_string_value(json_object_get(e, "kind")), kind))
            return e;
    }
    gp_test_fail(__FILE__, __LINE__, "no entry of kind %s", kind);
}

static double saving(const json_t *e, const char *key)
{
    const json_t *v = json_object_get(json_object_get(e, "saving"), key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void check_shape(const json_t *e)
{
    CHECK(json_is_string(json_object_get(e, "title")));
    CHECK(json_is_string(json_object_get(e, "text")));
    CHECK(json_is_string(json_object_get(e, "evidence")));
    CHECK(json_is_object(json_object_get(e, "numbers")));
    CHECK(json_array_size(json_object_get(e, "series")) > 0);
    CHECK(json_is_string(json_object_get(json_object_get(e, "saving"), "method")));
    double c = json_number_value(json_object_get(e, "confidence"));
    CHECK(c > 0 && c <= 1);
}

static void test_data_wait(void)
{
    char k[256];
    json_t *a = run("{\"totals\": {\"data_wait_ratio\": 0.35, \"stepping_seconds\": 1000, \"activity_avg\": 0.3,"
                    " \"steps\": 10}}", NULL, 0, NULL, k, sizeof k);
    CHECK_STR(k, "data_wait");
    const json_t *e = entry(a, "data_wait");
    check_shape(e);
    CHECK_STR(json_string_value(json_object_get(json_object_get(e, "saving"), "type")), "time");
    CHECK_DBL(saving(e, "fraction"), 0.35, 1e-9);
    CHECK_DBL(saving(e, "seconds"), 350, 1e-6);
    CHECK_DBL(json_number_value(json_object_get(json_object_get(e, "numbers"), "data_wait_ratio")), 0.35, 1e-12);
    json_decref(a);
    json_decref(run("{\"totals\": {\"data_wait_ratio\": 0.2}}", NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
    /* the starvation alert alone triggers it, without a saving to claim */
    const char *f[] = {"dataloader_starvation"};
    a = run("{\"totals\": {}}", f, 1, NULL, k, sizeof k);
    CHECK_STR(k, "data_wait");
    CHECK_STR(json_string_value(json_object_get(json_object_get(entry(a, "data_wait"), "saving"), "type")),
              "none");
    json_decref(a);
}

static void test_low_activity(void)
{
    char k[256];
    json_t *a = run("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 100, \"data_wait_ratio\": 0.05,"
                    " \"stepping_seconds\": 800}}", NULL, 0, NULL, k, sizeof k);
    CHECK_STR(k, "low_activity");
    const json_t *e = entry(a, "low_activity");
    check_shape(e);
    CHECK_DBL(saving(e, "fraction"), 1 - 0.3 / 0.8, 1e-9);
    CHECK_DBL(saving(e, "seconds"), (1 - 0.3 / 0.8) * 800, 1e-6);
    /* no occupancy series: said as unknown, not as "nan" */
    CHECK(strstr(json_string_value(json_object_get(e, "evidence")), "sm_occupancy_avg n/a") != NULL);
    json_decref(a);
    /* a busy SM occupancy says the launches are not small: silent */
    json_decref(run("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 100, \"data_wait_ratio\": 0.05,"
                    " \"sm_occupancy_avg\": 0.7}}", NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
    json_decref(run("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 100, \"data_wait_ratio\": 0.05,"
                    " \"sm_occupancy_avg\": 0.2}}", NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "low_activity");
    json_decref(run("{\"totals\": {\"activity_avg\": 0.5, \"steps\": 100, \"data_wait_ratio\": 0.05}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
    json_decref(run("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 100, \"data_wait_ratio\": null}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
}

static const char comm_doc[] =
    "{\"ranks\": [{\"rank\": 0}, {\"rank\": 1}], \"totals\": {\"activity_avg\": 0.35, \"steps\": 100,"
    " \"data_wait_ratio\": 0.02, \"link_busy_avg\": 0.8, \"rank_step_spread\": 0.05,"
    " \"stepping_seconds\": 1000}}";

static void test_communication_bound(void)
{
    char k[256];
    json_t *a = run(comm_doc, NULL, 0, NULL, k, sizeof k);
    CHECK_STR(k, "communication_bound"); /* and not low_activity: the tree picks one cause */
    const json_t *e = entry(a, "communication_bound");
    check_shape(e);
    CHECK_DBL(saving(e, "fraction"), 0.65 * 0.5, 1e-9);
    CHECK_DBL(saving(e, "seconds"), 325, 1e-6);
    CHECK_CONTAINS(json_string_value(json_object_get(e, "text")), "gradient accumulation");
    json_decref(a);
    /* a straggler makes the ranks uneven: not communication, low activity instead */
    const char *f[] = {"straggler"};
    json_decref(run(comm_doc, f, 1, NULL, k, sizeof k));
    CHECK_STR(k, "low_activity");
    /* uneven step times */
    json_decref(run("{\"ranks\": [{}, {}], \"totals\": {\"activity_avg\": 0.35, \"steps\": 100,"
                    " \"data_wait_ratio\": 0.02, \"link_busy_avg\": 0.8, \"rank_step_spread\": 0.4}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "low_activity");
    /* one rank: no collectives */
    json_decref(run("{\"ranks\": [{}], \"totals\": {\"activity_avg\": 0.35, \"steps\": 100,"
                    " \"data_wait_ratio\": 0.02, \"link_busy_avg\": 0.8}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "low_activity");
    /* quiet links */
    json_decref(run("{\"ranks\": [{}, {}], \"totals\": {\"activity_avg\": 0.35, \"steps\": 100,"
                    " \"data_wait_ratio\": 0.02, \"link_busy_avg\": 0.5}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "low_activity");
}

static void test_no_tensor_cores(void)
{
    char k[256];
    json_t *a = run("{\"gpus\": [{\"model\": \"NVIDIA H100 80GB HBM3\", \"peak_memory_ratio\": 0.6}],"
                    " \"totals\": {\"activity_avg\": 0.9, \"tensor_active_avg\": 0.0,"
                    " \"stepping_seconds\": 100}}", NULL, 0, NULL, k, sizeof k);
    CHECK_STR(k, "no_tensor_cores");
    const json_t *e = entry(a, "no_tensor_cores");
    check_shape(e);
    /* 0.9 x (1 - 67 / 989.4) = 0.839, capped at 0.5 */
    CHECK_DBL(saving(e, "fraction"), 0.5, 1e-9);
    CHECK_CONTAINS(json_string_value(json_object_get(e, "text")), "multiples of 8");
    json_decref(a);
    /* a lightly busy card: 0.35 x (1 - 67/989.4) */
    a = run("{\"gpus\": [{\"model\": \"H100\", \"peak_memory_ratio\": 0.6}],"
            " \"totals\": {\"activity_avg\": 0.35, \"tensor_active_avg\": 0.001}}", NULL, 0, NULL, k,
            sizeof k);
    CHECK_DBL(saving(entry(a, "no_tensor_cores"), "fraction"), 0.35 * (1 - 67 / 989.4), 1e-9);
    json_decref(a);
    /* tensor cores in use; a card without them; too idle to judge */
    json_decref(run("{\"gpus\": [{\"model\": \"H100\", \"peak_memory_ratio\": 0.6}],"
                    " \"totals\": {\"activity_avg\": 0.9, \"tensor_active_avg\": 0.3}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
    json_decref(run("{\"gpus\": [{\"model\": \"unknown card\", \"peak_memory_ratio\": 0.6}],"
                    " \"totals\": {\"activity_avg\": 0.9, \"tensor_active_avg\": 0.0}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
    json_decref(run("{\"gpus\": [{\"model\": \"H100\", \"peak_memory_ratio\": 0.6}],"
                    " \"totals\": {\"activity_avg\": 0.1, \"tensor_active_avg\": 0.0}}",
                    NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
    /* the detector's observation alone */
    json_t *d = parse("{\"totals\": {}}"), *adv = json_array();
    struct gp_observation ob = {.key = {.det = GP_DET_NO_TENSOR_CORES, .rank = -1}, .bad = true,
                                .value = 0.0, .summary = "no tensor work on n1/0"};
    struct gp_rec_in in = {.doc = d, .obs = &ob, .nobs = 1};
    CHECK_INT(gp_recommend(&in, adv), GP_OK);
    CHECK_CONTAINS(json_string_value(json_object_get(entry(adv, "no_tensor_cores"), "evidence")),
                   "detector: no tensor work on n1/0");
    ob.bad = false;
    json_array_clear(adv);
    CHECK_INT(gp_recommend(&in, adv), GP_OK);
    CHECK_INT(json_array_size(adv), 0);
    json_decref(adv);
    json_decref(d);
}

static void test_memory_bound(void)
{
    char k[256];
    json_t *a = run("{\"totals\": {\"activity_avg\": 0.8, \"dram_active_avg\": 0.75,"
                    " \"stepping_seconds\": 100}}", NULL, 0, NULL, k, sizeof k);
    CHECK_STR(k, "memory_bound");
    const json_t *e = entry(a, "memory_bound");
    check_shape(e);
    CHECK_DBL(saving(e, "fraction"), 0.5 * 0.75 * 0.8, 1e-9);
    CHECK_DBL(saving(e, "seconds"), 30, 1e-9);
    json_decref(a);
    json_decref(run("{\"totals\": {\"activity_avg\": 0.8, \"dram_active_avg\": 0.6}}", NULL, 0, NULL,
                    k, sizeof k));
    CHECK_STR(k, "");
    const char *f[] = {"memory_bandwidth_bound"};
    json_decref(run("{\"totals\": {\"activity_avg\": 0.8}}", f, 1, NULL, k, sizeof k));
    CHECK_STR(k, "memory_bound");
}

static void test_memory_high(void)
{
    char k[256];
    json_t *a = run("{\"gpus\": [{\"node\": \"n\", \"gpu\": \"1\", \"peak_memory_ratio\": 0.97}]}", NULL, 0,
                    NULL, k, sizeof k);
    CHECK_STR(k, "memory_high");
    CHECK_CONTAINS(json_string_value(json_object_get(entry(a, "memory_high"), "evidence")), "n/1 0.970");
    json_decref(a);
    json_decref(run("{\"gpus\": [{\"peak_memory_ratio\": 0.9}]}", NULL, 0, NULL, k, sizeof k));
    CHECK_STR(k, "");
}

/* Prices for the test: six models as listed, every other model of the
 * table at 100 USD so the arithmetic does not move with the table's
 * defaults. */
static struct gp_prices prices;
static const struct gp_prices *test_prices(void)
{
    char list[2048] = "H100=4,A100=2.5,L4=0.8,T4=0.5,A10=1.1,L40S=1.9";
    size_t n = strlen(list);
    for (size_t i = 0; i < gp_gpumodel_count(); i++) {
        const char *nm = gp_gpumodel_at(i)->short_name;
        char quoted[64];
        snprintf(quoted, sizeof quoted, ",%s,", nm);
        if (!strstr(",H100,A100,L4,T4,A10,L40S,", quoted))
            n += (size_t)snprintf(list + n, sizeof list - n, ",%s=100", nm);
    }
    char err[256];
    if (gp_prices_parse(&prices, list, 0, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "test prices: %s", err);
    return &prices;
}

static void test_smaller_card_arithmetic(void)
{
    const struct gp_gpumodel *alt;
    /* 10 GiB peak needs 12 GiB: T4's 15 GiB is the cheapest that fits */
    double d = gp_rec_smaller_card(test_prices(), 10.0 * 1073741824, 4.0, &alt);
    CHECK(alt && !strcmp(alt->short_name, "T4"));
    CHECK_DBL(d, 3.5, 1e-12);
    /* 16 GiB needs 19.2 GiB: not the T4 (15 GiB); L4 (22.5 GiB) at 0.8 */
    d = gp_rec_smaller_card(test_prices(), 16.0 * 1073741824, 4.0, &alt);
    CHECK(alt && !strcmp(alt->short_name, "L4"));
    CHECK_DBL(d, 3.2, 1e-12);
    /* nothing cheaper holds 70 GiB with headroom */
    d = gp_rec_smaller_card(test_prices(), 70.0 * 1073741824, 4.0, &alt);
    CHECK(!alt);
    CHECK_DBL(d, 0, 0);
    CHECK_DBL(gp_rec_price_of(test_prices(), gp_gpumodel_find("B200")), 100, 0);
    CHECK(isnan(gp_rec_price_of(test_prices(), NULL)));
    CHECK_DBL(gp_rec_price_of(test_prices(), gp_gpumodel_find("NVIDIA A100-SXM4-80GB")), 2.5, 0);
}

static void test_oversized_gpu(void)
{
    char k[256];
    const char *doc = "{\"gpus\": [{\"model\": \"NVIDIA H100 80GB HBM3\", \"peak_memory_bytes\": 10737418240,"
                      " \"memory_total_bytes\": 85520809984}], \"totals\": {\"activity_avg\": 0.2,"
                      " \"gpu_hours\": 10, \"peak_gpu_memory_bytes\": 10737418240, \"price_per_gpu_hour\": 9}}";
    json_t *a = run(doc, NULL, 0, test_prices(), k, sizeof k);
    CHECK_STR(k, "oversized_gpu");
    const json_t *e = entry(a, "oversized_gpu");
    check_shape(e);
    CHECK_STR(json_string_value(json_object_get(json_object_get(e, "saving"), "type")), "money");
    /* the table's H100 price (4.0) wins over the document's; T4 at 0.5 */
    CHECK_DBL(saving(e, "usd_per_gpu_hour"), 3.5, 1e-12);
    CHECK_DBL(saving(e, "usd"), 35, 1e-9);
    CHECK_DBL(saving(e, "fraction"), 3.5 / 4.0, 1e-12);
    CHECK_CONTAINS(json_string_value(json_object_get(e, "text")), "T4");
    CHECK_CONTAINS(json_string_value(json_object_get(e, "text")), "MIG");
    CHECK_CONTAINS(json_string_value(json_object_get(e, "evidence")), " on the 1 GPU, activity_avg");
    json_decref(a);
    /* without a price list: the model table's default prices */
    a = run(doc, NULL, 0, NULL, k, sizeof k);
    CHECK_STR(k, "oversized_gpu");
    CHECK_STR(json_string_value(json_object_get(json_object_get(entry(a, "oversized_gpu"), "saving"), "type")),
              "money");
    json_decref(a);
    /* a card with no price anywhere: still said, no money claimed */
    const char *unknown = "{\"gpus\": [{\"model\": \"Mystery GPU 9000\", \"peak_memory_bytes\": 1e9,"
                          " \"peak_memory_ratio\": 0.05}], \"totals\": {\"activity_avg\": 0.2,"
                          " \"gpu_hours\": 10, \"peak_gpu_memory_bytes\": 1e9}}";
    a = run(unknown, NULL, 0, NULL, k, sizeof k);
    CHECK_STR(k, "oversized_gpu");
    CHECK_STR(json_string_value(json_object_get(json_object_get(entry(a, "oversized_gpu"), "saving"), "type")),
              "none");
    json_decref(a);
    /* busy enough: memory_low (a larger batch) instead */
    json_decref(run("{\"gpus\": [{\"peak_memory_ratio\": 0.1}], \"totals\": {\"activity_avg\": 0.4}}",
                    NULL, 0, test_prices(), k, sizeof k));
    CHECK_STR(k, "memory_low");
    a = run("{\"gpus\": [{\"peak_memory_ratio\": 0.1}, {\"peak_memory_ratio\": 0.2}],"
            " \"totals\": {\"activity_avg\": 0.4}}", NULL, 0, test_prices(), k, sizeof k);
    CHECK_STR(k, "memory_low");
    CHECK_STR(json_string_value(json_object_get(entry(a, "memory_low"), "evidence")),
              "peak_memory_ratio at most 0.20 < 0.30 on all 2 GPUs");
    json_decref(a);
    /* one GPU over 30 %, or one unknown: silent */
    json_decref(run("{\"gpus\": [{\"peak_memory_ratio\": 0.1}, {\"peak_memory_ratio\": 0.3}],"
                    " \"totals\": {\"activity_avg\": 0.2}}", NULL, 0, test_prices(), k, sizeof k));
    CHECK_STR(k, "");
    json_decref(run("{\"gpus\": [{\"peak_memory_ratio\": 0.1}, {}], \"totals\": {\"activity_avg\": 0.2}}",
                    NULL, 0, test_prices(), k, sizeof k));
    CHECK_STR(k, "");
}

static void test_healthy_job_is_silent(void)
{
    char k[256];
    json_decref(run("{\"ranks\": [{}, {}], \"gpus\": [{\"model\": \"H100\", \"peak_memory_ratio\": 0.7}],"
                    " \"totals\": {\"activity_avg\": 0.92, \"steps\": 1000, \"data_wait_ratio\": 0.01,"
                    " \"tensor_active_avg\": 0.4, \"dram_active_avg\": 0.3, \"link_busy_avg\": 0.2,"
                    " \"sm_occupancy_avg\": 0.6}}", NULL, 0, test_prices(), k, sizeof k));
    CHECK_STR(k, "");
}

static void test_idempotent_and_errors(void)
{
    json_t *d = parse("{\"totals\": {\"data_wait_ratio\": 0.5}}"), *adv = json_array();
    struct gp_rec_in in = {.doc = d};
    CHECK_INT(gp_recommend(&in, adv), GP_OK);
    CHECK_INT(gp_recommend(&in, adv), GP_OK);
    CHECK_INT(json_array_size(adv), 1);
    json_t *n = json_integer(1);
    CHECK_INT(gp_recommend(&in, n), GP_EPARSE);
    struct gp_rec_in bad = {.doc = n};
    CHECK_INT(gp_recommend(&bad, adv), GP_EPARSE);
    json_decref(n);
    json_decref(adv);
    json_decref(d);
}

const struct gp_test gp_tests_recommend[] = {
    {"data_wait", test_data_wait},
    {"low_activity", test_low_activity},
    {"communication_bound", test_communication_bound},
    {"no_tensor_cores", test_no_tensor_cores},
    {"memory_bound", test_memory_bound},
    {"memory_high", test_memory_high},
    {"smaller_card_arithmetic", test_smaller_card_arithmetic},
    {"oversized_gpu", test_oversized_gpu},
    {"healthy_job_is_silent", test_healthy_job_is_silent},
    {"idempotent_and_errors", test_idempotent_and_errors},
    {0},
};
