/*
 * storetool - offline work on a stopped gpulse server's data directory,
 * through the store's own API (store/store.h), for the benchmark and the
 * server crash test.
 *
 *   storetool compact DIR
 *       Opens (recovers) the store, forces every due background step
 *       (gp_store_maintain(s, 1): compaction of every complete block
 *       window, retention, checkpoint) and closes it. Prints the store's
 *       statistics as key=value pairs. The benchmark measures the
 *       directory afterwards.
 *
 *   storetool load DIR BODIES SHIFT_MS
 *       Appends every body of BODIES (a fleetgen file) through
 *       gp_store_append, each sample's time moved SHIFT_MS earlier, then
 *       compacts as `compact` does. For the benchmark's bytes per sample:
 *       a running server compacts a window once it is half a window old,
 *       and refuses samples for it afterwards, so data that ends now is
 *       never compacted and older data cannot be sent to it; shifted into
 *       the last complete window, the same samples in the same batches
 *       are. The WAL is not synced (no_sync): the files written are the
 *       same, the load just takes less time.
 *
 *   storetool verify DIR BODIES ACKLOG
 *       The crash test's judge. ACKLOG lists (one index per line) the
 *       bodies of the BODIES file that the server acknowledged. Every
 *       series of the store is read raw (gp_store_read), then every body
 *       is decoded and each of its samples looked up by series and time:
 *         - a sample of an acknowledged body must be held exactly once,
 *           with the same value bits;
 *         - a sample of another body (sent and lost with its answer, or
 *           never sent) may be absent, but if held it is held once and
 *           with its exact value;
 *         - the store holds nothing that no body carried.
 *       Prints the counts and the first few problems; exit 1 on any.
 *
 *   storetool dump DIR SELECTOR
 *       Prints the raw samples of the series SELECTOR matches: per series
 *       a line "series {name="value",...}", then one "T_MS VALUE" line per
 *       sample (VALUE as %.17g), as the store returns them. For tests that
 *       need every stored sample (the server outage test).
 *
 *   storetool expect BODIES ACKLOG
 *       Prints the acknowledged samples as text for the HTTP read-back:
 *       "NAME HOSTNAME GPU T_MS VALUE" with VALUE as %.17g.
 *
 *   storetool sizes DIR
 *       Where the bytes of a stopped store go, in bytes per sample of its
 *       blocks: per family (__name__), its block chunks' headers
 *       (counts, first values, exceptions), packed times, values, how
 *       many chunks take each encoding (0 Gorilla, 1 packed, 2 packed
 *       with shared times) and its rollups; then the blocks' time
 *       records, index entries and every file of the directory.
 */
#include "fleetgen.h"

#include "ingest/remote_write.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/labels.h"
#include "store/matcher.h"
#include "store/store.h"
#include "store/store_fmt.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BODY_UNCOMPRESSED (64u << 20)

static int fail(const char *what, int rc, const char *err)
{
    fprintf(stderr, "storetool: %s: %s%s%s\n", what, gp_strerror(rc), err && err[0] ? ": " : "",
            err ? err : "");
    return 1;
}

static int open_store(struct gp_store **s, const char *dir)
{
    struct gp_store_options o = {.dir = dir, .no_background = 1};
    char err[512] = "";
    int rc = gp_store_open(s, &o, err, sizeof err);
    return rc == GP_OK ? 0 : fail(dir, rc, err);
}

static void print_stats(struct gp_store *s)
{
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    printf("series=%" PRIu64 " head_chunks=%" PRIu64 " blocks=%" PRIu64 " compactions=%" PRIu64
           " disk_bytes=%" PRIu64 " wal_bytes=%" PRIu64 " oldest_ms=%" PRId64 " newest_ms=%" PRId64
           " replay_s=%.3f replayed=%" PRIu64 "\n",
           st.series, st.head_chunks, st.blocks, st.compactions, st.disk_bytes, st.wal_bytes, st.oldest_ms,
           st.newest_ms, st.replay_seconds, st.replayed_samples);
}

