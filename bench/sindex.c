/*
 * bench/sindex.c - speed of the series index (`make bench-sindex`).
 *
 * A fleet of dcgm-exporter series (N_METRICS metrics x 8 GPUs x nodes,
 * ten labels, ~230-byte blobs, 100k series by default; argv[1] changes
 * the count) is added, then looked up the way the ingest path does it
 * (gp_sindex_find with the hash precomputed, and with it computed), hits
 * in write-request order and in random order, and misses; then a few
 * selects of the kinds the query API runs. Prints ns per operation and
 * bytes per series; asserts nothing but correctness.
 */
#include "lib/err.h"
#include "store/labels.h"
#include "store/matcher.h"
#include "store/series.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const char *const metrics[] = {
    "DCGM_FI_DEV_GPU_UTIL",   "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",    "DCGM_FI_DEV_GPU_TEMP",      "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK",     "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])

struct blob {
    uint8_t *p;
    size_t len;
    uint64_t hash;
};

static void make_blob(size_t i, struct blob *b, struct gp_buf *buf, int miss)
{
    size_t metric = i % N_METRICS, gpu = (i / N_METRICS) % 8, node = i / N_METRICS / 8;
    char host[32], uuid[48], dev[16], g[8], pci[32], inst[48];
    snprintf(host, sizeof host, "%snode-%04zu", miss ? "x" : "", node);
    snprintf(uuid, sizeof uuid, "GPU-%08zx-%04zx-%04zx", node * 2654435761u % 0xffffffffu, gpu,
             node & 0xffff);
    snprintf(dev, sizeof dev, "nvidia%zu", gpu);
    snprintf(g, sizeof g, "%zu", gpu);
    snprintf(pci, sizeof pci, "00000000:%02zX:00.0", 0x18 + gpu * 0x10);
    snprintf(inst, sizeof inst, "%s:9400", host);
#define S(x) {x, strlen(x)}
    struct gp_label l[] = {
        {S("DCGM_FI_DRIVER_VERSION"), S("550.54.15")},
        {S("Hostname"), S(host)},
        {S("UUID"), S(uuid)},
        {S("__name__"), S(metrics[metric])},
        {S("device"), S(dev)},
        {S("gpu"), S(g)},
        {S("instance"), S(inst)},
        {S("job"), S("dcgm")},
        {S("modelName"), S("NVIDIA H100 80GB HBM3")},
        {S("pci_bus_id"), S(pci)},
    };
    gp_buf_reset(buf);
    if (gp_labels_encode(l, sizeof l / sizeof l[0], buf) != GP_OK) {
        fprintf(stderr, "encode failed\n");
        exit(1);
    }
    b->len = buf->len;
    b->p = malloc(b->len);
    memcpy(b->p, buf->data, b->len);
    b->hash = gp_labels_hash(b->p, b->len);
}

