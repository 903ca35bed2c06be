/*
 * series.c - see series.h.
 *
 * Layout, chosen for the ingest path (one gp_sindex_find per series per
 * write request) and for memory:
 *  - series are numbered internally by ordinal (0, 1, ... in the order
 *    added); ids[ord] is the public id and recs[ord] its record. Ids grow
 *    with ordinals, so a sorted list of ordinals maps to a sorted list of
 *    ids, and postings hold ordinals: dense, so a bitmap over them is
 *    small (n/8 bytes) whatever gaps the ids have;
 *  - records live in an arena of large blocks that never move (the
 *    pointers gp_sindex_labels hands out stay valid): [u32 len][u32 low
 *    half of the hash][blob], 8-byte aligned;
 *  - blob -> id: open addressing with linear probing, 16-byte slots
 *    {high half of the hash, id, record}, at most 3/4 full. A hit costs
 *    the slot and the record (two cache lines), a miss usually only the
 *    slot, since a 32-bit tag rules out almost every other series;
 *  - label names (few) and (name, value) pairs, each in its own
 *    open-addressing table. A pair owns its postings: a sorted ordinal
 *    list, stored inline up to two entries (most values, like a pod name
 *    or a GPU UUID, belong to one or two series); a name lists its pairs
 *    (insertion order), so a regex visits the values of one name only;
 *  - add checks and reserves everything before it changes anything, so a
 *    failure (out of memory) leaves the index as it was, except for names
 *    and pairs with no series, which every reader skips.
 *
 * Select (Prometheus semantics, where a series lacking a label has ""):
 * each matcher becomes a term whose set is the union of the postings of
 * the values v of its label for which matches(v) differs from
 * matches(""). A term whose matcher rejects "" is positive (intersect
 * with its set); one that accepts "" is negative (subtract its set: the
 * series without the label stay). Equality is one list, literal regex
 * alternations ("0|1|2") and ".*"/".+" are looked up directly, other
 * regexes visit their label's values. The smallest positive term (by its
 * exact or upper-bound size) seeds the candidates; every other term then
 * either merges/gallops through a list, or builds a bitmap of its set, or,
 * when there are few candidates left, checks each candidate's own labels
 * - whichever costs least.
 */
#include "store/series.h"

#include "lib/bits.h"
#include "lib/err.h"
#include "store/labels.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Records and blobs: a blob larger than this is refused as malformed. */
#define SX_MAX_BLOB (UINT32_C(1) << 30)
#define SX_REC_HDR 8
#define SX_BLOCK (1u << 20)

/* Relative costs for choosing how a term is applied (1 = set one bit). */
#define COST_FILTER 8 /* find a label in one series' blob */
#define COST_REGEX 40 /* one regexec on a short value */
#define COST_FAST 4   /* a prefix/suffix/substring test instead */

/* ---- postings lists ------------------------------------------------------ */

struct plist {
    uint32_t n, cap; /* cap 0: the two inline slots are used */
    union {
        uint32_t inl[2];
        uint32_t *heap;
    } u;
};

static inline const uint32_t *pl_data(const struct plist *p)
{
    return p->cap ? p->u.heap : p->u.inl;
}

/* Makes room for one more entry; adds to *bytes what it allocates. */
static int pl_reserve(struct plist *p, size_t *bytes)
{
    uint32_t cap = p->cap ? p->cap : 2;
    if (p->n < cap)
        return GP_OK;
    if (cap > UINT32_MAX / 2)
        return GP_ENOMEM;
    uint32_t ncap = cap < 4 ? 4 : cap * 2;
    uint32_t *v = p->cap ? realloc(p->u.heap, (size_t)ncap * 4) : malloc((size_t)ncap * 4);
    if (!v)
        return GP_ENOMEM;
    if (!p->cap)
        memcpy(v, p->u.inl, sizeof p->u.inl);
    *bytes += (size_t)(ncap - (p->cap ? p->cap : 0)) * 4;
    p->u.heap = v;
    p->cap = ncap;
    return GP_OK;
}

static inline void pl_push(struct plist *p, uint32_t ord)
{
    (p->cap ? p->u.heap : p->u.inl)[p->n++] = ord;
}

static void pl_free(struct plist *p)
{
    if (p->cap)
        free(p->u.heap);
}

/* ---- the index ----------------------------------------------------------- */

struct lname {
    char *s; /* NUL-terminated copy */
    uint32_t len;
    uint32_t nseries; /* series carrying this name */
    uint32_t *vals;   /* pair indices, in the order first seen */
    uint32_t nvals, vcap;
};

struct pair {
    const char *v; /* into the arena */
    uint32_t vlen;
    uint32_t name;
    struct plist post;
};

struct slot {
    uint32_t tag; /* hash >> 32 */
    uint32_t id;
    const uint8_t *rec; /* NULL: empty */
};

struct tslot {
    uint32_t tag;
    uint32_t idx1; /* index + 1; 0: empty */
};

