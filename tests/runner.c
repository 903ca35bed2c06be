/*
 * runner.c - runs the unit tests: each in a child process with a
 * timeout, in its own temporary directory. Prints one line per test and
 * ends with "N passed, N failed". Arguments are substrings: only tests
 * whose "group.name" contains one of them run.
 */
#include "test.h"

#include "lib/log.h"

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GROUP(g) extern const struct gp_test gp_tests_##g[];
#include "test-list.h"
#undef GROUP

static const struct {
    const char *name;
    const struct gp_test *tests;
} groups[] = {
#define GROUP(g) {#g, gp_tests_##g},
#include "test-list.h"
#undef GROUP
};

static char tmpdir[512];

void gp_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "    %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1);
}

const char *gp_test_tmpdir(void) { return tmpdir; }

const char *gp_test_data(const char *rel)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", GP_TEST_DATA_DIR, rel);
    return path;
}

const char *gp_test_repo_text(const char *rel)
{
    static char text[1 << 20];
    char path[1024];
    snprintf(path, sizeof path, "%s/../../%s", GP_TEST_DATA_DIR, rel);
    FILE *f = fopen(path, "r");
    if (!f)
        gp_test_fail(__FILE__, __LINE__, "cannot open %s", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

void gp_test_write_file(const char *dir, const char *rel, const char *content)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(path, 0755) && errno != EEXIST)
                gp_test_fail(__FILE__, __LINE__, "mkdir %s: %s", path, strerror(errno));
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (!f)
        gp_test_fail(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
    fputs(content, f);
    fclose(f);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int selected(const char *full, int argc, char **argv)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(full, argv[i]))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    /* Sources log what they skip; keep the report readable unless asked. */
    if (!getenv("GP_TEST_LOG"))
        gp_log_min = GP_LOG_OFF;
    const char *timeout_env = getenv("GP_TEST_TIMEOUT");
    unsigned timeout = timeout_env ? (unsigned)atoi(timeout_env) : 30;
    for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
        for (const struct gp_test *t = groups[gi].tests; t->name; t++) {
            char full[256];
            snprintf(full, sizeof full, "%s.%s", groups[gi].name, t->name);
            if (!selected(full, argc, argv))
                continue;
            snprintf(tmpdir, sizeof tmpdir, "/tmp/gpulse-test-XXXXXX");
            if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
            }
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                alarm(timeout);
                t->fn();
                fflush(NULL);
                _exit(0);
            }
            int st = 0;
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
            nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
                passed++;
                printf("ok   %s (%.0f ms)\n", full, ms);
            } else {
                failed++;
                if (WIFSIGNALED(st))
                    printf("FAIL %s (signal %d%s)\n", full, WTERMSIG(st),
                           WTERMSIG(st) == SIGALRM ? ": timed out" : "");
                else
                    printf("FAIL %s\n", full);
            }
        }
    }
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
