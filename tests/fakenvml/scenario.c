/*
 * scenario.c - the stand-in NVML's scenario parser and timeline.
 *
 * A scenario is line-based text (format in tests/fakenvml/README.md):
 * global lines (driver, init_error, fail), device blocks opened by
 * `gpu N` or `mig P S` whose lines set that device's state, and timeline
 * lines `at MS <target> <device line>` applied when the fake's clock
 * passes MS. Every line is checked when the scenario is parsed, timeline
 * lines included (against a scratch copy of their device), so a bad
 * scenario fails nvmlInit instead of misbehaving mid-test.
 *
 * Parts: a tokenizer (blanks, "quoted strings", # comments), strict
 * number parsing, the device-line interpreter shared by blocks and the
 * timeline, and the timeline/GPM integration.
 */
#include "fakenvml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fk_key_names[FK__NKEYS] = {
#define FK_KEY_NAME_(id, name) name,
    FK_KEYS(FK_KEY_NAME_)
#undef FK_KEY_NAME_
};

static int fail_at(char *err, size_t errlen, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(char *err, size_t errlen, unsigned line, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "line %u: %s", line, msg);
    return -1;
}

static int parse_ull(const char *t, unsigned long long *out)
{
    if (!*t || *t == '-' || *t == '+' || *t == ' ')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(t, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_dbl(const char *t, double *out)
{
    if (!*t)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(t, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_int_max(const char *t, unsigned long long max, int *out)
{
    unsigned long long v;
    if (parse_ull(t, &v) || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

static int add_fail(struct fk_fail *arr, unsigned *n, const char *name, int code)
{
    for (unsigned i = 0; i < *n; i++)
        if (strcmp(arr[i].name, name) == 0) {
            arr[i].code = code;
            return 0;
        }
    if (*n >= FK_MAX_FAILS || strlen(name) >= sizeof arr[0].name)
        return -1;
    snprintf(arr[*n].name, sizeof arr[0].name, "%s", name);
    arr[*n].code = code;
    (*n)++;
    return 0;
}

static int set_str(char *dst, size_t cap, const char *src)
{
    if (strlen(src) >= cap)
        return -1;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

/* Interprets one device line on d. Returns 0 or -1 with err set. */
static int apply_dev(struct fk_dev *d, char tok[][FK_TOK_LEN], int n, unsigned line, char *err,
                     size_t errlen)
{
    const char *k = tok[0];
    for (int i = 0; i < FK__NKEYS; i++)
        if (strcmp(k, fk_key_names[i]) == 0) {
            if (n != 2 || parse_ull(tok[1], &d->val[i]))
                return fail_at(err, errlen, line, "'%s' takes one unsigned number", k);
            return 0;
        }
    if (strcmp(k, "name") == 0 || strcmp(k, "uuid") == 0 || strcmp(k, "bus") == 0) {
        char *dst = k[0] == 'n' ? d->name : k[0] == 'u' ? d->uuid : d->bus;
        size_t cap = k[0] == 'b' ? sizeof d->bus : sizeof d->name;
        if (n != 2 || set_str(dst, cap, tok[1]))
            return fail_at(err, errlen, line, "'%s' takes one string (max %zu chars)", k, cap - 1);
        return 0;
    }
    if (strcmp(k, "gpm") == 0) {
        if (n != 2 || (strcmp(tok[1], "on") && strcmp(tok[1], "off")))
            return fail_at(err, errlen, line, "'gpm' takes on or off");
        d->gpm = strcmp(tok[1], "on") == 0;
        return 0;
    }
    if (strcmp(k, "gpm_metric") == 0) {
        int id;
        double v;
        if (n != 3 || parse_int_max(tok[1], FK_GPM_IDS - 1, &id) || id == 0 ||
            parse_dbl(tok[2], &v) || v < 0)
            return fail_at(err, errlen, line, "'gpm_metric' takes an id 1-%d and a value >= 0",
                           FK_GPM_IDS - 1);
        if (!d->gpm_has[id])
            d->gpm_ids[d->ngpm_ids++] = (unsigned short)id;
        d->gpm_has[id] = 1;
        d->gpm_val[id] = v;
        return 0;
    }
    if (strcmp(k, "unsupported") == 0) {
        if (n < 2)
            return fail_at(err, errlen, line, "'unsupported' takes function or field names");
        for (int i = 1; i < n; i++)
            if (add_fail(d->fails, &d->nfails, tok[i], FK_E_NOT_SUPPORTED))
                return fail_at(err, errlen, line, "too many faults on one device");
        return 0;
    }
    if (strcmp(k, "proc") == 0) {
        unsigned long long pid, mem, sm, mu;
        if (n != 5 || parse_ull(tok[1], &pid) || pid > 0xffffffffull || parse_ull(tok[2], &mem) ||
            parse_ull(tok[3], &sm) || sm > 0xffffffffull || parse_ull(tok[4], &mu) ||
            mu > 0xffffffffull)
            return fail_at(err, errlen, line, "'proc' takes PID MEM_BYTES SM_UTIL MEM_UTIL");
        struct fk_proc *p = NULL;
        for (unsigned i = 0; i < d->nprocs; i++)
            if (d->procs[i].pid == pid)
                p = &d->procs[i];
        if (!p) {
            if (d->nprocs >= FK_MAX_PROCS)
                return fail_at(err, errlen, line, "more than %d processes", FK_MAX_PROCS);
            p = &d->procs[d->nprocs++];
        }
        p->pid = (unsigned)pid;
        p->mem = mem;
        p->sm = (unsigned)sm;
        p->memutil = (unsigned)mu;
        return 0;
    }
    if (strcmp(k, "proc_remove") == 0) {
        unsigned long long pid;
        if (n != 2 || parse_ull(tok[1], &pid))
            return fail_at(err, errlen, line, "'proc_remove' takes a pid");
        for (unsigned i = 0; i < d->nprocs; i++)
            if (d->procs[i].pid == pid) {
                memmove(&d->procs[i], &d->procs[i + 1], (d->nprocs - i - 1) * sizeof d->procs[0]);
                d->nprocs--;
                return 0;
            }
        return fail_at(err, errlen, line, "'proc_remove': no process %llu", pid);
    }
    if (strcmp(k, "lost") == 0) {
        if (n != 1)
            return fail_at(err, errlen, line, "'lost' takes no argument");
        d->lost = 1;
        return 0;
    }
    if (strcmp(k, "xid") == 0) {
        unsigned long long x;
        if (n != 2 || parse_ull(tok[1], &x))
            return fail_at(err, errlen, line, "'xid' takes a number");
        fk_event_push(d, 0x8ull, x);
        return 0;
    }
    if (strcmp(k, "fail") == 0) {
        int code;
        if (n != 4 || strcmp(tok[2], "with") || parse_int_max(tok[3], 100000, &code))
            return fail_at(err, errlen, line, "'fail' takes NAME with CODE");
        if (add_fail(d->fails, &d->nfails, tok[1], code))
            return fail_at(err, errlen, line, "too many faults on one device");
        return 0;
    }
    if (strcmp(k, "unfail") == 0) {
        if (n != 2)
            return fail_at(err, errlen, line, "'unfail' takes a name");
        for (unsigned i = 0; i < d->nfails; i++)
            if (strcmp(d->fails[i].name, tok[1]) == 0) {
                d->fails[i] = d->fails[--d->nfails];
                return 0;
            }
        return 0;
    }
    return fail_at(err, errlen, line, "unknown statement '%s'", k);
}

/* Splits one line into tokens. Returns token count, or -1 with err set. */
static int tokenize(const char *p, const char *end, char tok[][FK_TOK_LEN], unsigned line,
                    char *err, size_t errlen)
{
    int n = 0;
    while (p < end) {
        if (*p == ' ' || *p == '\t' || *p == '\r') {
            p++;
            continue;
        }
        if (*p == '#')
            break;
        if (n >= FK_MAX_TOK)
            return fail_at(err, errlen, line, "more than %d words", FK_MAX_TOK);
        size_t len = 0;
        if (*p == '"') {
            p++;
            while (p < end && *p != '"') {
                if (len + 1 >= FK_TOK_LEN)
                    return fail_at(err, errlen, line, "word longer than %d chars", FK_TOK_LEN - 1);
                tok[n][len++] = *p++;
            }
            if (p >= end)
                return fail_at(err, errlen, line, "unterminated quote");
            p++;
        } else {
            while (p < end && *p != ' ' && *p != '\t' && *p != '\r' && *p != '#') {
                if (*p == '"')
                    return fail_at(err, errlen, line, "quote inside a word");
                if (len + 1 >= FK_TOK_LEN)
                    return fail_at(err, errlen, line, "word longer than %d chars", FK_TOK_LEN - 1);
                tok[n][len++] = *p++;
            }
        }
        tok[n][len] = '\0';
        n++;
    }
    return n;
}

struct fk_dev *fk_scenario_gpu(struct fk_scenario *s, int idx)
{
    return idx >= 0 && (unsigned)idx < s->ngpus ? &s->gpus[idx] : NULL;
}

struct fk_dev *fk_scenario_mig(struct fk_scenario *s, int parent, int slot)
{
    for (unsigned i = 0; i < s->nmigs; i++)
        if (s->migs[i].parent == parent && s->migs[i].index == slot)
            return &s->migs[i];
    return NULL;
}

/*
 * Resolves "gpu N" or "mig P S" at tok[0..]; returns the device and the
 * number of tokens used (*used), or NULL.
 */
static struct fk_dev *target(struct fk_scenario *s, char tok[][FK_TOK_LEN], int n, int *used)
{
    int a, b;
    if (n >= 2 && strcmp(tok[0], "gpu") == 0 && !parse_int_max(tok[1], FK_MAX_GPUS, &a)) {
        *used = 2;
        return fk_scenario_gpu(s, a);
    }
    if (n >= 3 && strcmp(tok[0], "mig") == 0 && !parse_int_max(tok[1], FK_MAX_GPUS, &a) &&
        !parse_int_max(tok[2], FK_MAX_MIG_SLOTS, &b)) {
        *used = 3;
        return fk_scenario_mig(s, a, b);
    }
    return NULL;
}

/* `fail NAME [gpu N | mig P S] with CODE` */
static int apply_fail(struct fk_scenario *s, char tok[][FK_TOK_LEN], int n, unsigned line, char *err,
                      size_t errlen)
{
    int code, used = 0;
    if (n < 4)
        return fail_at(err, errlen, line, "'fail' takes NAME [gpu N | mig P S] with CODE");
    struct fk_dev *d = NULL;
    if (n > 4) {
        d = target(s, tok + 2, n - 2, &used);
        if (!d)
            return fail_at(err, errlen, line, "'fail': no such device");
    }
    if (n != 4 + used || strcmp(tok[2 + used], "with") || parse_int_max(tok[3 + used], 100000, &code))
        return fail_at(err, errlen, line, "'fail' takes NAME [gpu N | mig P S] with CODE");
    if (d ? add_fail(d->fails, &d->nfails, tok[1], code) : add_fail(s->fails, &s->nfails, tok[1], code))
        return fail_at(err, errlen, line, "too many faults");
    return 0;
}

static void init_dev(struct fk_dev *d, int is_mig, int index, int parent)
{
    memset(d, 0, sizeof *d);
    d->magic = FK_DEV_MAGIC;
    d->is_mig = is_mig;
    d->index = index;
    d->parent = parent;
    snprintf(d->name, sizeof d->name, "%s", is_mig ? "MIG device" : "Fake GPU");
    if (is_mig)
        snprintf(d->uuid, sizeof d->uuid, "MIG-fake-%d-%d", parent, index);
    else
        snprintf(d->uuid, sizeof d->uuid, "GPU-fake-%d", index);
    snprintf(d->bus, sizeof d->bus, "00000000:%02X:00.0", (unsigned)(index + 1) & 0xff);
    d->val[FK_MINOR] = (unsigned long long)index;
}

/* Applies one timeline event; it was validated at parse time. */
static int apply_event(struct fk_scenario *s, const struct fk_event *e, char *err, size_t errlen)
{
    char tok[FK_MAX_TOK][FK_TOK_LEN];
    memcpy(tok, e->tok, sizeof tok);
    if (strcmp(tok[0], "fail") == 0)
        return apply_fail(s, tok, e->ntok, e->line, err, errlen);
    int used;
    struct fk_dev *d = target(s, tok, e->ntok, &used);
    if (!d || used >= e->ntok)
        return fail_at(err, errlen, e->line, "'at' needs gpu N or mig P S and a statement");
    return apply_dev(d, tok + used, e->ntok - used, e->line, err, errlen);
}

static int cmp_event(const void *a, const void *b)
{
    const struct fk_event *x = a, *y = b;
    if (x->at_ms != y->at_ms)
        return x->at_ms < y->at_ms ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line); /* stable: file order */
}

int fk_scenario_parse(struct fk_scenario *s, const char *text, size_t len, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    snprintf(s->driver, sizeof s->driver, "550.54.15");
    s->cuda = 12040;
    struct fk_dev *cur = NULL;
    unsigned cap = 0, line = 0;
    const char *p = text, *end = text + len;
    char tok[FK_MAX_TOK][FK_TOK_LEN];
    if (memchr(text, '\0', len))
        return fail_at(err, errlen, 1, "NUL byte in scenario"), fk_scenario_free(s), -1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        int n = tokenize(p, le, tok, line, err, errlen);
        p = nl ? nl + 1 : end;
        if (n < 0)
            goto fail;
        if (n == 0)
            continue;
        if (strcmp(tok[0], "driver") == 0) {
            if (n != 2 || set_str(s->driver, sizeof s->driver, tok[1])) {
                fail_at(err, errlen, line, "'driver' takes one version string");
                goto fail;
            }
        } else if (strcmp(tok[0], "cuda") == 0) {
            unsigned long long v;
            if (n != 2 || parse_ull(tok[1], &v) || v > 999999) {
                fail_at(err, errlen, line, "'cuda' takes the CUDA version as NVML gives it (12040 = 12.4)");
                goto fail;
            }
            s->cuda = (unsigned)v;
        } else if (strcmp(tok[0], "ecc_fields") == 0) {
            if (n != 2 || (strcmp(tok[1], "absent") && strcmp(tok[1], "present"))) {
                fail_at(err, errlen, line, "'ecc_fields' takes 'absent' or 'present'");
                goto fail;
            }
            s->no_ecc_fields = strcmp(tok[1], "absent") == 0;
        } else if (strcmp(tok[0], "init_error") == 0) {
            if (n != 2 || parse_int_max(tok[1], 100000, &s->init_error)) {
                fail_at(err, errlen, line, "'init_error' takes an NVML return code");
                goto fail;
            }
        } else if (strcmp(tok[0], "gpu") == 0 && n <= 2) {
            int idx;
            if (n != 2 || parse_int_max(tok[1], FK_MAX_GPUS - 1, &idx) || (unsigned)idx != s->ngpus) {
                fail_at(err, errlen, line, "'gpu N' must number GPUs 0, 1, ... in order (max %d)",
                        FK_MAX_GPUS);
                goto fail;
            }
            cur = &s->gpus[s->ngpus++];
            init_dev(cur, 0, idx, -1);
        } else if (strcmp(tok[0], "mig") == 0 && n <= 3) {
            int par, slot;
            if (n != 3 || parse_int_max(tok[1], FK_MAX_GPUS, &par) || (unsigned)par >= s->ngpus ||
                parse_int_max(tok[2], FK_MAX_MIG_SLOTS - 1, &slot) || fk_scenario_mig(s, par, slot) ||
                s->nmigs >= FK_MAX_MIGS) {
                fail_at(err, errlen, line, "'mig P S' needs a declared gpu P and a new slot 0-%d",
                        FK_MAX_MIG_SLOTS - 1);
                goto fail;
            }
            cur = &s->migs[s->nmigs++];
            init_dev(cur, 1, slot, par);
        } else if (strcmp(tok[0], "fail") == 0) {
            if (apply_fail(s, tok, n, line, err, errlen))
                goto fail;
        } else if (strcmp(tok[0], "at") == 0) {
            unsigned long long ms;
            if (n < 3 || parse_ull(tok[1], &ms) || ms > 1000000000ull) {
                fail_at(err, errlen, line, "'at' takes milliseconds (<= 1e9) and a statement");
                goto fail;
            }
            if (s->nev >= 100000) {
                fail_at(err, errlen, line, "too many timeline lines");
                goto fail;
            }
            if (s->nev == cap) {
                cap = cap ? cap * 2 : 16;
                struct fk_event *ne = realloc(s->ev, cap * sizeof *ne);
                if (!ne) {
                    fail_at(err, errlen, line, "out of memory");
                    goto fail;
                }
                s->ev = ne;
            }
            struct fk_event *e = &s->ev[s->nev++];
            memset(e, 0, sizeof *e);
            e->at_ms = (long long)ms;
            e->line = line;
            e->ntok = n - 2;
            memcpy(e->tok, tok + 2, (size_t)(n - 2) * sizeof tok[0]);
        } else {
            if (!cur) {
                fail_at(err, errlen, line, "'%s' outside a gpu or mig block", tok[0]);
                goto fail;
            }
            if (apply_dev(cur, tok, n, line, err, errlen))
                goto fail;
        }
    }
    if (s->ngpus == 0 && !s->init_error) {
        fail_at(err, errlen, line ? line : 1, "scenario declares no gpu");
        goto fail;
    }
    /* Dry-run every timeline line against a scratch copy of the scenario. */
    if (s->nev) {
        struct fk_scenario *scratch = malloc(sizeof *scratch);
        if (!scratch) {
            fail_at(err, errlen, line, "out of memory");
            goto fail;
        }
        *scratch = *s;
        int bad = 0;
        for (unsigned i = 0; i < s->nev && !bad; i++)
            bad = apply_event(scratch, &s->ev[i], err, errlen);
        free(scratch);
        if (bad)
            goto fail;
        qsort(s->ev, s->nev, sizeof *s->ev, cmp_event);
    }
    return 0;
fail:
    fk_scenario_free(s);
    return -1;
}

void fk_scenario_free(struct fk_scenario *s)
{
    if (!s)
        return;
    free(s->ev);
    s->ev = NULL;
    s->nev = s->next_ev = 0;
}

void fk_gpm_integrate(struct fk_dev *d, long long t_ns)
{
    if (t_ns <= d->gpm_t_ns)
        return;
    double dt = (double)(t_ns - d->gpm_t_ns) / 1e9;
    for (unsigned k = 0; k < d->ngpm_ids; k++)
        d->gpm_acc[d->gpm_ids[k]] += d->gpm_val[d->gpm_ids[k]] * dt;
    d->gpm_t_ns = t_ns;
}

static void integrate_all(struct fk_scenario *s, long long t_ns)
{
    for (unsigned i = 0; i < s->ngpus; i++)
        fk_gpm_integrate(&s->gpus[i], t_ns);
    for (unsigned i = 0; i < s->nmigs; i++)
        fk_gpm_integrate(&s->migs[i], t_ns);
}

void fk_scenario_advance(struct fk_scenario *s, long long now_ns)
{
    char err[256];
    while (s->next_ev < s->nev && s->ev[s->next_ev].at_ms * 1000000ll <= now_ns) {
        const struct fk_event *e = &s->ev[s->next_ev++];
        integrate_all(s, e->at_ms * 1000000ll);
        if (apply_event(s, e, err, sizeof err)) /* validated at parse: cannot fail */
            fprintf(stderr, "fakenvml: %s\n", err);
    }
    integrate_all(s, now_ns);
}

void fk_event_push(struct fk_dev *d, unsigned long long type, unsigned long long data)
{
    struct fk_evset *set = d->evset;
    if (!set || !(d->evmask & type))
        return;
    if (set->tail - set->head >= FK_EVQ)
        return; /* queue full: the driver drops events too */
    nvmlEventData_t *e = &set->q[set->tail++ % FK_EVQ];
    memset(e, 0, sizeof *e);
    e->device = d;
    e->eventType = type;
    e->eventData = data;
    e->gpuInstanceId = e->computeInstanceId = 0xFFFFFFFFu;
}