struct block {
    struct block *next;
    size_t cap;
    uint8_t data[];
};

struct gp_sindex {
    uint32_t n, cap; /* series (ordinals) */
    uint32_t *ids;
    const uint8_t **recs;

    struct slot *tab; /* blob -> id */
    size_t tmask;

    struct block *blocks; /* the arena */
    uint8_t *cur;
    size_t left;

    struct lname *names;
    uint32_t nnames, namecap;
    struct tslot *ntab;
    size_t nmask;

    struct pair *pairs;
    uint32_t npairs, paircap;
    struct tslot *ptab;
    size_t pmask;

    size_t bytes;
    uint32_t reserved; /* ids up to this are taken though unnamed (gp_sindex_reserve) */
};

static inline uint32_t rec_len(const uint8_t *rec)
{
    uint32_t l;
    memcpy(&l, rec, 4);
    return l;
}

static inline uint32_t rec_hash_lo(const uint8_t *rec)
{
    uint32_t h;
    memcpy(&h, rec + 4, 4);
    return h;
}

int gp_sindex_new(struct gp_sindex **out)
{
    *out = NULL;
    struct gp_sindex *x = calloc(1, sizeof *x);
    if (!x)
        return GP_ENOMEM;
    x->tmask = 1023;
    x->nmask = 63;
    x->pmask = 1023;
    x->tab = calloc(x->tmask + 1, sizeof *x->tab);
    x->ntab = calloc(x->nmask + 1, sizeof *x->ntab);
    x->ptab = calloc(x->pmask + 1, sizeof *x->ptab);
    if (!x->tab || !x->ntab || !x->ptab) {
        gp_sindex_free(x);
        return GP_ENOMEM;
    }
    x->bytes = sizeof *x + (x->tmask + 1) * sizeof *x->tab + (x->nmask + 1) * sizeof *x->ntab +
               (x->pmask + 1) * sizeof *x->ptab;
    *out = x;
    return GP_OK;
}

void gp_sindex_free(struct gp_sindex *x)
{
    if (!x)
        return;
    for (struct block *b = x->blocks, *nb; b; b = nb) {
        nb = b->next;
        free(b);
    }
    for (uint32_t i = 0; i < x->nnames; i++) {
        free(x->names[i].s);
        free(x->names[i].vals);
    }
    for (uint32_t i = 0; i < x->npairs; i++)
        pl_free(&x->pairs[i].post);
    free(x->names);
    free(x->pairs);
    free(x->ids);
    free(x->recs);
    free(x->tab);
    free(x->ntab);
    free(x->ptab);
    free(x);
}

/* ---- blob -> id ---------------------------------------------------------- */

uint32_t gp_sindex_find(const struct gp_sindex *x, const uint8_t *blob, size_t len, uint64_t hash)
{
    const uint32_t tag = (uint32_t)(hash >> 32);
    const struct slot *tab = x->tab;
    size_t mask = x->tmask, i = (size_t)hash & mask;
    for (;;) {
        const struct slot *s = &tab[i];
        if (!s->rec)
            return 0;
        if (s->tag == tag && rec_len(s->rec) == len &&
            memcmp(s->rec + SX_REC_HDR, blob, len) == 0)
            return s->id;
        i = (i + 1) & mask;
    }
}

static void tab_put(struct slot *tab, size_t mask, uint32_t tag, uint32_t lo, uint32_t id,
                    const uint8_t *rec)
{
    size_t i = lo & mask;
    while (tab[i].rec)
        i = (i + 1) & mask;
    tab[i].tag = tag;
    tab[i].id = id;
    tab[i].rec = rec;
}

/* Doubles the blob table once it would pass 3/4 full with one more. */
static int tab_reserve(struct gp_sindex *x)
{
    size_t size = x->tmask + 1;
    if ((size_t)x->n + 1 <= size / 4 * 3)
        return GP_OK;
    size_t nsize = size * 2;
    struct slot *nt = calloc(nsize, sizeof *nt);
    if (!nt)
        return GP_ENOMEM;
    for (size_t i = 0; i < size; i++)
        if (x->tab[i].rec)
            tab_put(nt, nsize - 1, x->tab[i].tag, rec_hash_lo(x->tab[i].rec), x->tab[i].id,
                    x->tab[i].rec);
    free(x->tab);
    x->tab = nt;
    x->tmask = nsize - 1;
    x->bytes += (nsize - size) * sizeof *nt;
    return GP_OK;
}

/* ---- arena --------------------------------------------------------------- */

/* n bytes, 8-aligned, that never move; NULL when out of memory. */
static uint8_t *arena_alloc(struct gp_sindex *x, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (n > x->left) {
        size_t cap = n > SX_BLOCK ? n : SX_BLOCK;
        struct block *b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = x->blocks;
        b->cap = cap;
        x->blocks = b;
        x->cur = b->data;
        x->left = cap;
        x->bytes += sizeof *b + cap;
    }
    uint8_t *p = x->cur;
    x->cur += n;
    x->left -= n;
    return p;
}

