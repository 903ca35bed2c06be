/*
 * inventory.c - /api/v1/nodes and /api/v1/gpus (query.h): the fleet as
 * the stored GPU series describe it.
 *
 * There is no separate inventory table: every agent already sends its
 * GPUs' identity as labels on each GPU series (dcgm-exporter's labels,
 * docs/metrics.md), so the inventory is derived from the series registry
 * and stays right for any Prometheus-compatible sender too.
 *
 *   1. Select the GPU series: __name__ =~ "DCGM_FI_.*|gpulse_gpu_.*".
 *   2. One row per series keyed by (node, gpu, MIG instance); node is the
 *      Hostname label, or hostname (dcgm-exporter's newer spelling).
 *      Series without a node or gpu label are not in the inventory.
 *   3. Sort the rows; each run of equal keys is one GPU. Its identity
 *      labels (UUID, modelName, DCGM_FI_DRIVER_VERSION, vendor) come
 *      from its newest series carrying them, so a driver upgrade shows
 *      the new version; last_seen is the newest sample of any series.
 *      Memory is the newest value of gpulse_gpu_memory_total_bytes, else
 *      (dcgm-exporter) FB_USED + FB_FREE (+ FB_RESERVED where sent), MiB.
 *   4. Nodes are runs of equal node over the GPUs.
 *
 * Speed (thousands of GPUs, about 100 series each): what step 2 reads of
 * a series' labels never changes for its id (ids are stable for the
 * storage's life, storage.h), so a gp_inventory keeps it: per series its
 * GPU, memory family and identity strings (interned), per GPU its key
 * and its series in id order, and the GPUs' sort. A request visits the
 * selection without a copy of the labels (gp_storage_select_each),
 * parses only the series it has not met, and reads the memory series'
 * newest values; a copy of every label set and a walk of each per
 * request were most of its time at 2,048 GPUs.
 *
 * The same cache serves the dashboard's tiles (/api/v1/fleet/gpus,
 * gp_inventory_each_gpu): each row also keeps its name, job, rank and
 * clock-event reason (in an array beside the rows), and a GPU may lack
 * a host label there. That visit
 * selects only the tiles' metrics in their 5-minute window (a seventh
 * of the GPU series) and groups them by GPU with a counting sort; it
 * marks no row selected, so the inventory's own answers and pruning
 * follow only its own visits. gp_inventory_warm is the same visit as a
 * request's without the answer: the server runs it in the background
 * (at start-up, then every few seconds), so requests meet few new series.
 */
#include "query/query.h"

#include "lib/err.h"
#include "lib/json.h"
#include "store/labels.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How far back from a series' newest sample to look for its newest
 * number (the newest sample may be a stale marker). */
#define VALUE_LOOKBACK_MS GP_QUERY_LOOKBACK_MS

#define NONE UINT32_MAX
/* Rows no request selects any more (series past retention, former label
 * sets) are dropped with the cache once they outnumber the live ones. */
#define STALE_SLACK 4096
/* Series ids below this find their row by index (a store's ids are
 * dense from 1), larger ones by hash. */
#define DENSE_IDS (1u << 24)

/* The memory families a series may be (build_gpu reads their values). */
enum { MEM_NO, MEM_TOTAL, MEM_FB_USED, MEM_FB_FREE, MEM_FB_RESERVED };

/* One GPU series: what the inventory reads of its labels, taken once. */
struct row {
    uint32_t id;
    uint32_t gpu;  /* its GPU, NONE: not about a GPU (no gpu label) */
    uint32_t next; /* the GPU's next series by id, NONE: the last */
    uint32_t uuid, model, driver, vendor, profile; /* interned, 0: absent */
    uint8_t mem, simulated;
    uint64_t gen;    /* the request that selected it last */
    int64_t last_ms; /* its newest sample, as the last visit saw it */
};

/* What the fleet's tiles read of a row's labels besides (interned), kept
 * beside the rows (tiles[r]) so that the inventory's walks of the rows
 * touch no more memory than before the tiles shared them. */
struct tile {
    uint32_t name, job, rank, reason;
};

/* One GPU: (node, gpu, MIG instance) and its series in id order; node
 * 0 (the series have a gpu label but no host label) is a GPU of the
 * fleet's tiles (gp_inventory_each_gpu) only. */
struct igpu {
    uint32_t node, gpu, mig; /* interned */
    uint32_t head, tail;     /* rows */
};

/* Open-addressing table of uint32 values (index + 1; 0: empty slot). */
struct table {
    uint32_t *slot;
    size_t cap; /* a power of two; grown at half full */
};

struct gp_inventory {
    pthread_mutex_t mu;
    const struct gp_storage *st; /* whose series ids the rows are */
    uint64_t gen;
    uint64_t label_reads; /* label sets parsed over the inventory's life */
    int err;       /* GP_ENOMEM when the current visit could not keep a series */
    uint32_t seen; /* rows the current request selected */
    uint32_t budget, skipped; /* label sets the visit may still read; series it left */
    /* interned strings, NUL-separated in arena; 0 is "" */
    char *arena;
    size_t arena_len, arena_cap;
    struct sref {
        uint32_t off, len;
    } *str;
    uint32_t nstr, cap_str;
    struct table strs;
    struct row *rows;
    uint32_t nrows, cap_rows;
    struct tile *tiles; /* per row, cap_tiles of them */
    uint32_t cap_tiles;
    uint32_t *dense, cap_dense; /* row + 1 by id, for ids below DENSE_IDS */
    struct table by_id;         /* the others (the remote backend's own ids) */
    struct igpu *gpus;
    uint32_t ngpus, cap_gpus, nsorted;
    struct table by_key;
    uint32_t *order; /* GPUs by node, gpu, MIG; nsorted of them */
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}
#define FNV0 1469598103934665603ULL

