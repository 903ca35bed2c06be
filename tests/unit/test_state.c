/*
 * test_state.c - state.db (state/state.h): a sound file keeps what is
 * written across opens; a damaged one (not a database, a corrupt page)
 * is left byte for byte as it was while every connection gets an empty
 * in-memory database of the same schema; errors that are not damage
 * (no such directory) stay errors.
 */
#include "lib/err.h"
#include "state/state.h"
#include "test.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static int count_jobs(sqlite3 *db)
{
    sqlite3_stmt *st;
    CHECK(sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

static void add_jobs(sqlite3 *db, int n)
{
    CHECK(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
    for (int i = 0; i < n; i++) {
        char sql[300];
        snprintf(sql, sizeof sql,
                 "INSERT INTO jobs(id, first_seen, last_seen, state) VALUES('job-%06d-%0100d', 1, 2, "
                 "'running')",
                 i, i);
        CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    }
    CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
}

static void test_sound_file_keeps_rows(void)
{
    const char *dir = gp_test_tmpdir();
    char err[256];
    sqlite3 *db;
    CHECK_INT(gp_state_open(&db, dir, err, sizeof err), GP_OK);
    add_jobs(db, 3);
    gp_state_close(db);
    CHECK_INT(gp_state_open(&db, dir, err, sizeof err), GP_OK);
    CHECK_INT(count_jobs(db), 3);
    CHECK_INT(gp_state_damaged(dir, NULL, 0), 0);
    gp_state_close(db);
}

/* A file that is not a database: the server runs on, the file stays. */
static void test_not_a_database_runs_in_memory(void)
{
    const char *dir = gp_test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/state.db", dir);
    char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i * 131 + 7);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(junk, 1, sizeof junk, f) == sizeof junk);
    fclose(f);

    char err[256] = "";
    sqlite3 *a, *b;
    CHECK_INT(gp_state_open(&a, dir, err, sizeof err), GP_OK);
    char detail[256] = "";
    CHECK_INT(gp_state_damaged(dir, detail, sizeof detail), 1);
    CHECK(strstr(detail, "not a database"));
    /* Every module's connection works, on its own empty database. */
    CHECK_INT(gp_state_open(&b, dir, err, sizeof err), GP_OK);
    CHECK_INT(count_jobs(a), 0);
    add_jobs(a, 2);
    CHECK_INT(count_jobs(a), 2);
    CHECK_INT(count_jobs(b), 0);
    gp_state_close(a);
    gp_state_close(b);
    /* Untouched: gpulse repair sets it aside, nothing else writes it. */
    size_t len;
    char *now = slurp(path, &len);
    CHECK_INT(len, sizeof junk);
    CHECK(memcmp(now, junk, len) == 0);
    free(now);
    struct stat stw;
    char wal[620];
    snprintf(wal, sizeof wal, "%s-wal", path);
    CHECK(stat(wal, &stw) != 0);
}

/* A database whose pages are damaged in the middle: SQLite opens it and
 * reads its header, only the check finds the damage. */
static void test_corrupt_page_runs_in_memory(void)
{
    const char *dir = gp_test_tmpdir();
    char err[256], path[600];
    snprintf(path, sizeof path, "%s/state.db", dir);
    sqlite3 *db;
    CHECK_INT(gp_state_open(&db, dir, err, sizeof err), GP_OK);
    add_jobs(db, 400);
    gp_state_close(db); /* the last connection checkpoints the WAL into the file */
    size_t len;
    char *img = slurp(path, &len);
    CHECK(len > 16 * 4096);
    free(img);
    /* Garble the middle of the file, page headers and cells alike. */
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    char junk[3 * 4096];
    memset(junk, 0x5a, sizeof junk);
    CHECK(pwrite(fd, junk, sizeof junk, (off_t)(len / 4096 / 2) * 4096) == (ssize_t)sizeof junk);
    close(fd);

    CHECK_INT(gp_state_open(&db, dir, err, sizeof err), GP_OK);
    char detail[256] = "";
    CHECK_INT(gp_state_damaged(dir, detail, sizeof detail), 1);
    CHECK(strstr(detail, "integrity check") || strstr(detail, "malformed"));
    CHECK_INT(count_jobs(db), 0);
    gp_state_close(db);
}

/* Not damage: a directory that is not there is an error, as before. */
static void test_missing_directory_is_an_error(void)
{
    char dir[600], err[256] = "";
    snprintf(dir, sizeof dir, "%s/no/such/dir", gp_test_tmpdir());
    sqlite3 *db = (sqlite3 *)1;
    CHECK_INT(gp_state_open(&db, dir, err, sizeof err), GP_EIO);
    CHECK(db == NULL);
    CHECK(strstr(err, "state.db"));
    CHECK_INT(gp_state_damaged(dir, NULL, 0), 0);
}

const struct gp_test gp_tests_state[] = {
    {"sound_file_keeps_rows", test_sound_file_keeps_rows},
    {"not_a_database_runs_in_memory", test_not_a_database_runs_in_memory},
    {"corrupt_page_runs_in_memory", test_corrupt_page_runs_in_memory},
    {"missing_directory_is_an_error", test_missing_directory_is_an_error},
    {0},
};