/* ---- names and pairs ----------------------------------------------------- */

static inline uint64_t pair_hash(uint32_t name, const char *v, size_t vlen)
{
    return gp_mix64(gp_labels_hash((const uint8_t *)v, vlen) + (uint64_t)(name + 1) *
                                                                UINT64_C(0x9e3779b97f4a7c15));
}

/* Index of name (len bytes) or -1. */
static int64_t name_find(const struct gp_sindex *x, const char *s, size_t len, uint64_t h)
{
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t i = (size_t)h & x->nmask;; i = (i + 1) & x->nmask) {
        const struct tslot *t = &x->ntab[i];
        if (!t->idx1)
            return -1;
        const struct lname *ln = &x->names[t->idx1 - 1];
        if (t->tag == tag && ln->len == len && memcmp(ln->s, s, len) == 0)
            return t->idx1 - 1;
    }
}

static int64_t pair_find(const struct gp_sindex *x, uint32_t name, const char *v, size_t vlen,
                         uint64_t h)
{
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t i = (size_t)h & x->pmask;; i = (i + 1) & x->pmask) {
        const struct tslot *t = &x->ptab[i];
        if (!t->idx1)
            return -1;
        const struct pair *p = &x->pairs[t->idx1 - 1];
        if (t->tag == tag && p->name == name && p->vlen == vlen && memcmp(p->v, v, vlen) == 0)
            return t->idx1 - 1;
    }
}

static void tslot_put(struct tslot *tab, size_t mask, uint64_t h, uint32_t idx)
{
    size_t i = (size_t)h & mask;
    while (tab[i].idx1)
        i = (i + 1) & mask;
    tab[i].tag = (uint32_t)(h >> 32);
    tab[i].idx1 = idx + 1;
}

/* Grows a name or pair table so that one more entry keeps it under 3/4. */
static int tslot_reserve(struct gp_sindex *x, bool names)
{
    struct tslot **tab = names ? &x->ntab : &x->ptab;
    size_t *mask = names ? &x->nmask : &x->pmask;
    uint32_t count = names ? x->nnames : x->npairs;
    size_t size = *mask + 1;
    if ((size_t)count + 1 <= size / 4 * 3)
        return GP_OK;
    size_t nsize = size * 2;
    struct tslot *nt = calloc(nsize, sizeof *nt);
    if (!nt)
        return GP_ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t h = names ? gp_labels_hash((const uint8_t *)x->names[i].s, x->names[i].len)
                           : pair_hash(x->pairs[i].name, x->pairs[i].v, x->pairs[i].vlen);
        tslot_put(nt, nsize - 1, h, i);
    }
    free(*tab);
    *tab = nt;
    *mask = nsize - 1;
    x->bytes += (nsize - size) * sizeof *nt;
    return GP_OK;
}

/* Grows an array of elem-sized items to hold one more than *cap allows. */
static int grow(void **arr, uint32_t *cap, uint32_t count, size_t elem, size_t *bytes)
{
    if (count < *cap)
        return GP_OK;
    uint32_t ncap = *cap ? *cap * 2 : 16;
    if (ncap <= *cap)
        return GP_ENOMEM;
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p)
        return GP_ENOMEM;
    *bytes += (size_t)(ncap - *cap) * elem;
    *arr = p;
    *cap = ncap;
    return GP_OK;
}

/* The index of name s, created when new (copied). -1 when out of memory. */
static int64_t name_get(struct gp_sindex *x, const char *s, size_t len)
{
    uint64_t h = gp_labels_hash((const uint8_t *)s, len);
    int64_t i = name_find(x, s, len, h);
    if (i >= 0)
        return i;
    if (tslot_reserve(x, true) ||
        grow((void **)&x->names, &x->namecap, x->nnames, sizeof *x->names, &x->bytes))
        return -1;
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    x->bytes += len + 1;
    struct lname *ln = &x->names[x->nnames];
    memset(ln, 0, sizeof *ln);
    ln->s = copy;
    ln->len = (uint32_t)len;
    tslot_put(x->ntab, x->nmask, h, x->nnames);
    return x->nnames++;
}

/* The pair (name, value), created when new (v must point into the arena).
 * Makes room in its postings for one more entry. -1 when out of memory. */
static int64_t pair_get(struct gp_sindex *x, uint32_t name, const char *v, size_t vlen)
{
    uint64_t h = pair_hash(name, v, vlen);
    int64_t i = pair_find(x, name, v, vlen, h);
    if (i < 0) {
        struct lname *ln = &x->names[name];
        if (tslot_reserve(x, false) ||
            grow((void **)&x->pairs, &x->paircap, x->npairs, sizeof *x->pairs, &x->bytes) ||
            grow((void **)&ln->vals, &ln->vcap, ln->nvals, sizeof *ln->vals, &x->bytes))
            return -1;
        struct pair *p = &x->pairs[x->npairs];
        memset(p, 0, sizeof *p);
        p->v = v;
        p->vlen = (uint32_t)vlen;
        p->name = name;
        tslot_put(x->ptab, x->pmask, h, x->npairs);
        ln->vals[ln->nvals++] = x->npairs;
        i = x->npairs++;
    }
    if (pl_reserve(&x->pairs[i].post, &x->bytes))
        return -1;
    return i;
}

