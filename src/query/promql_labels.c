/*
 * promql_labels.c - label sets as the evaluator handles them: decoded
 * views to edit (label_replace, group_left's included labels), the
 * canonical blob back, Prometheus's ordering and printing of label sets,
 * the keys that matching and grouping compare, and a byte-string map
 * that gives every distinct key an index once, so per-step work never
 * hashes labels again.
 */
#include "query/promql_int.h"

#include "lib/err.h"
#include "store/labels.h"

#include <stdlib.h>
#include <string.h>

void gp_pq_lset_free(struct gp_pq_lset *ls)
{
    free(ls->l);
    memset(ls, 0, sizeof *ls);
}

static int lset_grow(struct gp_pq_lset *ls, size_t need)
{
    if (need <= ls->cap)
        return GP_OK;
    size_t cap = ls->cap ? ls->cap * 2 : 16;
    while (cap < need)
        cap *= 2;
    struct gp_label *l = realloc(ls->l, cap * sizeof *l);
    if (!l)
        return GP_ENOMEM;
    ls->l = l;
    ls->cap = cap;
    return GP_OK;
}

int gp_pq_lset_decode(struct gp_pq_lset *ls, const uint8_t *blob, size_t len)
{
    ls->n = 0;
    if (!blob || !len)
        return GP_OK;
    struct gp_labels_iter it;
    gp_labels_iter_init(&it, blob, len);
    struct gp_str name, value;
    while (gp_labels_next(&it, &name, &value) == 1) {
        if (lset_grow(ls, ls->n + 1) != GP_OK)
            return GP_ENOMEM;
        ls->l[ls->n++] = (struct gp_label){name, value};
    }
    return GP_OK;
}

static int str_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

int gp_pq_lset_set(struct gp_pq_lset *ls, const char *name, size_t nlen, const char *value,
                   size_t vlen)
{
    size_t i = 0;
    while (i < ls->n && str_cmp(ls->l[i].name.ptr, ls->l[i].name.len, name, nlen) < 0)
        i++;
    int found = i < ls->n && str_cmp(ls->l[i].name.ptr, ls->l[i].name.len, name, nlen) == 0;
    if (!vlen) {
        if (found) {
            memmove(ls->l + i, ls->l + i + 1, (ls->n - i - 1) * sizeof *ls->l);
            ls->n--;
        }
        return GP_OK;
    }
    if (found) {
        ls->l[i].value = (struct gp_str){value, vlen};
        return GP_OK;
    }
    if (lset_grow(ls, ls->n + 1) != GP_OK)
        return GP_ENOMEM;
    memmove(ls->l + i + 1, ls->l + i, (ls->n - i) * sizeof *ls->l);
    ls->l[i] = (struct gp_label){{name, nlen}, {value, vlen}};
    ls->n++;
    return GP_OK;
}

void gp_pq_lset_del(struct gp_pq_lset *ls, const char *name)
{
    gp_pq_lset_set(ls, name, strlen(name), "", 0);
}

static int in_names(const struct gp_pq_labels *names, const char *p, size_t len)
{
    for (size_t i = 0; names && i < names->n; i++)
        if (strlen(names->names[i]) == len && memcmp(names->names[i], p, len) == 0)
            return 1;
    return 0;
}

static int is_name_label(const char *p, size_t len)
{
    return len == 8 && memcmp(p, "__name__", 8) == 0;
}

void gp_pq_lset_filter(struct gp_pq_lset *ls, const struct gp_pq_labels *names, int keep)
{
    size_t o = 0;
    for (size_t i = 0; i < ls->n; i++) {
        int in = in_names(names, ls->l[i].name.ptr, ls->l[i].name.len);
        int stay = keep ? in : !in && !is_name_label(ls->l[i].name.ptr, ls->l[i].name.len);
        if (stay)
            ls->l[o++] = ls->l[i];
    }
    ls->n = o;
}

void gp_pq_lset_encode(const struct gp_pq_lset *ls, struct gp_buf *out)
{
    gp_buf_reset(out);
    if (ls->n)
        gp_labels_encode(ls->l, ls->n, out);
}

int gp_pq_labels_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    struct gp_labels_iter ia, ib;
    gp_labels_iter_init(&ia, a, a ? alen : 0);
    gp_labels_iter_init(&ib, b, b ? blen : 0);
    for (;;) {
        struct gp_str na, va, nb, vb;
        int ha = gp_labels_next(&ia, &na, &va) == 1, hb = gp_labels_next(&ib, &nb, &vb) == 1;
        if (!ha || !hb)
            return ha - hb; /* the shorter set first */
        int c = str_cmp(na.ptr, na.len, nb.ptr, nb.len);
        if (!c)
            c = str_cmp(va.ptr, va.len, vb.ptr, vb.len);
        if (c)
            return c < 0 ? -1 : 1;
    }
}

