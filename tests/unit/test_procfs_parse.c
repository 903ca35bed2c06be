/*
 * test_procfs_parse.c - the /proc file parsers on good and bad text.
 *
 * Each parser gets a real-looking file first (exact values checked), then
 * the malformed kinds every parser must refuse: empty, cut mid-line,
 * missing fields, non-numeric, overflowing, NUL bytes; and a file without
 * its final newline, accepted when the needed fields are whole.
 */
#include "lib/err.h"
#include "sources/procfs_parse.h"
#include "test.h"

#include <stdint.h>

/* A string literal as (buf, len); NUL bytes inside literals count. */
#define S(lit) (lit), (sizeof(lit) - 1)

#define STAT_OK                                                  \
    "cpu  10132153 290696 3084719 46828483 16683 0 25195 7 0 0\n" \
    "cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n"    \
    "cpu1 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n"    \
    "cpu2 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n"    \
    "intr 1462898 0 9 0 0 0 0 3 0 1\n"                           \
    "ctxt 1990473\n"                                             \
    "btime 1700000000\n"                                         \
    "processes 2915\n"                                           \
    "procs_running 2\n"                                          \
    "procs_blocked 0\n"                                          \
    "softirq 3 4 5\n"

static void test_stat_ok(void)
{
    struct gp_host h = {0};
    uint64_t btime = 0;
    CHECK_INT(gp_procfs_parse_stat(S(STAT_OK), 100, &h, &btime), GP_OK);
    CHECK(h.cpu_valid);
    CHECK_INT(h.ncpus, 3);
    CHECK_INT(btime, 1700000000);
    CHECK_DBL(h.cpu_seconds[GP_CPU_USER], 101321.53, 1e-6);
    CHECK_DBL(h.cpu_seconds[GP_CPU_NICE], 2906.96, 1e-6);
    CHECK_DBL(h.cpu_seconds[GP_CPU_SYSTEM], 30847.19, 1e-6);
    CHECK_DBL(h.cpu_seconds[GP_CPU_IDLE], 468284.83, 1e-6);
    CHECK_DBL(h.cpu_seconds[GP_CPU_IOWAIT], 166.83, 1e-6);
    CHECK_DBL(h.cpu_seconds[GP_CPU_IRQ], 0, 0);
    CHECK_DBL(h.cpu_seconds[GP_CPU_SOFTIRQ], 251.95, 1e-6);
    CHECK_DBL(h.cpu_seconds[GP_CPU_STEAL], 0.07, 1e-9);

    /* another tick rate; no final newline; no guest columns */
    struct gp_host h2 = {0};
    CHECK_INT(gp_procfs_parse_stat(S("cpu  1000 0 0 0 0 0 0 0\ncpu0 1 0 0 0 0 0 0 0\nbtime 5"),
                                   1000, &h2, &btime),
              GP_OK);
    CHECK_DBL(h2.cpu_seconds[GP_CPU_USER], 1.0, 0);
    CHECK_INT(h2.ncpus, 1);
    CHECK_INT(btime, 5);
}

static void test_stat_malformed(void)
{
    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {S("")},
        {S("\n")},
        {S("cpu  1 2 3\ncpu0 1 2 3 4 5 6 7 8\nbtime 1\n")},          /* missing modes */
        {S("cpu  1 2 3 4 5 6 7 x\ncpu0 1\nbtime 1\n")},              /* non-numeric */
        {S("cpu  1 2 3 4 5 6 7 8x\ncpu0 1\nbtime 1\n")},             /* trailing junk */
        {S("cpu  99999999999999999999 2 3 4 5 6 7 8\ncpu0 1\nbtime 1\n")}, /* overflow */
        {S("cpu  1 2 3 4 5 6 7 8\nbtime 1\n")},                      /* no cpuN line */
        {S("cpu  1 2 3 4 5 6 7 8\ncpu0 1\n")},                       /* no btime */
        {S("cpu  1 2 3 4 5 6 7 8\ncpu0 1\nbtime\n")},                /* empty btime */
        {S("cpu  1 2 3 4 5 6 7 8\ncpu0 1\nbtime 12abc\n")},          /* garbled btime */
        {S("cpu0 1 2 3 4 5 6 7 8\ncpu  1 2 3 4 5 6 7 8\nbtime 1\n")}, /* aggregate not first */
        {S("cpu  1 2 3 4 5 6 7 8\ncpu0 1\nbtime 1\0\n")},            /* NUL byte */
        {S("cpu  1 2 3 4\0 5 6 7 8\ncpu0 1\nbtime 1\n")},
        {S("cpu  1 2 3 4 5 6 7 8 x\ncpu0 1\nbtime 1\n")},            /* garbled guest */
        {S("cpu")},                                                   /* cut mid-line */
        {S("cpu  1 2 3 4 5")},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_host h = {0};
        uint64_t btime;
        if (gp_procfs_parse_stat(bad[i].s, bad[i].n, 100, &h, &btime) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu accepted", i);
        CHECK(!h.cpu_valid);
    }
    struct gp_host h = {0};
    uint64_t btime;
    CHECK_INT(gp_procfs_parse_stat(S(STAT_OK), 0, &h, &btime), GP_EPARSE); /* bad tick rate */
}

