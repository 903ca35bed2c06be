/*
 * flightrec.c - PyTorch Flight Recorder dumps (flightrec.h): the parse
 * of one dump into per-process-group sequence numbers, the comparison of
 * ranks, and the directory scan.
 *
 * Unknown keys and entries of unknown shape beyond the required ones are
 * ignored (the format gains fields with each version); a required one
 * that is missing or of the wrong type refuses the dump, naming it.
 */
#include "flightrec.h"

#include "frame.h"

#include "lib/err.h"
#include "lib/log.h"
#include "lib/pickle.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Copies str value x into out (cut to fit, control bytes as '?'). */
static bool copy_str(const struct gp_pickle *p, uint32_t x, char *out, size_t cap)
{
    const char *s;
    size_t len;
    if (!gp_pickle_str(p, x, &s, &len))
        return false;
    size_t n = len < cap - 1 ? len : cap - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    out[n] = '\0';
    return true;
}

/* The process-group name of entry e: process_group[0], else pg_id. */
static bool pg_name(const struct gp_pickle *p, uint32_t e, char *out, size_t cap)
{
    if (copy_str(p, gp_pickle_item(p, gp_pickle_get(p, e, "process_group"), 0), out, cap))
        return true;
    int64_t id;
    if (!gp_pickle_int(p, gp_pickle_get(p, e, "pg_id"), &id))
        return false;
    snprintf(out, cap, "%lld", (long long)id);
    return true;
}

/* The dump's process group named name, added when new (NULL: full). */
static struct gp_fr_pg *pg_of(struct gp_fr_dump *d, const char *name)
{
    for (unsigned i = 0; i < d->npg; i++)
        if (!strcmp(d->pg[i].name, name))
            return &d->pg[i];
    if (d->npg == GP_FR_MAX_PGS)
        return NULL;
    struct gp_fr_pg *g = &d->pg[d->npg++];
    snprintf(g->name, sizeof g->name, "%s", name);
    g->last_entered = g->last_completed = g->waiting = -1;
    g->op[0] = '\0';
    return g;
}

static int entry(const struct gp_pickle *p, uint32_t e, unsigned i, struct gp_fr_dump *out,
                 char *err, size_t errlen)
{
    int64_t p2p = 0, seq;
    if (gp_pickle_int(p, gp_pickle_get(p, e, "is_p2p"), &p2p) && p2p)
        return GP_OK;
    if (!gp_pickle_int(p, gp_pickle_get(p, e, "collective_seq_id"), &seq) || seq < 0)
        return gp_seterr(err, errlen, GP_EPARSE, "flight recorder: entry %u: no collective_seq_id", i);
    char name[64], state[16];
    if (!pg_name(p, e, name, sizeof name))
        return gp_seterr(err, errlen, GP_EPARSE, "flight recorder: entry %u: no process_group", i);
    if (!copy_str(p, gp_pickle_get(p, e, "state"), state, sizeof state))
        return gp_seterr(err, errlen, GP_EPARSE, "flight recorder: entry %u: no state", i);
    struct gp_fr_pg *g = pg_of(out, name);
    if (!g)
        return GP_OK; /* past GP_FR_MAX_PGS groups: the first ones are kept */
    if (seq > g->last_entered)
        g->last_entered = seq;
    if (!strcmp(state, "completed")) {
        if (seq > g->last_completed)
            g->last_completed = seq;
    } else if (g->waiting < 0 || seq < g->waiting) {
        g->waiting = seq;
        if (!copy_str(p, gp_pickle_get(p, e, "profiling_name"), g->op, sizeof g->op))
            snprintf(g->op, sizeof g->op, "collective");
    }
    return GP_OK;
}

