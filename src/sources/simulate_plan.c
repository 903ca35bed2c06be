/*
 * simulate_plan.c - jobs and planted faults of a simulated fleet.
 *
 * Placement of the seeded plan (docs/simulate.md):
 * - the nodes are put in a seeded order (Fisher-Yates on splitmix64);
 * - the straggler goes first, to the first node in that order with at
 *   least four GPUs (it needs peers for its step time to be an outlier);
 *   a fleet without such a node gets no straggler;
 * - leak, starved, throttled, ECC, idle and powercap follow, each to the
 *   next node not used yet, so in a fleet of nine nodes or more every fault is alone
 *   on its node; smaller fleets wrap round and put faults on distinct
 *   GPUs of shared nodes, never leaving the straggler fewer than two
 *   peers; ECC only goes to an NVIDIA model with ECC memory (an override
 *   may name any card with ECC memory; XID 48 is NVIDIA's alone);
 * - powercap goes, like the straggler, to a node of at least four GPUs
 *   (not the straggler's); hang and restart, faults of a whole job, only
 *   to a node of their own (no other fault there), else not at all;
 * - the GPU within the node is picked by hash from the free ones.
 * Timelines (assign_timelines): each job's step time, checkpoints every
 * 4-5.5 minutes of stepping (15-25 s each; not the single-GPU jobs, not
 * the leaking rank, not the crash loop, which never reaches one), the
 * hang's time, the crash loop's period and the model FLOPs each rank
 * declares (40-55 % MFU on its card while it steps).
 * An override names the GPUs itself and is checked against the spec the
 * same way. Everything is a function of (spec, seed, override): no
 * global state, no clock.
 */
#include "simulate_plan.h"

#include "lib/err.h"
#include "lib/gpumodels.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const struct gp_sim_fault_info gp_sim_fault_infos[GP_SIM_FAULT__COUNT] = {
#define GP_SIM_FAULT_INFO_(id, name, expect, allow) {name, expect, allow},
    GP_SIM_FAULTS(GP_SIM_FAULT_INFO_)
#undef GP_SIM_FAULT_INFO_
};

#define QUOTE_MAX 48

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void gp_sim_job_name(char *out, size_t outlen, unsigned k) { snprintf(out, outlen, "sim-job-%u", k); }

bool gp_sim_fault_job_wide(enum gp_sim_fault_kind k)
{
    return k == GP_SIM_FAULT_HANG || k == GP_SIM_FAULT_RESTART;
}

double gp_sim_unit(uint64_t key, uint64_t a, uint64_t b)
{
    return (double)(mix64(key ^ mix64(a * 0x100000001b3ull ^ mix64(b))) >> 11) * (1.0 / 9007199254740992.0);
}

/* Faults whose GPU becomes a job of its own. */
static bool solo(enum gp_sim_fault_kind k)
{
    return k == GP_SIM_FAULT_STARVED || k == GP_SIM_FAULT_THROTTLED || k == GP_SIM_FAULT_IDLE;
}

/* ---- the override ---- */

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Printable copy of s[0..n) for a message, cut when long. */
static const char *quote(char *out, size_t outlen, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && i < QUOTE_MAX && k + 4 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];
        out[k++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n > QUOTE_MAX && k + 4 <= outlen) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

static bool num(const char **p, const char *e, unsigned *v)
{
    const char *s = *p;
    unsigned long n = 0;
    while (s < e && *s >= '0' && *s <= '9') {
        if (n < 1000000ul)
            n = n * 10 + (unsigned long)(*s - '0');
        s++;
    }
    if (s == *p || n >= 1000000ul)
        return false;
    *p = s;
    *v = (unsigned)n;
    return true;
}

