/*
 * jobs.c - the jobs registry and its scanner (jobs.h): fold the
 * gpulse_job_* series into job rows, keep them in memory sorted by id,
 * write the changed ones to state.db, answer the list route.
 */
#include "server/jobs.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/json.h"
#include "lib/periodic.h"
#include "state/state.h"
#include "store/labels.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FULL_SCAN_EVERY 60
#define LOOKBACK_MS (5 * 60 * 1000)

struct gp_jobs {
    pthread_mutex_t mu; /* the registry, the database, the stats */
    sqlite3 *db;
    struct gp_jobs_entry **v;  /* sorted by id */
    size_t n, cap;
    int64_t interval_ms;
    int64_t scanned_to; /* "now" of the last scan; 0 before the first */
    uint32_t max_id;    /* newest store series id any scan has folded */
    struct gp_jobs_stats stats;

    struct gp_periodic th; /* the scans */
    struct gp_storage *st;
};

static const char *const state_names[] = {
#define GP_JOB_STATE_NAME_(id, name) name,
    GP_JOB_STATES(GP_JOB_STATE_NAME_)
#undef GP_JOB_STATE_NAME_
};

const char *gp_job_state_name(enum gp_job_state s)
{
    return (unsigned)s < GP_JOBS_STATE_COUNT ? state_names[s] : "unknown";
}

int gp_job_state_parse(const char *s, size_t len, enum gp_job_state *out)
{
    for (int i = 0; i < GP_JOBS_STATE_COUNT; i++)
        if (strlen(state_names[i]) == len && !memcmp(state_names[i], s, len)) {
            *out = (enum gp_job_state)i;
            return GP_OK;
        }
    return GP_EPARSE;
}

int64_t gp_job_lost_after_ms(int64_t interval_ms)
{
    return 3 * interval_ms > LOOKBACK_MS ? 3 * interval_ms : LOOKBACK_MS;
}

enum gp_job_state gp_job_state_at(const struct gp_jobs_entry *j, int64_t now_ms, int64_t interval_ms)
{
    if (j->exit_status != GP_JOBS_NONE)
        return j->exit_status == 0 ? GP_JOBS_FINISHED : j->exit_status >= 128 ? GP_JOBS_KILLED : GP_JOBS_FAILED;
    if (j->end_ms != GP_JOBS_NONE)
        return GP_JOBS_FINISHED;
    return now_ms - j->last_ms <= gp_job_lost_after_ms(interval_ms) ? GP_JOBS_RUNNING : GP_JOBS_LOST;
}

void gp_job_free(struct gp_jobs_entry *j)
{
    if (!j)
        return;
    free(j->ranks);
    free(j->gpus);
    j->ranks = NULL;
    j->gpus = NULL;
    j->nranks = j->ngpus = 0;
}

/* ---- the sorted registry ---- */

