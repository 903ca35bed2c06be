/*
 * pickle.c - the bounded pickle reader (pickle.h).
 *
 * A machine with a value stack, a mark stack and a memo, as Python's
 * own unpickler, but its values are entries of one array and its
 * containers ranges of one slot array: a container's slots stay
 * contiguous, so one that grows after another grew is moved to the end
 * first (the move counts against the slot bound, which bounds the work
 * too). Every read checks the bytes left; every count checks its bound
 * before anything grows.
 */
#include "pickle.h"

#include "lib/err.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct rd {
    const uint8_t *b;
    size_t len, at;
    struct gp_pickle *p;
    uint32_t *stack, nstack, capstack;
    uint32_t *marks, nmarks, capmarks;
    uint32_t *memo, nmemo, capmemo;
    uint32_t capv, capedges;
    char *err;
    size_t errlen;
};

/* Grows *arr (elements of size sz) to hold need, capped at max. */
static int grow(void **arr, uint32_t *cap, uint32_t need, uint32_t max, size_t sz)
{
    if (need <= *cap)
        return GP_OK;
    if (need > max)
        return GP_ETOOBIG;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c = c > max / 2 ? max : c * 2;
    void *n = realloc(*arr, (size_t)c * sz);
    if (!n)
        return GP_ENOMEM;
    *arr = n;
    *cap = c;
    return GP_OK;
}

static int fail(struct rd *r, int code, const char *what)
{
    return gp_seterr(r->err, r->errlen, code, "pickle: %s at offset %zu", what, r->at);
}

static int too_big(struct rd *r, int rc)
{
    return rc == GP_ETOOBIG ? fail(r, rc, "too many values") : rc;
}

/* A new value of type t; its index in *x. */
static int new_val(struct rd *r, enum gp_pickle_type t, uint32_t *x)
{
    int rc = grow((void **)&r->p->v, &r->capv, r->p->nv + 1, GP_PICKLE_MAX_VALUES, sizeof *r->p->v);
    if (rc)
        return too_big(r, rc);
    *x = r->p->nv++;
    r->p->v[*x] = (struct gp_pickle_val){.type = t};
    return GP_OK;
}

static int push(struct rd *r, uint32_t x)
{
    int rc = grow((void **)&r->stack, &r->capstack, r->nstack + 1, GP_PICKLE_MAX_EDGES, sizeof *r->stack);
    if (rc)
        return too_big(r, rc);
    r->stack[r->nstack++] = x;
    return GP_OK;
}

static int push_new(struct rd *r, enum gp_pickle_type t, struct gp_pickle_val **out)
{
    uint32_t x;
    int rc = new_val(r, t, &x);
    if (!rc)
        rc = push(r, x);
    if (!rc && out)
        *out = &r->p->v[x];
    return rc;
}

/* n bytes of input at the cursor, or NULL when fewer are left. */
static const uint8_t *take(struct rd *r, size_t n)
{
    if (r->len - r->at < n)
        return NULL;
    const uint8_t *s = r->b + r->at;
    r->at += n;
    return s;
}

/* An unsigned little-endian count of n bytes (1, 4 or 8). */
static int count(struct rd *r, size_t n, uint64_t *out)
{
    const uint8_t *s = take(r, n);
    if (!s)
        return fail(r, GP_EPARSE, "truncated");
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | s[i];
    *out = v;
    return GP_OK;
}

/* A str or bytes value of a length read in lb bytes. */
static int string(struct rd *r, size_t lb, enum gp_pickle_type t)
{
    uint64_t n = 0;
    int rc = count(r, lb, &n);
    if (rc)
        return rc;
    if (n > r->len - r->at)
        return fail(r, GP_EPARSE, "truncated string");
    struct gp_pickle_val *v;
    rc = push_new(r, t, &v);
    if (rc)
        return rc;
    v->s = (const char *)take(r, (size_t)n);
    v->len = (size_t)n;
    return GP_OK;
}

/* Appends the stack's items from position from on to container c's
 * slots (moving them to the end first when others grew since). */
static int extend(struct rd *r, uint32_t c, uint32_t from)
{
    struct gp_pickle *p = r->p;
    uint32_t k = r->nstack - from;
    uint32_t n = p->v[c].n, first = p->v[c].first;
    bool at_end = !n || first + n == p->nedges;
    uint32_t need = p->nedges + k + (at_end ? 0 : n);
    int rc = grow((void **)&p->edges, &r->capedges, need, GP_PICKLE_MAX_EDGES, sizeof *p->edges);
    if (rc)
        return too_big(r, rc);
    if (!n) {
        p->v[c].first = p->nedges;
    } else if (!at_end) {
        memcpy(p->edges + p->nedges, p->edges + first, (size_t)n * sizeof *p->edges);
        p->v[c].first = p->nedges;
        p->nedges += n;
    }
    memcpy(p->edges + p->nedges, r->stack + from, (size_t)k * sizeof *p->edges);
    p->nedges += k;
    p->v[c].n = n + k;
    r->nstack = from;
    return GP_OK;
}

