/*
 * test_jobs.c - attribution end to end: the procfs source over a fake
 * /proc tree (environ and cgroup files per process), then the jobs
 * source, as the sampler runs them in one tick. One tree per scheme
 * (Slurm, torchrun, Kubernetes cgroup v1 and v2 with both drivers,
 * gpulse run, GPULSE_JOB, a plain process group), inheritance by
 * dataloader workers, precedence, GPU sums and job_idx, step records,
 * the CPU of exited workers, and the all-processes mode.
 */
#include "lib/err.h"
#include "sources/frame.h"
#include "sources/source.h"
#include "test.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char fake_stat[] = "cpu  1000 200 300 40000 50 6 70 8 0 0\n"
                                "cpu0 500 100 150 20000 25 3 35 4 0 0\n"
                                "intr 100 0 0\nctxt 500\nbtime 1700000000\n";

/* One fake process. env: the environ bytes (NULL: no environ file, as
 * for a process gone or unreadable); cgroup: NULL for none. */
struct fake {
    unsigned pid, ppid, pgid;
    const char *comm;
    unsigned long cpu_ticks; /* utime; stime is as much again */
    unsigned long start;     /* clock ticks after boot */
    const char *env;
    size_t envlen;
    const char *cgroup;
};

#define ENV(lit) lit, sizeof lit - 1
#define NOENV NULL, 0

static char root[1024];

static void write_proc(const struct fake *p)
{
    char rel[64], text[1024];
    snprintf(rel, sizeof rel, "%u/stat", p->pid);
    snprintf(text, sizeof text,
             "%u (%s) S %u %u %u 0 -1 4194560 100 0 0 0 %lu %lu 0 0 20 0 1 0 %lu 4096000 256 "
             "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
             p->pid, p->comm, p->ppid, p->pgid, p->pgid, p->cpu_ticks, p->cpu_ticks, p->start);
    gp_test_write_file(root, rel, text);
    snprintf(rel, sizeof rel, "%u/status", p->pid);
    gp_test_write_file(root, rel, "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nThreads:\t1\n");
    snprintf(rel, sizeof rel, "%u/io", p->pid);
    gp_test_write_file(root, rel, "read_bytes: 1\nwrite_bytes: 2\n");
    if (p->cgroup) {
        snprintf(rel, sizeof rel, "%u/cgroup", p->pid);
        gp_test_write_file(root, rel, p->cgroup);
    }
    if (p->env) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%u/environ", root, p->pid);
        FILE *f = fopen(path, "wb");
        CHECK(f);
        CHECK(fwrite(p->env, 1, p->envlen, f) == p->envlen);
        fclose(f);
    }
}

/* Writes the host files and the processes; init (pid 1) is always there. */
static void build(const struct fake *procs, size_t n)
{
    snprintf(root, sizeof root, "%s/proc", gp_test_tmpdir());
    gp_test_write_file(gp_test_tmpdir(), "proc/stat", fake_stat); /* creates proc/ */
    gp_test_write_file(root, "meminfo", "MemTotal: 1000 kB\n");
    gp_test_write_file(root, "loadavg", "0.50 1.25 2.00 3/400 4242\n");
    static const struct fake init = {1, 0, 1, "systemd", 1, 1, NOENV, NULL};
    write_proc(&init);
    for (size_t i = 0; i < n; i++)
        write_proc(&procs[i]);
}

static void remove_proc(unsigned pid)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%u'", root, pid);
    CHECK(system(cmd) == 0);
}

struct rig {
    void *procfs, *jobs;
    struct gp_frame f;
};