/* One trimmed item [b, e): KIND=sim-node-N/G. */
static int parse_fault(const char *b, const char *e, struct gp_sim_faults *out, char *err, size_t errlen)
{
    char q[QUOTE_MAX + 8];
    const char *eq = memchr(b, '=', (size_t)(e - b));
    if (!eq)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid simulate_faults item '%s': expected KIND=sim-node-N/GPU",
                         quote(q, sizeof q, b, (size_t)(e - b)));
    const char *ke = eq;
    while (ke > b && blank(ke[-1]))
        ke--;
    int kind = -1;
    for (int k = 0; k < GP_SIM_FAULT__COUNT; k++)
        if ((size_t)(ke - b) == strlen(gp_sim_fault_infos[k].name) &&
            !memcmp(b, gp_sim_fault_infos[k].name, (size_t)(ke - b)))
            kind = k;
    if (kind < 0) {
        char qk[QUOTE_MAX + 8];
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid simulate_faults item '%s': unknown fault '%s' (known: leak, "
                         "straggler, starved, throttled, ecc, idle, powercap, hang, restart)",
                         quote(q, sizeof q, b, (size_t)(e - b)), quote(qk, sizeof qk, b, (size_t)(ke - b)));
    }
    const char *p = eq + 1;
    while (p < e && blank(*p))
        p++;
    static const char pre[] = "sim-node-";
    unsigned node, gpu;
    if ((size_t)(e - p) < sizeof pre - 1 || memcmp(p, pre, sizeof pre - 1))
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid simulate_faults item '%s': expected KIND=sim-node-N/GPU",
                         quote(q, sizeof q, b, (size_t)(e - b)));
    p += sizeof pre - 1;
    if (!num(&p, e, &node) || p == e || *p != '/' || (p++, !num(&p, e, &gpu)) || p != e)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid simulate_faults item '%s': expected KIND=sim-node-N/GPU",
                         quote(q, sizeof q, b, (size_t)(e - b)));
    for (unsigned i = 0; i < out->n; i++) {
        if ((int)out->f[i].kind == kind)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "invalid simulate_faults item '%s': fault '%s' given twice",
                             quote(q, sizeof q, b, (size_t)(e - b)), gp_sim_fault_infos[kind].name);
        if (out->f[i].node == node && out->f[i].gpu == gpu)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "invalid simulate_faults item '%s': sim-node-%u/%u already has a fault",
                             quote(q, sizeof q, b, (size_t)(e - b)), node, gpu);
    }
    out->f[out->n++] = (struct gp_sim_fault){(enum gp_sim_fault_kind)kind, node, gpu, 0, -1};
    return GP_OK;
}

int gp_sim_faults_parse(const char *s, struct gp_sim_faults *out, char *err, size_t errlen)
{
    char q[QUOTE_MAX + 8];
    memset(out, 0, sizeof *out);
    if (!s)
        s = "";
    size_t len = strnlen(s, GP_SIM_MAX_SPEC_LEN + 1);
    if (len > GP_SIM_MAX_SPEC_LEN)
        return gp_seterr(err, errlen, GP_EUSAGE, "invalid simulate_faults '%s': longer than %d characters",
                         quote(q, sizeof q, s, len), GP_SIM_MAX_SPEC_LEN);
    const char *b = s, *end = s + len;
    while (b < end && blank(*b))
        b++;
    const char *e = end;
    while (e > b && blank(e[-1]))
        e--;
    if (b == e)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid simulate_faults '%s': expected none or KIND=sim-node-N/GPU[,...]",
                         quote(q, sizeof q, s, len));
    if (e - b == 4 && !memcmp(b, "none", 4))
        return GP_OK;
    for (const char *item = b;;) {
        const char *comma = memchr(item, ',', (size_t)(e - item));
        const char *ib = item, *ie = comma ? comma : e;
        while (ib < ie && blank(*ib))
            ib++;
        while (ie > ib && blank(ie[-1]))
            ie--;
        if (ib == ie)
            return gp_seterr(err, errlen, GP_EUSAGE, "invalid simulate_faults '%s': empty item",
                             quote(q, sizeof q, s, len));
        if (out->n == GP_SIM_FAULT__COUNT)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "invalid simulate_faults '%s': more than one fault of a kind",
                             quote(q, sizeof q, s, len));
        int rc = parse_fault(ib, ie, out, err, errlen);
        if (rc != GP_OK)
            return rc;
        if (!comma)
            break;
        item = comma + 1;
    }
    return GP_OK;
}

