/*
 * flightrec.h - PyTorch Flight Recorder dumps: which ranks are missing
 * from the collective where the others wait.
 *
 * With TORCH_NCCL_TRACE_BUFFER_SIZE=N PyTorch records each rank's last N
 * collectives, and with TORCH_NCCL_DUMP_ON_TIMEOUT=1 each rank writes
 * them, when a collective times out, to
 * ${TORCH_NCCL_DEBUG_INFO_TEMP_FILE}${rank} (by default
 * /tmp/nccl_trace_rank_${rank}): a pickle (lib/pickle.h) of a dict with
 * "version", "pg_config" and "entries", each entry a dict with
 * "collective_seq_id", "profiling_name" ("nccl:all_reduce"),
 * "process_group" (a (name, desc) tuple) and "state" ("scheduled",
 * "started", "completed"); newer versions add "rank" and "pg_id". The
 * agent reads the dumps of a configured directory
 * (flight_recorder_dir, docs/jobs.md "Hangs"), one file per rank.
 *
 * Parts: gp_fr_parse reads one dump into the little it needs per
 * process group (the highest sequence number the rank entered, the
 * highest it completed, the first it entered and has not completed);
 * gp_fr_analyze compares the ranks' dumps: in each process group the
 * stuck collective is the lowest one some rank entered without
 * completing, its waiters those ranks, and a rank whose dump never
 * entered it is missing. Both are pure, for the tests and the fuzzer;
 * gp_fr_scan reads the directory.
 */
#ifndef GP_SOURCES_FLIGHTREC_H
#define GP_SOURCES_FLIGHTREC_H

#include <stddef.h>
#include <stdint.h>

#define GP_FR_MAX_PGS 16          /* process groups kept per dump (the first seen) */
#define GP_FR_MAX_DUMPS 1024      /* files read per scan */
#define GP_FR_MAX_BYTES (64u << 20) /* a dump larger than this is skipped */
#define GP_FR_MAX_AGE_S 3600      /* a dump older than this is a past job's */

struct gp_fr_pg {
    char name[64];                /* process_group[0], else pg_id */
    int64_t last_entered;         /* highest collective_seq_id of any state */
    int64_t last_completed;       /* highest completed; -1: none */
    int64_t waiting;              /* lowest entered, not completed; -1: none */
    char op[48];                  /* profiling_name of `waiting` */
};

struct gp_fr_dump {
    int32_t rank;
    unsigned npg;
    struct gp_fr_pg pg[GP_FR_MAX_PGS];
};

/*
 * Reads one dump of buf[0..len) into *out. rank: the rank its file name
 * gives (-1: none), used when the dump has no "rank" key. GP_OK, or
 * GP_EPARSE with a detail naming what is wrong ("flight recorder: no
 * 'entries' list", "flight recorder: entry 3: no collective_seq_id",
 * "flight recorder: no rank in the dump or its name", or the pickle's).
 * Entries of point-to-point operations (is_p2p true) are skipped.
 */
int gp_fr_parse(const uint8_t *buf, size_t len, int32_t rank, struct gp_fr_dump *out, char *err,
                size_t errlen);

/* The rank a dump's file name ends with ("nccl_trace_rank_12" -> 12);
 * -1 when it ends with no digits or too many. */
int32_t gp_fr_rank_of_name(const char *name);

/* What the comparison says about one rank (index of its dump). */
struct gp_fr_verdict {
    int32_t rank;
    int64_t missing;              /* the stuck collective it never entered; -1: none */
    int64_t waiting;              /* the collective it waits in; -1: none */
    char pg[64], op[48];          /* of `missing`, else of `waiting` */
};

/* Compares n dumps; out[i] is about d[i]. */
void gp_fr_analyze(const struct gp_fr_dump *d, unsigned n, struct gp_fr_verdict *out);

/*
 * Reads the dumps of directory dir (regular files, at most
 * GP_FR_MAX_DUMPS, each at most GP_FR_MAX_BYTES and modified within
 * GP_FR_MAX_AGE_S of now_s) into *out (caller frees), their number in
 * *n; files that fail to parse are counted in *bad, the first one's name
 * and error written to first_err. GP_OK (an empty or missing directory:
 * none), GP_ENOMEM.
 */
int gp_fr_scan(const char *dir, double now_s, struct gp_fr_dump **out, unsigned *n, unsigned *bad,
               char *first_err, size_t errlen);

/*
 * The steps source's watch over a directory: every GP_FR_RESCAN_S it
 * scans the dumps and compares them; each tick it marks the step
 * reporters of the frame whose rank a verdict names (fr_missing /
 * fr_waiting of gp_step_stats), all the reporters of that rank on this
 * node: one job per directory. A change in the number of dumps that fail
 * to parse is logged (warn, with the first one's error).
 */
#define GP_FR_RESCAN_S 5.0
struct gp_fr_watch;
struct gp_step_stats;
/* NULL when out of memory; dir is copied. */
struct gp_fr_watch *gp_fr_watch_new(const char *dir);
void gp_fr_watch_free(struct gp_fr_watch *w); /* accepts NULL */
/* Rescans when due (mono_s: a monotonic clock, wall_s: the epoch) and
 * marks st[0..n). */
void gp_fr_watch_apply(struct gp_fr_watch *w, double mono_s, double wall_s,
                       struct gp_step_stats *st, unsigned n);

#endif