/* Go's strconv.Quote for the printable ASCII and escapes labels hold. */
static void put_quoted(struct gp_buf *out, const char *p, size_t len)
{
    gp_buf_putc(out, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        switch (ch) {
        case '"': gp_buf_puts(out, "\\\""); break;
        case '\\': gp_buf_puts(out, "\\\\"); break;
        case '\n': gp_buf_puts(out, "\\n"); break;
        case '\t': gp_buf_puts(out, "\\t"); break;
        case '\r': gp_buf_puts(out, "\\r"); break;
        default:
            if (ch < 0x20 || ch == 0x7f)
                gp_buf_printf(out, "\\x%02x", ch);
            else
                gp_buf_putc(out, (char)ch);
        }
    }
    gp_buf_putc(out, '"');
}

void gp_pq_labels_str(const uint8_t *blob, size_t len, struct gp_buf *out)
{
    struct gp_labels_iter it;
    gp_labels_iter_init(&it, blob, blob ? len : 0);
    struct gp_str n, v;
    gp_buf_putc(out, '{');
    int first = 1;
    while (gp_labels_next(&it, &n, &v) == 1) {
        if (!first)
            gp_buf_puts(out, ", ");
        first = 0;
        gp_buf_append(out, n.ptr, n.len);
        gp_buf_putc(out, '=');
        put_quoted(out, v.ptr, v.len);
    }
    gp_buf_putc(out, '}');
}

/* Copies the labels of blob that keep() accepts, as a blob: the varint
 * framing is kept byte for byte, so no re-encoding is needed. */
static void copy_where(const uint8_t *blob, size_t len, struct gp_buf *out,
                       const struct gp_pq_labels *names, int mode)
{
    gp_buf_reset(out);
    struct gp_labels_iter it;
    gp_labels_iter_init(&it, blob, blob ? len : 0);
    const uint8_t *p = it.p;
    struct gp_str n, v;
    while (gp_labels_next(&it, &n, &v) == 1) {
        int keep;
        if (mode == 0) /* drop __name__ */
            keep = !is_name_label(n.ptr, n.len);
        else if (mode == 1) /* on/by */
            keep = in_names(names, n.ptr, n.len);
        else /* ignoring/without */
            keep = !in_names(names, n.ptr, n.len) && !is_name_label(n.ptr, n.len);
        if (keep)
            gp_buf_append(out, p, (size_t)(it.p - p));
        p = it.p;
    }
}

void gp_pq_labels_drop_name(const uint8_t *blob, size_t len, struct gp_buf *out)
{
    copy_where(blob, len, out, NULL, 0);
}

void gp_pq_labels_key(const uint8_t *blob, size_t len, const struct gp_pq_labels *names, int on,
                      struct gp_buf *out)
{
    copy_where(blob, len, out, names, on ? 1 : 2);
}

/* ---- the map ---- */

struct gp_pq_slot {
    uint64_t h;
    size_t off, len; /* key in keys */
    size_t val;
    int used;
};

void gp_pq_map_free(struct gp_pq_map *m)
{
    free(m->slots);
    gp_buf_free(&m->keys);
    memset(m, 0, sizeof *m);
}

static int map_grow(struct gp_pq_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct gp_pq_slot *s = calloc(cap, sizeof *s);
    if (!s)
        return GP_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].used)
            continue;
        size_t j = (size_t)m->slots[i].h & (cap - 1);
        while (s[j].used)
            j = (j + 1) & (cap - 1);
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return GP_OK;
}

int gp_pq_map_get(struct gp_pq_map *m, const void *key, size_t len, size_t next, size_t *out,
                  int *added)
{
    if ((m->n + 1) * 2 > m->cap && map_grow(m) != GP_OK)
        return GP_ENOMEM;
    uint64_t h = gp_labels_hash(key, len);
    size_t j = (size_t)h & (m->cap - 1);
    while (m->slots[j].used) {
        struct gp_pq_slot *s = m->slots + j;
        if (s->h == h && s->len == len && (!len || memcmp(m->keys.data + s->off, key, len) == 0)) {
            *out = s->val;
            if (added)
                *added = 0;
            return GP_OK;
        }
        j = (j + 1) & (m->cap - 1);
    }
    size_t off = m->keys.len;
    if (len) {
        gp_buf_append(&m->keys, key, len);
        if (m->keys.err)
            return GP_ENOMEM;
    }
    m->slots[j] = (struct gp_pq_slot){h, off, len, next, 1};
    m->n++;
    *out = next;
    if (added)
        *added = 1;
    return GP_OK;
}