/* Index of id, or -(insertion point) - 1. */
static long find(const struct gp_jobs *j, const char *id)
{
    size_t lo = 0, hi = j->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(j->v[mid]->id, id);
        if (!c)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

/* The job named id, created when absent. NULL on ENOMEM. */
static struct gp_jobs_entry *job_get_or_add(struct gp_jobs *j, const char *id)
{
    long at = find(j, id);
    if (at >= 0)
        return j->v[at];
    size_t pos = (size_t)(-at - 1);
    if (j->n == j->cap) {
        size_t nc = j->cap ? j->cap * 2 : 64;
        struct gp_jobs_entry **nv = realloc(j->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        j->v = nv;
        j->cap = nc;
    }
    struct gp_jobs_entry *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    snprintf(job->id, sizeof job->id, "%s", id);
    job->first_ms = INT64_MAX;
    job->last_ms = INT64_MIN;
    job->start_ms = job->end_ms = job->exit_status = GP_JOBS_NONE;
    job->dirty = 1;
    memmove(j->v + pos + 1, j->v + pos, (j->n - pos) * sizeof *j->v);
    j->v[pos] = job;
    j->n++;
    return job;
}

static int rank_cmp(const struct gp_job_rank *a, const struct gp_job_rank *b)
{
    /* Known ranks first, ascending; then by node. */
    if (a->rank != b->rank) {
        if (a->rank == GP_JOBS_NONE || b->rank == GP_JOBS_NONE)
            return a->rank == GP_JOBS_NONE ? 1 : -1;
        return a->rank < b->rank ? -1 : 1;
    }
    return strcmp(a->node, b->node);
}

/* The rank entry (node, rank) of job, added when absent. NULL on ENOMEM. */
static struct gp_job_rank *rank_get_or_add(struct gp_jobs_entry *job, const char *node, int64_t rank)
{
    struct gp_job_rank key;
    memset(&key, 0, sizeof key);
    snprintf(key.node, sizeof key.node, "%s", node);
    key.rank = rank;
    size_t pos = 0;
    for (; pos < job->nranks; pos++) {
        int c = rank_cmp(&job->ranks[pos], &key);
        if (!c)
            return &job->ranks[pos];
        if (c > 0)
            break;
    }
    struct gp_job_rank *nr = realloc(job->ranks, (job->nranks + 1) * sizeof *nr);
    if (!nr)
        return NULL;
    job->ranks = nr;
    memmove(nr + pos + 1, nr + pos, (job->nranks - pos) * sizeof *nr);
    key.local_rank = key.world_size = GP_JOBS_NONE;
    key.first_ms = INT64_MAX;
    key.last_ms = INT64_MIN;
    nr[pos] = key;
    job->nranks++;
    job->dirty = 1;
    return &nr[pos];
}

/* Adds GPU (node, gpu) to job when absent: 1 added, 0 present, GP_ENOMEM. */
static int gpu_add(struct gp_jobs_entry *job, const char *node, const char *gpu)
{
    size_t pos = 0;
    for (; pos < job->ngpus; pos++) {
        int c = strcmp(job->gpus[pos].node, node);
        if (!c)
            c = strcmp(job->gpus[pos].gpu, gpu);
        if (!c)
            return 0;
        if (c > 0)
            break;
    }
    struct gp_job_gpu *ng = realloc(job->gpus, (job->ngpus + 1) * sizeof *ng);
    if (!ng)
        return GP_ENOMEM;
    job->gpus = ng;
    memmove(ng + pos + 1, ng + pos, (job->ngpus - pos) * sizeof *ng);
    memset(&ng[pos], 0, sizeof ng[pos]);
    snprintf(ng[pos].node, sizeof ng[pos].node, "%s", node);
    snprintf(ng[pos].gpu, sizeof ng[pos].gpu, "%s", gpu);
    job->ngpus++;
    job->dirty = 1;
    return 1;
}

/* ---- label helpers ---- */

/* Label name of s into buf (NUL-terminated): 1 when present, fits and
 * holds no NUL byte; 0 otherwise (buf ""). */
static int label(const struct gp_store_series *s, const char *name, char *buf, size_t size)
{
    struct gp_str v;
    buf[0] = '\0';
    if (gp_labels_get(s->labels, s->labels_len, name, &v) != 1 || v.len >= size ||
        memchr(v.ptr, '\0', v.len))
        return 0;
    memcpy(buf, v.ptr, v.len);
    buf[v.len] = '\0';
    return 1;
}

static void node_of(const struct gp_store_series *s, char *buf, size_t size)
{
    if (!label(s, "Hostname", buf, size))
        label(s, "hostname", buf, size);
}

/* An integer label (rank, local_rank, world_size), or GP_JOBS_NONE. */
static int64_t int_label(const struct gp_store_series *s, const char *name)
{
    char b[32], *end;
    if (!label(s, name, b, sizeof b) || !b[0])
        return GP_JOBS_NONE;
    errno = 0;
    long long v = strtoll(b, &end, 10);
    return *end || errno || v < 0 ? GP_JOBS_NONE : (int64_t)v;
}


/*
 * Selects {__name__ op name, job!=""} and keeps the series with samples
 * since `since` or newer than any folded before (ids grow): a series an
 * agent delivers late, all of it older than `since`, is still new. The
 * selection reads only the index, so looking at all of it is cheap.
 */
static int select_job_series(struct gp_jobs *j, struct gp_storage *st, enum gp_match_op op,
                             const char *name, int64_t since, uint32_t *max_id,
                             struct gp_store_selection *sel, char *err, size_t errlen)
{
    struct gp_matcher m[2];
    memset(sel, 0, sizeof *sel);
    int rc = gp_matcher_init(&m[0], op, "__name__", name, err, errlen);
    if (rc)
        return rc;
    rc = gp_matcher_init(&m[1], GP_MATCH_NE, "job", "", err, errlen);
    if (rc) {
        gp_matcher_free(&m[0]);
        return rc;
    }
    rc = gp_storage_select(st, m, 2, INT64_MIN, INT64_MAX, sel);
    gp_matcher_free(&m[0]);
    gp_matcher_free(&m[1]);
    if (rc)
        return gp_seterr(err, errlen, rc, "selecting %s: %s", name, gp_strerror(rc));
    size_t k = 0;
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *x = &sel->series[i];
        if (x->id > *max_id)
            *max_id = x->id;
        if (x->last_ms >= since || x->id > j->max_id)
            sel->series[k++] = *x;
    }
    sel->n = k;
    return GP_OK;
}

/* ---- persistence ---- */

static int64_t col_int(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? GP_JOBS_NONE : sqlite3_column_int64(st, i);
}

static void bind_int(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == GP_JOBS_NONE)
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_int64(st, i, v);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static int load(struct gp_jobs *j, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = GP_OK;
    if (sqlite3_prepare_v2(j->db,
                           "SELECT id, scheme, first_seen, last_seen, start_ms, end_ms, exit_status, "
                           "state FROM jobs",
                           -1, &st, NULL) != SQLITE_OK)
        goto sqlfail;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        struct gp_jobs_entry *job = job_get_or_add(j, col_text(st, 0));
        if (!job) {
            sqlite3_finalize(st);
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory loading jobs");
        }
        snprintf(job->scheme, sizeof job->scheme, "%s", col_text(st, 1));
        job->first_ms = sqlite3_column_int64(st, 2);
        job->last_ms = sqlite3_column_int64(st, 3);
        job->start_ms = col_int(st, 4);
        job->end_ms = col_int(st, 5);
        job->exit_status = col_int(st, 6);
        const char *state = col_text(st, 7);
        if (gp_job_state_parse(state, strlen(state), &job->state))
            job->state = gp_job_state_at(job, gp_wall_ms(), j->interval_ms);
        job->dirty = 0;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        goto sqlfail;
    if (sqlite3_prepare_v2(j->db,
                           "SELECT job, node, rank, local_rank, world_size, first_seen, last_seen "
                           "FROM job_ranks",
                           -1, &st, NULL) != SQLITE_OK)
        goto sqlfail;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        long at = find(j, col_text(st, 0));
        if (at < 0)
            continue;
        struct gp_jobs_entry *job = j->v[at];
        int64_t rank = sqlite3_column_int64(st, 2);
        struct gp_job_rank *rk = rank_get_or_add(job, col_text(st, 1), rank < 0 ? GP_JOBS_NONE : rank);
        if (!rk) {
            sqlite3_finalize(st);
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory loading jobs");
        }
        rk->local_rank = col_int(st, 3);
        rk->world_size = col_int(st, 4);
        rk->first_ms = sqlite3_column_int64(st, 5);
        rk->last_ms = sqlite3_column_int64(st, 6);
        job->dirty = 0;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        goto sqlfail;
    if (sqlite3_prepare_v2(j->db, "SELECT job, node, gpu FROM job_gpus", -1, &st, NULL) != SQLITE_OK)
        goto sqlfail;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        long at = find(j, col_text(st, 0));
        if (at < 0)
            continue;
        if (gpu_add(j->v[at], col_text(st, 1), col_text(st, 2)) < 0) {
            sqlite3_finalize(st);
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory loading jobs");
        }
        j->v[at]->dirty = 0;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        goto sqlfail;
    if (sqlite3_prepare_v2(j->db, "SELECT value FROM kv WHERE key='jobs_scanned_to'", -1, &st, NULL) !=
        SQLITE_OK)
        goto sqlfail;
    if (sqlite3_step(st) == SQLITE_ROW)
        j->scanned_to = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return GP_OK;
sqlfail:
    rc = gp_seterr(err, errlen, GP_EIO, "state.db: loading jobs: %s", sqlite3_errmsg(j->db));
    return rc;
}

/* Writes the dirty jobs and the scan mark in one transaction. */
static int save(struct gp_jobs *j, char *err, size_t errlen)
{
    sqlite3_stmt *ins = NULL, *del_r = NULL, *ins_r = NULL, *del_g = NULL, *ins_g = NULL,
                 *mark = NULL;
    int ok = sqlite3_exec(j->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok)
        goto done;
    ok = sqlite3_prepare_v2(j->db,
                            "INSERT OR REPLACE INTO jobs(id, scheme, first_seen, last_seen, start_ms,"
                            " end_ms, exit_status, state) VALUES(?,?,?,?,?,?,?,?)",
                            -1, &ins, NULL) == SQLITE_OK &&
         sqlite3_prepare_v2(j->db, "DELETE FROM job_ranks WHERE job=?", -1, &del_r, NULL) == SQLITE_OK &&
         sqlite3_prepare_v2(j->db,
                            "INSERT INTO job_ranks(job, node, rank, local_rank, world_size, first_seen,"
                            " last_seen) VALUES(?,?,?,?,?,?,?)",
                            -1, &ins_r, NULL) == SQLITE_OK &&
         sqlite3_prepare_v2(j->db, "DELETE FROM job_gpus WHERE job=?", -1, &del_g, NULL) == SQLITE_OK &&
         sqlite3_prepare_v2(j->db, "INSERT INTO job_gpus(job, node, gpu) VALUES(?,?,?)", -1, &ins_g,
                            NULL) == SQLITE_OK &&
         sqlite3_prepare_v2(j->db, "INSERT OR REPLACE INTO kv(key, value) VALUES('jobs_scanned_to', ?)",
                            -1, &mark, NULL) == SQLITE_OK;
    uint64_t rows = 0;
    for (size_t i = 0; ok && i < j->n; i++) {
        struct gp_jobs_entry *job = j->v[i];
        if (!job->dirty)
            continue;
        rows++;
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, job->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, job->scheme, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, job->first_ms);
        sqlite3_bind_int64(ins, 4, job->last_ms);
        bind_int(ins, 5, job->start_ms);
        bind_int(ins, 6, job->end_ms);
        bind_int(ins, 7, job->exit_status);
        sqlite3_bind_text(ins, 8, gp_job_state_name(job->state), -1, SQLITE_STATIC);
        ok = sqlite3_step(ins) == SQLITE_DONE;
        sqlite3_reset(del_r);
        sqlite3_bind_text(del_r, 1, job->id, -1, SQLITE_STATIC);
        ok = ok && sqlite3_step(del_r) == SQLITE_DONE;
        for (size_t k = 0; ok && k < job->nranks; k++) {
            const struct gp_job_rank *r = &job->ranks[k];
            sqlite3_reset(ins_r);
            sqlite3_bind_text(ins_r, 1, job->id, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins_r, 2, r->node, -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins_r, 3, r->rank == GP_JOBS_NONE ? -1 : r->rank);
            bind_int(ins_r, 4, r->local_rank);
            bind_int(ins_r, 5, r->world_size);
            sqlite3_bind_int64(ins_r, 6, r->first_ms);
            sqlite3_bind_int64(ins_r, 7, r->last_ms);
            ok = sqlite3_step(ins_r) == SQLITE_DONE;
        }
        sqlite3_reset(del_g);
        sqlite3_bind_text(del_g, 1, job->id, -1, SQLITE_STATIC);
        ok = ok && sqlite3_step(del_g) == SQLITE_DONE;
        for (size_t k = 0; ok && k < job->ngpus; k++) {
            sqlite3_reset(ins_g);
            sqlite3_bind_text(ins_g, 1, job->id, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins_g, 2, job->gpus[k].node, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins_g, 3, job->gpus[k].gpu, -1, SQLITE_STATIC);
            ok = sqlite3_step(ins_g) == SQLITE_DONE;
        }
    }
    if (ok) {
        sqlite3_bind_int64(mark, 1, j->scanned_to);
        ok = sqlite3_step(mark) == SQLITE_DONE;
    }
    ok = ok && sqlite3_exec(j->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    if (ok) {
        for (size_t i = 0; i < j->n; i++)
            j->v[i]->dirty = 0;
        j->stats.rows_written += rows;
    }
done:
    if (!ok) {
        gp_seterr(err, errlen, GP_EIO, "state.db: saving jobs: %s", sqlite3_errmsg(j->db));
        sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(del_r);
    sqlite3_finalize(ins_r);
    sqlite3_finalize(del_g);
    sqlite3_finalize(ins_g);
    sqlite3_finalize(mark);
    return ok ? GP_OK : GP_EIO;
}

/* ---- the scan ---- */

/* Folds the info series of sel into the registry. */
static int fold_info(struct gp_jobs *j, const struct gp_store_selection *sel)
{
    char id[GP_JOB_ID_MAX + 1], node[GP_JOB_NODE_MAX], scheme[64];
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *s = &sel->series[i];
        if (!label(s, "job", id, sizeof id)) {
            j->stats.ids_too_long++;
            continue;
        }
        struct gp_jobs_entry *job = job_get_or_add(j, id);
        if (!job)
            return GP_ENOMEM;
        if (label(s, "scheme", scheme, sizeof scheme) && strcmp(job->scheme, scheme)) {
            snprintf(job->scheme, sizeof job->scheme, "%s", scheme);
            job->dirty = 1;
        }
        if (s->first_ms < job->first_ms)
            job->first_ms = s->first_ms, job->dirty = 1;
        if (s->last_ms > job->last_ms)
            job->last_ms = s->last_ms, job->dirty = 1;
        node_of(s, node, sizeof node);
        struct gp_job_rank *r = rank_get_or_add(job, node, int_label(s, "rank"));
        if (!r)
            return GP_ENOMEM;
        int64_t lr = int_label(s, "local_rank"), ws = int_label(s, "world_size");
        if (lr != GP_JOBS_NONE && lr != r->local_rank)
            r->local_rank = lr, job->dirty = 1;
        if (ws != GP_JOBS_NONE && ws != r->world_size)
            r->world_size = ws, job->dirty = 1;
        if (s->first_ms < r->first_ms)
            r->first_ms = s->first_ms, job->dirty = 1;
        if (s->last_ms > r->last_ms)
            r->last_ms = s->last_ms, job->dirty = 1;
    }
    return GP_OK;
}

enum fold_kind { FOLD_START, FOLD_END, FOLD_EXIT };

/* Folds the newest values of the start, end or exit series of known jobs. */
static void fold_values(struct gp_jobs *j, struct gp_storage *st, const struct gp_store_selection *sel,
                        enum fold_kind kind, struct gp_samples *smp)
{
    char id[GP_JOB_ID_MAX + 1];
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *s = &sel->series[i];
        if (!label(s, "job", id, sizeof id))
            continue;
        long at = find(j, id);
        if (at < 0)
            continue;
        struct gp_jobs_entry *job = j->v[at];
        double v = gp_storage_newest_value(st, s->id, s->last_ms, LOOKBACK_MS, smp);
        if (!isfinite(v) || fabs(v) > 9e15)
            continue;
        if (kind == FOLD_EXIT) {
            int64_t x = (int64_t)v;
            if (job->exit_status == GP_JOBS_NONE || x > job->exit_status)
                job->exit_status = x, job->dirty = 1;
            continue;
        }
        int64_t ms = (int64_t)llround(v * 1000.0);
        int64_t *dst = kind == FOLD_START ? &job->start_ms : &job->end_ms;
        if (*dst == GP_JOBS_NONE || (kind == FOLD_START ? ms < *dst : ms > *dst))
            *dst = ms, job->dirty = 1;
    }
}