/* The position of the newest mark, popped. */
static int pop_mark(struct rd *r, uint32_t *pos)
{
    if (!r->nmarks)
        return fail(r, GP_EPARSE, "no mark");
    *pos = r->marks[--r->nmarks];
    return GP_OK;
}

/* APPEND(S), SETITEM(S): items from `from` go into the container below. */
static int add_items(struct rd *r, uint32_t from, bool dict)
{
    if (from == 0 || from > r->nstack)
        return fail(r, GP_EPARSE, "stack underflow");
    uint32_t c = r->stack[from - 1];
    enum gp_pickle_type t = r->p->v[c].type;
    if (t != (dict ? GP_PK_DICT : GP_PK_LIST))
        return fail(r, GP_EPARSE, dict ? "items set on a non-dict" : "items appended to a non-list");
    if (dict && (r->nstack - from) % 2)
        return fail(r, GP_EPARSE, "a key without a value");
    return extend(r, c, from);
}

/* A new container of type t holding the stack's items from `from` on. */
static int build(struct rd *r, uint32_t from, enum gp_pickle_type t)
{
    if (from > r->nstack) /* items below the mark were taken since */
        return fail(r, GP_EPARSE, "stack underflow");
    if (t == GP_PK_DICT && (r->nstack - from) % 2)
        return fail(r, GP_EPARSE, "a key without a value");
    uint32_t x;
    int rc = new_val(r, t, &x);
    if (!rc)
        rc = extend(r, x, from);
    return rc ? rc : push(r, x);
}

static int memo_put(struct rd *r, uint64_t idx)
{
    if (!r->nstack)
        return fail(r, GP_EPARSE, "memo of an empty stack");
    if (idx >= GP_PICKLE_MAX_VALUES)
        return fail(r, GP_ETOOBIG, "memo index too large");
    uint32_t old = r->capmemo;
    int rc = grow((void **)&r->memo, &r->capmemo, (uint32_t)idx + 1, GP_PICKLE_MAX_VALUES, sizeof *r->memo);
    if (rc)
        return too_big(r, rc);
    for (uint32_t i = old; i < r->capmemo; i++)
        r->memo[i] = GP_PICKLE_NONE;
    r->memo[idx] = r->stack[r->nstack - 1];
    if (idx >= r->nmemo)
        r->nmemo = (uint32_t)idx + 1;
    return GP_OK;
}

static int memo_get(struct rd *r, uint64_t idx)
{
    if (idx >= r->nmemo || r->memo[idx] == GP_PICKLE_NONE)
        return fail(r, GP_EPARSE, "memo index not set");
    return push(r, r->memo[idx]);
}