/* ---- add ----------------------------------------------------------------- */

/* Room for one more series in ids[] and recs[]. */
static int series_reserve(struct gp_sindex *x)
{
    if (x->n < x->cap)
        return GP_OK;
    uint32_t ncap = x->cap ? x->cap * 2 : 1024;
    if (ncap <= x->cap)
        ncap = UINT32_MAX;
    uint32_t *ids = realloc(x->ids, (size_t)ncap * sizeof *ids);
    if (!ids)
        return GP_ENOMEM;
    x->ids = ids; /* grown alone is harmless: cap says what both hold */
    const uint8_t **recs = realloc(x->recs, (size_t)ncap * sizeof *recs);
    if (!recs)
        return GP_ENOMEM;
    x->recs = recs;
    x->bytes += (size_t)(ncap - x->cap) * (sizeof *ids + sizeof *recs);
    x->cap = ncap;
    return GP_OK;
}

int gp_sindex_add(struct gp_sindex *x, const uint8_t *blob, size_t len, uint64_t hash, uint32_t id,
                  uint32_t *out_id)
{
    if (out_id)
        *out_id = 0;
    if (len > SX_MAX_BLOB || gp_labels_validate(blob, len) != GP_OK)
        return GP_EPARSE;
    if (hash != gp_labels_hash(blob, len))
        return GP_EUSAGE;
    uint32_t max = gp_sindex_max_id(x);
    if (id == 0) {
        if (max == UINT32_MAX)
            return GP_EUSAGE;
        id = max + 1;
    } else if (id <= max) {
        return GP_EUSAGE;
    }
    if (gp_sindex_find(x, blob, len, hash))
        return GP_EUSAGE;
    if (x->n == UINT32_MAX - 1)
        return GP_ENOMEM;

    /* Reserve: series arrays, the blob table, the record. */
    if (series_reserve(x) || tab_reserve(x))
        return GP_ENOMEM;
    uint8_t *rec = arena_alloc(x, SX_REC_HDR + len);
    if (!rec)
        return GP_ENOMEM;
    uint32_t l32 = (uint32_t)len, lo = (uint32_t)hash;
    memcpy(rec, &l32, 4);
    memcpy(rec + 4, &lo, 4);
    memcpy(rec + SX_REC_HDR, blob, len);

    /* Reserve: every name and pair, and a postings slot in each pair. */
    uint32_t stack[64], *pidx = stack;
    size_t nl = 0, room = 64;
    struct gp_labels_iter it;
    struct gp_str n, v;
    gp_labels_iter_init(&it, rec + SX_REC_HDR, len);
    int rc = GP_OK;
    while (gp_labels_next(&it, &n, &v) == 1) {
        if (nl == room) {
            uint32_t *np = malloc(room * 2 * sizeof *np);
            if (!np) {
                rc = GP_ENOMEM;
                break;
            }
            memcpy(np, pidx, nl * sizeof *np);
            if (pidx != stack)
                free(pidx);
            pidx = np;
            room *= 2;
        }
        int64_t ni = name_get(x, n.ptr, n.len);
        int64_t pi = ni < 0 ? -1 : pair_get(x, (uint32_t)ni, v.ptr, v.len);
        if (pi < 0) {
            rc = GP_ENOMEM;
            break;
        }
        pidx[nl++] = (uint32_t)pi;
    }

    /* Commit: nothing below can fail. */
    if (rc == GP_OK) {
        uint32_t ord = x->n++;
        x->ids[ord] = id;
        x->recs[ord] = rec;
        tab_put(x->tab, x->tmask, (uint32_t)(hash >> 32), lo, id, rec);
        for (size_t i = 0; i < nl; i++) {
            struct pair *p = &x->pairs[pidx[i]];
            pl_push(&p->post, ord);
            x->names[p->name].nseries++;
        }
        if (out_id)
            *out_id = id;
    }
    if (pidx != stack)
        free(pidx);
    return rc;
}

/* ---- lookups ------------------------------------------------------------- */

/* Ordinal of id, or -1. */
static int64_t ord_of(const struct gp_sindex *x, uint32_t id)
{
    if (id == 0 || x->n == 0)
        return -1;
    if (id - 1 < x->n && x->ids[id - 1] == id)
        return id - 1; /* no gaps below id */
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->n && x->ids[lo] == id ? (int64_t)lo : -1;
}

const uint8_t *gp_sindex_labels(const struct gp_sindex *x, uint32_t id, size_t *len)
{
    int64_t o = ord_of(x, id);
    if (o < 0) {
        *len = 0;
        return NULL;
    }
    *len = rec_len(x->recs[o]);
    return x->recs[o] + SX_REC_HDR;
}