static int cmd_compact(const char *dir)
{
    struct gp_store *s;
    if (open_store(&s, dir) != 0)
        return 1;
    int rc = gp_store_maintain(s, 1);
    if (rc != GP_OK) {
        gp_store_close(s);
        return fail("compaction", rc, NULL);
    }
    print_stats(s);
    gp_store_close(s);
    return 0;
}

static int cmd_load(const char *dir, const char *bodies_path, const char *shift_arg)
{
    char *end;
    errno = 0;
    long long shift = strtoll(shift_arg, &end, 10);
    if (errno || *end || end == shift_arg) {
        fprintf(stderr, "storetool: '%s' is not a number of milliseconds\n", shift_arg);
        return 2;
    }
    struct gp_bodies b;
    char err[512] = "";
    if (gp_bodies_open(&b, bodies_path, err, sizeof err) != 0) {
        fprintf(stderr, "storetool: %s\n", err);
        return 1;
    }
    struct gp_store *s;
    struct gp_store_options o = {.dir = dir, .no_background = 1, .no_sync = 1};
    int rc = gp_store_open(&s, &o, err, sizeof err);
    if (rc != GP_OK)
        return fail(dir, rc, err);
    uint64_t accepted = 0, rejected = 0;
    for (uint64_t i = 0; i < b.h.bodies && rc == GP_OK; i++) {
        struct gp_batch req;
        rc = gp_rw_decode(b.body[i].data, b.body[i].len, MAX_BODY_UNCOMPRESSED, &req, err, sizeof err);
        if (rc != GP_OK)
            break;
        for (size_t k = 0; k < req.nseries; k++)
            for (size_t j = 0; j < req.series[k].nsamples; j++)
                req.series[k].samples[j].timestamp_ms -= shift;
        struct gp_append_result res = {0};
        rc = gp_store_append(s, &req, &res, err, sizeof err);
        accepted += res.accepted;
        rejected += res.duplicate + res.out_of_order + res.conflict + res.too_old + res.series_limit;
        gp_rw_decoded_free(&req);
    }
    if (rc == GP_OK)
        rc = gp_store_maintain(s, 1);
    if (rc == GP_OK)
        print_stats(s);
    gp_store_close(s);
    gp_bodies_close(&b);
    if (rc != GP_OK)
        return fail("load", rc, err);
    if (rejected) {
        fprintf(stderr, "storetool: %llu samples rejected (%llu accepted)\n", (unsigned long long)rejected,
                (unsigned long long)accepted);
        return 1;
    }
    return 0;
}

/* ---- the acknowledged set ---- */

static uint8_t *read_acklog(const char *path, uint64_t nbodies, uint64_t *nacked)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "storetool: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    uint8_t *acked = calloc(nbodies ? nbodies : 1, 1);
    unsigned long long i;
    *nacked = 0;
    int c;
    while (acked && (c = fscanf(fp, "%llu", &i)) == 1) {
        if (i >= nbodies) {
            fprintf(stderr, "storetool: %s: body %llu out of range\n", path, i);
            free(acked);
            acked = NULL;
            break;
        }
        if (acked[i]) {
            fprintf(stderr, "storetool: %s: body %llu acknowledged twice\n", path, i);
            free(acked);
            acked = NULL;
            break;
        }
        acked[i] = 1;
        (*nacked)++;
    }
    if (acked && !feof(fp)) {
        fprintf(stderr, "storetool: %s: not a list of body numbers\n", path);
        free(acked);
        acked = NULL;
    }
    fclose(fp);
    return acked;
}

/* ---- the store's contents, by label blob ---- */

struct held {
    uint8_t *blob;
    size_t len;
    uint64_t hash;
    struct gp_samples x;
    uint8_t *seen; /* per sample: matched by a body */
};

struct heldmap {
    struct held *h;
    size_t n, cap; /* open addressing, cap a power of two */
};

