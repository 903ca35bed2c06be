/*
 * test_procfs.c - the procfs source end to end through open/sample/close.
 *
 * A fake /proc tree is written into the test's temporary directory: host
 * files and processes with the awkward cases (a comm with ") (" in it, a
 * truncated stat, a garbled stat, no io file, a process that vanished
 * between its stat and status, 2048 threads, non-process entries). The
 * frame's contents are checked exactly, as is error counting. One test
 * samples this machine's real /proc.
 */
#include "lib/err.h"
#include "sources/frame.h"
#include "sources/source.h"
#include "test.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char fake_stat[] = "cpu  1000 200 300 40000 50 6 70 8 0 0\n"
                                "cpu0 500 100 150 20000 25 3 35 4 0 0\n"
                                "cpu1 500 100 150 20000 25 3 35 4 0 0\n"
                                "intr 100 0 0\nctxt 500\nbtime 1700000000\n"
                                "processes 900\nprocs_running 1\nprocs_blocked 0\n";
static const char fake_meminfo[] = "MemTotal:       8000000 kB\nMemFree:        1000000 kB\n"
                                   "MemAvailable:   4000000 kB\nBuffers:          10000 kB\n"
                                   "Cached:         2000000 kB\nShmem:            30000 kB\n"
                                   "Dirty:              40 kB\nSwapTotal:            0 kB\n"
                                   "SwapFree:             0 kB\nHugePages_Total:       0\n";

/* Writes <dir>/<pid>/stat with the fields the source reads. */
static void write_pid_stat(const char *dir, unsigned pid, const char *comm, char state,
                           unsigned ppid, unsigned long utime, unsigned long stime,
                           unsigned threads, unsigned long start, unsigned long vsize,
                           unsigned long rss)
{
    char rel[64], text[1024];
    snprintf(rel, sizeof rel, "%u/stat", pid);
    snprintf(text, sizeof text,
             "%u (%s) %c %u %u %u 0 -1 4194560 100 0 0 0 %lu %lu 0 0 20 0 %u 0 %lu %lu %lu "
             "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
             pid, comm, state, ppid, pid, pid, utime, stime, threads, start, vsize, rss);
    gp_test_write_file(dir, rel, text);
}

static void write_pid_file(const char *dir, unsigned pid, const char *leaf, const char *text)
{
    char rel[64];
    snprintf(rel, sizeof rel, "%u/%s", pid, leaf);
    gp_test_write_file(dir, rel, text);
}

static void write_status(const char *dir, unsigned pid, unsigned uid, unsigned threads)
{
    char text[256];
    snprintf(text, sizeof text,
             "Name:\tx\nState:\tS (sleeping)\nUid:\t%u\t%u\t%u\t%u\nGid:\t0\t0\t0\t0\n"
             "NSpid:\t%u\nThreads:\t%u\n",
             uid, uid + 1, uid, uid, pid, threads);
    write_pid_file(dir, pid, "status", text);
}

