/*
 * jobs.h - the jobs registry of `gpulse server`: which training jobs the
 * stored gpulse_job_* series describe (docs/jobs.md), kept in memory and
 * in <data>/state.db (state/state.h) so it survives restarts.
 *
 * A scanner (its own thread, every jobs_scan_interval) selects the
 * gpulse_job_info series that have samples since its last scan, less an
 * overlap, and folds them into the registry: one job per `job` label,
 * with its scheme, first and last seen, and one rank entry per (node,
 * rank) with local rank and world size. It then reads the newest values
 * of gpulse_job_start_time_seconds (the job's start: the smallest),
 * gpulse_job_end_time_seconds (its end: the largest) and
 * gpulse_job_exit_status (the largest status any rank reported), and the
 * GPUs (node, gpu) whose series carry the job's label. Only jobs whose
 * rows changed are written, in one transaction per scan, so a scan of an
 * idle fleet writes nothing. Selection uses the store's index only (each
 * series' first and last sample time); samples are read only for the
 * start, end and exit series, so a scan costs little per series. Every
 * 60th scan looks at all time, to take in history that an agent's push
 * queue delivered late with old timestamps. Re-scanning is idempotent:
 * every fold is a min, a max or a set insert.
 *
 * State is a function of the row and the time (gp_job_state_at): an
 * exit status says finished (0), killed (>= 128; signal = status - 128)
 * or failed (other); an end without a status reads as finished; without
 * an end a job is running while its info series was seen within
 * max(5 minutes, 3 scan intervals) (the lookback after which Prometheus
 * also treats a series as gone, widened for slow scans), and lost after.
 *
 * Threads: one mutex guards the registry; readers (the API) copy a job
 * out under it. The scanner holds it only to fold and to write.
 */
#ifndef GP_SERVER_JOBS_H
#define GP_SERVER_JOBS_H

#include "lib/buf.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

#define GP_JOB_ID_MAX 512   /* bytes of a job id; longer ids are skipped (counted) */
#define GP_JOB_NODE_MAX 256 /* bytes of a node name */
#define GP_JOB_GPU_MAX 64   /* bytes of a GPU index (with a MIG instance: "0/1") */
#define GP_JOBS_NONE INT64_MIN /* an unknown time or number */

#define GP_JOB_STATES(X) X(RUNNING, "running") X(FINISHED, "finished") X(FAILED, "failed") \
    X(KILLED, "killed") X(LOST, "lost")

enum gp_job_state {
#define GP_JOB_STATE_ENUM_(id, name) GP_JOBS_##id,
    GP_JOB_STATES(GP_JOB_STATE_ENUM_)
#undef GP_JOB_STATE_ENUM_
    GP_JOBS_STATE_COUNT
};

const char *gp_job_state_name(enum gp_job_state s);
/* "running" -> GP_JOBS_RUNNING: GP_OK, or GP_EPARSE for another word. */
int gp_job_state_parse(const char *s, size_t len, enum gp_job_state *out);

struct gp_job_rank {
    char node[GP_JOB_NODE_MAX];
    int64_t rank, local_rank, world_size; /* GP_JOBS_NONE when unknown */
    int64_t first_ms, last_ms;
};

struct gp_job_gpu {
    char node[GP_JOB_NODE_MAX];
    char gpu[GP_JOB_GPU_MAX];
};

struct gp_jobs_entry {
    char id[GP_JOB_ID_MAX + 1];
    char scheme[64];                  /* "" when unknown */
    int64_t first_ms, last_ms;        /* first and newest sample of its info series */
    int64_t start_ms, end_ms;         /* GP_JOBS_NONE when unknown */
    int64_t exit_status;              /* GP_JOBS_NONE when unknown */
    enum gp_job_state state;          /* as of the last scan */
    struct gp_job_rank *ranks;        /* sorted by rank (unknown last), then node */
    size_t nranks;
    struct gp_job_gpu *gpus;          /* sorted by node, then gpu */
    size_t ngpus;
    int dirty;                        /* registry-internal */
};

/* The state of j at now_ms, for a scan interval (module comment). */
enum gp_job_state gp_job_state_at(const struct gp_jobs_entry *j, int64_t now_ms, int64_t interval_ms);

/* How long after its last sample a job without an end is lost. */
int64_t gp_job_lost_after_ms(int64_t interval_ms);

/* Frees a copy's arrays (gp_jobs_get); accepts a zeroed job. */
void gp_job_free(struct gp_jobs_entry *j);

struct gp_jobs;

/*
 * Opens dir/state.db and loads the registry from it. interval_ms is the
 * scan interval (for states and the thread). GP_OK with *out (caller
 * closes with gp_jobs_close), or the errors of gp_state_open, with
 * detail.
 */
int gp_jobs_open(struct gp_jobs **out, const char *dir, int64_t interval_ms, char *err,
                 size_t errlen);

/* Starts the scanner thread over st (which must outlive gp_jobs_close).
 * GP_OK or GP_ENOMEM. */
int gp_jobs_start(struct gp_jobs *j, struct gp_storage *st);

/* Stops the thread (if started), closes the database, frees. Accepts NULL. */
void gp_jobs_close(struct gp_jobs *j);

/* One scan as of now_ms (the thread calls it with the wall clock; tests
 * with their own times). full: look at all time. GP_OK, GP_ENOMEM or
 * GP_EIO (the database; the registry in memory is still updated and the
 * rows are written again by the next scan), with detail. */
int gp_jobs_scan(struct gp_jobs *j, struct gp_storage *st, int64_t now_ms, int full, char *err,
                 size_t errlen);

/* What the scanner has done, for /metrics and tests. */
struct gp_jobs_stats {
    uint64_t jobs, scans, scan_errors, ids_too_long;
    uint64_t last_scan_series; /* series the last scan looked at */
    uint64_t last_scan_ns, scan_ns_total;
    uint64_t rows_written;     /* job rows written, all scans */
};
void gp_jobs_stats(struct gp_jobs *j, struct gp_jobs_stats *out);

/*
 * Copies the job named id (NUL-terminated) into *out with its state as
 * of now_ms (caller frees with gp_job_free). GP_OK, GP_ENOTFOUND or
 * GP_ENOMEM.
 */
int gp_jobs_get(struct gp_jobs *j, const char *id, int64_t now_ms, struct gp_jobs_entry *out);

struct gp_jobs_filter {
    int state;         /* -1 any, else the enum gp_job_state */
    int64_t since_ms;  /* jobs seen at or after; INT64_MIN: any */
    const char *node;  /* jobs with a rank on it; NULL: any */
    size_t limit;      /* at most this many */
};

/*
 * Appends the list answer of GET /api/v1/jobs to out: the envelope and
 * the jobs that pass f, newest first (start, else first seen, then id),
 * each {"id","scheme","state","start","end","exit_status","last_seen",
 * "nodes":[...],"ranks":N,"gpus":N}, states as of now_ms. GP_OK, or
 * out's latched error (GP_ENOMEM, GP_ETOOBIG) with out rewound.
 */
int gp_jobs_list_json(struct gp_jobs *j, const struct gp_jobs_filter *f, int64_t now_ms,
                      struct gp_buf *out);

#endif