static struct held *held_find(struct heldmap *m, const uint8_t *blob, size_t len, uint64_t hash)
{
    for (size_t i = hash & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        struct held *e = &m->h[i];
        if (!e->blob)
            return e;
        if (e->hash == hash && e->len == len && memcmp(e->blob, blob, len) == 0)
            return e;
    }
}

static int load_store(struct gp_store *s, struct heldmap *m, uint64_t *total)
{
    struct gp_matcher all;
    char err[256];
    int rc = gp_matcher_init(&all, GP_MATCH_RE, "__name__", ".+", err, sizeof err);
    if (rc != GP_OK)
        return fail("matcher", rc, err);
    struct gp_store_selection sel = {0};
    rc = gp_store_select(s, &all, 1, INT64_MIN, INT64_MAX, &sel);
    gp_matcher_free(&all);
    if (rc != GP_OK)
        return fail("select", rc, NULL);
    m->cap = 16;
    while (m->cap < sel.n * 2 + 16)
        m->cap *= 2;
    m->h = calloc(m->cap, sizeof *m->h);
    if (!m->h)
        return fail("load", GP_ENOMEM, NULL);
    *total = 0;
    for (size_t i = 0; i < sel.n; i++) {
        const struct gp_store_series *ss = &sel.series[i];
        uint64_t hash = gp_labels_hash(ss->labels, ss->labels_len);
        struct held *e = held_find(m, ss->labels, ss->labels_len, hash);
        if (e->blob) {
            fprintf(stderr, "storetool: two series with the same labels (id %u)\n", ss->id);
            gp_store_selection_free(&sel);
            return 1;
        }
        e->blob = malloc(ss->labels_len);
        if (!e->blob)
            return fail("load", GP_ENOMEM, NULL);
        memcpy(e->blob, ss->labels, ss->labels_len);
        e->len = ss->labels_len;
        e->hash = hash;
        rc = gp_store_read(s, ss->id, INT64_MIN, INT64_MAX, &e->x);
        if (rc != GP_OK) {
            gp_store_selection_free(&sel);
            return fail("read", rc, NULL);
        }
        e->seen = calloc(e->x.n ? e->x.n : 1, 1);
        if (!e->seen)
            return fail("load", GP_ENOMEM, NULL);
        for (size_t k = 1; k < e->x.n; k++)
            if (e->x.t[k] < e->x.t[k - 1]) {
                fprintf(stderr, "storetool: series id %u read back out of time order\n", ss->id);
                gp_store_selection_free(&sel);
                return 1;
            }
        *total += e->x.n;
        m->n++;
    }
    gp_store_selection_free(&sel);
    return 0;
}

static void heldmap_free(struct heldmap *m)
{
    for (size_t i = 0; i < m->cap; i++) {
        free(m->h[i].blob);
        gp_samples_free(&m->h[i].x);
        free(m->h[i].seen);
    }
    free(m->h);
}

/* A short text name for a series in messages. */
static void series_name(const struct gp_series *se, char *out, size_t len)
{
    const char *fields[] = {"__name__", "Hostname", "gpu"};
    size_t off = 0;
    out[0] = 0;
    for (size_t f = 0; f < 3; f++)
        for (size_t i = 0; i < se->nlabels; i++) {
            const struct gp_label *l = &se->labels[i];
            if (l->name.len == strlen(fields[f]) && memcmp(l->name.ptr, fields[f], l->name.len) == 0 &&
                off < len) {
                int k = snprintf(out + off, len - off, "%s%.*s", f ? "/" : "", (int)l->value.len,
                                 l->value.ptr);
                off += k > 0 ? (size_t)k : 0;
            }
        }
}

struct verdict {
    uint64_t acked, acked_ok, missing, dup, wrong, unacked_held, foreign;
    int shown;
};

static void problem(struct verdict *v, const char *what, const struct gp_series *se, int64_t t)
{
    if (v->shown++ >= 10)
        return;
    char name[256];
    series_name(se, name, sizeof name);
    fprintf(stderr, "storetool: %s: %s at %" PRId64 "\n", what, name, t);
}