/* ---- the plan ---- */

struct layout {
    unsigned nnodes;
    unsigned *first, *count; /* per node: frame index of its GPU 0, its GPUs */
    const struct gp_gpumodel **model;
};

static int layout_build(const struct gp_sim_spec *spec, struct layout *l)
{
    l->nnodes = spec->total_nodes;
    l->first = calloc(l->nnodes ? l->nnodes : 1, sizeof *l->first);
    l->count = calloc(l->nnodes ? l->nnodes : 1, sizeof *l->count);
    l->model = calloc(l->nnodes ? l->nnodes : 1, sizeof *l->model);
    if (!l->first || !l->count || !l->model)
        return GP_ENOMEM;
    unsigned node = 0, idx = 0;
    for (unsigned g = 0; g < spec->ngroups; g++)
        for (unsigned n = 0; n < spec->groups[g].nodes; n++, node++) {
            l->first[node] = idx;
            l->count[node] = spec->groups[g].gpus;
            l->model[node] = spec->groups[g].model;
            idx += spec->groups[g].gpus;
        }
    return GP_OK;
}

static void layout_free(struct layout *l)
{
    free(l->first);
    free(l->count);
    free(l->model);
}

/* GPUs of node left in its node job (not a solo fault). */
static unsigned job_ranks(const struct gp_sim_plan *p, const struct layout *l, unsigned node)
{
    unsigned n = 0;
    for (unsigned i = 0; i < l->count[node]; i++) {
        int f = p->slots[l->first[node] + i].fault;
        n += f < 0 || !solo((enum gp_sim_fault_kind)f);
    }
    return n;
}

/* Puts fault k on a free GPU of node (picked by h); false when none fits. */
static bool place(struct gp_sim_plan *p, const struct layout *l, unsigned node, enum gp_sim_fault_kind k,
                  unsigned straggler_node, bool have_straggler, uint64_t h)
{
    /* ECC with its XID 48: an NVIDIA card with ECC memory */
    if (k == GP_SIM_FAULT_ECC && (!l->model[node]->ecc || l->model[node]->vendor != GP_VENDOR_NVIDIA))
        return false;
    if (solo(k) && have_straggler && node == straggler_node && job_ranks(p, l, node) <= 3)
        return false;
    /* a second slow rank needs peers too, and not the straggler's */
    if (k == GP_SIM_FAULT_POWERCAP && (l->count[node] < 4 || (have_straggler && node == straggler_node)))
        return false;
    unsigned nfree = 0;
    for (unsigned i = 0; i < l->count[node]; i++)
        nfree += p->slots[l->first[node] + i].fault < 0;
    if (!nfree)
        return false;
    /* a whole job's fault: a node of its own */
    if (gp_sim_fault_job_wide(k) && nfree != l->count[node])
        return false;
    unsigned pick = (unsigned)(h % nfree);
    for (unsigned i = 0; i < l->count[node]; i++) {
        struct gp_sim_slot *s = &p->slots[l->first[node] + i];
        if (s->fault >= 0 || pick--)
            continue;
        s->fault = (int)k;
        p->faults[p->nfaults++] = (struct gp_sim_fault){k, node, i, 0, -1};
        return true;
    }
    return false;
}