/* The fake tree; returns its root (a static buffer). */
static const char *build_tree(void)
{
    static char root[1024];
    snprintf(root, sizeof root, "%s/proc", gp_test_tmpdir());
    gp_test_write_file(gp_test_tmpdir(), "proc/stat", fake_stat);
    gp_test_write_file(root, "meminfo", fake_meminfo);
    gp_test_write_file(root, "loadavg", "0.50 1.25 2.00 3/400 4242\n");
    gp_test_write_file(root, "pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500000\n");
    gp_test_write_file(root, "pressure/memory",
                       "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n"
                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=500\n");
    gp_test_write_file(root, "pressure/io",
                       "some avg10=0.00 avg60=0.00 avg300=0.00 total=3000000\n"
                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=2000000\n");

    /* 1: init, everything readable */
    write_pid_stat(root, 1, "systemd", 'S', 0, 250, 120, 1, 5, 170000000, 3000);
    write_status(root, 1, 0, 1);
    write_pid_file(root, 1, "io", "rchar: 9\nwchar: 9\nread_bytes: 4096\nwrite_bytes: 8192\n");
    /* 42: comm with spaces and ") (" */
    write_pid_stat(root, 42, "my app) (x y", 'R', 1, 100, 50, 4, 1000, 5000000, 100);
    write_status(root, 42, 1000, 4);
    write_pid_file(root, 42, "io", "read_bytes: 1\nwrite_bytes: 2\n");
    /* 77: stat truncated mid-field */
    write_pid_file(root, 77, "stat", "77 (cut) S 1 77 77 0 -1 4194560 100 0 0 0 12");
    write_status(root, 77, 0, 1);
    /* 88: garbage */
    write_pid_file(root, 88, "stat", "\x01\x02 this is not a stat file )( \xff\n");
    write_status(root, 88, 0, 1);
    /* 99: no io file (kernel without task I/O accounting) */
    write_pid_stat(root, 99, "noio", 'S', 1, 1, 1, 1, 200, 4096, 1);
    write_status(root, 99, 5, 1);
    /* 123: thread-heavy */
    write_pid_stat(root, 123, "trainer", 'S', 42, 360000, 4200, 2048, 123456, 1ul << 40,
                   2000000);
    write_status(root, 123, 1000, 2048);
    write_pid_file(root, 123, "io", "read_bytes: 1000000000000\nwrite_bytes: 0\n");
    /* 150: exited between its stat and status: no status file */
    write_pid_stat(root, 150, "gone", 'Z', 1, 0, 0, 1, 300, 0, 0);
    /* 160: io garbled */
    write_pid_stat(root, 160, "badio", 'S', 1, 0, 0, 1, 300, 0, 0);
    write_status(root, 160, 0, 1);
    write_pid_file(root, 160, "io", "read_bytes: lots\nwrite_bytes: 0\n");
    /* not processes: ignored without error */
    gp_test_write_file(root, "self/stat", "garbage");
    gp_test_write_file(root, "12abc/stat", "garbage");
    gp_test_write_file(root, "0/stat", "garbage");
    gp_test_write_file(root, "4321", "a regular file named like a pid");
    return root;
}

/* Opens the source on root; all: every process, else GPU trees only. */
static void *open_with(const char *root, bool all, int64_t interval_ms)
{
    struct gp_source_config cfg = {.proc_root = root, .all_processes = all,
                                   .interval_ms = interval_ms};
    void *st = NULL;
    char err[256] = "";
    int rc = gp_source_procfs.open(&cfg, &st, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "open: %s", err);
    return st;
}

static void *open_at(const char *root)
{
    return open_with(root, true, 1000);
}

static void test_fake_tree(void)
{
    const char *root = build_tree();
    void *st = open_at(root);
    struct gp_frame f;
    gp_frame_init(&f);
    unsigned errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
    /* 77 truncated, 88 garbage, 160 garbled io; 150 vanished mid-read: never an error */
    CHECK_INT(errors, 3);

    double tck = (double)sysconf(_SC_CLK_TCK);
    double page = (double)sysconf(_SC_PAGESIZE);
    const struct gp_host *h = &f.host;
    CHECK(h->cpu_valid);
    CHECK_INT(h->ncpus, 2);
    CHECK_DBL(h->cpu_seconds[GP_CPU_USER], 1000 / tck, 1e-9);
    CHECK_DBL(h->cpu_seconds[GP_CPU_NICE], 200 / tck, 1e-9);
    CHECK_DBL(h->cpu_seconds[GP_CPU_SYSTEM], 300 / tck, 1e-9);
    CHECK_DBL(h->cpu_seconds[GP_CPU_IDLE], 40000 / tck, 1e-9);
    CHECK_DBL(h->cpu_seconds[GP_CPU_IOWAIT], 50 / tck, 1e-9);
    CHECK_DBL(h->cpu_seconds[GP_CPU_IRQ], 6 / tck, 1e-9);
    CHECK_DBL(h->cpu_seconds[GP_CPU_SOFTIRQ], 70 / tck, 1e-9);
    CHECK_DBL(h->cpu_seconds[GP_CPU_STEAL], 8 / tck, 1e-9);
    CHECK_INT(h->mem_valid, (1u << GP_MEM__COUNT) - 1);
    CHECK_INT(h->mem_bytes[GP_MEM_TOTAL], 8000000ull * 1024);
    CHECK_INT(h->mem_bytes[GP_MEM_AVAILABLE], 4000000ull * 1024);
    CHECK_INT(h->mem_bytes[GP_MEM_DIRTY], 40 * 1024);
    CHECK(h->load_valid);
    CHECK_DBL(h->load[0], 0.5, 1e-12);
    CHECK_DBL(h->load[1], 1.25, 1e-12);
    CHECK_DBL(h->load[2], 2.0, 1e-12);
    CHECK_INT(h->psi_valid[GP_PSI_CPU], 1u << GP_PSI_SOME);
    CHECK_DBL(h->psi_seconds[GP_PSI_CPU][GP_PSI_SOME], 2.5, 1e-12);
    CHECK_INT(h->psi_valid[GP_PSI_MEMORY], 3);
    CHECK_DBL(h->psi_seconds[GP_PSI_MEMORY][GP_PSI_FULL], 0.0005, 1e-12);
    CHECK_DBL(h->psi_seconds[GP_PSI_IO][GP_PSI_SOME], 3.0, 1e-12);
    CHECK_DBL(h->psi_seconds[GP_PSI_IO][GP_PSI_FULL], 2.0, 1e-12);

    CHECK_INT(f.nprocs, 4);
    CHECK_INT(f.procs[0].pid, 1);
    CHECK_INT(f.procs[1].pid, 42);
    CHECK_INT(f.procs[2].pid, 99);
    CHECK_INT(f.procs[3].pid, 123);

    const struct gp_proc *p = gp_frame_find_proc(&f, 1);
    CHECK(p);
    CHECK_STR(p->comm, "systemd");
    CHECK_INT(p->ppid, 0);
    CHECK_INT(p->uid, 0);
    CHECK_INT(p->state, 'S');
    CHECK_INT(p->threads, 1);
    CHECK_DBL(p->utime_s, 250 / tck, 1e-9);
    CHECK_DBL(p->stime_s, 120 / tck, 1e-9);
    CHECK_DBL(p->start_time_s, 1700000000 + 5 / tck, 1e-6);
    CHECK_INT(p->vsize_bytes, 170000000);
    CHECK_DBL((double)p->rss_bytes, 3000 * page, 0);
    CHECK(p->io_valid);
    CHECK_INT(p->io_read_bytes, 4096);
    CHECK_INT(p->io_write_bytes, 8192);

    p = gp_frame_find_proc(&f, 42);
    CHECK(p);
    CHECK_STR(p->comm, "my app) (x y");
    CHECK_INT(p->state, 'R');
    CHECK_INT(p->ppid, 1);
    CHECK_INT(p->uid, 1000); /* real uid, not the effective 1001 */
    CHECK_INT(p->threads, 4);
    CHECK(p->io_valid);
    CHECK_INT(p->io_write_bytes, 2);

    p = gp_frame_find_proc(&f, 99);
    CHECK(p);
    CHECK(!p->io_valid);
    CHECK_INT(p->io_read_bytes, 0);
    CHECK_INT(p->uid, 5);

    p = gp_frame_find_proc(&f, 123);
    CHECK(p);
    CHECK_STR(p->comm, "trainer");
    CHECK_INT(p->ppid, 42);
    CHECK_INT(p->threads, 2048);
    CHECK_DBL(p->utime_s, 360000 / tck, 1e-9);
    CHECK_DBL(p->start_time_s, 1700000000 + 123456 / tck, 1e-6);
    CHECK(p->vsize_bytes == 1ull << 40);
    CHECK_DBL((double)p->rss_bytes, 2000000 * page, 0);
    CHECK_INT(p->io_read_bytes, 1000000000000ull);

    CHECK(!gp_frame_find_proc(&f, 77));
    CHECK(!gp_frame_find_proc(&f, 88));
    CHECK(!gp_frame_find_proc(&f, 150));
    CHECK(!gp_frame_find_proc(&f, 160));

    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* Host files stay open and are re-read from offset 0: a rewrite in place
 * shows in the next tick; a host file turned garbage is one error. */
static void test_rereads_host_files(void)
{
    const char *root = build_tree();
    void *st = open_at(root);
    struct gp_frame f;
    gp_frame_init(&f);
    unsigned errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
    CHECK_DBL(f.host.load[0], 0.5, 1e-12);

    gp_test_write_file(root, "loadavg", "7.00 1.25 2.00 3/400 4242\n");
    gp_test_write_file(root, "meminfo", "MemTotal: 1 kB\nMemFree: oops\n");
    gp_test_write_file(root, "pressure/io", "");
    /* a larger /proc/stat than the read buffer: grows once */
    char big[40000];
    size_t n = (size_t)snprintf(big, sizeof big, "cpu  1 2 3 4 5 6 7 8 0 0\n");
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "cpu%d 0 0 0 0 0 0 0 0 0 0\n", i);
    snprintf(big + n, sizeof big - n, "btime 1700000100\n");
    gp_test_write_file(root, "stat", big);

    gp_frame_reset(&f);
    errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
    CHECK_INT(errors, 3 + 2); /* the 3 garbled processes, meminfo, pressure/io */
    CHECK_DBL(f.host.load[0], 7.0, 1e-12);
    CHECK_INT(f.host.mem_valid, 0);
    CHECK_INT(f.host.psi_valid[GP_PSI_IO], 0);
    CHECK_INT(f.host.psi_valid[GP_PSI_CPU], 1);
    CHECK(f.host.cpu_valid);
    CHECK_INT(f.host.ncpus, 1000);
    CHECK_INT(f.nprocs, 4);
    double tck = (double)sysconf(_SC_CLK_TCK);
    CHECK_DBL(gp_frame_find_proc(&f, 1)->start_time_s, 1700000100 + 5 / tck, 1e-6);

    /* /proc/stat garbled: cpu invalid, processes still read with the
     * last good boot time */
    gp_test_write_file(root, "stat", "nonsense\n");
    gp_frame_reset(&f);
    errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
    CHECK(!f.host.cpu_valid);
    CHECK_INT(errors, 3 + 3);
    CHECK_INT(f.nprocs, 4);
    CHECK_DBL(gp_frame_find_proc(&f, 1)->start_time_s, 1700000100 + 5 / tck, 1e-6);

    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* The uid is remembered per (pid, start time): a changed status shows
 * within PROCFS_UID_REFRESH (16) ticks, and at once for a new process
 * behind a reused pid. */
static void test_uid_cache(void)
{
    const char *root = build_tree();
    void *st = open_at(root);
    struct gp_frame f;
    gp_frame_init(&f);
    unsigned errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
    CHECK_INT(gp_frame_find_proc(&f, 42)->uid, 1000);
    CHECK_INT(gp_frame_find_proc(&f, 123)->uid, 1000);

    write_status(root, 42, 2000, 4);   /* setuid() after start */
    write_status(root, 123, 3000, 1);  /* pid 123 reused by a new process: */
    write_pid_stat(root, 123, "newer", 'S', 1, 0, 0, 1, 999999, 0, 0);
    int ticks_to_change = 0;
    for (int tick = 1; tick <= 20; tick++) {
        gp_frame_reset(&f);
        errors = 0;
        CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
        CHECK_INT(errors, 3); /* the garbled processes; the vanished one is none */
        CHECK_INT(f.nprocs, 4);
        CHECK_INT(gp_frame_find_proc(&f, 123)->uid, 3000); /* at once */
        CHECK_STR(gp_frame_find_proc(&f, 123)->comm, "newer");
        if (!ticks_to_change && gp_frame_find_proc(&f, 42)->uid == 2000)
            ticks_to_change = tick;
        if (ticks_to_change)
            CHECK_INT(gp_frame_find_proc(&f, 42)->uid, 2000);
        else
            CHECK_INT(gp_frame_find_proc(&f, 42)->uid, 1000);
    }
    CHECK(ticks_to_change > 1 && ticks_to_change <= 16);
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* No /proc/pressure (old kernel or psi=0): not an error, PSI invalid. */
static void test_no_psi(void)
{
    char root[1024];
    snprintf(root, sizeof root, "%s/proc", gp_test_tmpdir());
    gp_test_write_file(gp_test_tmpdir(), "proc/stat", fake_stat);
    gp_test_write_file(root, "meminfo", fake_meminfo);
    gp_test_write_file(root, "loadavg", "0.50 1.25 2.00 3/400 4242\n");
    write_pid_stat(root, 7, "solo", 'S', 1, 0, 0, 1, 0, 0, 0);
    write_status(root, 7, 0, 1);
    void *st = open_at(root);
    struct gp_frame f;
    gp_frame_init(&f);
    unsigned errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
    CHECK_INT(errors, 0);
    for (int r = 0; r < GP_PSI__COUNT; r++)
        CHECK_INT(f.host.psi_valid[r], 0);
    CHECK(f.host.cpu_valid);
    CHECK_INT(f.nprocs, 1);
    CHECK_STR(f.procs[0].comm, "solo");
    CHECK(!f.procs[0].io_valid);
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

static void test_open_failures(void)
{
    struct gp_source_config cfg = {.proc_root = "/nonexistent/gpulse-proc"};
    void *st = NULL;
    char err[256] = "";
    CHECK_INT(gp_source_procfs.open(&cfg, &st, err, sizeof err), GP_EIO);
    CHECK_CONTAINS(err, "/nonexistent/gpulse-proc");

    /* a root without stat */
    char root[1024];
    snprintf(root, sizeof root, "%s/empty", gp_test_tmpdir());
    CHECK_INT(mkdir(root, 0755), 0);
    cfg.proc_root = root;
    CHECK_INT(gp_source_procfs.open(&cfg, &st, err, sizeof err), GP_EIO);
    CHECK_CONTAINS(err, "stat");

    /* a garbled stat */
    gp_test_write_file(root, "stat", "cpu x\n");
    CHECK_INT(gp_source_procfs.open(&cfg, &st, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "malformed");

    /* a stat but no meminfo or loadavg: opens, counts those each tick */
    gp_test_write_file(root, "stat", fake_stat);
    CHECK_INT(gp_source_procfs.open(&cfg, &st, err, sizeof err), GP_OK);
    struct gp_frame f;
    gp_frame_init(&f);
    unsigned errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
    CHECK_INT(errors, 2);
    CHECK(f.host.cpu_valid);
    CHECK_INT(f.host.mem_valid, 0);
    CHECK(!f.host.load_valid);
    CHECK_INT(f.nprocs, 0);
    gp_source_procfs.close(st);
    gp_source_procfs.close(NULL);
    gp_frame_free(&f);
}

/*
 * A tree for following GPU processes: 500 is on a GPU; 510, 520 its
 * child and grandchild; 30 a great-grandchild whose pid wrapped below
 * its parent's; 600 and 601 unrelated.
 */
static const char *build_gpu_tree(void)
{
    static char root[1024];
    snprintf(root, sizeof root, "%s/proc", gp_test_tmpdir());
    gp_test_write_file(gp_test_tmpdir(), "proc/stat", fake_stat);
    gp_test_write_file(root, "meminfo", fake_meminfo);
    gp_test_write_file(root, "loadavg", "0.50 1.25 2.00 3/400 4242\n");
    static const struct {
        unsigned pid, ppid;
        const char *comm;
    } procs[] = {{1, 0, "systemd"},   {500, 1, "trainer"}, {510, 500, "worker"},
                 {520, 510, "grand"}, {30, 520, "wrapped"}, {600, 1, "other"},
                 {601, 600, "otherkid"}};
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        write_pid_stat(root, procs[i].pid, procs[i].comm, 'S', procs[i].ppid, 1, 1, 1, 100, 4096,
                       1);
        write_status(root, procs[i].pid, 1000, 1);
        write_pid_file(root, procs[i].pid, "io", "read_bytes: 1\nwrite_bytes: 2\n");
    }
    return root;
}

/* This tick's GPU processes, as the GPU sources put them in the frame
 * before procfs samples. */
static void frame_with_gpu_pids(struct gp_frame *f, const uint32_t *pids, size_t n)
{
    gp_frame_reset(f);
    struct gp_gpu *g = gp_frame_add_gpu(f);
    CHECK(g);
    for (size_t i = 0; i < n; i++) {
        struct gp_gpu_proc *p = gp_gpu_add_proc(g);
        CHECK(p);
        p->pid = pids[i];
    }
}

static unsigned sample_gpu_pids(void *st, struct gp_frame *f, const uint32_t *pids, size_t n)
{
    frame_with_gpu_pids(f, pids, n);
    unsigned errors = 0;
    CHECK_INT(gp_source_procfs.sample(st, f, &errors), GP_OK);
    return errors;
}

/* Only the GPU process and its descendants are read, tick after tick. */
static void test_gpu_trees(void)
{
    const char *root = build_gpu_tree();
    void *st = open_with(root, false, 1000);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t gpu[] = {500};
    for (int tick = 0; tick < 3; tick++) {
        CHECK_INT(sample_gpu_pids(st, &f, gpu, 1), 0);
        CHECK(f.host.cpu_valid);
        CHECK_INT(f.nprocs, 4);
        CHECK_INT(f.procs[0].pid, 30);
        CHECK_STR(f.procs[0].comm, "wrapped");
        CHECK_INT(f.procs[0].ppid, 520);
        CHECK_INT(f.procs[1].pid, 500);
        CHECK_INT(f.procs[1].uid, 1000);
        CHECK(f.procs[1].io_valid);
        CHECK_INT(f.procs[1].io_write_bytes, 2);
        CHECK_INT(f.procs[2].pid, 510);
        CHECK_INT(f.procs[3].pid, 520);
        CHECK(!gp_frame_find_proc(&f, 1));
        CHECK(!gp_frame_find_proc(&f, 600));
        CHECK(!gp_frame_find_proc(&f, 601));
    }
    /* no GPU process: no process at all, host still read */
    CHECK_INT(sample_gpu_pids(st, &f, NULL, 0), 0);
    CHECK_INT(f.nprocs, 0);
    CHECK(f.host.load_valid);
    /* two roots, one inside the other's tree: each read once */
    const uint32_t two[] = {510, 600, 510};
    CHECK_INT(sample_gpu_pids(st, &f, two, 3), 0);
    CHECK_INT(f.nprocs, 5); /* 30 510 520 600 601 */
    CHECK(!gp_frame_find_proc(&f, 500));
    CHECK(gp_frame_find_proc(&f, 601));
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* A worker forked after the first tick shows on the next one; one that
 * exited is gone. */
static void test_gpu_tree_fork(void)
{
    const char *root = build_gpu_tree();
    void *st = open_with(root, false, 1000);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t gpu[] = {500};
    CHECK_INT(sample_gpu_pids(st, &f, gpu, 1), 0);
    CHECK_INT(f.nprocs, 4);

    write_pid_stat(root, 700, "newworker", 'R', 510, 0, 0, 1, 5000, 4096, 1);
    write_status(root, 700, 1000, 1);
    char gone[1024];
    snprintf(gone, sizeof gone, "rm -r '%s/30'", root);
    CHECK_INT(system(gone), 0);
    CHECK_INT(sample_gpu_pids(st, &f, gpu, 1), 0);
    CHECK_INT(f.nprocs, 4); /* 500 510 520 700 */
    const struct gp_proc *p = gp_frame_find_proc(&f, 700);
    CHECK(p);
    CHECK_STR(p->comm, "newworker");
    CHECK_INT(p->ppid, 510);
    CHECK(!p->io_valid);
    CHECK(!gp_frame_find_proc(&f, 30));
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* At 250 ms a tick the root is listed every 4th tick: a new worker shows
 * by the next listing, a new GPU pid at once (looked up directly), an
 * exited worker goes without error. */
static void test_gpu_tree_between_listings(void)
{
    const char *root = build_gpu_tree();
    void *st = open_with(root, false, 250);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t gpu[] = {500};
    CHECK_INT(sample_gpu_pids(st, &f, gpu, 1), 0); /* tick 1: listed */
    CHECK_INT(f.nprocs, 4);
    write_pid_stat(root, 700, "newworker", 'R', 510, 0, 0, 1, 5000, 4096, 1);
    write_status(root, 700, 1000, 1);
    write_pid_stat(root, 800, "newjob", 'R', 1, 0, 0, 1, 5000, 4096, 1);
    write_status(root, 800, 1000, 1);
    char gone[1024];
    snprintf(gone, sizeof gone, "rm -r '%s/30'", root);
    CHECK_INT(system(gone), 0);
    const uint32_t gpu2[] = {500, 800};
    for (int tick = 2; tick <= 5; tick++) {
        CHECK_INT(sample_gpu_pids(st, &f, gpu2, 2), 0);
        CHECK(!gp_frame_find_proc(&f, 30));
        CHECK(gp_frame_find_proc(&f, 800));
        CHECK_INT(f.nprocs, tick < 5 ? 4 : 5); /* 500 510 520 800, then 700 */
        CHECK(tick == 5 || !gp_frame_find_proc(&f, 700));
    }
    CHECK(gp_frame_find_proc(&f, 700));
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* A GPU pid with no /proc entry (another pid namespace, a made-up pid)
 * is simply not found: no error, the others still followed. */
static void test_gpu_pid_absent(void)
{
    const char *root = build_gpu_tree();
    void *st = open_with(root, false, 1000);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t absent[] = {4242, 0, 4294967295u};
    CHECK_INT(sample_gpu_pids(st, &f, absent, 3), 0);
    CHECK_INT(f.nprocs, 0);
    const uint32_t mixed[] = {4242, 520};
    CHECK_INT(sample_gpu_pids(st, &f, mixed, 2), 0);
    CHECK_INT(f.nprocs, 2); /* 30 520 */
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* A process reparented into a GPU tree (its ppid changed without a new
 * pid) is picked up within the refresh window (PROCFS_REFRESH_MS, 60 s):
 * 7 processes at 2 s per tick re-read 1 a tick, every one within 7 ticks. */
static void test_gpu_tree_reparent(void)
{
    const char *root = build_gpu_tree();
    void *st = open_with(root, false, 2000);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t gpu[] = {500};
    CHECK_INT(sample_gpu_pids(st, &f, gpu, 1), 0);
    CHECK(!gp_frame_find_proc(&f, 601));

    write_pid_stat(root, 601, "otherkid", 'S', 520, 1, 1, 1, 100, 4096, 1);
    int seen_at = 0;
    for (int tick = 1; tick <= 8; tick++) {
        CHECK_INT(sample_gpu_pids(st, &f, gpu, 1), 0);
        if (!seen_at && gp_frame_find_proc(&f, 601))
            seen_at = tick;
        if (seen_at) {
            CHECK_INT(f.nprocs, 5);
            CHECK_INT(gp_frame_find_proc(&f, 601)->ppid, 520);
        } else {
            CHECK_INT(f.nprocs, 4);
        }
        CHECK(!gp_frame_find_proc(&f, 600));
    }
    CHECK(seen_at >= 1 && seen_at <= 7);
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* Following GPU trees, problems of processes that are not read fully
 * do not count; a garbled stat (read to learn the parent) does. */
static void test_gpu_trees_errors(void)
{
    const char *root = build_tree();
    void *st = open_with(root, false, 1000);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t gpu[] = {42};
    for (int tick = 0; tick < 2; tick++) {
        CHECK_INT(sample_gpu_pids(st, &f, gpu, 1), 2); /* 77 truncated, 88 garbage */
        CHECK_INT(f.nprocs, 2);
        CHECK_STR(f.procs[0].comm, "my app) (x y");
        CHECK_INT(f.procs[1].pid, 123);
    }
    const uint32_t bad[] = {160, 150};
    CHECK_INT(sample_gpu_pids(st, &f, bad, 2), 2 + 1); /* and now 160; 150 vanished: no error */
    CHECK_INT(f.nprocs, 0);
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* The real /proc of this machine: this test's own process is found. */
static void test_real_proc(void)
{
    void *st = open_at("/proc");
    struct gp_frame f;
    gp_frame_init(&f);
    for (int tick = 0; tick < 2; tick++) {
        gp_frame_reset(&f);
        unsigned errors = 0;
        CHECK_INT(gp_source_procfs.sample(st, &f, &errors), GP_OK);
        CHECK(f.nprocs >= 2);
        for (unsigned i = 1; i < f.nprocs; i++)
            CHECK(f.procs[i - 1].pid < f.procs[i].pid);
        const struct gp_host *h = &f.host;
        CHECK(h->cpu_valid);
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        CHECK_INT(h->ncpus, online);
        CHECK(h->cpu_seconds[GP_CPU_IDLE] + h->cpu_seconds[GP_CPU_USER] > 0);
        CHECK(h->mem_valid & (1u << GP_MEM_TOTAL));
        CHECK(h->mem_valid & (1u << GP_MEM_FREE));
        CHECK(h->mem_bytes[GP_MEM_TOTAL] > h->mem_bytes[GP_MEM_FREE]);
        CHECK(h->load_valid);
        struct stat sb;
        if (stat("/proc/pressure/cpu", &sb) == 0)
            CHECK(h->psi_valid[GP_PSI_CPU] & (1u << GP_PSI_SOME));

        const struct gp_proc *me = gp_frame_find_proc(&f, (uint32_t)getpid());
        CHECK(me);
        CHECK_INT(me->ppid, getppid());
        CHECK_INT(me->uid, getuid());
        CHECK_INT(me->state, 'R');
        CHECK(me->threads >= 1);
        CHECK(me->rss_bytes > 0);
        CHECK(me->vsize_bytes >= me->rss_bytes);
        CHECK(me->utime_s >= 0 && me->stime_s >= 0);
        double now = (double)time(NULL);
        CHECK(me->start_time_s > now - 3600 && me->start_time_s < now + 2);
        CHECK_STR(me->comm, "unit-tests");
        if (getuid() == 0)
            CHECK(me->io_valid);
    }
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* The real /proc, following this process as if it were on a GPU: it and
 * a child it forks are read, its parent (the test runner) is not. */
static void test_real_proc_gpu_tree(void)
{
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    void *st = open_with("/proc", false, 100);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t gpu[] = {(uint32_t)getpid()};
    for (int tick = 0; tick < 3; tick++) {
        unsigned errors = sample_gpu_pids(st, &f, gpu, 1);
        (void)errors; /* other processes' stat may vanish mid-read: not counted */
        const struct gp_proc *me = gp_frame_find_proc(&f, (uint32_t)getpid());
        CHECK(me);
        CHECK_STR(me->comm, "unit-tests");
        const struct gp_proc *kid = gp_frame_find_proc(&f, (uint32_t)child);
        CHECK(kid);
        CHECK_INT(kid->ppid, getpid());
        CHECK(!gp_frame_find_proc(&f, (uint32_t)getppid()));
        CHECK(!gp_frame_find_proc(&f, 1));
        CHECK(f.host.cpu_valid);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

/* The real /proc: a worker forked after the first listing is found from
 * the GPU process's children file within a second of ticks (10 at
 * 100 ms), long before the next full listing (30 s). */
static void test_real_proc_new_worker(void)
{
    void *st = open_with("/proc", false, 100);
    struct gp_frame f;
    gp_frame_init(&f);
    const uint32_t gpu[] = {(uint32_t)getpid()};
    sample_gpu_pids(st, &f, gpu, 1); /* tick 1: the full listing */
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    int seen_at = 0;
    for (int tick = 2; tick <= 12 && !seen_at; tick++) {
        sample_gpu_pids(st, &f, gpu, 1);
        if (gp_frame_find_proc(&f, (uint32_t)child))
            seen_at = tick;
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CHECK(seen_at >= 2 && seen_at <= 10); /* a full listing would come at tick 11 */
    gp_source_procfs.close(st);
    gp_frame_free(&f);
}

const struct gp_test gp_tests_procfs[] = {
    {"real_proc_new_worker", test_real_proc_new_worker},
    {"fake_tree", test_fake_tree},
    {"rereads_host_files", test_rereads_host_files},
    {"uid_cache", test_uid_cache},
    {"no_psi", test_no_psi},
    {"open_failures", test_open_failures},
    {"real_proc", test_real_proc},
    {"gpu_trees", test_gpu_trees},
    {"gpu_tree_fork", test_gpu_tree_fork},
    {"gpu_tree_between_listings", test_gpu_tree_between_listings},
    {"gpu_pid_absent", test_gpu_pid_absent},
    {"gpu_tree_reparent", test_gpu_tree_reparent},
    {"gpu_trees_errors", test_gpu_trees_errors},
    {"real_proc_gpu_tree", test_real_proc_gpu_tree},
    {0},
};