static void rig_open(struct rig *r, bool all, const uint32_t *follow, size_t nfollow)
{
    struct gp_source_config cfg = {.proc_root = root, .all_processes = all, .interval_ms = 1000,
                                   .hostname = "node1", .follow = follow, .nfollow = nfollow};
    char err[256] = "";
    if (gp_source_procfs.open(&cfg, &r->procfs, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "procfs open: %s", err);
    if (gp_source_jobs.open(&cfg, &r->jobs, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "jobs open: %s", err);
    gp_frame_init(&r->f);
}

static void rig_close(struct rig *r)
{
    gp_source_procfs.close(r->procfs);
    gp_source_jobs.close(r->jobs);
    gp_frame_free(&r->f);
}

/* A GPU process: pid, bytes, SM percent. */
struct gproc {
    uint32_t pid;
    uint64_t mem;
    double sm;
};

/* Starts a tick: GPU g gets gpus[g][..] until a 0 pid. */
static void tick_begin(struct rig *r, const struct gproc gpus[][4], unsigned ngpus)
{
    gp_frame_reset(&r->f);
    snprintf(r->f.hostname, sizeof r->f.hostname, "node1");
    r->f.time_ms = 1700000100000;
    for (unsigned g = 0; g < ngpus; g++) {
        struct gp_gpu *gpu = gp_frame_add_gpu(&r->f);
        CHECK(gpu);
        gpu->index = g;
        for (unsigned k = 0; k < 4 && gpus[g][k].pid; k++) {
            struct gp_gpu_proc *p = gp_gpu_add_proc(gpu);
            CHECK(p);
            p->pid = gpus[g][k].pid;
            p->mem_valid = p->util_valid = true;
            p->mem_bytes = gpus[g][k].mem;
            p->sm_util = gpus[g][k].sm;
        }
    }
}

/* Runs procfs then jobs, as the sampler does; returns the errors. */
static unsigned tick_end(struct rig *r)
{
    unsigned errors = 0;
    CHECK_INT(gp_source_procfs.sample(r->procfs, &r->f, &errors), GP_OK);
    CHECK_INT(gp_source_jobs.sample(r->jobs, &r->f, &errors), GP_OK);
    return errors;
}

static const struct gp_proc *proc(const struct rig *r, uint32_t pid)
{
    const struct gp_proc *p = gp_frame_find_proc(&r->f, pid);
    if (!p)
        gp_test_fail(__FILE__, __LINE__, "pid %u not in the frame", pid);
    return p;
}

static const struct gp_job *job(const struct rig *r, const char *name, int rank)
{
    for (unsigned i = 0; i < r->f.njobs; i++)
        if (strcmp(r->f.jobs[i].id.job, name) == 0 && r->f.jobs[i].id.rank == rank)
            return &r->f.jobs[i];
    gp_test_fail(__FILE__, __LINE__, "no job %s rank %d", name, rank);
}

#define CHECK_JID(r, pid, name, rk, sch)                     \
    do {                                                     \
        const struct gp_proc *p_ = proc(r, pid);             \
        CHECK_STR(p_->jid.job, name);                        \
        CHECK_INT(p_->jid.rank, rk);                         \
        CHECK_INT(p_->jid.scheme, sch);                      \
    } while (0)

/* Two Slurm ranks on two GPUs; rank 0's dataloader has no readable
 * environment and inherits its parent's job and rank. */
static void test_slurm(void)
{
    static const struct fake procs[] = {
        {100, 1, 100, "python", 100, 1000,
         ENV("SLURM_JOB_ID=555\0SLURM_PROCID=0\0SLURM_LOCALID=0\0SLURM_NTASKS=2\0"), NULL},
        {110, 100, 100, "pt_data_worker", 50, 1100, NOENV, NULL},
        {200, 1, 200, "python", 300, 1000,
         ENV("SLURM_JOB_ID=555\0SLURM_PROCID=1\0SLURM_LOCALID=1\0SLURM_NTASKS=2\0"), NULL},
        {300, 1, 300, "bash", 1, 10, ENV("SLURM_JOB_ID=555\0"), NULL}, /* not followed */
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    rig_open(&r, false, NULL, 0);
    static const struct gproc gpus[2][4] = {{{100, 1000, 50}}, {{200, 3000, 25}, {100, 500, 10}}};
    for (int t = 0; t < 2; t++) {
        tick_begin(&r, gpus, 2);
        CHECK_INT(tick_end(&r), 0);
        CHECK_INT(r.f.nprocs, 3);
        CHECK_JID(&r, 100, "555", 0, GP_JOB_SLURM);
        CHECK_JID(&r, 110, "555", 0, GP_JOB_SLURM);
        CHECK_JID(&r, 200, "555", 1, GP_JOB_SLURM);
        CHECK_INT(proc(&r, 110)->jid.world_size, 2);
        CHECK_INT(proc(&r, 100)->pgid, 100);
        CHECK(proc(&r, 110)->followed);
        CHECK_INT(r.f.njobs, 2);
        const struct gp_job *j0 = job(&r, "555", 0), *j1 = job(&r, "555", 1);
        CHECK_INT(j0->nprocs, 2);
        CHECK_INT(j0->id.local_rank, 0);
        CHECK_INT(j0->id.world_size, 2);
        CHECK_DBL(j0->cpu_seconds, (100 + 100 + 50 + 50) / 100.0, 1e-9);
        CHECK_DBL(j0->start_time_s, 1700000000 + 10.0, 1e-6);
        CHECK_INT(j0->rss_bytes, 2 * 256 * (uint64_t)sysconf(_SC_PAGESIZE));
        CHECK_INT(j0->ngpus, 2);
        CHECK_INT(j0->gpu_memory_bytes, 1500);
        CHECK(j0->gpu_mem_valid && j0->sm_valid);
        CHECK_DBL(j0->sm_ratio, 0.6, 1e-9);
        CHECK_INT(j1->nprocs, 1);
        CHECK_INT(j1->ngpus, 1);
        CHECK_INT(j1->gpu_memory_bytes, 3000);
        /* GPU 1 is shared: rank 1 holds the most memory there */
        CHECK_INT(r.f.gpus[0].job_idx, j0 - r.f.jobs);
        CHECK_INT(r.f.gpus[1].job_idx, j1 - r.f.jobs);
    }
    rig_close(&r);
}

/* torchrun: workers with RANK on the GPUs, the launcher not followed. */
static void test_torchrun(void)
{
    static const struct fake procs[] = {
        {400, 1, 400, "torchrun", 5, 100, ENV("PATH=/bin\0"), NULL},
        {410, 400, 400, "python", 10, 200,
         ENV("TORCHELASTIC_RUN_ID=te-1\0RANK=0\0LOCAL_RANK=0\0WORLD_SIZE=2\0"), NULL},
        {420, 400, 400, "python", 10, 200,
         ENV("TORCHELASTIC_RUN_ID=te-1\0RANK=1\0LOCAL_RANK=1\0WORLD_SIZE=2\0"), NULL},
        {421, 420, 400, "worker", 1, 300, /* a worker with its own, copied environment */
         ENV("TORCHELASTIC_RUN_ID=te-1\0RANK=1\0LOCAL_RANK=1\0WORLD_SIZE=2\0"), NULL},
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    rig_open(&r, false, NULL, 0);
    static const struct gproc gpus[2][4] = {{{410, 100, 0}}, {{420, 200, 0}}};
    tick_begin(&r, gpus, 2);
    CHECK_INT(tick_end(&r), 0);
    CHECK(!gp_frame_find_proc(&r.f, 400));
    CHECK_JID(&r, 410, "te-1", 0, GP_JOB_TORCHELASTIC);
    CHECK_JID(&r, 420, "te-1", 1, GP_JOB_TORCHELASTIC);
    CHECK_JID(&r, 421, "te-1", 1, GP_JOB_TORCHELASTIC);
    CHECK_INT(r.f.njobs, 2);
    CHECK_INT(job(&r, "te-1", 1)->nprocs, 2);
    CHECK_INT(job(&r, "te-1", 1)->id.world_size, 2);
    rig_close(&r);
}

#define UID "0c2b5ad8-1d2e-4f3a-9b8c-7d6e5f4a3b2c"
#define UID_ "0c2b5ad8_1d2e_4f3a_9b8c_7d6e5f4a3b2c"

/* Kubernetes: the pod from the cgroup, v1 and v2, both drivers; the
 * rank still from the environment. */
static void test_kubernetes(void)
{
    static const struct fake procs[] = {
        {500, 1, 500, "v1cgroupfs", 1, 10, ENV("RANK=3\0"),
         "12:pids:/kubepods/burstable/pod" UID "/c0ffee\n1:name=systemd:/kubepods/burstable/pod" UID
         "/c0ffee\n0::/\n"},
        {510, 1, 510, "v2systemd", 1, 10, ENV("HOME=/\0"),
         "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
         ".slice/cri-containerd-ab12.scope\n"},
        {520, 1, 520, "v2guaranteed", 1, 10, NOENV,
         "0::/kubepods.slice/kubepods-pod11111111_2222_3333_4444_555555555555.slice/crio-9.scope\n"},
        {530, 1, 530, "v2cgroupfs", 1, 10, ENV("X=1\0"),
         "0::/kubepods/pod11111111-2222-3333-4444-555555555555/77\n"},
        {540, 1, 540, "v1systemd", 1, 10, ENV("X=1\0"),
         "4:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
         ".slice/docker-1.scope\n"},
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    rig_open(&r, false, NULL, 0);
    static const struct gproc gpus[1][4] = {{{500, 1, 0}, {510, 1, 0}, {520, 1, 0}, {530, 1, 0}}};
    tick_begin(&r, gpus, 1);
    CHECK_INT(gp_frame_add_root(&r.f, 540), GP_OK);
    CHECK_INT(tick_end(&r), 0);
    CHECK_JID(&r, 500, "pod-" UID, 3, GP_JOB_KUBERNETES);
    CHECK_JID(&r, 510, "pod-" UID, -1, GP_JOB_KUBERNETES);
    CHECK_JID(&r, 520, "pod-11111111-2222-3333-4444-555555555555", -1, GP_JOB_KUBERNETES);
    CHECK_JID(&r, 530, "pod-11111111-2222-3333-4444-555555555555", -1, GP_JOB_KUBERNETES);
    CHECK_JID(&r, 540, "pod-" UID, -1, GP_JOB_KUBERNETES);
    CHECK_INT(r.f.njobs, 3); /* (UID, 3) (UID, -1) (1111..., -1) */
    CHECK_INT(job(&r, "pod-" UID, -1)->nprocs, 2);
    rig_close(&r);
}

/* gpulse run's child (cfg->follow, not on a GPU), GPULSE_JOB, a plain
 * process group, and precedence between the environment and the cgroup. */
static void test_run_env_plain_precedence(void)
{
    static const struct fake procs[] = {
        {600, 1, 600, "train", 100, 10, ENV("GPULSE_RUN_ID=run-20261123-1\0"), NULL},
        {610, 600, 600, "loader", 100, 20, NOENV, NULL},
        {700, 1, 700, "named", 1, 10, ENV("GPULSE_JOB=bert\0SLURM_JOB_ID=9\0"), NULL},
        {800, 1, 790, "plain", 1, 10, ENV("PATH=/bin\0"), NULL},
        {810, 800, 790, "plainkid", 1, 10, NOENV, NULL},
        {900, 1, 900, "both", 1, 10, ENV("SLURM_JOB_ID=12\0"),
         "0::/kubepods/pod" UID "/x\n"},
        {950, 1, 950, "badenv", 1, 10, ENV("GPULSE_JOB=cut"), "0::/kubepods/pod" UID "/x\n"},
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    static const uint32_t follow[] = {600};
    rig_open(&r, false, follow, 1);
    static const struct gproc gpus[1][4] = {{{700, 10, 0}, {800, 20, 0}, {900, 30, 0}, {950, 5, 0}}};
    tick_begin(&r, gpus, 1);
    CHECK_INT(tick_end(&r), 1); /* the cut environment of 950 */
    CHECK_JID(&r, 600, "run-20261123-1", -1, GP_JOB_RUN);
    CHECK_JID(&r, 610, "run-20261123-1", -1, GP_JOB_RUN);
    CHECK(proc(&r, 600)->followed && proc(&r, 610)->followed);
    CHECK_JID(&r, 700, "bert", -1, GP_JOB_ENV);
    CHECK_JID(&r, 800, "pg-790@node1", -1, GP_JOB_PGID);
    CHECK_JID(&r, 810, "pg-790@node1", -1, GP_JOB_PGID);
    CHECK_JID(&r, 900, "12", -1, GP_JOB_SLURM);
    /* a garbled environment names nothing: the cgroup still does */
    CHECK_JID(&r, 950, "pod-" UID, -1, GP_JOB_KUBERNETES);
    const struct gp_job *run = job(&r, "run-20261123-1", -1);
    CHECK_INT(run->nprocs, 2);
    CHECK_INT(run->ngpus, 0);
    CHECK(!run->gpu_mem_valid && !run->sm_valid);
    CHECK_INT(job(&r, "pg-790@node1", -1)->nprocs, 2);
    CHECK_INT(r.f.gpus[0].job_idx, job(&r, "12", -1) - r.f.jobs);
    rig_close(&r);
}

/* gpulse run's child before and after its exec: before, it holds gpulse
 * run's own environment (here a launcher's RANK and a Slurm job); after,
 * GPULSE_RUN_ID names the job, with the same pid and start time. */
static void test_run_child_env_after_exec(void)
{
    static const struct fake before = {600, 1, 600, "gpulse", 100, 10,
                                       ENV("RANK=3\0SLURM_JOB_ID=77\0"), NULL};
    build(&before, 1);
    struct rig r;
    static const uint32_t follow[] = {600};
    rig_open(&r, false, follow, 1);
    static const struct gproc none[1][4] = {{{0, 0, 0}}};
    tick_begin(&r, none, 1);
    tick_end(&r);
    CHECK_JID(&r, 600, "77", 3, GP_JOB_SLURM);
    static const struct fake after = {600, 1, 600, "python", 100, 10,
                                      ENV("RANK=3\0SLURM_JOB_ID=77\0GPULSE_RUN_ID=run-x\0"), NULL};
    write_proc(&after);
    tick_begin(&r, none, 1);
    tick_end(&r);
    CHECK_JID(&r, 600, "run-x", 3, GP_JOB_RUN);
    CHECK_INT(job(&r, "run-x", 3)->nprocs, 1);
    /* named: not read again (the environ file may go; the name stays) */
    remove_proc(600);
    write_proc(&(struct fake){600, 1, 600, "python", 100, 10, NOENV, NULL});
    tick_begin(&r, none, 1);
    tick_end(&r);
    CHECK_JID(&r, 600, "run-x", 3, GP_JOB_RUN);
    rig_close(&r);
}

/* Exited workers' CPU stays in the job; a new worker reusing a pid is
 * another process; a job without processes leaves the frame. */
static void test_cpu_of_exited_kept(void)
{
    static const struct fake procs[] = {
        {100, 1, 100, "python", 100, 10, ENV("GPULSE_JOB=j\0"), NULL},
        {110, 100, 100, "worker", 200, 20, NOENV, NULL},
        {120, 100, 100, "worker", 300, 30, NOENV, NULL},
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    rig_open(&r, false, NULL, 0);
    static const struct gproc gpus[1][4] = {{{100, 1, 0}}};
    tick_begin(&r, gpus, 1);
    tick_end(&r);
    CHECK_DBL(job(&r, "j", -1)->cpu_seconds, 2 * (100 + 200 + 300) / 100.0, 1e-9);
    /* 110 exits; 120 uses more CPU */
    remove_proc(110);
    static const struct fake more = {120, 100, 100, "worker", 400, 30, NOENV, NULL};
    write_proc(&more);
    tick_begin(&r, gpus, 1);
    tick_end(&r);
    CHECK_INT(job(&r, "j", -1)->nprocs, 2);
    CHECK_DBL(job(&r, "j", -1)->cpu_seconds, 2 * (100 + 200 + 400) / 100.0, 1e-9);
    /* pid 120 reused by a new worker (another start time) */
    static const struct fake reused = {120, 100, 100, "worker", 5, 99, NOENV, NULL};
    write_proc(&reused);
    tick_begin(&r, gpus, 1);
    tick_end(&r);
    CHECK_DBL(job(&r, "j", -1)->cpu_seconds, 2 * (100 + 200 + 400 + 5) / 100.0, 1e-9);
    /* the same again: stable */
    tick_begin(&r, gpus, 1);
    tick_end(&r);
    CHECK_DBL(job(&r, "j", -1)->cpu_seconds, 2 * (100 + 200 + 400 + 5) / 100.0, 1e-9);
    /* the GPU process leaves the GPU: nothing followed, no job */
    tick_begin(&r, NULL, 0);
    tick_end(&r);
    CHECK_INT(r.f.njobs, 0);
    /* back within ten minutes: the retired CPU is counted, the returning processes once */
    tick_begin(&r, gpus, 1);
    tick_end(&r);
    CHECK_DBL(job(&r, "j", -1)->cpu_seconds, 2 * (100 + 200 + 400 + 5) / 100.0, 1e-9);
    rig_close(&r);
}

/* Step reporters: a root without a job gets its process group; a sender
 * not in the frame keeps the job its client named, or the one it had
 * before it exited. */
static void test_steps(void)
{
    static const struct fake procs[] = {
        {100, 1, 90, "reporter", 1, 10, ENV("RANK=2\0"), NULL},
        {200, 1, 200, "gpu", 1, 10, ENV("GPULSE_JOB=g\0RANK=1\0"), NULL},
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    rig_open(&r, false, NULL, 0);
    static const struct gproc gpus[1][4] = {{{200, 1, 0}}};
    tick_begin(&r, gpus, 1);
    CHECK_INT(gp_frame_add_root(&r.f, 100), GP_OK);
    struct gp_step_stats *s = gp_frame_add_steps(&r.f);
    CHECK(s);
    s->pid = 100;
    s = gp_frame_add_steps(&r.f);
    CHECK(s);
    s->pid = 200;
    s = gp_frame_add_steps(&r.f);
    CHECK(s);
    s->pid = 4000000; /* another pid namespace */
    snprintf(s->jid.job, sizeof s->jid.job, "client-named");
    s->jid.rank = 7;
    tick_end(&r);
    CHECK_JID(&r, 100, "pg-90@node1", 2, GP_JOB_PGID);
    CHECK_STR(r.f.steps[0].jid.job, "pg-90@node1");
    CHECK_INT(r.f.steps[0].jid.rank, 2);
    CHECK_STR(r.f.steps[1].jid.job, "g");
    CHECK_INT(r.f.steps[1].jid.rank, 1);
    CHECK_STR(r.f.steps[2].jid.job, "client-named");
    CHECK_INT(r.f.steps[2].jid.rank, 7);
    /* The reporter's client names a job (meta job=): it takes it over its
     * process group, keeping the rank its environment gives. */
    tick_begin(&r, gpus, 1);
    CHECK_INT(gp_frame_add_root(&r.f, 100), GP_OK);
    s = gp_frame_add_steps(&r.f);
    CHECK(s);
    s->pid = 100;
    s->client_job = true;
    snprintf(s->jid.job, sizeof s->jid.job, "named-by-client");
    s->jid.rank = 5;
    s->jid.world_size = 8;
    tick_end(&r);
    CHECK_JID(&r, 100, "named-by-client", 2, GP_JOB_NONE);
    CHECK_STR(r.f.steps[0].jid.job, "named-by-client");
    CHECK_INT(r.f.steps[0].jid.rank, 2);
    CHECK_INT(r.f.steps[0].jid.world_size, 8);
    /* The GPU process exits; the steps source still holds its record: the
     * step series keep their job and rank instead of losing the labels. */
    remove_proc(200);
    tick_begin(&r, NULL, 0);
    s = gp_frame_add_steps(&r.f);
    CHECK(s);
    s->pid = 200;
    tick_end(&r);
    CHECK_STR(r.f.steps[0].jid.job, "g");
    CHECK_INT(r.f.steps[0].jid.rank, 1);
    rig_close(&r);
}

/* process_series all: every process read, only the followed trees have
 * identities and jobs, as in the default mode. */
/* A step entry whose sender's uid is not the job owner's (the earliest
 * process naming the job; every fake process runs as uid 1000) is dropped
 * and counted, whatever its process's environment says (issue 15). */
static void test_steps_of_another_uid_dropped(void)
{
    static const struct fake procs[] = {
        {300, 1, 300, "owner", 1, 10, ENV("GPULSE_JOB=secretjob\0"), NULL},
        {400, 1, 400, "forger", 1, 50, ENV("GPULSE_JOB=secretjob\0"), NULL},
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    rig_open(&r, false, NULL, 0);
    static const struct gproc gpus[1][4] = {{{300, 1, 0}}};
    tick_begin(&r, gpus, 1);
    CHECK_INT(gp_frame_add_root(&r.f, 400), GP_OK);
    const uint32_t who[][2] = {{300, 1000}, {400, 1001}, {400, 0}};
    for (unsigned i = 0; i < 3; i++) {
        struct gp_step_stats *s = gp_frame_add_steps(&r.f);
        CHECK(s);
        s->pid = who[i][0];
        s->uid = who[i][1];
        s->steps_total = 100 + i;
    }
    CHECK_INT(tick_end(&r), 1);
    CHECK_INT(r.f.nsteps, 2);
    CHECK_INT(r.f.steps[0].steps_total, 100);
    CHECK_STR(r.f.steps[0].jid.job, "secretjob");
    CHECK_INT(r.f.steps[1].steps_total, 102); /* root may */
    CHECK_STR(r.f.steps[1].jid.job, "secretjob");
    rig_close(&r);
}

static void test_all_mode(void)
{
    static const struct fake procs[] = {
        {100, 1, 100, "python", 1, 10, ENV("GPULSE_JOB=j\0RANK=0\0"), NULL},
        {110, 100, 100, "worker", 1, 10, NOENV, NULL},
        {300, 1, 300, "other", 1, 10, ENV("GPULSE_JOB=notfollowed\0"), NULL},
    };
    build(procs, sizeof procs / sizeof procs[0]);
    struct rig r;
    rig_open(&r, true, NULL, 0);
    static const struct gproc gpus[1][4] = {{{100, 1, 0}}};
    for (int t = 0; t < 2; t++) {
        tick_begin(&r, gpus, 1);
        CHECK_INT(tick_end(&r), 0);
        CHECK_INT(r.f.nprocs, 4);
        CHECK(!proc(&r, 1)->followed);
        CHECK(!proc(&r, 300)->followed);
        CHECK_STR(proc(&r, 300)->jid.job, "");
        CHECK_JID(&r, 110, "j", 0, GP_JOB_ENV);
        CHECK(proc(&r, 110)->followed);
        CHECK_INT(r.f.njobs, 1);
        CHECK_INT(r.f.jobs[0].nprocs, 2);
    }
    rig_close(&r);
}

const struct gp_test gp_tests_jobs[] = {
    {"slurm", test_slurm},
    {"torchrun", test_torchrun},
    {"kubernetes", test_kubernetes},
    {"run_env_plain_precedence", test_run_env_plain_precedence},
    {"run_child_env_after_exec", test_run_child_env_after_exec},
    {"cpu_of_exited_kept", test_cpu_of_exited_kept},
    {"steps", test_steps},
    {"steps_of_another_uid_dropped", test_steps_of_another_uid_dropped},
    {"all_mode", test_all_mode},
    {0},
};