int gp_fr_parse(const uint8_t *buf, size_t len, int32_t rank, struct gp_fr_dump *out, char *err,
                size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->rank = -1;
    struct gp_pickle p;
    int rc = gp_pickle_parse(buf, len, &p, err, errlen);
    if (rc) {
        gp_pickle_free(&p);
        return rc;
    }
    int64_t r;
    if (p.v[p.root].type != GP_PK_DICT)
        rc = gp_seterr(err, errlen, GP_EPARSE, "flight recorder: the dump is not a dict");
    else if (gp_pickle_int(&p, gp_pickle_get(&p, p.root, "rank"), &r) && r >= 0 && r <= INT32_MAX)
        out->rank = (int32_t)r;
    else if (rank >= 0)
        out->rank = rank;
    else
        rc = gp_seterr(err, errlen, GP_EPARSE, "flight recorder: no rank in the dump or its name");
    uint32_t es = rc ? GP_PICKLE_NONE : gp_pickle_get(&p, p.root, "entries");
    if (!rc && (es == GP_PICKLE_NONE || p.v[es].type != GP_PK_LIST))
        rc = gp_seterr(err, errlen, GP_EPARSE, "flight recorder: no 'entries' list");
    for (uint32_t i = 0; !rc && es != GP_PICKLE_NONE && i < p.v[es].n; i++) {
        uint32_t e = gp_pickle_item(&p, es, i);
        rc = p.v[e].type == GP_PK_DICT
                 ? entry(&p, e, i, out, err, errlen)
                 : gp_seterr(err, errlen, GP_EPARSE, "flight recorder: entry %u is not a dict", i);
    }
    gp_pickle_free(&p);
    return rc;
}

int32_t gp_fr_rank_of_name(const char *name)
{
    size_t n = strlen(name), d = 0;
    while (d < n && name[n - 1 - d] >= '0' && name[n - 1 - d] <= '9')
        d++;
    if (!d || d > 9)
        return -1;
    return (int32_t)strtol(name + n - d, NULL, 10);
}

void gp_fr_analyze(const struct gp_fr_dump *d, unsigned n, struct gp_fr_verdict *out)
{
    for (unsigned i = 0; i < n; i++) {
        out[i] = (struct gp_fr_verdict){.rank = d[i].rank, .missing = -1, .waiting = -1};
        for (unsigned g = 0; g < d[i].npg && out[i].waiting < 0; g++)
            if (d[i].pg[g].waiting >= 0) {
                out[i].waiting = d[i].pg[g].waiting;
                snprintf(out[i].pg, sizeof out[i].pg, "%s", d[i].pg[g].name);
                snprintf(out[i].op, sizeof out[i].op, "%s", d[i].pg[g].op);
            }
    }
    /* each group's stuck collective: the lowest some rank waits in */
    for (unsigned i = 0; i < n; i++)
        for (unsigned g = 0; g < d[i].npg; g++) {
            const struct gp_fr_pg *w = &d[i].pg[g];
            if (w->waiting < 0)
                continue;
            for (unsigned j = 0; j < n; j++)
                for (unsigned h = 0; h < d[j].npg; h++) {
                    const struct gp_fr_pg *m = &d[j].pg[h];
                    if (strcmp(m->name, w->name) || m->last_entered >= w->waiting)
                        continue;
                    if (out[j].missing < 0 || w->waiting < out[j].missing) {
                        out[j].missing = w->waiting;
                        snprintf(out[j].pg, sizeof out[j].pg, "%s", w->name);
                        snprintf(out[j].op, sizeof out[j].op, "%s", w->op);
                    }
                }
        }
}