#define MEMINFO_OK                       \
    "MemTotal:       16318412 kB\n"      \
    "MemFree:         1022624 kB\n"      \
    "MemAvailable:    9841336 kB\n"      \
    "Buffers:          520948 kB\n"      \
    "Cached:          8317072 kB\n"      \
    "SwapCached:        12768 kB\n"      \
    "Active(anon):    4219424 kB\n"      \
    "SwapTotal:       2097148 kB\n"      \
    "SwapFree:        1890552 kB\n"      \
    "Dirty:               676 kB\n"      \
    "Shmem:            923752 kB\n"      \
    "HugePages_Total:       4\n"         \
    "HugePages_Free:        4\n"         \
    "Hugepagesize:       2048 kB\n"      \
    "DirectMap1G:     2097152 kB\n"

static void test_meminfo_ok(void)
{
    struct gp_host h = {0};
    CHECK_INT(gp_procfs_parse_meminfo(S(MEMINFO_OK), &h), GP_OK);
    CHECK_INT(h.mem_valid, (1u << GP_MEM__COUNT) - 1);
    CHECK_INT(h.mem_bytes[GP_MEM_TOTAL], 16318412ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_FREE], 1022624ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_AVAILABLE], 9841336ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_BUFFERS], 520948ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_CACHED], 8317072ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_SHMEM], 923752ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_DIRTY], 676ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_SWAP_TOTAL], 2097148ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_SWAP_FREE], 1890552ull * 1024);
    CHECK_INT(h.mem_bytes[GP_MEM_HUGEPAGES_TOTAL], 4); /* a count, not kB */

    /* only MemTotal (an old kernel has no MemAvailable); no final newline */
    struct gp_host h2 = {0};
    CHECK_INT(gp_procfs_parse_meminfo(S("MemTotal: 1 kB"), &h2), GP_OK);
    CHECK_INT(h2.mem_valid, 1u << GP_MEM_TOTAL);
    CHECK_INT(h2.mem_bytes[GP_MEM_TOTAL], 1024);
}

static void test_meminfo_malformed(void)
{
    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {S("")},
        {S("MemFree: 1 kB\n")},                          /* no MemTotal */
        {S("MemTotal: 1\n")},                            /* unit missing */
        {S("MemTotal: 1 MB\n")},                         /* wrong unit */
        {S("MemTotal: kB\n")},                           /* value missing */
        {S("MemTotal: -1 kB\n")},                        /* negative */
        {S("MemTotal: 12x kB\n")},                       /* non-numeric */
        {S("MemTotal: 18014398509481984 kB\n")},         /* overflows in bytes */
        {S("MemTotal: 99999999999999999999 kB\n")},      /* overflows u64 */
        {S("MemTotal: 1 kB\nMemFree:   12")},            /* cut mid-line */
        {S("MemTotal: 1 kB\ngarbage line\n")},           /* no colon */
        {S("MemTotal: 1 kB\n\n")},                       /* blank line */
        {S("MemTotal: 1 kB\nMemFree: 1 kB extra\n")},    /* trailing junk */
        {S("MemTotal: 1\0 kB\n")},                       /* NUL byte */
        {S("MemTotal: 1 kB\nHugePages_Total: 4 kB\n")},  /* a count with a unit */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_host h = {0};
        if (gp_procfs_parse_meminfo(bad[i].s, bad[i].n, &h) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu accepted", i);
        CHECK_INT(h.mem_valid, 0);
    }
    /* the largest kB value that still fits in bytes */
    struct gp_host h = {0};
    CHECK_INT(gp_procfs_parse_meminfo(S("MemTotal: 18014398509481983 kB\n"), &h), GP_OK);
    CHECK(h.mem_bytes[GP_MEM_TOTAL] == 18014398509481983ull * 1024);
}