static int seeded_plan(struct gp_sim_plan *p, const struct layout *l, uint64_t seed)
{
    unsigned n = l->nnodes;
    unsigned *order = calloc(n, sizeof *order);
    bool *used = calloc(n, sizeof *used);
    if (!order || !used) {
        free(order);
        free(used);
        return GP_ENOMEM;
    }
    for (unsigned i = 0; i < n; i++)
        order[i] = i;
    uint64_t st = mix64(seed ^ 0x706c616eull);
    for (unsigned i = n; i > 1; i--) {
        st = mix64(st);
        unsigned j = (unsigned)(st % i);
        unsigned t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    bool have_s = false;
    unsigned s_node = 0;
    for (unsigned i = 0; i < n && !have_s; i++)
        if (l->count[order[i]] >= 4) {
            s_node = order[i];
            have_s = place(p, l, s_node, GP_SIM_FAULT_STRAGGLER, 0, false, mix64(seed ^ 0x5354ull));
            used[s_node] = have_s;
        }
    static const enum gp_sim_fault_kind rest[] = {GP_SIM_FAULT_LEAK, GP_SIM_FAULT_STARVED,
                                                  GP_SIM_FAULT_THROTTLED, GP_SIM_FAULT_ECC,
                                                  GP_SIM_FAULT_IDLE,     GP_SIM_FAULT_POWERCAP,
                                                  GP_SIM_FAULT_HANG,     GP_SIM_FAULT_RESTART};
    for (size_t r = 0; r < sizeof rest / sizeof rest[0]; r++) {
        uint64_t h = mix64(seed ^ mix64(0x6661756c74ull + r));
        bool done = false;
        for (int pass = 0; pass < 2 && !done; pass++)
            for (unsigned i = 0; i < n && !done; i++) {
                unsigned node = order[i];
                if ((pass == 0 || gp_sim_fault_job_wide(rest[r])) && used[node])
                    continue;
                done = place(p, l, node, rest[r], s_node, have_s, h);
                if (done)
                    used[node] = true;
            }
    }
    free(order);
    free(used);
    return GP_OK;
}

static int override_plan(struct gp_sim_plan *p, const struct layout *l, const struct gp_sim_faults *o,
                         char *err, size_t errlen)
{
    for (unsigned i = 0; i < o->n; i++) {
        const struct gp_sim_fault *f = &o->f[i];
        const char *name = gp_sim_fault_infos[f->kind].name;
        if (f->node >= l->nnodes)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "simulate_faults: %s on sim-node-%u, but the fleet has nodes 0 to %u", name,
                             f->node, l->nnodes - 1);
        if (f->gpu >= l->count[f->node])
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "simulate_faults: %s on sim-node-%u/%u, but that node has GPUs 0 to %u", name,
                             f->node, f->gpu, l->count[f->node] - 1);
        if (f->kind == GP_SIM_FAULT_ECC && !l->model[f->node]->ecc)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "simulate_faults: ecc on sim-node-%u/%u, but a %s has no ECC memory", f->node,
                             f->gpu, l->model[f->node]->name);
        p->slots[l->first[f->node] + f->gpu].fault = (int)f->kind;
        p->faults[p->nfaults++] = *f;
    }
    for (unsigned i = 0; i < p->nfaults; i++) {
        const struct gp_sim_fault *f = &p->faults[i];
        const char *name = gp_sim_fault_infos[f->kind].name;
        if ((f->kind == GP_SIM_FAULT_STRAGGLER || f->kind == GP_SIM_FAULT_POWERCAP) &&
            job_ranks(p, l, f->node) < 3)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "simulate_faults: the %s on sim-node-%u/%u needs at least two peers in "
                             "its node's job, it has %u",
                             name, f->node, f->gpu, job_ranks(p, l, f->node) - 1);
        for (unsigned j = 0; j < p->nfaults && gp_sim_fault_job_wide(f->kind); j++)
            if (j != i && p->faults[j].node == f->node && !solo(p->faults[j].kind))
                return gp_seterr(err, errlen, GP_EUSAGE,
                                 "simulate_faults: the %s on sim-node-%u/%u is a fault of its whole job, "
                                 "but %s is in that job too",
                                 name, f->node, f->gpu, gp_sim_fault_infos[p->faults[j].kind].name);
    }
    return GP_OK;
}