static int cmd_verify(const char *dir, const char *bodies_path, const char *ackpath)
{
    struct gp_bodies b;
    char err[512];
    if (gp_bodies_open(&b, bodies_path, err, sizeof err) != 0) {
        fprintf(stderr, "storetool: %s\n", err);
        return 1;
    }
    uint64_t nacked;
    uint8_t *acked = read_acklog(ackpath, b.h.bodies, &nacked);
    if (!acked)
        return 1;
    struct gp_store *s;
    if (open_store(&s, dir) != 0)
        return 1;
    struct heldmap m = {0};
    uint64_t held_total = 0;
    if (load_store(s, &m, &held_total) != 0)
        return 1;
    gp_store_close(s);

    struct verdict v = {0};
    struct gp_buf blob;
    gp_buf_init(&blob, 1 << 20);
    for (uint64_t i = 0; i < b.h.bodies; i++) {
        struct gp_batch req;
        int rc = gp_rw_decode(b.body[i].data, b.body[i].len, MAX_BODY_UNCOMPRESSED, &req, err, sizeof err);
        if (rc != GP_OK)
            return fail("decoding a body", rc, err);
        for (size_t k = 0; k < req.nseries; k++) {
            const struct gp_series *se = &req.series[k];
            gp_buf_reset(&blob);
            rc = gp_labels_encode(se->labels, se->nlabels, &blob);
            if (rc != GP_OK)
                return fail("labels", rc, NULL);
            const uint8_t *bl = (const uint8_t *)blob.data;
            struct held *e = held_find(&m, bl, blob.len, gp_labels_hash(bl, blob.len));
            for (size_t j = 0; j < se->nsamples; j++) {
                const struct gp_sample *x = &se->samples[j];
                /* the first stored sample at or after x's time */
                size_t lo = 0, hi = e->blob ? e->x.n : 0;
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (e->x.t[mid] < x->timestamp_ms)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                size_t count = 0;
                int same = 0;
                for (size_t q = lo; e->blob && q < e->x.n && e->x.t[q] == x->timestamp_ms; q++) {
                    count++;
                    e->seen[q] = 1;
                    same = memcmp(&e->x.v[q], &x->value, sizeof x->value) == 0;
                }
                if (acked[i])
                    v.acked++;
                if (count > 1) {
                    v.dup++;
                    problem(&v, "held more than once", se, x->timestamp_ms);
                } else if (count == 1 && !same) {
                    v.wrong++;
                    problem(&v, "held with another value", se, x->timestamp_ms);
                } else if (count == 0 && acked[i]) {
                    v.missing++;
                    problem(&v, "acknowledged but missing", se, x->timestamp_ms);
                } else if (count == 1 && acked[i]) {
                    v.acked_ok++;
                } else if (count == 1) {
                    v.unacked_held++;
                }
            }
        }
        gp_rw_decoded_free(&req);
    }
    for (size_t i = 0; i < m.cap; i++)
        for (size_t q = 0; m.h[i].blob && q < m.h[i].x.n; q++)
            if (!m.h[i].seen[q]) {
                v.foreign++;
                if (v.shown++ < 10)
                    fprintf(stderr, "storetool: a sample no body carried, at %" PRId64 "\n", m.h[i].x.t[q]);
            }
    printf("bodies=%" PRIu64 " acked_bodies=%" PRIu64 " acked_samples=%" PRIu64 " present_once=%" PRIu64
           " missing=%" PRIu64 " duplicated=%" PRIu64 " wrong_value=%" PRIu64 " unacked_held=%" PRIu64
           " foreign=%" PRIu64 " series=%zu held_samples=%" PRIu64 "\n",
           b.h.bodies, nacked, v.acked, v.acked_ok, v.missing, v.dup, v.wrong, v.unacked_held, v.foreign, m.n,
           held_total);
    gp_buf_free(&blob);
    heldmap_free(&m);
    free(acked);
    gp_bodies_close(&b);
    return v.missing || v.dup || v.wrong || v.foreign || v.acked_ok != v.acked ? 1 : 0;
}