static void test_pressure(void)
{
    struct gp_host h = {0};
    CHECK_INT(gp_procfs_parse_pressure(
                  S("some avg10=1.50 avg60=0.25 avg300=0.00 total=8721430\n"
                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=1500000\n"),
                  GP_PSI_MEMORY, &h),
              GP_OK);
    CHECK_INT(h.psi_valid[GP_PSI_MEMORY], (1u << GP_PSI_SOME) | (1u << GP_PSI_FULL));
    CHECK_DBL(h.psi_seconds[GP_PSI_MEMORY][GP_PSI_SOME], 8.72143, 1e-9);
    CHECK_DBL(h.psi_seconds[GP_PSI_MEMORY][GP_PSI_FULL], 1.5, 1e-9);
    CHECK_INT(h.psi_valid[GP_PSI_CPU], 0);

    /* cpu on kernels before 5.13: no "full" line, and no final newline */
    CHECK_INT(gp_procfs_parse_pressure(S("some avg10=0.00 avg60=0.00 avg300=0.00 total=42"),
                                       GP_PSI_CPU, &h),
              GP_OK);
    CHECK_INT(h.psi_valid[GP_PSI_CPU], 1u << GP_PSI_SOME);
    CHECK_DBL(h.psi_seconds[GP_PSI_CPU][GP_PSI_SOME], 42e-6, 1e-15);

    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {S("")},
        {S("full avg10=0.00 avg60=0.00 avg300=0.00 total=1\n")},         /* no "some" */
        {S("some avg10=0.00 avg60=0.00 avg300=0.00\n")},                 /* no total */
        {S("some avg10=0.00 avg60=0.00 avg300=0.00 total=\n")},
        {S("some avg10=0.00 avg60=0.00 avg300=0.00 total=12x\n")},
        {S("some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n")},
        {S("some total=99999999999999999999\n")},                        /* overflow */
        {S("some avg10=x total=1\n")},                                   /* garbled average */
        {S("some avg10= total=1\n")},
        {S("some =1.0 total=1\n")},
        {S("some total=1\nsome total=2\n")},                             /* twice */
        {S("some total=1\nhalf total=2\n")},                             /* unknown line */
        {S("sometotal=1\n")},
        {S("some avg10=0.00 av")},                                       /* cut mid-line */
        {S("some total=1\0\n")},                                         /* NUL byte */
        {S("some total=1\n\n")},                                         /* blank line */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_host hb = {0};
        if (gp_procfs_parse_pressure(bad[i].s, bad[i].n, GP_PSI_IO, &hb) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu accepted", i);
        CHECK_INT(hb.psi_valid[GP_PSI_IO], 0);
    }
    CHECK_INT(gp_procfs_parse_pressure(S("some total=1\n"), GP_PSI__COUNT, &h), GP_EPARSE);
}

static void test_loadavg(void)
{
    struct gp_host h = {0};
    CHECK_INT(gp_procfs_parse_loadavg(S("0.52 1.58 12.59 2/467 12345\n"), &h), GP_OK);
    CHECK(h.load_valid);
    CHECK_DBL(h.load[0], 0.52, 1e-12);
    CHECK_DBL(h.load[1], 1.58, 1e-12);
    CHECK_DBL(h.load[2], 12.59, 1e-12);
    struct gp_host h2 = {0};
    CHECK_INT(gp_procfs_parse_loadavg(S("0.00 0.00 0.00 1/1 1"), &h2), GP_OK); /* no newline */

    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {S("")},
        {S("0.52 0.58\n")},                                   /* cut */
        {S("0.52 0.58 0.59 1/467\n")},                        /* no last pid */
        {S("0.52 0.58 0.59 1/467 12345 x\n")},                /* trailing junk */
        {S("0.52 0.58 0.59 1/467 12345\n\n")},
        {S("abc 0.58 0.59 1/467 12345\n")},                   /* non-numeric */
        {S("0.5x 0.58 0.59 1/467 12345\n")},
        {S("0. 0.58 0.59 1/467 12345\n")},
        {S("-1.0 0.58 0.59 1/467 12345\n")},
        {S("0.52 0.58 0.59 467 12345\n")},                    /* no slash */
        {S("0.52 0.58 0.59 1/99999999999999999999 1\n")},     /* overflow */
        {S("0.52 0.58 0.59 1/467 1\0\n")},                    /* NUL byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_host hb = {0};
        if (gp_procfs_parse_loadavg(bad[i].s, bad[i].n, &hb) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu accepted", i);
        CHECK(!hb.load_valid);
    }
}

/* Fields 4..52 of a real /proc/PID/stat, after "pid (comm) S". */
#define PID_TAIL                                                                                \
    " 1000 1234 1234 34816 -1 4194304 1000 2000 3 4 150 75 10 5 20 0 3 0 98765 12345678 456 " \
    "18446744073709551615 94000000000000 94000000100000 140700000000000 0 0 0 65536 3686404 " \
    "1266761467 1 0 0 17 2 0 0 0 0 0 94000000200000 94000000300000 94000000400000 "           \
    "140700000001000 140700000002000 140700000002000 140700000003000 0\n"

static void test_pid_stat_ok(void)
{
    struct gp_procfs_pid_stat ps = {0};
    CHECK_INT(gp_procfs_parse_pid_stat(S("1234 (bash) S" PID_TAIL), &ps), GP_OK);
    CHECK_INT(ps.pid, 1234);
    CHECK_STR(ps.comm, "bash");
    CHECK_INT(ps.state, 'S');
    CHECK_INT(ps.ppid, 1000);
    CHECK_INT(ps.utime, 150);
    CHECK_INT(ps.stime, 75);
    CHECK_INT(ps.num_threads, 3);
    CHECK_INT(ps.starttime, 98765);
    CHECK_INT(ps.vsize, 12345678);
    CHECK_INT(ps.rss_pages, 456);

    /* comm with spaces, parentheses and a newline: the LAST ')' ends it */
    CHECK_INT(gp_procfs_parse_pid_stat(S("7 (a) (b c)\n) R" PID_TAIL), &ps), GP_OK);
    CHECK_STR(ps.comm, "a) (b c)?");
    CHECK_INT(ps.state, 'R');
    CHECK_INT(ps.ppid, 1000);
    /* empty comm; a long comm is truncated */
    CHECK_INT(gp_procfs_parse_pid_stat(S("7 () Z" PID_TAIL), &ps), GP_OK);
    CHECK_STR(ps.comm, "");
    CHECK_INT(gp_procfs_parse_pid_stat(
                  S("7 (kworker/u16:2-events_unbound_very_long_name) I" PID_TAIL), &ps),
              GP_OK);
    CHECK_STR(ps.comm, "kworker/u16:2-events_unbound_ve");
    /* old kernels stop earlier; the line may end right after rss */
    CHECK_INT(gp_procfs_parse_pid_stat(
                  S("9 (x) S 1 1 1 0 -1 0 0 0 0 0 150 75 0 0 20 0 1 0 5 6 7"), &ps),
              GP_OK);
    CHECK_INT(ps.rss_pages, 7);
    CHECK_INT(ps.pid, 9);
    CHECK_INT(gp_procfs_parse_pid_stat(S("4294967295 (x) S" PID_TAIL), &ps), GP_OK);
    CHECK(ps.pid == 4294967295u);
}

static void test_pid_stat_malformed(void)
{
    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {S("")},
        {S("1234")},
        {S("1234 (bash")},                                     /* no ')' */
        {S("1234 bash) S" PID_TAIL)},                          /* no '(' */
        {S("x (bash) S" PID_TAIL)},                            /* non-numeric pid */
        {S("4294967296 (bash) S" PID_TAIL)},                   /* pid overflows u32 */
        {S("1234 (bash)" PID_TAIL)},                           /* no state */
        {S("1234 (bash) 5" PID_TAIL)},                         /* state not a letter */
        {S("1234 (bash) S 1000 1234 1234 34816 -1 4194304")},  /* cut at field 9 */
        {S("1234 (bash) S 1000 1234 1234 34816 -1 4194304 1000 2000 3 4 15")}, /* mid utime */
        {S("1234 (bash) S 1 1 1 0 -1 0 0 0 0 0 1x0 75 0 0 20 0 1 0 5 6 7\n")}, /* garbled */
        {S("1234 (bash) S 1 1 1 0 -1 0 0 0 0 0 99999999999999999999 75 0 0 20 0 1 0 5 6 7\n")},
        {S("1234 (bash) S 4294967296 1 1 0 -1 0 0 0 0 0 1 75 0 0 20 0 1 0 5 6 7\n")},
        {S("1234 (bash) S 1 1 1 0 -1 0 0 0 0 0 1 75 0 0 20 0 1 0 5 6 -7\n")}, /* negative rss */
        {S("1234 (bash) S 1 1 1 0 -  0 0 0 0 0 1 75 0 0 20 0 1 0 5 6 7\n")},
        {S("1234 (bash) S  1 1 1 0 -1 0 0 0 0 0 1 75 0 0 20 0 1 0 5 6 7\n")}, /* double blank */
        {S("1234 (ba\0sh) S" PID_TAIL)},                       /* NUL byte */
        {S("1234 (bash) S" PID_TAIL "\0")},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_procfs_pid_stat ps;
        if (gp_procfs_parse_pid_stat(bad[i].s, bad[i].n, &ps) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu accepted", i);
    }
}

#define STATUS_OK                        \
    "Name:\tbash\n"                      \
    "Umask:\t0022\n"                     \
    "State:\tS (sleeping)\n"             \
    "Tgid:\t1234\n"                      \
    "Pid:\t1234\n"                       \
    "PPid:\t1000\n"                      \
    "Uid:\t1001\t1002\t1003\t1004\n"     \
    "Gid:\t100\t100\t100\t100\n"         \
    "Groups:\t4 24 27 \n"                \
    "NStgid:\t1234\t7\n"                 \
    "NSpid:\t1234\t7\n"                  \
    "VmRSS:\t    3456 kB\n"              \
    "Threads:\t3\n"                      \
    "Cpus_allowed_list:\t0-7\n"          \
    "voluntary_ctxt_switches:\t150\n"

static void test_pid_status(void)
{
    struct gp_procfs_pid_status st = {0};
    CHECK_INT(gp_procfs_parse_pid_status(S(STATUS_OK), &st), GP_OK);
    CHECK_INT(st.uid, 1001); /* real, not effective */
    CHECK_INT(st.threads, 3);
    CHECK(st.nspid_valid);
    CHECK_INT(st.nspid, 7);
    /* no NSpid (kernel < 4.1), no final newline */
    CHECK_INT(gp_procfs_parse_pid_status(S("Uid:\t0\t0\t0\t0\nThreads:\t1"), &st), GP_OK);
    CHECK(!st.nspid_valid);
    CHECK_INT(st.uid, 0);

    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {S("")},
        {S("Name:\tbash\nThreads:\t3\n")},                     /* no Uid */
        {S("Uid:\t0\t0\t0\t0\n")},                             /* no Threads */
        {S("Uid:\t0\t0\t0\t0\nThrea")},                        /* cut mid-line */
        {S("Uid:\tx\nThreads:\t3\n")},                         /* non-numeric */
        {S("Uid:\t\nThreads:\t3\n")},
        {S("Uid:\t4294967296\t0\t0\t0\nThreads:\t3\n")},       /* overflows u32 */
        {S("Uid:\t0\nThreads:\t3 x\n")},                       /* trailing junk */
        {S("Uid:\t0\nThreads:\t3\nNSpid:\t1\tx\n")},           /* garbled NSpid */
        {S("Uid:\t0\nThreads:\t3\nNSpid:\t\n")},
        {S("Uid:\t0\nThreads:\t3\ngarbage\n")},                /* no colon */
        {S("Uid:\t0\nThreads:\t3\0\n")},                       /* NUL byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_procfs_pid_status sb;
        if (gp_procfs_parse_pid_status(bad[i].s, bad[i].n, &sb) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu accepted", i);
    }
}

static void test_pid_io(void)
{
    uint64_t r = 0, w = 0;
    CHECK_INT(gp_procfs_parse_pid_io(S("rchar: 323934931\nwchar: 323929600\nsyscr: 632687\n"
                                       "syscw: 632675\nread_bytes: 4096\n"
                                       "write_bytes: 18446744073709551615\n"
                                       "cancelled_write_bytes: 0\n"),
                                     &r, &w),
              GP_OK);
    CHECK_INT(r, 4096);
    CHECK(w == UINT64_MAX);
    CHECK_INT(gp_procfs_parse_pid_io(S("read_bytes: 1\nwrite_bytes: 2"), &r, &w), GP_OK);
    CHECK_INT(r, 1);
    CHECK_INT(w, 2);

    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {S("")},
        {S("rchar: 1\nwchar: 2\n")},                           /* no read/write_bytes */
        {S("read_bytes: 1\nwrite_by")},                        /* cut mid-line */
        {S("read_bytes: 1\nwrite_bytes:\n")},                  /* value missing */
        {S("read_bytes: x\nwrite_bytes: 2\n")},                /* non-numeric */
        {S("read_bytes: 1 2\nwrite_bytes: 2\n")},              /* trailing junk */
        {S("read_bytes: 18446744073709551616\nwrite_bytes: 2\n")}, /* overflow */
        {S("read_bytes: 1\nwrite_bytes: 2\nnonsense\n")},      /* no colon */
        {S("read_bytes: 1\0\nwrite_bytes: 2\n")},              /* NUL byte */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (gp_procfs_parse_pid_io(bad[i].s, bad[i].n, &r, &w) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu accepted", i);
    }
}

/* Parsers must stop at len: the bytes after it are never looked at. */
static void test_bounded_by_len(void)
{
    static const char full[] = "MemTotal: 1 kB\nMemFree: 2 kB\n";
    struct gp_host h = {0};
    /* cut inside "MemFree: 2 kB": the unit is beyond len */
    CHECK_INT(gp_procfs_parse_meminfo(full, sizeof full - 5, &h), GP_EPARSE);
    CHECK_INT(gp_procfs_parse_meminfo(full, 15, &h), GP_OK);
    CHECK_INT(h.mem_valid, 1u << GP_MEM_TOTAL);
    struct gp_procfs_pid_stat ps;
    static const char st[] = "1 (init) S 0 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 6 789";
    CHECK_INT(gp_procfs_parse_pid_stat(st, sizeof st - 1, &ps), GP_OK);
    CHECK_INT(ps.rss_pages, 789);
    CHECK_INT(gp_procfs_parse_pid_stat(st, sizeof st - 2, &ps), GP_OK);
    CHECK_INT(ps.rss_pages, 78);
    CHECK_INT(gp_procfs_parse_pid_stat(st, sizeof st - 5, &ps), GP_EPARSE);
}

static void test_children(void)
{
    uint32_t k[4];
    size_t n = 99;
    CHECK_INT(gp_procfs_parse_children("12 345 6789 ", 12, k, 4, &n), GP_OK);
    CHECK_INT(n, 3);
    CHECK_INT(k[0], 12);
    CHECK_INT(k[2], 6789);
    CHECK_INT(gp_procfs_parse_children("", 0, k, 4, &n), GP_OK);
    CHECK_INT(n, 0);
    CHECK_INT(gp_procfs_parse_children("7\n", 2, k, 4, &n), GP_OK);
    CHECK_INT(n, 1);
    CHECK_INT(gp_procfs_parse_children("1 2 3 4 5 ", 10, k, 4, &n), GP_ETOOBIG);
    const char *bad[] = {"12x ", "-1 ", "0 ", "4294967296 ", "1\n2", "1,2", "1\0 2"};
    const size_t blen[] = {4, 3, 2, 11, 3, 3, 4};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gp_procfs_parse_children(bad[i], blen[i], k, 4, &n) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "accepted children \"%s\"", bad[i]);
    /* reads nothing past len */
    CHECK_INT(gp_procfs_parse_children("12 34", 2, k, 4, &n), GP_OK);
    CHECK_INT(n, 1);
    CHECK_INT(k[0], 12);
}

const struct gp_test gp_tests_procfs_parse[] = {
    {"children", test_children},
    {"stat_ok", test_stat_ok},
    {"stat_malformed", test_stat_malformed},
    {"meminfo_ok", test_meminfo_ok},
    {"meminfo_malformed", test_meminfo_malformed},
    {"pressure", test_pressure},
    {"loadavg", test_loadavg},
    {"pid_stat_ok", test_pid_stat_ok},
    {"pid_stat_malformed", test_pid_stat_malformed},
    {"pid_status", test_pid_status},
    {"pid_io", test_pid_io},
    {"bounded_by_len", test_bounded_by_len},
    {0},
};