/* Numbers the jobs and ranks once the faults are placed. */
static void assign_jobs(struct gp_sim_plan *p, const struct layout *l, uint64_t seed)
{
    unsigned k = 0;
    for (unsigned node = 0; node < l->nnodes; node++) {
        unsigned world = job_ranks(p, l, node), rank = 0, main_job = k;
        if (world)
            k++;
        for (unsigned i = 0; i < l->count[node]; i++) {
            struct gp_sim_slot *s = &p->slots[l->first[node] + i];
            if (s->fault >= 0 && solo((enum gp_sim_fault_kind)s->fault)) {
                s->job = k++;
                s->rank = 0;
                s->world = 1;
            } else {
                s->job = main_job;
                s->rank = (int)rank++;
                s->world = (int)world;
            }
        }
    }
    p->njobs = k;
    for (unsigned i = 0; i < p->ngpus; i++) {
        uint64_t h = mix64(seed ^ mix64(0x6a6f62ull + p->slots[i].job));
        p->slots[i].start_s = 1 + 4 * (double)(h >> 11) * (1.0 / 9007199254740992.0);
    }
    for (unsigned i = 0; i < p->nfaults; i++) {
        struct gp_sim_fault *f = &p->faults[i];
        const struct gp_sim_slot *s = &p->slots[l->first[f->node] + f->gpu];
        f->job = s->job;
        f->rank = s->rank;
    }
}

/* The numbers each rank's steps follow (simulate_plan.h, gp_sim_slot). */
static void assign_timelines(struct gp_sim_plan *p, const struct layout *l, uint64_t seed)
{
    unsigned hang_job = UINT_MAX;
    for (unsigned i = 0; i < p->nfaults; i++)
        if (p->faults[i].kind == GP_SIM_FAULT_HANG)
            hang_job = p->faults[i].job;
    for (unsigned node = 0; node < l->nnodes; node++)
        for (unsigned i = 0; i < l->count[node]; i++) {
            unsigned gi = l->first[node] + i;
            struct gp_sim_slot *s = &p->slots[gi];
            /* the job's pace, then a rank's own 1 % */
            double base = 0.35 + 0.4 * gp_sim_unit(seed, 0x6a6f62, s->job);
            s->step_s = base * (1 + 0.01 * gp_sim_unit(seed, 0x72616e6b, gi));
            s->wait_share = 0.02;
            s->flops_token = 0;
            switch (s->fault) {
            case GP_SIM_FAULT_STARVED:
                s->step_s = 4 + 2 * gp_sim_unit(seed, 0x7374, gi); /* one step a data cycle */
                s->duty = 0.35 + 0.1 * gp_sim_unit(seed, 0x6475, gi);
                s->wait_share = 1 - s->duty;
                break;
            case GP_SIM_FAULT_LEAK:
                s->oom_s = 900 + 120 * gp_sim_unit(seed, 0x6f6f6d, gi); /* 15 to 17 minutes to OOM */
                break;
            case GP_SIM_FAULT_STRAGGLER: s->step_s *= 1.6; break; /* the SM clock at ~62 % */
            case GP_SIM_FAULT_POWERCAP: s->step_s *= 1.35; break; /* ~72 % clocks at its lower limit */
            case GP_SIM_FAULT_THROTTLED: s->step_s *= 1.2; break;
            default: break;
            }
            /* node jobs checkpoint; the single-GPU faults and the leaking rank do not */
            if (s->fault < 0 || (!solo((enum gp_sim_fault_kind)s->fault) && s->fault != GP_SIM_FAULT_LEAK)) {
                s->ckpt_every_s = 240 + 90 * gp_sim_unit(seed, 0x636b70, s->job);
                s->ckpt_s = 15 + 10 * gp_sim_unit(seed, 0x636b64, s->job);
            }
            if (s->job == hang_job) /* before its first checkpoint */
                s->hang_at_s = 150 + 60 * gp_sim_unit(seed, 0x68616e67, s->job);
            /* MFU: FLOPs a token for 40-55 % of the card's peak at the job's pace */
            s->peak_flops = gp_gpumodel_peak_tflops(l->model[node], GP_PREC_BF16) * 1e12;
            if (s->fault != GP_SIM_FAULT_IDLE)
                s->flops_token = (0.40 + 0.15 * gp_sim_unit(seed, 0x6d6675, s->job)) * s->peak_flops * base /
                                 (GP_SIM_BATCH * GP_SIM_SEQ);
        }
    /* the crash loop: every rank of the job, before its first checkpoint */
    for (unsigned i = 0; i < p->nfaults; i++) {
        if (p->faults[i].kind != GP_SIM_FAULT_RESTART)
            continue;
        double every = 150 + 50 * gp_sim_unit(seed, 0x63726173, p->faults[i].job);
        for (unsigned g = 0; g < p->ngpus; g++)
            if (p->slots[g].job == p->faults[i].job)
                p->slots[g].crash_every_s = every;
    }
}