static int grow_array(void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return GP_OK;
    uint32_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, (size_t)nc * size);
    if (!q)
        return GP_ENOMEM;
    *p = q;
    *cap = nc;
    return GP_OK;
}

/* Makes room in t for one more of n entries, rehashing with hash(i). */
static int table_room(struct table *t, size_t n, uint64_t (*hash)(const struct gp_inventory *, uint32_t),
                      const struct gp_inventory *inv)
{
    if (2 * (n + 1) <= t->cap)
        return GP_OK;
    size_t nc = t->cap ? 2 * t->cap : 1024;
    uint32_t *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return GP_ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slot[i]) {
            size_t k = hash(inv, t->slot[i] - 1) & (nc - 1);
            while (ns[k])
                k = (k + 1) & (nc - 1);
            ns[k] = t->slot[i];
        }
    free(t->slot);
    t->slot = ns;
    t->cap = nc;
    return GP_OK;
}

static struct gp_str str_of(const struct gp_inventory *inv, uint32_t i)
{
    return (struct gp_str){inv->arena + inv->str[i].off, inv->str[i].len};
}

static uint64_t str_hash(const struct gp_inventory *inv, uint32_t i)
{
    return fnv(FNV0, inv->arena + inv->str[i].off, inv->str[i].len);
}

/* Where string v is in the table of interned strings, or the empty
 * slot it would take (the table has room). */
static size_t str_slot(const struct gp_inventory *inv, struct gp_str v)
{
    size_t k = fnv(FNV0, v.ptr, v.len) & (inv->strs.cap - 1);
    for (; inv->strs.slot[k]; k = (k + 1) & (inv->strs.cap - 1)) {
        uint32_t i = inv->strs.slot[k] - 1;
        if (inv->str[i].len == v.len && !memcmp(inv->arena + inv->str[i].off, v.ptr, v.len))
            break;
    }
    return k;
}

/* The index of string v, added when new; NONE when out of memory. */
static uint32_t intern(struct gp_inventory *inv, struct gp_str v)
{
    if (!inv->nstr) { /* string 0: "" (absent) */
        if (grow_array((void **)&inv->str, &inv->cap_str, 1, sizeof *inv->str) ||
            !(inv->arena = malloc(inv->arena_cap = 4096)))
            return NONE;
        inv->arena[0] = '\0';
        inv->arena_len = 1;
        inv->str[0] = (struct sref){0, 0};
        inv->nstr = 1;
    }
    if (!v.len)
        return 0;
    if (table_room(&inv->strs, inv->nstr, str_hash, inv))
        return NONE;
    size_t k = str_slot(inv, v);
    if (inv->strs.slot[k])
        return inv->strs.slot[k] - 1;
    if (grow_array((void **)&inv->str, &inv->cap_str, inv->nstr + 1, sizeof *inv->str))
        return NONE;
    if (inv->arena_len + v.len + 1 > inv->arena_cap) {
        size_t nc = inv->arena_cap;
        while (inv->arena_len + v.len + 1 > nc)
            nc *= 2;
        char *na = realloc(inv->arena, nc);
        if (!na)
            return NONE;
        inv->arena = na;
        inv->arena_cap = nc;
    }
    if (inv->arena_len + v.len + 1 > UINT32_MAX)
        return NONE;
    uint32_t i = inv->nstr++;
    memcpy(inv->arena + inv->arena_len, v.ptr, v.len);
    inv->arena[inv->arena_len + v.len] = '\0';
    inv->str[i] = (struct sref){(uint32_t)inv->arena_len, (uint32_t)v.len};
    inv->arena_len += v.len + 1;
    inv->strs.slot[k] = i + 1;
    return i;
}

static uint64_t id_hash_of(uint32_t id) { return (uint64_t)id * 0x9E3779B97F4A7C15ULL >> 17; }

static uint64_t row_hash(const struct gp_inventory *inv, uint32_t r)
{
    return id_hash_of(inv->rows[r].id);
}

static uint64_t key_hash_of(uint32_t node, uint32_t gpu, uint32_t mig)
{
    uint32_t k[3] = {node, gpu, mig};
    return fnv(FNV0, k, sizeof k);
}

static uint64_t gpu_hash(const struct gp_inventory *inv, uint32_t g)
{
    const struct igpu *x = &inv->gpus[g];
    return key_hash_of(x->node, x->gpu, x->mig);
}