static int fold_gpus(struct gp_jobs *j, const struct gp_store_selection *sel)
{
    char id[GP_JOB_ID_MAX + 1], node[GP_JOB_NODE_MAX], gpu[GP_JOB_GPU_MAX], mig[24];
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *s = &sel->series[i];
        if (!label(s, "job", id, sizeof id) || !label(s, "gpu", gpu, 32))
            continue;
        long at = find(j, id);
        if (at < 0)
            continue;
        node_of(s, node, sizeof node);
        if (label(s, "GPU_I_ID", mig, sizeof mig)) {
            size_t n = strlen(gpu);
            snprintf(gpu + n, sizeof gpu - n, "/%s", mig);
        }
        if (gpu_add(j->v[at], node, gpu) < 0)
            return GP_ENOMEM;
    }
    return GP_OK;
}

int gp_jobs_scan(struct gp_jobs *j, struct gp_storage *st, int64_t now_ms, int full, char *err,
                 size_t errlen)
{
    int64_t t0 = gp_mono_ns();
    pthread_mutex_lock(&j->mu);
    int64_t overlap = 2 * j->interval_ms + 60000;
    int64_t since = full || !j->scanned_to || (j->stats.scans + 1) % FULL_SCAN_EVERY == 0
                        ? INT64_MIN
                        : j->scanned_to - overlap;
    struct gp_store_selection sel;
    struct gp_samples smp = {0};
    uint64_t looked = 0;
    static const char *const value_names[3] = {"gpulse_job_start_time_seconds",
                                               "gpulse_job_end_time_seconds",
                                               "gpulse_job_exit_status"};
    uint32_t max_id = j->max_id;
    int rc = select_job_series(j, st, GP_MATCH_EQ, "gpulse_job_info", since, &max_id, &sel, err, errlen);
    if (rc)
        goto out;
    looked += sel.n;
    rc = fold_info(j, &sel);
    gp_storage_selection_free(&sel);
    for (int k = 0; !rc && k < 3; k++) {
        if ((rc = select_job_series(j, st, GP_MATCH_EQ, value_names[k], since, &max_id, &sel, err,
                                    errlen)))
            break;
        looked += sel.n;
        fold_values(j, st, &sel, (enum fold_kind)k, &smp);
        gp_storage_selection_free(&sel);
    }
    if (!rc && !(rc = select_job_series(j, st, GP_MATCH_RE,
                                        "DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_GPU_UTIL|"
                                        "gpulse_gpu_memory_used_bytes",
                                        since, &max_id, &sel, err, errlen))) {
        looked += sel.n;
        rc = fold_gpus(j, &sel);
        gp_storage_selection_free(&sel);
    }
    if (rc == GP_ENOMEM)
        gp_seterr(err, errlen, rc, "out of memory scanning jobs");
    if (rc)
        goto out;
    for (size_t i = 0; i < j->n; i++) {
        enum gp_job_state s = gp_job_state_at(j->v[i], now_ms, j->interval_ms);
        if (s != j->v[i]->state)
            j->v[i]->state = s, j->v[i]->dirty = 1;
    }
    j->scanned_to = now_ms;
    j->max_id = max_id;
    rc = save(j, err, errlen);
out:
    gp_samples_free(&smp);
    uint64_t ns = (uint64_t)(gp_mono_ns() - t0);
    j->stats.scans++;
    j->stats.scan_errors += rc != GP_OK;
    j->stats.last_scan_series = looked;
    j->stats.last_scan_ns = ns;
    j->stats.scan_ns_total += ns;
    pthread_mutex_unlock(&j->mu);
    return rc;
}