/* Reads file path (at most GP_FR_MAX_BYTES) into a new buffer. */
static int slurp(const char *path, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return GP_EIO;
    struct stat st;
    int rc = fstat(fd, &st) || !S_ISREG(st.st_mode) ? GP_EIO
             : st.st_size > (off_t)GP_FR_MAX_BYTES   ? GP_ETOOBIG
                                                     : GP_OK;
    *buf = rc ? NULL : malloc(st.st_size ? (size_t)st.st_size : 1);
    if (!rc && !*buf)
        rc = GP_ENOMEM;
    size_t got = 0;
    while (!rc && got < (size_t)st.st_size) {
        ssize_t k = read(fd, *buf + got, (size_t)st.st_size - got);
        if (k <= 0)
            rc = GP_EIO;
        else
            got += (size_t)k;
    }
    close(fd);
    *len = got;
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

int gp_fr_scan(const char *dir, double now_s, struct gp_fr_dump **out, unsigned *n, unsigned *bad,
               char *first_err, size_t errlen)
{
    *out = NULL;
    *n = *bad = 0;
    DIR *dh = opendir(dir);
    if (!dh)
        return GP_OK;
    int rc = GP_OK;
    struct dirent *de;
    while (rc == GP_OK && *n < GP_FR_MAX_DUMPS && (de = readdir(dh))) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path ||
            lstat(path, &st) || !S_ISREG(st.st_mode) || now_s - (double)st.st_mtime > GP_FR_MAX_AGE_S)
            continue;
        uint8_t *buf = NULL;
        size_t len = 0;
        char err[160] = "";
        int frc = slurp(path, &buf, &len);
        if (frc == GP_ENOMEM) {
            rc = frc;
            break;
        }
        if (!*out && !(*out = calloc(GP_FR_MAX_DUMPS, sizeof **out))) {
            free(buf);
            rc = GP_ENOMEM;
            break;
        }
        if (!frc)
            frc = gp_fr_parse(buf, len, gp_fr_rank_of_name(de->d_name), &(*out)[*n], err, sizeof err);
        free(buf);
        if (frc == GP_ENOMEM) {
            rc = frc;
        } else if (frc) {
            if (!*bad)
                snprintf(first_err, errlen, "%s: %s", de->d_name, err[0] ? err : gp_strerror(frc));
            ++*bad;
        } else {
            ++*n;
        }
    }
    closedir(dh);
    return rc;
}

struct gp_fr_watch {
    char *dir;
    double next_s;             /* monotonic time of the next scan */
    struct gp_fr_verdict *v;   /* the last scan's verdicts */
    unsigned nv, bad;
};

struct gp_fr_watch *gp_fr_watch_new(const char *dir)
{
    struct gp_fr_watch *w = calloc(1, sizeof *w);
    if (w && !(w->dir = strdup(dir))) {
        free(w);
        w = NULL;
    }
    return w;
}

void gp_fr_watch_free(struct gp_fr_watch *w)
{
    if (!w)
        return;
    free(w->dir);
    free(w->v);
    free(w);
}

static void rescan(struct gp_fr_watch *w, double wall_s)
{
    struct gp_fr_dump *d;
    unsigned n, bad;
    char err[256] = "";
    int rc = gp_fr_scan(w->dir, wall_s, &d, &n, &bad, err, sizeof err);
    struct gp_fr_verdict *v = rc || !n ? NULL : malloc(n * sizeof *v);
    if (v)
        gp_fr_analyze(d, n, v);
    free(d);
    free(w->v);
    w->v = v;
    w->nv = v ? n : 0;
    if (rc)
        gp_log(GP_LOG_WARN, "flightrec", "flight recorder dumps not read", "dir=\"%s\" err=\"%s\"",
               w->dir, gp_strerror(rc));
    if (bad != w->bad && bad)
        gp_log(GP_LOG_WARN, "flightrec", "flight recorder dumps skipped", "dir=\"%s\" count=%u first=\"%s\"",
               w->dir, bad, err);
    w->bad = bad;
}

void gp_fr_watch_apply(struct gp_fr_watch *w, double mono_s, double wall_s,
                       struct gp_step_stats *st, unsigned n)
{
    if (!w)
        return;
    if (mono_s >= w->next_s) {
        rescan(w, wall_s);
        w->next_s = mono_s + GP_FR_RESCAN_S;
    }
    for (unsigned i = 0; i < w->nv; i++)
        for (unsigned k = 0; k < n; k++) {
            if (st[k].jid.rank != w->v[i].rank || st[k].ended)
                continue;
            st[k].fr_missing_valid = w->v[i].missing >= 0;
            st[k].fr_missing = w->v[i].missing;
            st[k].fr_waiting_valid = w->v[i].waiting >= 0;
            st[k].fr_waiting = w->v[i].waiting;
        }
}