static int cmd_dump(const char *dir, const char *selector)
{
    struct gp_matcher *m = NULL;
    size_t nm = 0;
    char err[512] = "";
    int rc = gp_selector_parse(selector, strlen(selector), &m, &nm, err, sizeof err);
    if (rc != GP_OK)
        return fail("selector", rc, err);
    struct gp_store *s;
    if (open_store(&s, dir) != 0) {
        gp_matchers_free(m, nm);
        return 1;
    }
    struct gp_store_selection sel = {0};
    rc = gp_store_select(s, m, nm, INT64_MIN, INT64_MAX, &sel);
    for (size_t i = 0; rc == GP_OK && i < sel.n; i++) {
        struct gp_labels_iter it;
        struct gp_str name, value;
        gp_labels_iter_init(&it, sel.series[i].labels, sel.series[i].labels_len);
        printf("series {");
        for (int k = 0; gp_labels_next(&it, &name, &value) == 1; k++)
            printf("%s%.*s=\"%.*s\"", k ? "," : "", (int)name.len, name.ptr, (int)value.len, value.ptr);
        printf("}\n");
        struct gp_samples x = {0};
        rc = gp_store_read(s, sel.series[i].id, INT64_MIN, INT64_MAX, &x);
        for (size_t j = 0; rc == GP_OK && j < x.n; j++)
            printf("%" PRId64 " %.17g\n", x.t[j], x.v[j]);
        gp_samples_free(&x);
    }
    gp_store_selection_free(&sel);
    gp_store_close(s);
    gp_matchers_free(m, nm);
    if (rc != GP_OK)
        return fail("dump", rc, NULL);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int label(const struct gp_series *se, const char *name, struct gp_str *out)
{
    for (size_t i = 0; i < se->nlabels; i++)
        if (se->labels[i].name.len == strlen(name) && memcmp(se->labels[i].name.ptr, name, se->labels[i].name.len) == 0) {
            *out = se->labels[i].value;
            return 1;
        }
    *out = (struct gp_str){"-", 1};
    return 0;
}

static int cmd_expect(const char *bodies_path, const char *ackpath)
{
    struct gp_bodies b;
    char err[512];
    if (gp_bodies_open(&b, bodies_path, err, sizeof err) != 0) {
        fprintf(stderr, "storetool: %s\n", err);
        return 1;
    }
    uint64_t nacked;
    uint8_t *acked = read_acklog(ackpath, b.h.bodies, &nacked);
    if (!acked)
        return 1;
    for (uint64_t i = 0; i < b.h.bodies; i++) {
        if (!acked[i])
            continue;
        struct gp_batch req;
        int rc = gp_rw_decode(b.body[i].data, b.body[i].len, MAX_BODY_UNCOMPRESSED, &req, err, sizeof err);
        if (rc != GP_OK)
            return fail("decoding a body", rc, err);
        for (size_t k = 0; k < req.nseries; k++) {
            const struct gp_series *se = &req.series[k];
            struct gp_str name, host, gpu;
            label(se, "__name__", &name);
            label(se, "Hostname", &host);
            label(se, "gpu", &gpu);
            for (size_t j = 0; j < se->nsamples; j++)
                printf("%.*s %.*s %.*s %" PRId64 " %.17g\n", (int)name.len, name.ptr, (int)host.len, host.ptr,
                       (int)gpu.len, gpu.ptr, se->samples[j].timestamp_ms, se->samples[j].value);
        }
        gp_rw_decoded_free(&req);
    }
    free(acked);
    gp_bodies_close(&b);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ---- sizes ---- */

#define SZ_FAMILIES 64 /* the last one gathers the rest */

struct famsize {
    char name[96];
    uint64_t samples, chunks, bytes, head, tbits, vbits, enc[3], rbytes;
};

struct sizes {
    struct famsize f[SZ_FAMILIES];
    size_t nf;
    uint16_t *fam_of; /* by series id */
    uint32_t nid;
    uint64_t files[2], payload[2], index[2]; /* blocks, rollups */
    uint64_t damaged;
};

static uint16_t family(struct sizes *z, struct gp_str name)
{
    for (size_t i = 0; i < z->nf; i++)
        if (strlen(z->f[i].name) == name.len && memcmp(z->f[i].name, name.ptr, name.len) == 0)
            return (uint16_t)i;
    if (z->nf == SZ_FAMILIES - 1) {
        snprintf(z->f[z->nf].name, sizeof z->f[0].name, "(other families)");
        return (uint16_t)z->nf;
    }
    snprintf(z->f[z->nf].name, sizeof z->f[0].name, "%.*s", (int)name.len, name.ptr);
    return (uint16_t)z->nf++;
}

/* Adds one block or rollup file's entries to z. */
static int sizes_file(struct sizes *z, const char *path, int rollup)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        fprintf(stderr, "storetool: cannot open %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return fail(path, GP_EIO, strerror(errno));
    struct gp_st_bfile bf;
    char err[256];
    if (gp_st_bfile_parse(map, len, &bf, err, sizeof err) != GP_OK) {
        munmap(map, len);
        return fail(path, GP_EPARSE, err);
    }
    z->files[rollup] += len;
    z->index[rollup] += (uint64_t)bf.n * bf.esize;
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        gp_st_bfile_entry(&bf, i, &e);
        struct famsize *f = &z->f[e.id < z->nid ? z->fam_of[e.id] : SZ_FAMILIES - 1];
        z->payload[rollup] += e.len;
        if (rollup) {
            f->rbytes += e.len;
            continue;
        }
        struct gp_st_bchunk_info in;
        const uint8_t *p;
        if (gp_st_bfile_payload(&bf, &e, &p) != GP_OK || gp_st_bchunk_info(p, e.len, &in) != GP_OK) {
            z->damaged++;
            continue;
        }
        f->samples += in.n;
        f->chunks++;
        f->bytes += e.len;
        f->head += in.head_bytes;
        f->tbits += in.time_bits;
        f->vbits += in.value_bits;
        f->enc[in.enc < 3 ? in.enc : 0]++;
    }
    munmap(map, len);
    return 0;
}

static int sizes_dir(struct sizes *z, const char *dir, const char *sub, int rollup)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    if (!d)
        return fail(path, GP_EIO, strerror(errno));
    struct dirent *de;
    int rc = 0;
    size_t want = strlen(rollup ? ".rlp" : ".blk");
    while (rc == 0 && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= want || strcmp(de->d_name + l - want, rollup ? ".rlp" : ".blk") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s/%s", dir, sub, de->d_name);
        rc = sizes_file(z, path, rollup);
    }
    closedir(d);
    return rc;
}

