/*
 * repair.c - `gpulse repair --data DIR` (repair.h).
 *
 * The store repairs itself as it opens (store.h: a missing or damaged
 * head.snap, meta.db or series.log is set aside and rebuilt, the WAL's records after
 * a damaged one are replayed), so repair opens it with the server's
 * options, reports what the opening found, checks every block chunk's
 * checksum, and closes it, which writes a fresh head.snap and commits the
 * rebuilt registry. Intact files are only read. state.db, the server's
 * own database, is checked with PRAGMA integrity_check; a damaged one is
 * renamed state.db.damaged-<unix time> (with its -wal and -shm), so the
 * next start creates an empty one. The store's LOCK says whether a
 * server still runs on the directory: then nothing is touched.
 */
#include "server/repair.h"

#include "lib/err.h"
#include "lib/log.h"
#include "store/store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpulse repair --data DIR\n\n"
            "Checks the data directory of a stopped gpulse server and rebuilds what can be\n"
            "rebuilt without touching intact data: head.snap (from blocks, chunk files and the\n"
            "WAL), the series registry's two copies, meta.db and series.log (each from the\n"
            "other, meta.db also from its readable rows and the WAL), and\n"
            "state.db (a damaged one is set aside as state.db.damaged-<unix time>; the next\n"
            "start creates an empty one). Damaged files are renamed, never deleted.\n\n"
            "  --data DIR   the server's data directory (data_dir)\n"
            "  -h, --help   this text\n\n"
            "Exit status: 0 all fine or repaired, 1 something could not be repaired or the\n"
            "directory is in use, 2 usage. See docs/storage.md \"Damage and repair\".\n");
}

/* Renames dir/state.db and its -wal, -shm to state.db.damaged-<time>. */
static int set_aside_state(const char *dir, char *name, size_t len)
{
    static const char *const sfx[] = {"", "-wal", "-shm"};
    long now = (long)time(NULL);
    snprintf(name, len, "state.db.damaged-%ld", now);
    for (size_t i = 0; i < 3; i++) {
        char from[4200], to[4200];
        snprintf(from, sizeof from, "%s/state.db%s", dir, sfx[i]);
        snprintf(to, sizeof to, "%s/state.db.damaged-%ld%s", dir, now, sfx[i]);
        if (rename(from, to) != 0 && errno != ENOENT)
            return -1;
    }
    return 0;
}

/* 0 ok, 1 damaged and not repaired, 2 set aside (repaired). */
static int check_state(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/state.db", dir);
    if (access(path, F_OK) != 0) {
        printf("state.db: absent (the next start creates it)\n");
        return 0;
    }
    sqlite3 *db = NULL;
    char what[300] = "";
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL);
        if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            snprintf(what, sizeof what, "%s", t ? (const char *)t : "");
        } else {
            snprintf(what, sizeof what, "%s", sqlite3_errmsg(db));
        }
        sqlite3_finalize(st);
    } else {
        snprintf(what, sizeof what, "%s", db ? sqlite3_errmsg(db) : "cannot open");
    }
    sqlite3_close(db);
    if (!strcmp(what, "ok")) {
        printf("state.db: ok\n");
        return 0;
    }
    char aside[64];
    if (set_aside_state(dir, aside, sizeof aside) != 0) {
        printf("state.db: damaged (%s) and cannot be set aside: %s\n", what, strerror(errno));
        return 1;
    }
    printf("state.db: damaged (%s): set aside as %s; the next start creates an empty one "
           "(jobs come back from the samples; alert history, silences and the audit log do not)\n",
           what, aside);
    return 2;
}

int gp_repair_main(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--data") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strncmp(argv[i], "--data=", 7)) {
            dir = argv[i] + 7;
        } else {
            fprintf(stderr, "gpulse repair: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!dir || !*dir) {
        fprintf(stderr, "gpulse repair: --data DIR is required\n");
        usage(stderr);
        return 2;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "gpulse repair: '%s' is not a directory\n", dir);
        return 1;
    }
    if (gp_log_min < GP_LOG_WARN)
        gp_log_min = GP_LOG_WARN; /* the details of each finding, on stderr */

    /* The server's store options (server.c): the defaults but these. */
    struct gp_store_options o = {.dir = dir, .no_background = 1};
    struct gp_store *s;
    char err[512];
    int rc = gp_store_open(&s, &o, err, sizeof err);
    if (rc != GP_OK) {
        fprintf(stderr, "gpulse repair: cannot open the store: %s\n", err);
        if (strstr(err, "in use"))
            fprintf(stderr, "gpulse repair: stop the server first\n");
        return 1;
    }
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    int bad = 0, fixed = 0;
    if (st.damage & GP_STORE_DMG_SNAP_MISSING)
        printf("head.snap: missing: rebuilt from blocks, chunk files and the whole WAL\n");
    else if (st.damage & GP_STORE_DMG_SNAP_DAMAGED)
        printf("head.snap: damaged: set aside as head.snap.damaged-*, rebuilt from blocks, chunk "
               "files and the whole WAL\n");
    else
        printf("head.snap: ok\n");
    fixed |= (st.damage & (GP_STORE_DMG_SNAP_MISSING | GP_STORE_DMG_SNAP_DAMAGED)) != 0;
    if (st.damage & GP_STORE_DMG_META_DAMAGED) {
        printf("meta.db: damaged or missing: set aside as meta.db.damaged-*, registry rebuilt from "
               "its readable rows, series.log and the WAL (%llu series)\n",
               (unsigned long long)st.series);
        fixed = 1;
    } else {
        printf("meta.db: ok (%llu series)\n", (unsigned long long)st.series);
    }
    if (st.damage & GP_STORE_DMG_SERIES_LOG) {
        printf("series.log: damaged or missing: a damaged one set aside as series.log.damaged-*, "
               "rebuilt from meta.db (%llu series)\n",
               (unsigned long long)st.series);
        fixed = 1;
    } else {
        printf("series.log: ok\n");
    }
    if (st.series_lost) {
        printf("meta.db: the labels of %llu series with data are lost: their samples stay on disk "
               "but cannot be queried\n",
               (unsigned long long)st.series_lost);
        bad = 1;
    }
    if (st.damage & GP_STORE_DMG_WAL_CORRUPT) {
        printf("wal: %llu corrupt records skipped, %llu valid records after them recovered\n",
               (unsigned long long)st.wal_corrupt_records,
               (unsigned long long)st.wal_recovered_records);
        fixed = 1;
    } else {
        printf("wal: ok\n");
    }
    if (st.damage & GP_STORE_DMG_CHUNK_FILE) {
        printf("chunks: a chunk file had damaged records: those chunks are lost, the valid ones "
               "after them were kept\n");
        bad = 1;
    } else {
        printf("chunks: ok\n");
    }
    uint64_t chunks, damaged;
    gp_store_check_blocks(s, &chunks, &damaged);
    if (damaged) {
        printf("blocks: %llu of %llu chunks damaged: their samples are lost (queries skip them "
               "and say so)\n",
               (unsigned long long)damaged, (unsigned long long)chunks);
        bad = 1;
    } else {
        printf("blocks: ok (%llu blocks, %llu chunks)\n", (unsigned long long)st.blocks,
               (unsigned long long)chunks);
    }
    gp_store_close(s); /* the checkpoint: a new head.snap, the registry committed */
    int sr = check_state(dir);
    bad |= sr == 1;
    fixed |= sr == 2;
    printf("repair: %s\n", bad     ? "some damage could not be repaired (see above)"
                           : fixed ? "repaired"
                                   : "all fine");
    return bad ? 1 : 0;
}