static void bench_select(const struct gp_sindex *x, const char *s)
{
    struct gp_matcher *m;
    size_t nm, n = 0;
    char err[256];
    if (gp_selector_parse(s, strlen(s), &m, &nm, err, sizeof err) != GP_OK) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    int reps = 0;
    double t0 = now(), t1;
    do {
        uint32_t *ids;
        if (gp_sindex_select(x, m, nm, &ids, &n) != GP_OK)
            exit(1);
        free(ids);
        reps++;
    } while ((t1 = now()) - t0 < 0.3);
    printf("  select %-62s %7zu ids %10.1f us\n", s, n, (t1 - t0) / reps * 1e6);
    gp_matchers_free(m, nm);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    struct blob *b = calloc(n, sizeof *b), *miss = calloc(n, sizeof *miss);
    size_t *order = malloc(n * sizeof *order);
    struct gp_buf buf;
    gp_buf_init(&buf, 0);
    size_t total = 0, mtotal = 0;
    for (size_t i = 0; i < n; i++) {
        make_blob(i, &b[i], &buf, 0);
        make_blob(i, &miss[i], &buf, 1);
        total += b[i].len;
        mtotal += miss[i].len;
        order[i] = i;
    }
    uint64_t s = 88172645463325252ULL;
    for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        size_t j = s % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    printf("sindex: %zu series, %.0f bytes per blob\n", n, (double)total / n);
    /* The stream a server sees: blobs laid out one after another, as a
     * decoded request holds them, in an order unrelated to the index. */
    uint8_t *stream = malloc(total), *mstream = malloc(mtotal);
    struct blob *rb = calloc(n, sizeof *rb), *rm = calloc(n, sizeof *rm);
    size_t off = 0, moff = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        memcpy(stream + off, b[i].p, b[i].len);
        rb[k] = (struct blob){stream + off, b[i].len, b[i].hash};
        off += b[i].len;
        memcpy(mstream + moff, miss[i].p, miss[i].len);
        rm[k] = (struct blob){mstream + moff, miss[i].len, miss[i].hash};
        moff += miss[i].len;
    }

    struct gp_sindex *x;
    gp_sindex_new(&x);
    double t0 = now();
    for (size_t i = 0; i < n; i++)
        if (gp_sindex_add(x, b[i].p, b[i].len, b[i].hash, 0, NULL) != GP_OK)
            return 1;
    double t1 = now();
    printf("  add                    %8.1f ns/series\n", (t1 - t0) / n * 1e9);
    printf("  memory                 %8.0f bytes/series (blob included)\n",
           (double)gp_sindex_bytes(x) / n);

    const int rounds = 20;
    volatile uint64_t sink = 0;
    t0 = now();
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < n; i++)
            sink += gp_labels_hash(rb[i].p, rb[i].len);
    t1 = now();
    printf("  hash (streamed blobs)  %8.1f ns/blob\n", (t1 - t0) / ((double)n * rounds) * 1e9);

    uint64_t found = 0;
    t0 = now();
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < n; i++)
            found += gp_sindex_find(x, b[i].p, b[i].len, b[i].hash) != 0;
    t1 = now();
    printf("  find hit, in order     %8.1f ns\n", (t1 - t0) / ((double)n * rounds) * 1e9);
    t0 = now();
    for (int r = 0; r < rounds; r++)
        for (size_t k = 0; k < n; k++)
            found += gp_sindex_find(x, rb[k].p, rb[k].len, rb[k].hash) != 0;
    t1 = now();
    printf("  find hit, random order %8.1f ns\n", (t1 - t0) / ((double)n * rounds) * 1e9);
    t0 = now();
    for (int r = 0; r < rounds; r++)
        for (size_t k = 0; k < n; k++)
            found += gp_sindex_find(x, rb[k].p, rb[k].len, gp_labels_hash(rb[k].p, rb[k].len)) != 0;
    t1 = now();
    printf("  hash + find, random    %8.1f ns\n", (t1 - t0) / ((double)n * rounds) * 1e9);
    t0 = now();
    for (int r = 0; r < rounds; r++)
        for (size_t k = 0; k < n; k++)
            found += gp_sindex_find(x, rm[k].p, rm[k].len, rm[k].hash) != 0;
    t1 = now();
    printf("  find miss, random      %8.1f ns\n", (t1 - t0) / ((double)n * rounds) * 1e9);
    if (found != (uint64_t)n * rounds * 3) {
        fprintf(stderr, "wrong find results: %llu\n", (unsigned long long)found);
        return 1;
    }

    bench_select(x, "DCGM_FI_DEV_GPU_UTIL{Hostname=\"node-0007\"}");
    bench_select(x, "DCGM_FI_DEV_GPU_UTIL{gpu=~\"0|1\"}");
    bench_select(x, "DCGM_FI_DEV_GPU_UTIL{Hostname=~\"node-00[0-6].\"}");
    bench_select(x, "{__name__=~\"DCGM_FI_DEV_.*_TEMP\", gpu!=\"7\"}");
    bench_select(x, "DCGM_FI_DEV_GPU_UTIL");
    bench_select(x, "{UUID=~\"GPU-0.*\"}");
    bench_select(x, "{job=\"dcgm\", modelName!~\"NVIDIA A.*\"}");
    (void)sink;
    gp_sindex_free(x);
    for (size_t i = 0; i < n; i++) {
        free(b[i].p);
        free(miss[i].p);
    }
    free(b);
    free(miss);
    free(order);
    free(stream);
    free(mstream);
    free(rb);
    free(rm);
    gp_buf_free(&buf);
    return 0;
}
