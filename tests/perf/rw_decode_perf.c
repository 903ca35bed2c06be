/*
 * rw_decode_perf.c - measures the remote-write decoder (gp_rw_decode:
 * snappy + protobuf parse + label validation + canonical sort) on the
 * requests the server sees: dcgm-exporter-like series with 10 labels.
 *
 * Cases: 1,000 series x 10 labels x 1 sample (an agent's scrape), the same
 * with labels in reverse order on the wire (a sender that does not sort:
 * the slow path), 100 series x 100 samples (a backfill), and the
 * protobuf-only cost (gp_rw_unmarshal, no snappy) of the first case.
 *
 * Not part of the test suite (numbers, not checks). Build and run:
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc tests/perf/rw_decode_perf.c \
 *      build/rel/libgpulse.a $(pkg-config --libs snappy) -lm -o build/rw-decode-perf
 *   build/rw-decode-perf
 */
#include "ingest/remote_write.h"
#include "lib/buf.h"
#include "lib/err.h"

#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NLAB 10

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const METRICS[] = {
    "DCGM_FI_DEV_GPU_UTIL",  "DCGM_FI_DEV_GPU_TEMP",       "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",  "DCGM_FI_DEV_FB_USED",        "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
};

/* Strings for one series: owned by a static pool the labels point into. */
struct gen_series {
    char v[NLAB][64];
    struct gp_label labels[NLAB];
};

/* Fills g with series i's labels; reverse puts them in descending order
 * (the encoder sorts anyway, so reverse is applied to the bytes after
 * encoding instead: see encode_reversed). */
static void gen_labels(struct gen_series *g, size_t i)
{
    size_t gpu = i % 8, host = i / 64;
    static const char *const names[NLAB] = {"DCGM_FI_DRIVER_VERSION", "Hostname", "UUID",
                                            "__name__", "device", "gpu", "instance",
                                            "job", "modelName", "pci_bus_id"};
    snprintf(g->v[0], 64, "535.129.03");
    snprintf(g->v[1], 64, "gpu-node-%04zu", host);
    snprintf(g->v[2], 64, "GPU-%08zx-3f2a-4c1d-9e8b-%012zx", host * 8 + gpu, i);
    snprintf(g->v[3], 64, "%s", METRICS[(i / 8) % 8]);
    snprintf(g->v[4], 64, "nvidia%zu", gpu);
    snprintf(g->v[5], 64, "%zu", gpu);
    snprintf(g->v[6], 64, "gpu-node-%04zu:9400", host);
    snprintf(g->v[7], 64, "dcgm-exporter");
    snprintf(g->v[8], 64, "NVIDIA H100 80GB HBM3");
    snprintf(g->v[9], 64, "00000000:%02zX:00.0", 0x18 + gpu * 0x10);
    for (int k = 0; k < NLAB; k++)
        g->labels[k] = (struct gp_label){{names[k], strlen(names[k])}, {g->v[k], strlen(g->v[k])}};
}

/* Encodes nseries x nsamples into *out (snappy) and *pb (raw protobuf). */
static void build(size_t nseries, size_t nsamples, struct gp_buf *out, struct gp_buf *pb)
{
    struct gen_series *g = calloc(nseries, sizeof *g);
    struct gp_series *ser = calloc(nseries, sizeof *ser);
    struct gp_sample *smp = calloc(nseries * nsamples, sizeof *smp);
    if (!g || !ser || !smp)
        abort();
    for (size_t i = 0; i < nseries; i++) {
        gen_labels(&g[i], i);
        for (size_t k = 0; k < nsamples; k++)
            smp[i * nsamples + k] = (struct gp_sample){(double)((i * 37 + k * 11) % 101) + 0.25,
                                                          1700000000000 + (int64_t)k * 1000};
        ser[i] = (struct gp_series){g[i].labels, NLAB, smp + i * nsamples, nsamples};
    }
    struct gp_batch req = {ser, nseries, 0, 0, NULL};
    if (gp_rw_encode(&req, out, pb) != GP_OK)
        abort();
    free(g);
    free(ser);
    free(smp);
}

/* Rewrites each series' label fields in reverse order, in place: the
 * fields are a contiguous run of `0x0a len label` at the start of each
 * series body (the encoder writes labels first). */
static void reverse_labels(struct gp_buf *pb, struct gp_buf *out)
{
    uint8_t *p = (uint8_t *)pb->data, *end = p + pb->len;
    uint8_t tmp[4096];
    while (p < end) {
        /* 0x0a, varint len */
        p++;
        size_t blen = 0, sh = 0;
        while (*p & 0x80)
            blen |= (size_t)(*p++ & 0x7f) << (7 * sh++);
        blen |= (size_t)*p++ << (7 * sh);
        uint8_t *s = p, *q = p;
        size_t starts[64], lens[64], n = 0;
        while (q < s + blen && *q == 0x0a) {
            starts[n] = (size_t)(q - s);
            lens[n] = 2 + q[1]; /* labels here are < 128 bytes */
            q += lens[n++];
        }
        size_t w = 0;
        for (size_t k = n; k-- > 0;) {
            memcpy(tmp + w, s + starts[k], lens[k]);
            w += lens[k];
        }
        memcpy(s, tmp, w);
        p = s + blen;
    }
    size_t clen = snappy_max_compressed_length(pb->len);
    if (gp_buf_reserve(out, clen) != GP_OK ||
        snappy_compress(pb->data, pb->len, out->data, &clen) != SNAPPY_OK)
        abort();
    out->len = clen;
}

static void run(const char *what, const struct gp_buf *body, int compressed, double secs)
{
    struct gp_batch req;
    char err[256];
    size_t iters = 0, nseries = 0, nsamples = 0;
    double t0 = now_s(), t;
    do {
        for (int k = 0; k < 20; k++) {
            int rc = compressed
                         ? gp_rw_decode((const uint8_t *)body->data, body->len, (size_t)1 << 30,
                                        &req, err, sizeof err)
                         : gp_rw_unmarshal((const uint8_t *)body->data, body->len, &req, err,
                                           sizeof err);
            if (rc != GP_OK) {
                fprintf(stderr, "%s: decode failed: %s\n", what, err);
                exit(1);
            }
            nseries = req.nseries;
            nsamples = req.nsamples_total;
            gp_rw_decoded_free(&req);
            iters++;
        }
        t = now_s() - t0;
    } while (t < secs);
    double per_req = t / (double)iters;
    printf("%-34s %8.1f ns/series %8.2f M samples/s %8.1f us/request (%zu B)\n", what,
           per_req * 1e9 / (double)nseries, (double)nsamples / per_req / 1e6, per_req * 1e6,
           body->len);
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    struct gp_buf c1, p1, c2, p2, c3;
    gp_buf_init(&c1, 0);
    gp_buf_init(&p1, 0);
    gp_buf_init(&c2, 0);
    gp_buf_init(&p2, 0);
    gp_buf_init(&c3, 0);
    build(1000, 1, &c1, &p1);
    build(100, 100, &c2, &p2);
    run("1000 series x 10 labels x 1", &c1, 1, secs);
    run("  same, protobuf only (unmarshal)", &p1, 0, secs);
    reverse_labels(&p1, &c3);
    run("  same, labels unsorted on wire", &c3, 1, secs);
    run("100 series x 10 labels x 100", &c2, 1, secs);
    gp_buf_free(&c1);
    gp_buf_free(&p1);
    gp_buf_free(&c2);
    gp_buf_free(&p2);
    gp_buf_free(&c3);
    return 0;
}