size_t gp_sindex_count(const struct gp_sindex *x) { return x->n; }

uint32_t gp_sindex_max_id(const struct gp_sindex *x)
{
    uint32_t m = x->n ? x->ids[x->n - 1] : 0;
    return m > x->reserved ? m : x->reserved;
}

void gp_sindex_reserve(struct gp_sindex *x, uint32_t id)
{
    if (id > x->reserved)
        x->reserved = id;
}

size_t gp_sindex_bytes(const struct gp_sindex *x) { return x->bytes; }

/* ---- sorted-list algebra ------------------------------------------------- */

/* First index in a[lo, n) with a[i] >= key, searching from lo outwards. */
static size_t gallop(const uint32_t *a, size_t lo, size_t n, uint32_t key)
{
    size_t step = 1, hi = lo;
    while (hi < n && a[hi] < key) {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    if (hi > n)
        hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* c = c ∩ p (keep) or c − p (!keep), in place; returns the new length. */
static size_t merge_list(uint32_t *c, size_t cn, const uint32_t *p, size_t pn, bool keep)
{
    size_t out = 0, j = 0;
    bool gal = pn > 16 * cn;
    for (size_t i = 0; i < cn; i++) {
        uint32_t v = c[i];
        if (gal)
            j = gallop(p, j, pn, v);
        else
            while (j < pn && p[j] < v)
                j++;
        bool in = j < pn && p[j] == v;
        if (in == keep)
            c[out++] = v;
    }
    return out;
}

/* ---- select -------------------------------------------------------------- */

enum tkind { T_ALL, T_NONE, T_LIST, T_SET, T_HAS, T_VALUES };

struct term {
    const struct gp_matcher *m;
    enum tkind kind;
    bool pos;   /* intersect with the set; else subtract it */
    bool me;    /* m matches "" */
    const struct lname *name;
    uint32_t *set; /* T_SET: pair indices (owned); T_LIST: one, in one */
    size_t nset;
    uint32_t one;
    uint64_t est; /* series in the set (upper bound for T_VALUES) */
    int fast;     /* T_VALUES: FAST_* when the regex is matched without regexec */
    char *lit;    /* its literal (owned) */
    size_t litlen;
};

enum { FAST_NONE, FAST_PREFIX, FAST_SUFFIX, FAST_CONTAINS };

static void term_free(struct term *t)
{
    if (t->set != &t->one)
        free(t->set);
    free(t->lit);
}

static bool is_meta(char c) { return strchr(".[]()*+?{}|^$\\", c) != NULL; }

/*
 * When pattern is a plain alternation of non-empty literals ("0|1|2",
 * "10\.0\.0\.1"), looks up each literal and fills t as a T_SET of the
 * pairs that exist. Returns 1 when it did, 0 when the pattern is not one,
 * GP_ENOMEM.
 */
static int literal_set(const struct gp_sindex *x, uint32_t name, const struct gp_matcher *m,
                       struct term *t)
{
    const char *p = m->value;
    size_t len = m->value_len, alts = 1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == '\\') {
            if (i + 1 >= len || !is_meta(p[i + 1]))
                return 0;
            i++;
        } else if (p[i] == '|') {
            alts++;
        } else if (is_meta(p[i])) {
            return 0;
        }
    }
    char *buf = malloc(len + 1);
    uint32_t *set = malloc(alts * sizeof *set);
    if (!buf || !set) {
        free(buf);
        free(set);
        return GP_ENOMEM;
    }
    size_t nset = 0, bl = 0;
    uint64_t est = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || p[i] == '|') {
            if (bl == 0) { /* an empty alternative matches "": not this path */
                free(buf);
                free(set);
                return 0;
            }
            int64_t pi = pair_find(x, name, buf, bl, pair_hash(name, buf, bl));
            bool dup = false;
            for (size_t k = 0; pi >= 0 && k < nset; k++)
                dup |= set[k] == (uint32_t)pi;
            if (pi >= 0 && !dup) {
                set[nset++] = (uint32_t)pi;
                est += x->pairs[pi].post.n;
            }
            bl = 0;
            continue;
        }
        if (p[i] == '\\')
            i++;
        buf[bl++] = p[i];
    }
    free(buf);
    t->kind = T_SET;
    t->set = set;
    t->nset = nset;
    t->est = est;
    return 1;
}

/*
 * The regexes dashboards write most, "lit.*", ".*lit" and ".*lit.*" (lit
 * without metacharacters; \-escapes allowed), become a prefix, suffix or
 * substring test: a T_VALUES term may visit many values. GP_ENOMEM or
 * GP_OK (t->fast stays FAST_NONE when the pattern is not one).
 */