/* ---- open, thread, close ---- */

int gp_jobs_open(struct gp_jobs **out, const char *dir, int64_t interval_ms, char *err,
                 size_t errlen)
{
    *out = NULL;
    struct gp_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    pthread_mutex_init(&j->mu, NULL);
    j->interval_ms = interval_ms > 0 ? interval_ms : 5000;
    int rc = gp_state_open(&j->db, dir, err, errlen);
    if (!rc)
        rc = load(j, err, errlen);
    if (rc) {
        gp_jobs_close(j);
        return rc;
    }
    *out = j;
    return GP_OK;
}

static void scan_tick(void *arg)
{
    struct gp_jobs *j = arg;
    char err[256] = "";
    if (gp_jobs_scan(j, j->st, gp_wall_ms(), 0, err, sizeof err))
        gp_log(GP_LOG_WARN, "jobs", "scan failed", "error=\"%s\"", err);
}

int gp_jobs_start(struct gp_jobs *j, struct gp_storage *st)
{
    j->st = st;
    return gp_periodic_start(&j->th, j->interval_ms, 1, scan_tick, j);
}

void gp_jobs_close(struct gp_jobs *j)
{
    if (!j)
        return;
    gp_periodic_stop(&j->th);
    for (size_t i = 0; i < j->n; i++) {
        gp_job_free(j->v[i]);
        free(j->v[i]);
    }
    free(j->v);
    gp_state_close(j->db);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

void gp_jobs_stats(struct gp_jobs *j, struct gp_jobs_stats *out)
{
    pthread_mutex_lock(&j->mu);
    *out = j->stats;
    out->jobs = j->n;
    pthread_mutex_unlock(&j->mu);
}

/* ---- reading ---- */

int gp_jobs_get(struct gp_jobs *j, const char *id, int64_t now_ms, struct gp_jobs_entry *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&j->mu);
    long at = find(j, id);
    if (at < 0) {
        pthread_mutex_unlock(&j->mu);
        return GP_ENOTFOUND;
    }
    const struct gp_jobs_entry *job = j->v[at];
    *out = *job;
    out->ranks = NULL;
    out->gpus = NULL;
    if (job->nranks && !(out->ranks = malloc(job->nranks * sizeof *out->ranks)))
        goto nomem;
    if (job->ngpus && !(out->gpus = malloc(job->ngpus * sizeof *out->gpus)))
        goto nomem;
    if (job->nranks)
        memcpy(out->ranks, job->ranks, job->nranks * sizeof *out->ranks);
    if (job->ngpus)
        memcpy(out->gpus, job->gpus, job->ngpus * sizeof *out->gpus);
    out->state = gp_job_state_at(job, now_ms, j->interval_ms);
    out->dirty = 0;
    pthread_mutex_unlock(&j->mu);
    return GP_OK;
nomem:
    pthread_mutex_unlock(&j->mu);
    gp_job_free(out);
    return GP_ENOMEM;
}