static struct row *find_row(struct gp_inventory *inv, uint32_t id)
{
    if (id < DENSE_IDS)
        return id < inv->cap_dense && inv->dense[id] ? &inv->rows[inv->dense[id] - 1] : NULL;
    if (!inv->by_id.cap)
        return NULL;
    for (size_t k = id_hash_of(id) & (inv->by_id.cap - 1); inv->by_id.slot[k];
         k = (k + 1) & (inv->by_id.cap - 1))
        if (inv->rows[inv->by_id.slot[k] - 1].id == id)
            return &inv->rows[inv->by_id.slot[k] - 1];
    return NULL;
}

/* The GPU (node, gpu, mig), added when new; NONE when out of memory. */
static uint32_t gpu_of(struct gp_inventory *inv, uint32_t node, uint32_t gpu, uint32_t mig)
{
    if (table_room(&inv->by_key, inv->ngpus, gpu_hash, inv))
        return NONE;
    size_t k = key_hash_of(node, gpu, mig) & (inv->by_key.cap - 1);
    for (; inv->by_key.slot[k]; k = (k + 1) & (inv->by_key.cap - 1)) {
        const struct igpu *x = &inv->gpus[inv->by_key.slot[k] - 1];
        if (x->node == node && x->gpu == gpu && x->mig == mig)
            return inv->by_key.slot[k] - 1;
    }
    if (grow_array((void **)&inv->gpus, &inv->cap_gpus, inv->ngpus + 1, sizeof *inv->gpus))
        return NONE;
    uint32_t g = inv->ngpus++;
    inv->gpus[g] = (struct igpu){node, gpu, mig, NONE, NONE};
    inv->by_key.slot[k] = g + 1;
    return g;
}

/* Puts row r into its GPU's list, which stays in id order (ids mostly
 * come in ascending: appended). */
static void link_row(struct gp_inventory *inv, uint32_t r)
{
    struct row *x = &inv->rows[r];
    struct igpu *g = &inv->gpus[x->gpu];
    if (g->head == NONE) {
        g->head = g->tail = r;
        return;
    }
    if (inv->rows[g->tail].id < x->id) {
        inv->rows[g->tail].next = r;
        g->tail = r;
        return;
    }
    uint32_t *at = &g->head;
    while (inv->rows[*at].id < x->id)
        at = &inv->rows[*at].next;
    x->next = *at;
    *at = r;
}