static int fast_init(struct term *t)
{
    const char *p = t->m->value;
    size_t len = t->m->value_len;
    bool starts = len >= 2 && p[0] == '.' && p[1] == '*';
    bool ends = len >= 2 && p[len - 2] == '.' && p[len - 1] == '*';
    if (len < 4 && starts && ends)
        return GP_OK; /* ".*" itself, or ".*" overlapping */
    if (!starts && !ends)
        return GP_OK;
    size_t from = starts ? 2 : 0, to = ends ? len - 2 : len;
    for (size_t i = from; i < to; i++) {
        if (p[i] == '\\') {
            if (i + 1 >= to || !is_meta(p[i + 1]))
                return GP_OK; /* the backslash would escape the ".*" */
            i++;
        } else if (is_meta(p[i])) {
            return GP_OK;
        }
    }
    char *lit = malloc(to - from + 1);
    if (!lit)
        return GP_ENOMEM;
    size_t n = 0;
    for (size_t i = from; i < to; i++) {
        if (p[i] == '\\')
            i++;
        lit[n++] = p[i];
    }
    t->lit = lit;
    t->litlen = n;
    t->fast = starts && ends ? FAST_CONTAINS : starts ? FAST_SUFFIX : FAST_PREFIX;
    return GP_OK;
}

/* matches(t->m, v) for a value, through the fast form when there is one.
 * RE2's ".*" stops at a newline: such values take the regex. */
static inline bool value_matches(const struct term *t, const char *v, size_t len)
{
    if (t->fast == FAST_NONE || memchr(v, '\n', len))
        return gp_matcher_matches(t->m, v, len);
    bool r;
    if (t->fast == FAST_CONTAINS)
        r = memmem(v, len, t->lit, t->litlen) != NULL;
    else if (len < t->litlen)
        r = false;
    else
        r = memcmp(t->fast == FAST_PREFIX ? v : v + len - t->litlen, t->lit, t->litlen) == 0;
    return t->m->op == GP_MATCH_RE ? r : !r;
}

/* Classifies matcher m into t (see the top of the file). */
static int term_init(const struct gp_sindex *x, const struct gp_matcher *m, struct term *t)
{
    memset(t, 0, sizeof *t);
    t->m = m;
    t->me = gp_matcher_matches(m, "", 0);
    t->pos = !t->me;
    size_t nlen = strlen(m->name);
    int64_t ni = name_find(x, m->name, nlen, gp_labels_hash((const uint8_t *)m->name, nlen));
    if (ni < 0 || x->names[ni].nseries == 0) {
        /* Every series reads "": all match (t->me) or none. */
        t->kind = t->me ? T_ALL : T_NONE;
        return GP_OK;
    }
    t->name = &x->names[ni];
    t->est = t->name->nseries;
    if ((m->op == GP_MATCH_EQ || m->op == GP_MATCH_NE) && m->value_len > 0) {
        int64_t pi = pair_find(x, (uint32_t)ni, m->value, m->value_len,
                               pair_hash((uint32_t)ni, m->value, m->value_len));
        if (pi < 0 || x->pairs[pi].post.n == 0) {
            t->kind = t->pos ? T_NONE : T_ALL;
            return GP_OK;
        }
        t->kind = T_LIST;
        t->one = (uint32_t)pi;
        t->set = &t->one;
        t->nset = 1;
        t->est = x->pairs[pi].post.n;
        return GP_OK;
    }
    if (m->op == GP_MATCH_EQ || m->op == GP_MATCH_NE) {
        t->kind = T_HAS; /* ="" subtracts, !="" keeps, the series with the label */
        return GP_OK;
    }
    if (m->value_len == 2 && memcmp(m->value, ".*", 2) == 0) {
        t->kind = m->op == GP_MATCH_RE ? T_ALL : T_NONE;
        return GP_OK;
    }
    if (m->value_len == 2 && memcmp(m->value, ".+", 2) == 0) {
        t->kind = T_HAS;
        return GP_OK;
    }
    int rc = literal_set(x, (uint32_t)ni, m, t);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        t->kind = T_VALUES;
        return fast_init(t);
    }
    else if (t->nset == 0)
        t->kind = t->pos ? T_NONE : T_ALL;
    return GP_OK;
}

/* Cost of building the term's set as a bitmap. */
static uint64_t bitmap_cost(const struct term *t)
{
    uint64_t c = t->est;
    if (t->kind == T_VALUES)
        c += (uint64_t)t->name->nvals * (t->fast ? COST_FAST : COST_REGEX);
    return c;
}

/* Sets the bits of the term's set in bm (cleared by the caller). */
static void bitmap_fill(const struct gp_sindex *x, const struct term *t, uint64_t *bm)
{
    const struct lname *ln = t->name;
    bool by_name = t->kind == T_HAS || t->kind == T_VALUES;
    size_t n = by_name ? ln->nvals : t->nset;
    for (size_t k = 0; k < n; k++) {
        const struct pair *p = &x->pairs[by_name ? ln->vals[k] : t->set[k]];
        if (t->kind == T_VALUES && value_matches(t, p->v, p->vlen) == t->me)
            continue;
        const uint32_t *d = pl_data(&p->post);
        for (uint32_t j = 0; j < p->post.n; j++)
            bm[d[j] >> 6] |= UINT64_C(1) << (d[j] & 63);
    }
}