/* Bytes under path (files, recursively). */
static uint64_t tree_bytes(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return (uint64_t)st.st_size;
    uint64_t sum = 0;
    DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        sum += tree_bytes(sub);
    }
    if (d)
        closedir(d);
    return sum;
}

static int cmd_sizes(const char *dir)
{
    static struct sizes z;
    struct gp_store *s;
    if (open_store(&s, dir) != 0)
        return 1;
    struct gp_store_selection sel = {0};
    int rc = gp_store_select(s, NULL, 0, INT64_MIN, INT64_MAX, &sel);
    z.nid = sel.n ? sel.series[sel.n - 1].id + 1 : 0;
    z.fam_of = calloc(z.nid ? z.nid : 1, sizeof *z.fam_of);
    if (rc != GP_OK || !z.fam_of)
        return fail("listing the series", rc != GP_OK ? rc : GP_ENOMEM, NULL);
    for (uint32_t id = 0; id < z.nid; id++)
        z.fam_of[id] = SZ_FAMILIES - 1;
    for (size_t i = 0; i < sel.n; i++) {
        struct gp_str name;
        gp_labels_get(sel.series[i].labels, sel.series[i].labels_len, "__name__", &name);
        z.fam_of[sel.series[i].id] = family(&z, name);
    }
    gp_store_selection_free(&sel);
    gp_store_close(s);
    if (sizes_dir(&z, dir, "blocks", 0) != 0 || sizes_dir(&z, dir, "rollups", 1) != 0)
        return 1;
    struct famsize all = {.name = "all"};
    for (size_t i = 0; i < SZ_FAMILIES; i++) {
        struct famsize *f = &z.f[i];
        all.samples += f->samples, all.chunks += f->chunks, all.bytes += f->bytes, all.head += f->head;
        all.tbits += f->tbits, all.vbits += f->vbits, all.rbytes += f->rbytes;
        for (int k = 0; k < 3; k++)
            all.enc[k] += f->enc[k];
    }
    printf("%-40s %10s %8s %8s %8s %8s %16s %8s\n", "family (bytes per sample)", "samples", "chunks",
           "header", "times", "values", "chunks enc 0/1/2", "rollups");
    for (size_t i = 0; i <= SZ_FAMILIES; i++) {
        struct famsize *f = i < SZ_FAMILIES ? &z.f[i] : &all;
        if (!f->samples && !f->rbytes)
            continue;
        double n = f->samples ? (double)f->samples : 1;
        char enc[48];
        snprintf(enc, sizeof enc, "%" PRIu64 "/%" PRIu64 "/%" PRIu64, f->enc[0], f->enc[1], f->enc[2]);
        printf("%-40s %10" PRIu64 " %8.3f %8.3f %8.3f %8.3f %16s %8.3f\n", f->name, f->samples,
               (double)f->bytes / n, (double)f->head / n, (double)f->tbits / 8 / n,
               (double)f->vbits / 8 / n, enc, (double)f->rbytes / n);
    }
    double n = all.samples ? (double)all.samples : 1;
    printf("blocks %.3f: chunks %.3f, time records and file headers %.3f, index %.3f\n",
           (double)z.files[0] / n, (double)z.payload[0] / n,
           (double)(z.files[0] - z.payload[0] - z.index[0]) / n, (double)z.index[0] / n);
    printf("rollups %.3f: payloads %.3f, index %.3f\n", (double)z.files[1] / n,
           (double)z.payload[1] / n, (double)z.index[1] / n);
    static const char *const part[] = {"blocks", "rollups", "chunks", "wal", "meta.db", "series.log",
                                       "head.snap"};
    uint64_t total = tree_bytes(dir);
    printf("directory %.3f:", (double)total / n);
    for (size_t i = 0; i < sizeof part / sizeof part[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, part[i]);
        printf(" %s %.3f%s", part[i], (double)tree_bytes(path) / n, i + 1 < sizeof part / sizeof part[0] ? "," : "\n");
    }
    if (z.damaged)
        printf("damaged chunks: %" PRIu64 "\n", z.damaged);
    free(z.fam_of);
    return fflush(stdout) == 0 && !z.damaged ? 0 : 1;
}

int main(int argc, char **argv)
{
    gp_log_min = GP_LOG_WARN; /* the store's "opened" lines are noise here; its warnings are not */
    if (argc == 3 && strcmp(argv[1], "compact") == 0)
        return cmd_compact(argv[2]);
    if (argc == 5 && strcmp(argv[1], "load") == 0)
        return cmd_load(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "verify") == 0)
        return cmd_verify(argv[2], argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "dump") == 0)
        return cmd_dump(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "expect") == 0)
        return cmd_expect(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "sizes") == 0)
        return cmd_sizes(argv[2]);
    fprintf(stderr, "usage: storetool compact DIR\n"
                    "       storetool load DIR BODIES SHIFT_MS\n"
                    "       storetool verify DIR BODIES ACKLOG\n"
                    "       storetool dump DIR SELECTOR\n"
                    "       storetool expect BODIES ACKLOG\n"
                    "       storetool sizes DIR\n");
    return 2;
}