int gp_sim_plan_build(const struct gp_sim_spec *spec, uint64_t seed, const char *faults,
                      struct gp_sim_plan *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct gp_sim_faults o;
    bool over = faults && *faults;
    if (over) {
        int rc = gp_sim_faults_parse(faults, &o, err, errlen);
        if (rc != GP_OK)
            return rc;
    }
    struct layout l = {0};
    int rc = layout_build(spec, &l);
    out->ngpus = spec->total_gpus;
    out->slots = rc == GP_OK ? calloc(out->ngpus ? out->ngpus : 1, sizeof *out->slots) : NULL;
    if (!out->slots) {
        layout_free(&l);
        return gp_seterr(err, errlen, GP_ENOMEM, "simulate: out of memory for the fault plan");
    }
    for (unsigned i = 0; i < out->ngpus; i++)
        out->slots[i].fault = -1;
    rc = over ? override_plan(out, &l, &o, err, errlen) : seeded_plan(out, &l, seed);
    if (rc == GP_ENOMEM)
        gp_seterr(err, errlen, rc, "simulate: out of memory for the fault plan");
    if (rc == GP_OK) {
        assign_jobs(out, &l, seed);
        assign_timelines(out, &l, seed);
    }
    layout_free(&l);
    if (rc != GP_OK)
        gp_sim_plan_free(out);
    return rc;
}

void gp_sim_plan_free(struct gp_sim_plan *p)
{
    if (!p)
        return;
    free(p->slots);
    memset(p, 0, sizeof *p);
}

/* ["a", "b"] from a space-separated list. */
static void kinds_json(FILE *out, const char *list)
{
    fputc('[', out);
    bool first = true;
    for (const char *s = list; *s;) {
        size_t n = strcspn(s, " ");
        if (n) {
            fprintf(out, "%s\"%.*s\"", first ? "" : ", ", (int)n, s);
            first = false;
        }
        s += n;
        s += *s == ' ';
    }
    fputc(']', out);
}

/* The figures of a number list: "[0.51234, ...]" of the job's ranks' field. */
static void ranks_json(FILE *out, const struct gp_sim_plan *p, unsigned job, size_t off)
{
    fputc('[', out);
    bool first = true;
    for (unsigned i = 0; i < p->ngpus; i++)
        if (p->slots[i].job == job) {
            fprintf(out, "%s%.9g", first ? "" : ", ", *(const double *)((const char *)&p->slots[i] + off));
            first = false;
        }
    fputc(']', out);
}