/* Keeps the candidates whose own label satisfies the term's matcher. */
static size_t filter_each(const struct gp_sindex *x, const struct term *t, uint32_t *c, size_t cn)
{
    size_t out = 0;
    for (size_t i = 0; i < cn; i++) {
        const uint8_t *rec = x->recs[c[i]];
        struct gp_str v;
        gp_labels_get(rec + SX_REC_HDR, rec_len(rec), t->m->name, &v);
        if (value_matches(t, v.ptr, v.len))
            c[out++] = c[i];
    }
    return out;
}

/* Applies one term to the candidates c[0..cn); returns the new count. */
static size_t apply_term(const struct gp_sindex *x, const struct term *t, uint32_t *c, size_t cn,
                         uint64_t *bm, size_t words)
{
    if (t->kind == T_LIST || (t->kind == T_SET && t->nset == 1)) {
        const struct plist *pl = &x->pairs[t->set[0]].post;
        return merge_list(c, cn, pl_data(pl), pl->n, t->pos);
    }
    uint64_t per = COST_FILTER + (!t->m->has_re ? 0 : t->fast ? COST_FAST : COST_REGEX);
    if ((uint64_t)cn * per <= bitmap_cost(t) + words)
        return filter_each(x, t, c, cn);
    memset(bm, 0, words * sizeof *bm);
    bitmap_fill(x, t, bm);
    size_t out = 0;
    for (size_t i = 0; i < cn; i++) {
        bool in = (bm[c[i] >> 6] >> (c[i] & 63)) & 1;
        if (in == t->pos)
            c[out++] = c[i];
    }
    return out;
}

/* Order: positives first, smallest set first, lists before the rest. */
static int term_cmp(const void *a, const void *b)
{
    const struct term *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos ? -1 : 1;
    uint64_t cx = bitmap_cost(x), cy = bitmap_cost(y);
    if (x->kind == T_LIST)
        cx = x->est;
    if (y->kind == T_LIST)
        cy = y->est;
    return cx < cy ? -1 : cx > cy;
}