static int64_t sort_time(const struct gp_jobs_entry *j)
{
    return j->start_ms != GP_JOBS_NONE ? j->start_ms : j->first_ms;
}

static int newest_first(const void *pa, const void *pb)
{
    const struct gp_jobs_entry *a = *(const struct gp_jobs_entry *const *)pa, *b = *(const struct gp_jobs_entry *const *)pb;
    int64_t ta = sort_time(a), tb = sort_time(b);
    if (ta != tb)
        return ta > tb ? -1 : 1;
    return strcmp(a->id, b->id);
}

static void json_ms_or_null(struct gp_buf *b, int64_t ms)
{
    if (ms == GP_JOBS_NONE)
        gp_buf_puts(b, "null");
    else
        gp_json_time(b, ms);
}

/* The distinct nodes of a job's ranks, sorted, as a JSON array. */
static void json_nodes(struct gp_buf *b, const struct gp_jobs_entry *job)
{
    const char *seen[64];
    size_t ns = 0;
    gp_buf_putc(b, '[');
    /* Ranks are sorted by rank, not node: collect distinct, then sort. */
    const char **all = malloc((job->nranks ? job->nranks : 1) * sizeof *all);
    const char **v = all ? all : seen;
    size_t cap = all ? job->nranks : 64;
    for (size_t i = 0; i < job->nranks && ns < cap; i++) {
        size_t k = 0;
        while (k < ns && strcmp(v[k], job->ranks[i].node))
            k++;
        if (k == ns)
            v[ns++] = job->ranks[i].node;
    }
    for (size_t i = 1; i < ns; i++)
        for (size_t k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
            const char *t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    for (size_t i = 0; i < ns; i++) {
        if (i)
            gp_buf_putc(b, ',');
        gp_json_str(b, v[i], strlen(v[i]));
    }
    free(all);
    gp_buf_putc(b, ']');
}

static int has_node(const struct gp_jobs_entry *job, const char *node)
{
    for (size_t i = 0; i < job->nranks; i++)
        if (!strcmp(job->ranks[i].node, node))
            return 1;
    return 0;
}

int gp_jobs_list_json(struct gp_jobs *j, const struct gp_jobs_filter *f, int64_t now_ms,
                      struct gp_buf *out)
{
    size_t mark = out->len;
    int mark_err = out->err;
    pthread_mutex_lock(&j->mu);
    const struct gp_jobs_entry **pick = malloc((j->n ? j->n : 1) * sizeof *pick);
    if (!pick) {
        pthread_mutex_unlock(&j->mu);
        return GP_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < j->n; i++) {
        const struct gp_jobs_entry *job = j->v[i];
        if (f->state >= 0 && (int)gp_job_state_at(job, now_ms, j->interval_ms) != f->state)
            continue;
        if (job->last_ms < f->since_ms)
            continue;
        if (f->node && !has_node(job, f->node))
            continue;
        pick[n++] = job;
    }
    qsort(pick, n, sizeof *pick, newest_first);
    if (n > f->limit)
        n = f->limit;
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    for (size_t i = 0; i < n; i++) {
        const struct gp_jobs_entry *job = pick[i];
        gp_buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        gp_json_str(out, job->id, strlen(job->id));
        gp_buf_puts(out, ",\"scheme\":");
        if (job->scheme[0])
            gp_json_str(out, job->scheme, strlen(job->scheme));
        else
            gp_buf_puts(out, "null");
        gp_buf_printf(out, ",\"state\":\"%s\",\"start\":",
                      gp_job_state_name(gp_job_state_at(job, now_ms, j->interval_ms)));
        gp_json_time(out, sort_time(job));
        gp_buf_puts(out, ",\"end\":");
        json_ms_or_null(out, job->end_ms);
        gp_buf_puts(out, ",\"exit_status\":");
        if (job->exit_status == GP_JOBS_NONE)
            gp_buf_puts(out, "null");
        else
            gp_buf_printf(out, "%lld", (long long)job->exit_status);
        gp_buf_puts(out, ",\"last_seen\":");
        gp_json_time(out, job->last_ms);
        gp_buf_puts(out, ",\"nodes\":");
        json_nodes(out, job);
        gp_buf_printf(out, ",\"ranks\":%zu,\"gpus\":%zu}", job->nranks, job->ngpus);
    }
    gp_buf_puts(out, "]}\n");
    pthread_mutex_unlock(&j->mu);
    free(pick);
    if (out->err) {
        int rc = out->err;
        out->len = mark;
        out->err = mark_err;
        if (out->data)
            out->data[out->len] = '\0';
        return rc;
    }
    return GP_OK;
}