int gp_sim_plan_truth_json(const struct gp_sim_plan *p, const struct gp_sim_spec *spec,
                           const char *spec_text, uint64_t seed, FILE *out)
{
    char job[32];
    fputs("{\"spec\": \"", out);
    for (const char *s = spec_text; *s; s++) /* the spec parsed, so no quote or control character */
        if (*s != '"' && *s != '\\' && (unsigned char)*s >= 0x20)
            fputc(*s, out);
    fprintf(out, "\", \"seed\": %llu, \"load_s\": %g, \"restart_s\": %g, \"tokens_per_step\": %d, "
                 "\"faults\": [",
            (unsigned long long)seed, GP_SIM_LOAD_S, GP_SIM_RESTART_S, GP_SIM_BATCH * GP_SIM_SEQ);
    for (unsigned i = 0; i < p->nfaults; i++) {
        const struct gp_sim_fault *f = &p->faults[i];
        gp_sim_job_name(job, sizeof job, f->job);
        fprintf(out, "%s\n  {\"kind\": \"%s\", \"node\": \"sim-node-%u\", \"gpu\": \"%u\", \"job\": \"%s\", "
                     "\"rank\": \"%d\", \"scope\": \"%s\", \"expect\": ",
                i ? "," : "", gp_sim_fault_infos[f->kind].name, f->node, f->gpu, job, f->rank,
                gp_sim_fault_job_wide(f->kind) ? "job" : "gpu");
        kinds_json(out, gp_sim_fault_infos[f->kind].expect);
        fputs(", \"allow\": ", out);
        kinds_json(out, gp_sim_fault_infos[f->kind].allow);
        /* what the alert must say: the rank that stopped first, the badput */
        if (f->kind == GP_SIM_FAULT_HANG)
            fprintf(out, ", \"says\": \"rank %d\"", f->rank);
        else if (f->kind == GP_SIM_FAULT_RESTART)
            fputs(", \"says\": \"lost\"", out);
        fputc('}', out);
    }
    fputs("],\n \"jobs\": [", out);
    unsigned idx = 0, node = 0;
    bool first = true;
    for (unsigned g = 0; g < spec->ngroups; g++)
        for (unsigned n = 0; n < spec->groups[g].nodes; n++, node++, idx += spec->groups[g].gpus)
            for (unsigned i = 0; i < spec->groups[g].gpus; i++) {
                const struct gp_sim_slot *s = &p->slots[idx + i];
                if (s->rank != 0)
                    continue;
                gp_sim_job_name(job, sizeof job, s->job);
                int fault = -1; /* the job's fault, if it has one */
                for (unsigned k = 0; k < p->ngpus && fault < 0; k++)
                    if (p->slots[k].job == s->job)
                        fault = p->slots[k].fault;
                fprintf(out, "%s\n  {\"job\": \"%s\", \"node\": \"sim-node-%u\", \"ranks\": %d, "
                             "\"fault\": \"%s\", \"first_step_s\": %.9g, \"checkpoint_every_s\": %.9g, "
                             "\"checkpoint_s\": %.9g, \"hang_at_s\": %.9g, \"crash_every_s\": %.9g, "
                             "\"precision\": \"bf16\", \"step_s\": ",
                        first ? "" : ",", job, node, s->world, fault >= 0 ? gp_sim_fault_infos[fault].name : "",
                        s->start_s + GP_SIM_LOAD_S, s->ckpt_every_s, s->ckpt_s, s->hang_at_s, s->crash_every_s);
                ranks_json(out, p, s->job, offsetof(struct gp_sim_slot, step_s));
                fputs(", \"wait_share\": ", out);
                ranks_json(out, p, s->job, offsetof(struct gp_sim_slot, wait_share));
                fputs(", \"oom_s\": ", out);
                ranks_json(out, p, s->job, offsetof(struct gp_sim_slot, oom_s));
                fputs(", \"flops_per_token\": ", out);
                ranks_json(out, p, s->job, offsetof(struct gp_sim_slot, flops_token));
                fputs(", \"peak_flops\": ", out);
                ranks_json(out, p, s->job, offsetof(struct gp_sim_slot, peak_flops));
                fputc('}', out);
                first = false;
            }
    fputs("]}\n", out);
    return ferror(out) ? GP_EIO : GP_OK;
}

int gp_sim_write_truth(const char *spec_text, uint64_t seed, const char *faults, const char *path,
                       char *err, size_t errlen)
{
    struct gp_sim_spec *spec = malloc(sizeof *spec);
    if (!spec)
        return gp_seterr(err, errlen, GP_ENOMEM, "simulate: out of memory");
    struct gp_sim_plan p;
    int rc = gp_sim_spec_parse(spec_text, spec, err, errlen);
    if (rc == GP_OK)
        rc = gp_sim_plan_build(spec, seed, faults, &p, err, errlen);
    if (rc != GP_OK) {
        free(spec);
        return rc;
    }
    bool std = !strcmp(path, "-");
    FILE *out = std ? stdout : fopen(path, "w");
    if (out) {
        rc = gp_sim_plan_truth_json(&p, spec, spec_text, seed, out);
        if ((std ? fflush(out) : fclose(out)) != 0)
            rc = GP_EIO;
    }
    if (!out || rc != GP_OK)
        rc = gp_seterr(err, errlen, GP_EIO, "cannot write the simulation truth to '%s'", path);
    gp_sim_plan_free(&p);
    free(spec);
    return rc;
}