int gp_sindex_select(const struct gp_sindex *x, const struct gp_matcher *m, size_t nm, uint32_t **ids,
                     size_t *n)
{
    *ids = NULL;
    *n = 0;
    struct term *t = calloc(nm ? nm : 1, sizeof *t);
    if (!t)
        return GP_ENOMEM;
    if (x->n == 0)
        nm = 0; /* below: no terms, no candidates */
    int rc = GP_OK;
    size_t nt = 0;
    bool none = false;
    for (size_t i = 0; i < nm; i++) {
        if ((rc = term_init(x, &m[i], &t[nt])))
            goto out;
        if (t[nt].kind == T_NONE)
            none = true;
        if (t[nt].kind != T_ALL)
            nt++;
        else
            term_free(&t[nt]);
    }
    if (none)
        goto out;
    qsort(t, nt, sizeof *t, term_cmp);
    for (size_t i = 0; i < nt; i++) /* qsort moved them: re-point the inline ones */
        if (t[i].kind == T_LIST)
            t[i].set = &t[i].one;

    size_t words = ((size_t)x->n + 63) / 64;
    uint64_t *bm = NULL;
    uint32_t *c = malloc(((size_t)x->n + 1) * sizeof *c);
    if (!c) {
        rc = GP_ENOMEM;
        goto out;
    }
    size_t cn = 0, first = 0;
    bool need_bm = false;
    for (size_t i = 0; i < nt; i++)
        need_bm |= !(t[i].kind == T_LIST || (t[i].kind == T_SET && t[i].nset == 1));
    if (need_bm && !(bm = malloc(words * sizeof *bm))) {
        free(c);
        rc = GP_ENOMEM;
        goto out;
    }
    if (nt > 0 && t[0].pos) {
        /* Seed with the smallest positive set. */
        first = 1;
        if (t[0].kind == T_LIST || (t[0].kind == T_SET && t[0].nset == 1)) {
            const struct plist *pl = &x->pairs[t[0].set[0]].post;
            memcpy(c, pl_data(pl), (size_t)pl->n * sizeof *c);
            cn = pl->n;
        } else {
            memset(bm, 0, words * sizeof *bm);
            bitmap_fill(x, &t[0], bm);
            for (size_t w = 0; w < words; w++)
                for (uint64_t b = bm[w]; b; b &= b - 1)
                    c[cn++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
        }
    } else {
        for (uint32_t o = 0; o < x->n; o++)
            c[o] = o;
        cn = x->n;
    }
    for (size_t i = first; i < nt && cn > 0; i++)
        cn = apply_term(x, &t[i], c, cn, bm, words);
    free(bm);
    for (size_t i = 0; i < cn; i++)
        c[i] = x->ids[c[i]];
    uint32_t *shrunk = realloc(c, (cn ? cn : 1) * sizeof *c);
    *ids = shrunk ? shrunk : c;
    *n = cn;
out:
    for (size_t i = 0; i < nt; i++)
        term_free(&t[i]);
    free(t);
    /* Never NULL on success: an empty selection passed on to
     * gp_sindex_label_names must not read as "all series". */
    if (rc == GP_OK && !*ids && !(*ids = malloc(sizeof **ids)))
        rc = GP_ENOMEM;
    return rc;
}

/* ---- label names and values ---------------------------------------------- */

struct sv {
    const char *p;
    size_t len;
};

static int sv_cmp(const void *a, const void *b)
{
    const struct sv *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Sorts v, then calls fn once per distinct string. */
static void emit_sorted(struct sv *v, size_t n, void (*fn)(void *, const char *, size_t), void *arg)
{
    qsort(v, n, sizeof *v, sv_cmp);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || sv_cmp(&v[i - 1], &v[i]) != 0)
            fn(arg, v[i].p, v[i].len);
}

int gp_sindex_label_names(const struct gp_sindex *x, const uint32_t *ids, size_t nids,
                          void (*fn)(void *arg, const char *name, size_t len), void *arg)
{
    struct sv *v = malloc((x->nnames ? x->nnames : 1) * sizeof *v);
    bool *seen = calloc(x->nnames ? x->nnames : 1, 1);
    if (!v || !seen) {
        free(v);
        free(seen);
        return GP_ENOMEM;
    }
    size_t nv = 0, live = 0;
    for (uint32_t i = 0; i < x->nnames; i++)
        live += x->names[i].nseries > 0;
    for (size_t k = 0; ids && k < nids && nv < live; k++) {
        int64_t o = ord_of(x, ids[k]);
        if (o < 0)
            continue;
        const uint8_t *rec = x->recs[o];
        struct gp_labels_iter it;
        struct gp_str nm, val;
        gp_labels_iter_init(&it, rec + SX_REC_HDR, rec_len(rec));
        while (gp_labels_next(&it, &nm, &val) == 1) {
            int64_t ni = name_find(x, nm.ptr, nm.len,
                                   gp_labels_hash((const uint8_t *)nm.ptr, nm.len));
            if (ni >= 0 && !seen[ni]) {
                seen[ni] = true;
                v[nv++] = (struct sv){x->names[ni].s, x->names[ni].len};
            }
        }
    }
    for (uint32_t i = 0; !ids && i < x->nnames; i++)
        if (x->names[i].nseries > 0)
            v[nv++] = (struct sv){x->names[i].s, x->names[i].len};
    emit_sorted(v, nv, fn, arg);
    free(v);
    free(seen);
    return GP_OK;
}

int gp_sindex_label_values(const struct gp_sindex *x, const char *name, const uint32_t *ids,
                           size_t nids, void (*fn)(void *arg, const char *value, size_t len),
                           void *arg)
{
    size_t nlen = strlen(name);
    int64_t ni = name_find(x, name, nlen, gp_labels_hash((const uint8_t *)name, nlen));
    if (ni < 0)
        return GP_OK;
    const struct lname *ln = &x->names[ni];
    /* Per series when the ids are few next to the label's series, else per value. */
    bool per_series = ids && (uint64_t)nids * COST_FILTER < (uint64_t)ln->nseries + ln->nvals;
    size_t cap = per_series ? nids : ln->nvals;
    struct sv *v = malloc((cap ? cap : 1) * sizeof *v);
    if (!v)
        return GP_ENOMEM;
    size_t nv = 0;
    if (per_series) {
        for (size_t k = 0; k < nids; k++) {
            int64_t o = ord_of(x, ids[k]);
            struct gp_str val;
            if (o >= 0 && gp_labels_get(x->recs[o] + SX_REC_HDR, rec_len(x->recs[o]), name,
                                        &val) == 1)
                v[nv++] = (struct sv){val.ptr, val.len};
        }
    } else {
        uint64_t *bm = NULL;
        if (ids) {
            bm = calloc(((size_t)x->n + 63) / 64 + 1, sizeof *bm);
            if (!bm) {
                free(v);
                return GP_ENOMEM;
            }
            for (size_t k = 0; k < nids; k++) {
                int64_t o = ord_of(x, ids[k]);
                if (o >= 0)
                    bm[o >> 6] |= UINT64_C(1) << (o & 63);
            }
        }
        for (uint32_t k = 0; k < ln->nvals; k++) {
            const struct pair *p = &x->pairs[ln->vals[k]];
            const uint32_t *d = pl_data(&p->post);
            bool any = false;
            for (uint32_t j = 0; j < p->post.n && !any; j++)
                any = !bm || ((bm[d[j] >> 6] >> (d[j] & 63)) & 1);
            if (any)
                v[nv++] = (struct sv){p->v, p->vlen};
        }
        free(bm);
    }
    emit_sorted(v, nv, fn, arg);
    free(v);
    return GP_OK;
}
