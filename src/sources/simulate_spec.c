/*
 * simulate_spec.c - parses "NODESxGPUSxMODEL[,...]" into groups.
 *
 * Items are split on commas, trimmed, then read left to right: a number,
 * an 'x', a number, an 'x', and the rest is the model name. Reading the
 * numbers first keeps model names that contain an 'x' (MI300X) whole.
 * Every error quotes the offending item (printable, and cut short when
 * long) so that a user sees which part of a long spec is wrong.
 */
#include "simulate_spec.h"

#include "lib/err.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define QUOTE_MAX 48

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Copies s[0..n) into out for a message: non-printables become '?', long text is cut. */
static const char *excerpt(char *out, size_t outlen, const char *s, size_t n)
{
    size_t k = 0;
    bool cut = n > QUOTE_MAX;
    if (cut)
        n = QUOTE_MAX;
    for (size_t i = 0; i < n && k + 4 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];
        out[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (cut && k + 4 <= outlen) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

/* Reads a decimal number at *p (advancing it); false when there are no digits. */
static bool read_num(const char **p, const char *end, unsigned long *v)
{
    const char *s = *p;
    unsigned long n = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        if (n < 100000000ul) /* saturate: anything this big is out of range anyway */
            n = n * 10 + (unsigned long)(*s - '0');
        s++;
    }
    if (s == *p)
        return false;
    *p = s;
    *v = n;
    return true;
}

static void skip_blanks(const char **p, const char *end)
{
    while (*p < end && is_blank(**p))
        (*p)++;
}

static bool read_x(const char **p, const char *end)
{
    skip_blanks(p, end);
    if (*p < end && (**p == 'x' || **p == 'X')) {
        (*p)++;
        skip_blanks(p, end);
        return true;
    }
    return false;
}

/* Parses one trimmed item [b, e) into *g. */
static int parse_item(const char *b, const char *e, struct gp_sim_group *g, char *err,
                      size_t errlen)
{
    char q[QUOTE_MAX + 8];
    const char *p = b;
    unsigned long nodes, gpus;
    if (!read_num(&p, e, &nodes) || !read_x(&p, e) || !read_num(&p, e, &gpus) || !read_x(&p, e) ||
        p == e)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid --simulate spec '%s': expected NODESxGPUSxMODEL",
                         excerpt(q, sizeof q, b, (size_t)(e - b)));
    if (nodes < 1 || nodes > GP_SIM_MAX_NODES)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid --simulate spec '%s': nodes must be 1 to %d",
                         excerpt(q, sizeof q, b, (size_t)(e - b)), GP_SIM_MAX_NODES);
    if (gpus < 1 || gpus > GP_SIM_MAX_GPUS_PER_NODE)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid --simulate spec '%s': GPUs per node must be 1 to %d",
                         excerpt(q, sizeof q, b, (size_t)(e - b)), GP_SIM_MAX_GPUS_PER_NODE);
    char name[64];
    size_t n = (size_t)(e - p);
    const struct gp_gpumodel *m = NULL;
    if (n < sizeof name) {
        memcpy(name, p, n);
        name[n] = '\0';
        m = gp_gpumodel_find(name);
    }
    if (!m) {
        char known[256], qm[QUOTE_MAX + 8];
        gp_gpumodel_names(known, sizeof known, ", ");
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid --simulate spec '%s': unknown GPU model '%s' (known: %s)",
                         excerpt(q, sizeof q, b, (size_t)(e - b)), excerpt(qm, sizeof qm, p, n),
                         known);
    }
    g->nodes = (unsigned)nodes;
    g->gpus = (unsigned)gpus;
    g->model = m;
    return GP_OK;
}

int gp_sim_spec_parse(const char *s, struct gp_sim_spec *out, char *err, size_t errlen)
{
    char q[QUOTE_MAX + 8];
    memset(out, 0, sizeof *out);
    if (!s)
        s = "";
    size_t len = strnlen(s, GP_SIM_MAX_SPEC_LEN + 1);
    if (len > GP_SIM_MAX_SPEC_LEN)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid --simulate spec '%s': longer than %d characters",
                         excerpt(q, sizeof q, s, len), GP_SIM_MAX_SPEC_LEN);
    const char *end = s + len;
    const char *p = s;
    skip_blanks(&p, end);
    if (p == end)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "invalid --simulate spec '%s': expected NODESxGPUSxMODEL",
                         excerpt(q, sizeof q, s, len));
    unsigned long total = 0, total_nodes = 0;
    for (const char *item = s;; ) {
        const char *comma = memchr(item, ',', (size_t)(end - item));
        const char *ie = comma ? comma : end;
        const char *b = item, *e = ie;
        while (b < e && is_blank(*b))
            b++;
        while (e > b && is_blank(e[-1]))
            e--;
        if (b == e)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "invalid --simulate spec '%s': empty item", excerpt(q, sizeof q, s, len));
        if (out->ngroups == GP_SIM_MAX_GROUPS)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "invalid --simulate spec '%s': more than %d items",
                             excerpt(q, sizeof q, s, len), GP_SIM_MAX_GROUPS);
        struct gp_sim_group *g = &out->groups[out->ngroups];
        int rc = parse_item(b, e, g, err, errlen);
        if (rc != GP_OK)
            return rc;
        out->ngroups++;
        total += (unsigned long)g->nodes * g->gpus;
        total_nodes += g->nodes;
        if (total > GP_SIM_MAX_TOTAL_GPUS)
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "invalid --simulate spec '%s': more than %d GPUs in all",
                             excerpt(q, sizeof q, s, len), GP_SIM_MAX_TOTAL_GPUS);
        if (!comma)
            break;
        item = comma + 1;
    }
    out->total_gpus = (unsigned)total;
    out->total_nodes = (unsigned)total_nodes;
    return GP_OK;
}
