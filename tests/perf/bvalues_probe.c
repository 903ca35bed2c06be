/*
 * bvalues_probe.c - what a block's values would take, and cost to
 * decode, under VictoriaMetrics-style byte encodings with zstd, beside
 * today's bit-packed block chunks (src/store/bchunk.c). Issue 19 asks
 * for a smaller store with no slower queries; this measures an encoding
 * before anyone changes the block format for it.
 *
 * Each chunk's values are decoded, turned into the integers bchunk.c
 * already packs (mantissas at one exponent; deltas or deltas of deltas,
 * whichever is smaller; zigzag), and written two ways:
 *   varint  LEB128 bytes, one after another
 *   planes  a fixed byte width per chunk, byte 0 of every value, then
 *           byte 1, ... (high bytes are mostly zero: zstd's Huffman and
 *           run coding take them nearly free)
 * Then zstd (level 3) compresses a group of chunks at once; a reader
 * must decompress a whole group to get one series from it:
 *   chunk   each chunk alone (a read decodes only what it needs)
 *   family  the chunks sharing a time record (one node's piece) whose
 *           series have the same metric name: one node's GPUs
 *   node    all chunks sharing a time record: every series of a node
 *   series  one series' chunks of the whole block (VictoriaMetrics's
 *           blocks hold up to 8192 samples of one series)
 * For chunks alone, also the smaller of today's chunk and the new one,
 * chunk by chunk ("varint|today"). Per cell: bytes per sample (compressed values plus today's chunk
 * header bytes, which a new format keeps), and ns per sample to
 * decompress every group and rebuild its doubles (the best of ROUNDS
 * passes over all groups); today's whole-chunk decode (times included;
 * the best of ROUNDS passes over the file) in the same run.
 * A chunk that is not all decimals (today's Gorilla fallback) counts at
 * its size today in every cell. First, per family, the entropy of those
 * integers: about how far any coder of one delta at a time could go.
 *
 * Not part of the test suite (numbers, not checks). Build and run
 * (libzstd-dev, only for this probe):
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -pthread tests/perf/bvalues_probe.c \
 *      build/rel/libgpulse.a $(pkg-config --libs sqlite3 snappy) -lzstd -lm \
 *      -o build/bvalues-probe
 *   build/bvalues-probe DATA_DIR BLOCK_FILE
 *
 * (bench/storetool load makes a data directory with a block.)
 */
#include "lib/err.h"
#include "lib/varint.h"
#include "store/labels.h"
#include "store/store.h"
#include "store/store_fmt.h"
#include "perf_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define MAX_E 15
#define LEVEL 3
#define ROUNDS 5 /* timings: the best of */

static const double p10[MAX_E + 1] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* One chunk, as the probe sees it. */
struct pchunk {
    uint32_t entry, fam, id;
    uint64_t toff;  /* its time record (0: none) */
    size_t n, head; /* samples, today's header bytes */
    size_t gorilla; /* today's bytes where e < 0 */
    size_t len;     /* today's bytes */
    int e, mode;    /* e < 0: not all decimals */
    uint64_t *u;    /* n - 1 or n - 2 zigzag integers */
    size_t nu;
};

static uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzz(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

static int exact_at(double v, int e, int64_t *m)
{
    double x = v * p10[e];
    if (!(x > -9007199254740992.0 && x < 9007199254740992.0))
        return 0;
    *m = llround(x);
    double back = (double)*m / p10[e];
    return memcmp(&back, &v, sizeof v) == 0;
}

static size_t varint_bytes(uint64_t u)
{
    size_t k = 1;
    while (u >= 128)
        u >>= 7, k++;
    return k;
}

/* The chunk's integers (as bchunk.c's packed values, every value a decimal). */
static void plan(struct pchunk *c, const double *v)
{
    int64_t *m = malloc(c->n * sizeof *m);
    c->e = -1;
    for (int e = 0; e <= MAX_E && c->e < 0; e++) {
        size_t i = 0;
        while (i < c->n && exact_at(v[i], e, &m[i]))
            i++;
        if (i == c->n)
            c->e = e;
    }
    if (c->e < 0 || c->n < 3) {
        c->e = -1;
        free(m);
        return;
    }
    size_t b1 = 0, b2 = 0;
    for (size_t i = 1; i < c->n; i++)
        b1 += varint_bytes(zz(m[i] - m[i - 1]));
    for (size_t i = 2; i < c->n; i++)
        b2 += varint_bytes(zz((m[i] - m[i - 1]) - (m[i - 1] - m[i - 2])));
    c->mode = b2 < b1;
    c->nu = c->n - 1 - (size_t)c->mode;
    c->u = malloc(c->nu * sizeof *c->u);
    for (size_t i = 0; i < c->nu; i++) {
        size_t j = i + 1 + (size_t)c->mode;
        c->u[i] = c->mode ? zz((m[j] - m[j - 1]) - (m[j - 1] - m[j - 2])) : zz(m[j] - m[j - 1]);
    }
    free(m);
}

static size_t plane_width(const struct pchunk *c)
{
    uint64_t or = 0;
    for (size_t i = 0; i < c->nu; i++)
        or |= c->u[i];
    size_t w = 0;
    while (or)
        w++, or >>= 8;
    return w;
}

/* Appends the chunk's integers in form 0 (varint) or 1 (planes). */
static size_t put(const struct pchunk *c, int form, uint8_t *out)
{
    size_t k = 0;
    if (form == 0) {
        for (size_t i = 0; i < c->nu; i++) {
            uint64_t u = c->u[i];
            while (u >= 128)
                out[k++] = (uint8_t)(u | 128), u >>= 7;
            out[k++] = (uint8_t)u;
        }
        return k;
    }
    size_t w = plane_width(c);
    for (size_t b = 0; b < w; b++)
        for (size_t i = 0; i < c->nu; i++)
            out[k++] = (uint8_t)(c->u[i] >> (8 * b));
    return k;
}

/* Rebuilds the doubles of a chunk from its bytes: the reader's work after
 * zstd. Returns the bytes consumed. */
static size_t rebuild(const struct pchunk *c, int form, const uint8_t *p, uint64_t *u, double *v)
{
    size_t k = 0;
    if (form == 0) {
        const uint8_t *q = p;
        for (size_t i = 0; i < c->nu; i++)
            gp_uvarint_get(&q, p + 10 * c->nu, &u[i]);
        k = (size_t)(q - p);
    } else {
        size_t w = plane_width(c);
        memset(u, 0, c->nu * sizeof *u);
        for (size_t b = 0; b < w; b++)
            for (size_t i = 0; i < c->nu; i++)
                u[i] |= (uint64_t)p[k++] << (8 * b);
    }
    int64_t m = 0, d = 0;
    for (size_t i = 0; i < c->nu; i++) {
        if (c->mode)
            d += unzz(u[i]), m += d;
        else
            m += unzz(u[i]);
        v[i] = (double)m / p10[c->e];
    }
    return k;
}

static int by_entry(const void *a, const void *b)
{
    const struct pchunk *x = a, *y = b;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static int by_group(const void *a, const void *b)
{
    const struct pchunk *x = a, *y = b;
    if (x->toff != y->toff)
        return x->toff < y->toff ? -1 : 1;
    if (x->fam != y->fam)
        return x->fam < y->fam ? -1 : 1;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

#define MAX_FAM 64 /* the last one gathers the rest */
static char fam_name[MAX_FAM][96];
static uint32_t nfam;

/* Family index of every series id, from the store's labels (names in
 * fam_name). */
static uint32_t *families(const char *dir, uint32_t *nid)
{
    struct gp_store *s;
    struct gp_store_options o = {.dir = dir, .no_background = 1};
    char err[512] = "";
    if (gp_store_open(&s, &o, err, sizeof err) != GP_OK) {
        fprintf(stderr, "bvalues-probe: %s: %s\n", dir, err);
        return NULL;
    }
    struct gp_store_selection sel = {0};
    uint32_t *fam = NULL;
    if (gp_store_select(s, NULL, 0, INT64_MIN, INT64_MAX, &sel) == GP_OK && sel.n) {
        *nid = sel.series[sel.n - 1].id + 1;
        fam = calloc(*nid, sizeof *fam);
        for (size_t i = 0; fam && i < sel.n; i++) {
            struct gp_str name = {0};
            gp_labels_get(sel.series[i].labels, sel.series[i].labels_len, "__name__", &name);
            char buf[96];
            snprintf(buf, sizeof buf, "%.*s", (int)name.len, name.ptr);
            uint32_t f = 0;
            while (f < nfam && strcmp(fam_name[f], buf) != 0)
                f++;
            if (f == nfam && nfam < MAX_FAM - 1)
                snprintf(fam_name[nfam++], sizeof fam_name[0], "%s", buf);
            else if (f == nfam)
                snprintf(fam_name[f = MAX_FAM - 1], sizeof fam_name[0], "(other families)");
            fam[sel.series[i].id] = f;
        }
    }
    gp_store_selection_free(&sel);
    gp_store_close(s);
    return fam;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Per family: today's bytes, and what an ideal static entropy coder of
 * the integers today's encoding packs would take (one table for the
 * whole family, its own cost not counted; integers below 256 each a
 * symbol, larger ones their bit width as the symbol and the bits below
 * the top one raw), plus the header bytes: about as far as coding each
 * delta on its own can go, the way bchunk.c and VictoriaMetrics both
 * code them. Gorilla chunks count at their size. */
static void entropy_table(const struct pchunk *c, uint32_t n, const uint64_t *today_fam)
{
    printf("%-40s %12s %14s\n", "family (bytes per sample)", "today", "entropy bound");
    double all_b = 0, all_h = 0, all_n = 0;
    for (uint32_t f = 0; f < MAX_FAM; f++) {
        size_t nu = 0, samples = 0;
        double bytes = 0;
        for (uint32_t i = 0; i < n; i++)
            if (c[i].fam == f) {
                samples += c[i].n;
                nu += c[i].e >= 0 ? c[i].nu : 0;
                bytes += c[i].e >= 0 ? (double)c[i].head : (double)c[i].gorilla;
            }
        if (!samples)
            continue;
        uint64_t *u = malloc((nu ? nu : 1) * sizeof *u);
        size_t k = 0;
        double bits = 0;
        for (uint32_t i = 0; i < n; i++)
            for (size_t j = 0; c[i].fam == f && c[i].e >= 0 && j < c[i].nu; j++) {
                unsigned w = 64 - (unsigned)__builtin_clzll(c[i].u[j] | 1);
                u[k++] = c[i].u[j] < 256 ? c[i].u[j] : 256 + w;
                bits += c[i].u[j] < 256 ? 0 : w - 1;
            }
        qsort(u, nu, sizeof *u, by_u64);
        for (size_t a = 0, b; a < nu; a = b) {
            for (b = a + 1; b < nu && u[b] == u[a]; b++)
                ;
            bits -= (double)(b - a) * log2((double)(b - a) / (double)nu);
        }
        free(u);
        bytes += bits / 8;
        printf("%-40s %12.3f %14.3f\n", fam_name[f], (double)today_fam[f] / (double)samples,
               bytes / (double)samples);
        all_b += (double)today_fam[f], all_h += bytes, all_n += (double)samples;
    }
    printf("%-40s %12.3f %14.3f\n", "all", all_b / all_n, all_h / all_n);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bvalues-probe DATA_DIR BLOCK_FILE\n");
        return 2;
    }
    uint32_t nid = 0;
    uint32_t *fam = families(argv[1], &nid);
    size_t size;
    const uint8_t *map = map_file(argv[2], &size);
    struct gp_st_bfile bf;
    char err[200];
    if (!fam || !map || gp_st_bfile_parse(map, size, &bf, err, sizeof err) != GP_OK) {
        fprintf(stderr, "bvalues-probe: cannot read the store or its block file\n");
        return 1;
    }
    int64_t *t = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *t);
    double *v = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *v);
    uint64_t *u = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *u);
    struct pchunk *c = calloc(bf.n, sizeof *c);
    uint64_t samples = 0, today = 0, gorilla = 0, today_fam[MAX_FAM] = {0};
    double today_s = 0;
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        gp_st_bfile_entry(&bf, i, &e);
        const uint8_t *p = bf.data + e.off, *q = p + 1;
        struct gp_st_bchunk_info in;
        size_t first;
        int k = gp_st_bchunk_decode_in(&bf, p, e.len, INT64_MIN, INT64_MAX, 1, t, v,
                                       GP_CHUNK_MAX_SAMPLES, &first);
        if (k <= 0 || gp_st_bchunk_info(p, e.len, &in) != GP_OK) {
            fprintf(stderr, "bvalues-probe: damaged chunk %u\n", i);
            return 1;
        }
        c[i] = (struct pchunk){.entry = i, .fam = e.id < nid ? fam[e.id] : 0, .id = e.id,
                               .n = (size_t)k, .head = in.head_bytes};
        uint64_t x;
        if (p[0] == 2 && gp_uvarint_get(&q, p + e.len, &x) == 0)
            gp_uvarint_get(&q, p + e.len, &c[i].toff);
        samples += (uint64_t)k;
        today += e.len;
        c[i].len = e.len;
        today_fam[c[i].fam] += e.len;
        plan(&c[i], v);
        if (c[i].e < 0)
            gorilla += c[i].gorilla = e.len;
    }
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        for (uint32_t i = 0; i < bf.n; i++) {
            struct gp_st_bentry e;
            size_t first;
            gp_st_bfile_entry(&bf, i, &e);
            gp_st_bchunk_decode_in(&bf, bf.data + e.off, e.len, INT64_MIN, INT64_MAX, 1, t, v,
                                   GP_CHUNK_MAX_SAMPLES, &first);
        }
        double d = now_s() - t0;
        if (r == 0 || d < today_s)
            today_s = d;
    }
    entropy_table(c, bf.n, today_fam);
    qsort(c, bf.n, sizeof *c, by_group);
    printf("%u chunks, %llu samples; today: chunks %.3f bytes/sample, whole-chunk decode %.2f "
           "ns/sample (times and values)\n",
           bf.n, (unsigned long long)samples, (double)today / (double)samples,
           today_s * 1e9 / (double)samples);
    printf("%-8s %-13s %14s %16s %14s\n", "group", "form", "bytes/sample", "decode ns/sample",
           "chunks/group");
    size_t cap = 64u << 20;
    uint8_t *raw = malloc(cap), *back = malloc(cap);
    /* a cell's compressed groups, back to back: decoded in passes over
     * all of them, as the file is for today's figure */
    size_t zcap = ZSTD_compressBound(today * 4 + cap);
    uint8_t *z = malloc(zcap);
    struct zgroup {
        uint32_t a, b;
        size_t off, zl, len;
    } *grp = malloc(bf.n * sizeof *grp);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    static const char *const gname[] = {"chunk", "family", "node", "series"};
    static const char *const fname[] = {"varint", "planes"};
    for (int g = 0; g < 4; g++)
        for (int form = 0; form < 2; form++) {
            if (g == 3 && form == 0)
                qsort(c, bf.n, sizeof *c, by_entry); /* the index's order: by series, then time */
            /* best: chunk by chunk, the smaller of today's and this */
            uint64_t bytes = gorilla, best = gorilla;
            size_t ng = 0, zoff = 0;
            for (uint32_t a = 0, b; a < bf.n; a = b) {
                b = a + 1;
                while (b < bf.n && (g == 3 ? c[b].id == c[a].id
                                           : g > 0 && c[b].toff == c[a].toff && c[b].toff != 0 &&
                                                 (g == 2 || c[b].fam == c[a].fam)))
                    b++;
                size_t len = 0;
                for (uint32_t i = a; i < b; i++)
                    if (c[i].e >= 0 && len + 10 * c[i].nu < cap) {
                        len += put(&c[i], form, raw + len);
                        bytes += c[i].head;
                    }
                grp[ng] = (struct zgroup){a, b, zoff, 0, len};
                size_t zl = 0;
                if (len > 0) { /* else constants: their header alone */
                    zl = ZSTD_compressCCtx(cc, z + zoff, zcap - zoff, raw, len, LEVEL);
                    if (ZSTD_isError(zl))
                        return 1;
                    grp[ng].zl = zl;
                    zoff += zl;
                    bytes += zl;
                }
                if (g == 0 && c[a].e >= 0)
                    best += c[a].head + zl < c[a].len ? c[a].head + zl : c[a].len;
                ng++;
            }
            double dec_s = 0;
            for (int r = 0; r < ROUNDS; r++) {
                double t0 = now_s();
                for (size_t k = 0; k < ng; k++) {
                    if (grp[k].len == 0)
                        continue;
                    size_t at = 0;
                    size_t got = ZSTD_decompressDCtx(dc, back, cap, z + grp[k].off, grp[k].zl);
                    for (uint32_t i = grp[k].a; i < grp[k].b && got == grp[k].len; i++)
                        if (c[i].e >= 0)
                            at += rebuild(&c[i], form, back + at, u, v);
                    if (got != grp[k].len || at != got) {
                        fprintf(stderr, "bvalues-probe: round trip failed\n");
                        return 1;
                    }
                }
                double d = now_s() - t0;
                if (r == 0 || d < dec_s)
                    dec_s = d;
            }
            printf("%-8s %-13s %14.3f %16.2f %14.1f\n", gname[g], fname[form],
                   (double)bytes / (double)samples, dec_s * 1e9 / (double)samples,
                   ng ? (double)bf.n / (double)ng : 0.0);
            if (g == 0)
                printf("%-8s %-13s %14.3f %16s %14s\n", "chunk",
                       form ? "planes|today" : "varint|today", (double)best / (double)samples, "",
                       "1.0");
        }
    return 0;
}