/* One opcode at the cursor; *stop set at STOP. */
static int step(struct rd *r, bool *stop)
{
    const uint8_t *op = take(r, 1);
    if (!op)
        return fail(r, GP_EPARSE, "truncated (no STOP)");
    struct gp_pickle_val *v;
    uint64_t n = 0;
    uint32_t from = 0;
    int rc;
    switch (*op) {
    case 0x80: /* PROTO */
        rc = count(r, 1, &n);
        return rc ? rc : n < 2 || n > 5 ? fail(r, GP_EPARSE, "unsupported protocol") : GP_OK;
    case 0x95: /* FRAME: a length hint */
        return count(r, 8, &n);
    case '.':
        if (r->nstack != 1 || r->nmarks)
            return fail(r, GP_EPARSE, "STOP with other than one value");
        r->p->root = r->stack[0];
        *stop = true;
        return GP_OK;
    case '(':
        rc = grow((void **)&r->marks, &r->capmarks, r->nmarks + 1, GP_PICKLE_MAX_EDGES, sizeof *r->marks);
        if (rc)
            return too_big(r, rc);
        r->marks[r->nmarks++] = r->nstack;
        return GP_OK;
    case '}': return push_new(r, GP_PK_DICT, NULL);
    case ']': return push_new(r, GP_PK_LIST, NULL);
    case ')': return push_new(r, GP_PK_TUPLE, NULL);
    case 'd': case 'l': case 't':
        rc = pop_mark(r, &from);
        return rc ? rc : build(r, from, *op == 'd' ? GP_PK_DICT : *op == 'l' ? GP_PK_LIST : GP_PK_TUPLE);
    case 0x85: case 0x86: case 0x87: /* TUPLE1..3 */
        n = (uint64_t)(*op - 0x84);
        if (r->nstack < n)
            return fail(r, GP_EPARSE, "stack underflow");
        return build(r, r->nstack - (uint32_t)n, GP_PK_TUPLE);
    case 's':
        return add_items(r, r->nstack >= 2 ? r->nstack - 2 : UINT32_MAX, true);
    case 'a':
        return add_items(r, r->nstack >= 1 ? r->nstack - 1 : UINT32_MAX, false);
    case 'u': case 'e':
        rc = pop_mark(r, &from);
        return rc ? rc : add_items(r, from, *op == 'u');
    case 'J': case 'K': case 'M': { /* BININT (signed 4), BININT1, BININT2 */
        size_t w = *op == 'J' ? 4 : *op == 'K' ? 1 : 2;
        if ((rc = count(r, w, &n)) || (rc = push_new(r, GP_PK_INT, &v)))
            return rc;
        v->i = w == 4 ? (int64_t)(int32_t)(uint32_t)n : (int64_t)n;
        return GP_OK;
    }
    case 0x8a: { /* LONG1: n bytes, little-endian two's complement */
        if ((rc = count(r, 1, &n)))
            return rc;
        if (n > 8)
            return fail(r, GP_EPARSE, "integer wider than 64 bits");
        size_t w = (size_t)n;
        uint64_t u = 0;
        if (w && (rc = count(r, w, &u)))
            return rc;
        if (w && w < 8 && (u >> (8 * w - 1)) & 1)
            u |= ~(uint64_t)0 << (8 * w); /* sign-extend */
        if ((rc = push_new(r, GP_PK_INT, &v)))
            return rc;
        memcpy(&v->i, &u, sizeof u);
        return GP_OK;
    }
    case 'G': { /* BINFLOAT: big-endian double */
        const uint8_t *s = take(r, 8);
        if (!s)
            return fail(r, GP_EPARSE, "truncated");
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = u << 8 | s[i];
        if ((rc = push_new(r, GP_PK_FLOAT, &v)))
            return rc;
        memcpy(&v->f, &u, sizeof u);
        return GP_OK;
    }
    case 'N': return push_new(r, GP_PK_NONE, NULL);
    case 0x88: case 0x89:
        if ((rc = push_new(r, GP_PK_BOOL, &v)))
            return rc;
        v->i = *op == 0x88;
        return GP_OK;
    case 'X': return string(r, 4, GP_PK_STR);
    case 0x8c: return string(r, 1, GP_PK_STR);
    case 0x8d: return string(r, 8, GP_PK_STR);
    case 'U': case 'C': return string(r, 1, GP_PK_BYTES);
    case 'T': case 'B': return string(r, 4, GP_PK_BYTES);
    case 0x8e: return string(r, 8, GP_PK_BYTES);
    case 0x94: return memo_put(r, r->nmemo);
    case 'q': return (rc = count(r, 1, &n)) ? rc : memo_put(r, n);
    case 'r': return (rc = count(r, 4, &n)) ? rc : memo_put(r, n);
    case 'h': return (rc = count(r, 1, &n)) ? rc : memo_get(r, n);
    case 'j': return (rc = count(r, 4, &n)) ? rc : memo_get(r, n);
    default:
        r->at--;
        return gp_seterr(r->err, r->errlen, GP_EPARSE, "pickle: unsupported opcode 0x%02x at offset %zu",
                         *op, r->at);
    }
}

int gp_pickle_parse(const uint8_t *buf, size_t len, struct gp_pickle *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct rd r = {.b = buf, .len = len, .p = out, .err = err, .errlen = errlen};
    bool stop = false;
    int rc = GP_OK;
    while (!rc && !stop)
        rc = step(&r, &stop);
    free(r.stack);
    free(r.marks);
    free(r.memo);
    return rc;
}

void gp_pickle_free(struct gp_pickle *p)
{
    if (!p)
        return;
    free(p->v);
    free(p->edges);
    memset(p, 0, sizeof *p);
}

uint32_t gp_pickle_get(const struct gp_pickle *p, uint32_t d, const char *key)
{
    if (d >= p->nv || p->v[d].type != GP_PK_DICT)
        return GP_PICKLE_NONE;
    size_t kl = strlen(key);
    const struct gp_pickle_val *c = &p->v[d];
    for (uint32_t i = 0; i + 1 < c->n; i += 2) {
        const struct gp_pickle_val *k = &p->v[p->edges[c->first + i]];
        if (k->type == GP_PK_STR && k->len == kl && !memcmp(k->s, key, kl))
            return p->edges[c->first + i + 1];
    }
    return GP_PICKLE_NONE;
}

uint32_t gp_pickle_item(const struct gp_pickle *p, uint32_t c, uint32_t i)
{
    if (c >= p->nv || (p->v[c].type != GP_PK_LIST && p->v[c].type != GP_PK_TUPLE) || i >= p->v[c].n)
        return GP_PICKLE_NONE;
    return p->edges[p->v[c].first + i];
}

int gp_pickle_int(const struct gp_pickle *p, uint32_t x, int64_t *out)
{
    if (x >= p->nv || (p->v[x].type != GP_PK_INT && p->v[x].type != GP_PK_BOOL))
        return 0;
    *out = p->v[x].i;
    return 1;
}

int gp_pickle_str(const struct gp_pickle *p, uint32_t x, const char **s, size_t *len)
{
    if (x >= p->nv || p->v[x].type != GP_PK_STR)
        return 0;
    *s = p->v[x].s;
    *len = p->v[x].len;
    return 1;
}