static int str_is(struct gp_str v, const char *s)
{
    return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

/* A new row for series se: its labels read in one walk (a lookup per
 * name cost most of the time at a thousand GPUs). GP_OK or GP_ENOMEM. */
static int add_row(struct gp_inventory *inv, const struct gp_store_series *se, struct row **out)
{
    struct gp_str node = {NULL, 0}, host = {NULL, 0}, gpu = {NULL, 0}, mig = {NULL, 0};
    struct gp_str name = {"", 0}, uuid = {"", 0}, model = {"", 0}, driver = {"", 0},
                  vendor = {"", 0}, profile = {"", 0}, simulated = {"", 0}, job = {"", 0},
                  rank = {"", 0}, reason = {"", 0}, ln, lv;
#define W(n, d) {n, sizeof n - 1, d}
    const struct {
        const char *name;
        size_t len;
        struct gp_str *dst;
    } want[] = {W("Hostname", &node),    W("hostname", &host),     W("gpu", &gpu),
                W("GPU_I_ID", &mig),     W("__name__", &name),     W("UUID", &uuid),
                W("modelName", &model),  W("DCGM_FI_DRIVER_VERSION", &driver),
                W("vendor", &vendor),    W("GPU_I_PROFILE", &profile),
                W("simulated", &simulated), W("job", &job), W("rank", &rank),
                W("reason", &reason)};
#undef W
    struct gp_labels_iter it;
    gp_labels_iter_init(&it, se->labels, se->labels_len);
    while (gp_labels_next(&it, &ln, &lv) == 1)
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
            if (ln.len == want[k].len && !memcmp(ln.ptr, want[k].name, ln.len)) {
                *want[k].dst = lv;
                break;
            }
    if (!node.ptr)
        node = host;
    uint32_t cap = inv->cap_dense;
    if (se->id < DENSE_IDS ? grow_array((void **)&inv->dense, &inv->cap_dense, se->id + 1, sizeof *inv->dense)
                           : table_room(&inv->by_id, inv->nrows, row_hash, inv))
        return GP_ENOMEM;
    if (inv->cap_dense > cap)
        memset(inv->dense + cap, 0, (inv->cap_dense - cap) * sizeof *inv->dense);
    if (grow_array((void **)&inv->rows, &inv->cap_rows, inv->nrows + 1, sizeof *inv->rows) ||
        grow_array((void **)&inv->tiles, &inv->cap_tiles, inv->nrows + 1, sizeof *inv->tiles))
        return GP_ENOMEM;
    struct row x = {.id = se->id, .gpu = NONE, .next = NONE};
    struct tile tl = {0, 0, 0, 0};
    if (gpu.ptr) { /* else not about a GPU: kept, to be skipped */
        uint32_t s[12] = {intern(inv, node),    intern(inv, gpu),    intern(inv, mig),
                          intern(inv, uuid),    intern(inv, model),  intern(inv, driver),
                          intern(inv, vendor),
                          intern(inv, profile), intern(inv, name),   intern(inv, job),
                          intern(inv, rank),    intern(inv, reason)};
        for (size_t k = 0; k < 12; k++)
            if (s[k] == NONE)
                return GP_ENOMEM;
        if ((x.gpu = gpu_of(inv, s[0], s[1], s[2])) == NONE)
            return GP_ENOMEM;
        x.uuid = s[3], x.model = s[4], x.driver = s[5], x.vendor = s[6], x.profile = s[7];
        tl = (struct tile){s[8], s[9], s[10], s[11]};
        x.simulated = str_is(simulated, "true");
        x.mem = str_is(name, "gpulse_gpu_memory_total_bytes") ? MEM_TOTAL
                : str_is(name, "DCGM_FI_DEV_FB_USED")         ? MEM_FB_USED
                : str_is(name, "DCGM_FI_DEV_FB_FREE")         ? MEM_FB_FREE
                : str_is(name, "DCGM_FI_DEV_FB_RESERVED")     ? MEM_FB_RESERVED
                                                              : MEM_NO;
    }
    uint32_t r = inv->nrows++;
    inv->rows[r] = x;
    inv->tiles[r] = tl;
    inv->label_reads++;
    if (x.id < DENSE_IDS) {
        inv->dense[x.id] = r + 1;
    } else {
        size_t k = id_hash_of(x.id) & (inv->by_id.cap - 1);
        while (inv->by_id.slot[k])
            k = (k + 1) & (inv->by_id.cap - 1);
        inv->by_id.slot[k] = r + 1;
    }
    if (x.gpu != NONE)
        link_row(inv, r);
    *out = &inv->rows[r];
    return GP_OK;
}

/* gp_storage_select_each's visitor: marks the series selected now, and
 * asks for the labels of one met for the first time. */
static int visit(void *arg, const struct gp_store_series *se)
{
    struct gp_inventory *inv = arg;
    struct row *r = find_row(inv, se->id);
    if (!r && !inv->budget) {
        inv->skipped++;
        return 0;
    }
    if (!r && !se->labels)
        return !inv->err;
    if (!r && !inv->err && !(inv->err = add_row(inv, se, &r)))
        inv->budget--;
    if (r) {
        inv->seen += r->gen != inv->gen;
        r->gen = inv->gen;
        r->last_ms = se->last_ms;
    }
    return 0;
}

/* Forgets every series (after an error, another storage, or when most
 * rows are stale); the next request reads all labels again. */
static void reset(struct gp_inventory *inv)
{
    free(inv->arena);
    free(inv->str);
    free(inv->strs.slot);
    free(inv->rows);
    free(inv->tiles);
    free(inv->dense);
    free(inv->by_id.slot);
    free(inv->gpus);
    free(inv->by_key.slot);
    free(inv->order);
    pthread_mutex_t mu = inv->mu;
    uint64_t gen = inv->gen, reads = inv->label_reads;
    memset(inv, 0, sizeof *inv);
    inv->mu = mu;
    inv->gen = gen;
    inv->label_reads = reads;
}

int gp_inventory_new(struct gp_inventory **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return GP_ENOMEM;
    pthread_mutex_init(&(*out)->mu, NULL);
    return GP_OK;
}

void gp_inventory_free(struct gp_inventory *inv)
{
    if (!inv)
        return;
    reset(inv);
    pthread_mutex_destroy(&inv->mu);
    free(inv);
}

static int str_cmp(struct gp_str a, struct gp_str b)
{
    int c = memcmp(a.ptr, b.ptr, a.len < b.len ? a.len : b.len);
    if (c)
        return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int all_digits(struct gp_str s)
{
    if (!s.len)
        return 0;
    for (size_t i = 0; i < s.len; i++)
        if (s.ptr[i] < '0' || s.ptr[i] > '9')
            return 0;
    return 1;
}

/* GPU indexes in numeric order ("2" before "10"), other text bytewise. */
static int index_cmp(struct gp_str a, struct gp_str b)
{
    if (all_digits(a) && all_digits(b)) {
        while (a.len > 1 && a.ptr[0] == '0')
            a.ptr++, a.len--;
        while (b.len > 1 && b.ptr[0] == '0')
            b.ptr++, b.len--;
        if (a.len != b.len)
            return a.len < b.len ? -1 : 1;
    }
    return str_cmp(a, b);
}

struct key {
    struct gp_str node, gpu, mig;
    uint32_t g;
};

static int key_cmp(const void *pa, const void *pb)
{
    const struct key *a = pa, *b = pb;
    int c = str_cmp(a->node, b->node);
    if (!c)
        c = index_cmp(a->gpu, b->gpu);
    if (!c)
        c = index_cmp(a->mig, b->mig);
    if (!c) /* "01" and "1": one order every time */
        c = str_cmp(a->gpu, b->gpu);
    if (!c)
        c = str_cmp(a->mig, b->mig);
    return c;
}

/* Sorts the GPUs when some are new since the last sort. */
static int sort_gpus(struct gp_inventory *inv)
{
    if (inv->nsorted == inv->ngpus)
        return GP_OK;
    struct key *k = malloc((inv->ngpus ? inv->ngpus : 1) * sizeof *k);
    uint32_t *order = realloc(inv->order, (inv->ngpus ? inv->ngpus : 1) * sizeof *order);
    if (order)
        inv->order = order;
    if (!k || !order) {
        free(k);
        return GP_ENOMEM;
    }
    for (uint32_t g = 0; g < inv->ngpus; g++)
        k[g] = (struct key){str_of(inv, inv->gpus[g].node), str_of(inv, inv->gpus[g].gpu),
                            str_of(inv, inv->gpus[g].mig), g};
    qsort(k, inv->ngpus, sizeof *k, key_cmp);
    for (uint32_t g = 0; g < inv->ngpus; g++)
        order[g] = k[g].g;
    free(k);
    inv->nsorted = inv->ngpus;
    return GP_OK;
}

/* One GPU: identity strings (views into the inventory) and readings. */
struct gpu {
    struct gp_str node, gpu, mig, profile, uuid, model, driver, vendor;
    int64_t uuid_t, model_t, driver_t, vendor_t, profile_t; /* last_ms of their source series */
    int64_t last_seen;
    int simulated;
    double memory; /* bytes; NaN unknown */
};

/* Takes string v of a series newer than *dst's source into *dst. */
static void take_label(const struct gp_inventory *inv, const struct row *r, uint32_t v,
                       struct gp_str *dst, int64_t *dst_t)
{
    if (v && r->last_ms >= *dst_t) {
        *dst = str_of(inv, v);
        *dst_t = r->last_ms;
    }
}

/* The newest number of series r; NaN when none (the inventory is best
 * effort per reading). */
static double newest(struct gp_storage *st, const struct row *r, struct gp_samples *smp)
{
    return gp_storage_newest_value(st, r->id, r->last_ms, VALUE_LOOKBACK_MS, smp);
}

/* Fills g from the series of GPU x the current request selected; 0 when
 * it selected none. */
static int build_gpu(struct gp_storage *st, const struct gp_inventory *inv, const struct igpu *x,
                     struct gpu *g, struct gp_samples *smp)
{
    memset(g, 0, sizeof *g);
    g->uuid_t = g->model_t = g->driver_t = g->vendor_t = g->profile_t = INT64_MIN;
    g->last_seen = INT64_MIN;
    g->memory = NAN;
    const struct row *mem[5] = {NULL, NULL, NULL, NULL, NULL};
    int any = 0;
    for (uint32_t i = x->head; i != NONE; i = inv->rows[i].next) {
        const struct row *r = &inv->rows[i];
        if (r->gen != inv->gen)
            continue;
        any = 1;
        take_label(inv, r, r->uuid, &g->uuid, &g->uuid_t);
        take_label(inv, r, r->model, &g->model, &g->model_t);
        take_label(inv, r, r->driver, &g->driver, &g->driver_t);
        take_label(inv, r, r->vendor, &g->vendor, &g->vendor_t);
        take_label(inv, r, r->profile, &g->profile, &g->profile_t);
        if (r->last_ms > g->last_seen)
            g->last_seen = r->last_ms;
        g->simulated |= r->simulated;
        if (r->mem && (!mem[r->mem] || r->last_ms > mem[r->mem]->last_ms))
            mem[r->mem] = r;
    }
    if (!any)
        return 0;
    g->node = str_of(inv, x->node);
    g->gpu = str_of(inv, x->gpu);
    g->mig = str_of(inv, x->mig);
    if (mem[MEM_TOTAL])
        g->memory = newest(st, mem[MEM_TOTAL], smp);
    if (isnan(g->memory) && mem[MEM_FB_USED] && mem[MEM_FB_FREE]) {
        double used = newest(st, mem[MEM_FB_USED], smp), avail = newest(st, mem[MEM_FB_FREE], smp);
        double reserved = mem[MEM_FB_RESERVED] ? newest(st, mem[MEM_FB_RESERVED], smp) : 0;
        if (isnan(reserved))
            reserved = 0;
        g->memory = (used + avail + reserved) * 1048576.0;
    }
    /* A memory size is a byte count: anything else is not reported. */
    if (!(g->memory >= 0 && g->memory < 9.2e18))
        g->memory = NAN;
    return 1;
}

/* Makes inv the cache of st's series (forgetting another storage's). */
static void attach(struct gp_inventory *inv, struct gp_storage *st)
{
    if (inv->st != st)
        reset(inv);
    inv->st = st;
    inv->err = GP_OK;
}

/* Brings inv up to date with the GPU series of st now, reading at most
 * budget label sets (inv->skipped counts the series left for later). */
static int refresh_some(struct gp_inventory *inv, struct gp_storage *st, uint32_t budget, char *err,
                        size_t errlen)
{
    attach(inv, st);
    inv->gen++;
    inv->seen = 0;
    inv->budget = budget;
    inv->skipped = 0;
    struct gp_matcher m;
    int rc = gp_matcher_init(&m, GP_MATCH_RE, "__name__", "DCGM_FI_.*|gpulse_gpu_.*", err, errlen);
    if (rc)
        return rc;
    rc = gp_storage_select_each(st, &m, 1, INT64_MIN, INT64_MAX, visit, inv);
    gp_matcher_free(&m);
    if (rc) {
        reset(inv); /* a visit may have stopped half way */
        return gp_seterr(err, errlen, rc, "selecting GPU series: %s", gp_strerror(rc));
    }
    if (inv->err || sort_gpus(inv)) {
        reset(inv);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    return GP_OK;
}

static int refresh(struct gp_inventory *inv, struct gp_storage *st, char *err, size_t errlen)
{
    return refresh_some(inv, st, UINT32_MAX, err, errlen);
}

/* Drops the cache once rows no request selects outnumber the live ones. */
static void prune(struct gp_inventory *inv)
{
    if (inv->nrows - inv->seen > inv->seen + STALE_SLACK)
        reset(inv);
}

static void put_str_or_null(struct gp_buf *out, struct gp_str v)
{
    if (v.len)
        gp_json_str(out, v.ptr, v.len);
    else
        gp_buf_puts(out, "null");
}

static void put_gpu(struct gp_buf *out, const struct gpu *g)
{
    gp_buf_puts(out, "{\"node\":");
    gp_json_str(out, g->node.ptr, g->node.len);
    gp_buf_puts(out, ",\"gpu\":");
    gp_json_str(out, g->gpu.ptr, g->gpu.len);
    if (g->mig.len) {
        gp_buf_puts(out, ",\"gpu_instance\":");
        gp_json_str(out, g->mig.ptr, g->mig.len);
        gp_buf_puts(out, ",\"profile\":");
        put_str_or_null(out, g->profile);
    }
    gp_buf_puts(out, ",\"uuid\":");
    put_str_or_null(out, g->uuid);
    gp_buf_puts(out, ",\"model\":");
    put_str_or_null(out, g->model);
    gp_buf_puts(out, ",\"memory_bytes\":");
    if (isnan(g->memory))
        gp_buf_puts(out, "null");
    else
        gp_buf_put_u64(out, (unsigned long long)llround(g->memory));
    gp_buf_puts(out, ",\"driver\":");
    put_str_or_null(out, g->driver);
    gp_buf_puts(out, ",\"vendor\":");
    put_str_or_null(out, g->vendor);
    gp_buf_puts(out, ",\"last_seen\":");
    gp_json_time(out, g->last_seen);
    gp_buf_puts(out, g->simulated ? ",\"simulated\":true}" : ",\"simulated\":false}");
}

static int view_cmp(const void *a, const void *b)
{
    return str_cmp(*(const struct gp_str *)a, *(const struct gp_str *)b);
}

/* Writes one node from its GPUs [a, b); models is scratch for b - a. */
static void put_node(struct gp_buf *out, const struct gpu *a, const struct gpu *b,
                     struct gp_str *models)
{
    size_t ngpus = 0, nm = 0;
    int64_t last = INT64_MIN;
    int simulated = 0;
    for (const struct gpu *g = a; g < b; g++) {
        /* MIG instances of one GPU are adjacent: count the GPU once. */
        if (g == a || str_cmp(g->gpu, g[-1].gpu))
            ngpus++;
        if (g->model.len)
            models[nm++] = g->model;
        if (g->last_seen > last)
            last = g->last_seen;
        simulated |= g->simulated;
    }
    qsort(models, nm, sizeof *models, view_cmp);
    gp_buf_puts(out, "{\"node\":");
    gp_json_str(out, a->node.ptr, a->node.len);
    gp_buf_puts(out, ",\"gpus\":");
    gp_buf_put_u64(out, ngpus);
    gp_buf_puts(out, ",\"models\":[");
    for (size_t i = 0; i < nm; i++) {
        if (i && !str_cmp(models[i], models[i - 1]))
            continue;
        if (i)
            gp_buf_putc(out, ',');
        gp_json_str(out, models[i].ptr, models[i].len);
    }
    gp_buf_puts(out, "],\"last_seen\":");
    gp_json_time(out, last);
    gp_buf_puts(out, simulated ? ",\"simulated\":true}" : ",\"simulated\":false}");
}

/* Both answers: the GPUs built once, then written as GPUs or as nodes. */
static int inventory(struct gp_inventory *inv, struct gp_storage *st, int nodes, struct gp_buf *out,
                     char *err, size_t errlen)
{
    size_t mark_len = out->len;
    int mark_err = out->err;
    struct gp_samples smp = {0};
    struct gpu *gpus = NULL;
    struct gp_str *models = NULL;
    size_t ngpus = 0;
    int rc = refresh(inv, st, err, errlen);
    if (rc)
        goto done;
    gpus = malloc((inv->ngpus ? inv->ngpus : 1) * sizeof *gpus);
    models = malloc((inv->ngpus ? inv->ngpus : 1) * sizeof *models);
    if (!gpus || !models) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < inv->ngpus; i++)
        if (inv->gpus[inv->order[i]].node) /* a GPU without a host is not in the inventory */
            ngpus += (size_t)build_gpu(st, inv, &inv->gpus[inv->order[i]], &gpus[ngpus], &smp);
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    for (size_t i = 0; i < ngpus;) {
        size_t j = i + 1;
        if (nodes) {
            while (j < ngpus && !str_cmp(gpus[j].node, gpus[i].node))
                j++;
            if (i)
                gp_buf_putc(out, ',');
            put_node(out, &gpus[i], &gpus[j], models);
        } else {
            if (i)
                gp_buf_putc(out, ',');
            put_gpu(out, &gpus[i]);
        }
        i = j;
    }
    gp_buf_puts(out, "]}");
    if (out->err)
        rc = gp_seterr(err, errlen, out->err, "writing the inventory: %s", gp_strerror(out->err));
    prune(inv);
done:
    if (rc) {
        out->len = mark_len;
        out->err = mark_err;
        if (out->data)
            out->data[out->len] = '\0';
    }
    free(models);
    free(gpus);
    gp_samples_free(&smp);
    return rc;
}

typedef int (*use_fn)(struct gp_inventory *inv, struct gp_storage *st, void *ctx, char *err,
                      size_t errlen);

/* fn(inv) under inv's lock; without one, with a cache for this request
 * alone. */
static int with_inventory(struct gp_inventory *inv, struct gp_storage *st, use_fn fn, void *ctx,
                          char *err, size_t errlen)
{
    if (!inv) {
        struct gp_inventory *tmp;
        if (gp_inventory_new(&tmp))
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        int rc = fn(tmp, st, ctx, err, errlen);
        gp_inventory_free(tmp);
        return rc;
    }
    pthread_mutex_lock(&inv->mu);
    int rc = fn(inv, st, ctx, err, errlen);
    pthread_mutex_unlock(&inv->mu);
    return rc;
}

struct doc {
    int nodes;
    struct gp_buf *out;
};

static int use_doc(struct gp_inventory *inv, struct gp_storage *st, void *ctx, char *err, size_t errlen)
{
    struct doc *d = ctx;
    return inventory(inv, st, d->nodes, d->out, err, errlen);
}

static int answer(struct gp_inventory *inv, struct gp_storage *st, int nodes, struct gp_buf *out,
                  char *err, size_t errlen)
{
    struct doc d = {nodes, out};
    return with_inventory(inv, st, use_doc, &d, err, errlen);
}

int gp_query_nodes(struct gp_inventory *inv, struct gp_storage *s, struct gp_buf *out, char *err,
                   size_t errlen)
{
    return answer(inv, s, 1, out, err, errlen);
}

int gp_query_gpus(struct gp_inventory *inv, struct gp_storage *s, struct gp_buf *out, char *err,
                  size_t errlen)
{
    return answer(inv, s, 0, out, err, errlen);
}

static int use_warm(struct gp_inventory *inv, struct gp_storage *st, void *ctx, char *err, size_t errlen)
{
    uint32_t *slice_left = ctx; /* in: the slice; out: the series left */
    int rc = refresh_some(inv, st, *slice_left, err, errlen);
    *slice_left = inv->skipped;
    if (!rc && !inv->skipped)
        prune(inv);
    return rc;
}

void gp_inventory_stats(struct gp_inventory *inv, struct gp_inventory_stats *out)
{
    pthread_mutex_lock(&inv->mu);
    out->label_reads = inv->label_reads;
    out->series = inv->nrows;
    out->gpus = inv->ngpus;
    pthread_mutex_unlock(&inv->mu);
}

int gp_inventory_warm(struct gp_inventory *inv, struct gp_storage *st, uint32_t slice, char *err,
                      size_t errlen)
{
    if (!inv || !slice)
        return gp_seterr(err, errlen, GP_EUSAGE, "warming the inventory: no inventory or slice");
    uint32_t left;
    int rc;
    /* slices, the locks let go between them: a cold start's 400,000
     * label sets do not hold ingest (the store's lock) or requests for
     * the quarter second they take in one go */
    do {
        left = slice;
        rc = with_inventory(inv, st, use_warm, &left, err, errlen);
    } while (!rc && left);
    return rc;
}

/* A visit for the fleet's tiles: the rows of the series selected, in
 * the selection's order. Rows it adds wait for the next refresh to be
 * marked selected; it marks none, so the inventory's answers and
 * pruning see only their own visits. */
struct tiles {
    struct gp_inventory *inv;
    uint32_t *sel;
    uint32_t n, cap;
};

static int visit_tiles(void *arg, const struct gp_store_series *se)
{
    struct tiles *t = arg;
    struct gp_inventory *inv = t->inv;
    struct row *r = find_row(inv, se->id);
    if (!r && !se->labels)
        return !inv->err;
    if (!r && !inv->err)
        inv->err = add_row(inv, se, &r);
    if (!r || r->gpu == NONE || inv->err)
        return 0;
    if (grow_array((void **)&t->sel, &t->cap, t->n + 1, sizeof *t->sel)) {
        inv->err = GP_ENOMEM;
        return 0;
    }
    r->last_ms = se->last_ms;
    t->sel[t->n++] = (uint32_t)(r - inv->rows);
    return 0;
}

/* Calls fn for each GPU of the rows t selected (kind_of: each name's
 * kind by string index), then fn(arg, NULL). */
static int each_gpu(const struct gp_inventory *inv, const struct tiles *t, const int8_t *kind_of,
                    gp_inventory_gpu_fn fn, void *arg)
{
    /* the rows by GPU, each GPU's in selection order (a counting sort) */
    uint32_t *at = calloc((size_t)inv->ngpus + 1, sizeof *at);
    uint32_t *by = malloc((t->n ? t->n : 1) * sizeof *by);
    struct gp_inv_series *ser = NULL;
    uint32_t cap = 0;
    int rc = at && by ? GP_OK : GP_ENOMEM;
    for (uint32_t i = 0; !rc && i < t->n; i++)
        at[inv->rows[t->sel[i]].gpu + 1]++;
    for (uint32_t g = 0; !rc && g < inv->ngpus; g++)
        at[g + 1] += at[g];
    for (uint32_t i = 0; !rc && i < t->n; i++)
        by[at[inv->rows[t->sel[i]].gpu]++] = t->sel[i];
    /* at[g] is now where GPU g + 1 starts */
    for (uint32_t g = 0, from = 0; !rc && g < inv->ngpus; from = at[g++]) {
        uint32_t n = 0;
        if (at[g] > from && grow_array((void **)&ser, &cap, at[g] - from, sizeof *ser)) {
            rc = GP_ENOMEM;
            break;
        }
        for (uint32_t i = from; i < at[g]; i++) {
            const struct row *r = &inv->rows[by[i]];
            const struct tile *tl = &inv->tiles[by[i]];
            struct gp_inv_series y = {r->id,
                                      kind_of[tl->name],
                                      r->last_ms,
                                      str_of(inv, tl->job),
                                      str_of(inv, r->model),
                                      str_of(inv, tl->rank),
                                      str_of(inv, r->uuid),
                                      str_of(inv, tl->reason)};
            if (y.kind < 0)
                continue;
            /* by kind, newest first; equal ones in selection order */
            uint32_t k = n++;
            for (; k && (ser[k - 1].kind > y.kind ||
                         (ser[k - 1].kind == y.kind && ser[k - 1].last_ms < y.last_ms));
                 k--)
                ser[k] = ser[k - 1];
            ser[k] = y;
        }
        if (n) {
            const struct igpu *x = &inv->gpus[g];
            struct gp_inv_gpu v = {str_of(inv, x->node), str_of(inv, x->gpu), str_of(inv, x->mig),
                                   ser, n};
            rc = fn(arg, &v);
        }
    }
    if (!rc)
        rc = fn(arg, NULL);
    free(ser);
    free(by);
    free(at);
    return rc;
}

struct visit_gpus {
    const char *const *names;
    size_t nnames;
    int64_t t0, t1;
    gp_inventory_gpu_fn fn;
    void *arg;
};

static int use_gpus(struct gp_inventory *inv, struct gp_storage *st, void *ctx, char *err, size_t errlen)
{
    const struct visit_gpus *v = ctx;
    if (v->nnames > INT8_MAX)
        return gp_seterr(err, errlen, GP_EUSAGE, "more than 127 metric names");
    struct gp_matcher m;
    int rc = gp_query_names_matcher(&m, v->names, v->nnames, err, errlen);
    if (rc)
        return rc;
    attach(inv, st);
    /* the names' strings first: a kind per string index after the visit */
    uint32_t *name_of = malloc((v->nnames ? v->nnames : 1) * sizeof *name_of);
    for (size_t k = 0; name_of && k < v->nnames; k++)
        if ((name_of[k] = intern(inv, (struct gp_str){v->names[k], strlen(v->names[k])})) == NONE)
            inv->err = GP_ENOMEM;
    struct tiles t = {inv, NULL, 0, 0};
    int8_t *kind_of = NULL;
    if (!name_of)
        inv->err = GP_ENOMEM;
    if (!inv->err)
        rc = gp_storage_select_each(st, &m, 1, v->t0, v->t1, visit_tiles, &t);
    gp_matcher_free(&m);
    if (rc) {
        reset(inv); /* a visit may have stopped half way */
        rc = gp_seterr(err, errlen, rc, "selecting GPU series: %s", gp_strerror(rc));
    } else if (inv->err || !(kind_of = malloc(inv->nstr))) {
        reset(inv);
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    } else {
        memset(kind_of, -1, inv->nstr);
        for (size_t k = v->nnames; k-- > 0;) /* the first of equal names wins */
            kind_of[name_of[k]] = (int8_t)k;
        rc = each_gpu(inv, &t, kind_of, v->fn, v->arg);
        if (rc == GP_ENOMEM)
            rc = gp_seterr(err, errlen, rc, "out of memory");
    }
    free(kind_of);
    free(name_of);
    free(t.sel);
    return rc;
}

int gp_inventory_each_gpu(struct gp_inventory *inv, struct gp_storage *st, const char *const *names,
                          size_t nnames, int64_t t0, int64_t t1, gp_inventory_gpu_fn fn, void *arg,
                          char *err, size_t errlen)
{
    struct visit_gpus v = {names, nnames, t0, t1, fn, arg};
    return with_inventory(inv, st, use_gpus, &v, err, errlen);
}

int gp_query_names_matcher(struct gp_matcher *m, const char *const *names, size_t n, char *err,
                           size_t errlen)
{
    struct gp_buf re;
    gp_buf_init(&re, 0);
    for (size_t i = 0; i < n; i++)
        gp_buf_printf(&re, "%s%s", i ? "|" : "", names[i]);
    int rc = re.err ? gp_seterr(err, errlen, GP_ENOMEM, "out of memory")
                    : gp_matcher_init(m, GP_MATCH_RE, "__name__", re.data, err, errlen);
    gp_buf_free(&re);
    return rc;
}
