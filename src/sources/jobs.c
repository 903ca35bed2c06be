/*
 * jobs.c - the jobs source: ties this tick's processes, GPUs and step
 * reporters to training jobs and ranks (docs/jobs.md, "Attribution").
 *
 * It samples last, after procfs has read the followed processes and
 * given each its own identity (environment or cgroup, p->jid). Then:
 *   1. Names: a followed process without a job of its own takes the job
 *      of its nearest ancestor in the frame that has one (dataloader
 *      workers whose environment could not be read); a process on a GPU,
 *      a root (frame->roots, cfg->follow) or a step reporter with still
 *      no job takes the job its step client named (meta job=), else
 *      gets "pg-<pgid>@<host>" (scheme process_group), and the
 *      followed processes below it inherit that. Ranks a process knows
 *      itself are kept; unknown ones come with the inherited job.
 *   2. Sums: one frame->jobs entry per distinct (job, rank) of the
 *      followed processes: earliest start, processes, RSS, and CPU time.
 *      CPU time must never go down when a worker exits, so the source
 *      keeps each process's last CPU time (an array sorted by pid, two
 *      swapped per tick and merged in one walk, like procfs's cache) and
 *      adds it to its job's retired total when the pid leaves the frame,
 *      starts anew (another start time) or changes job. A departed pid
 *      is kept JOBS_FORGET_MS: if the same process comes back (it left
 *      its GPU for a while, a read failed) its CPU leaves the retired
 *      total again, so nothing counts twice. Jobs are kept in a table
 *      of their own across ticks and forgotten JOBS_FORGET_MS after
 *      their last process.
 *   3. GPUs: each GPU's per-process entries add memory and SM share to
 *      their processes' jobs; the GPU's job_idx is the job holding the
 *      most memory on it (the first seen on a tie).
 *   4. Steps: each frame->steps entry takes its process's job; one whose
 *      process has exited takes the job it had (kept JOBS_FORGET_MS), so
 *      its step series keep their labels until the steps source drops
 *      them; else the job its client named. An entry whose sender's uid
 *      (not root) is not the uid of the job's owner in this frame (the
 *      earliest-started process naming the job itself) is dropped from
 *      the frame and counted as a jobs error: the steps source refuses
 *      such senders as their records come (docs/steps.md), and this
 *      catches a process that changed its identity since (an exec with
 *      another environment) before its totals show under the job.
 * Simulated jobs (the first frame->nsim_jobs jobs), simulated GPUs and
 * simulated step reporters (node set) come named from the simulate
 * source and are left as they are.
 * Every array grows only past the most processes or jobs seen yet: a
 * steady-state tick allocates nothing. Out of memory fails the tick
 * (GP_ENOMEM) with the frame's jobs left consistent but incomplete.
 */
#include "jobattr.h"
#include "source.h"

#include "lib/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOBS_FORGET_MS (10 * 60 * 1000) /* a job without processes is kept this long */
#define JOBS_DEPTH 64                   /* bound on an ancestor walk (pid loops) */

enum { F_OWN = 1, F_ELIGIBLE = 2 }; /* per frame process */

/* What the source remembers of one process with a job. Sorted by pid. */
struct jobs_pid {
    uint32_t pid;
    uint32_t job;        /* index into jobs_state.jobs */
    bool departed;       /* left the frame: cpu_s is in its job's retired total */
    double start_time_s; /* tells a reused pid apart */
    double cpu_s;        /* user + system at its last tick */
    int64_t departed_ms; /* when it left; kept JOBS_FORGET_MS in case it comes back */
};

/* A job (and rank) seen on this node, kept across ticks. */
struct jobs_job {
    struct gp_job_id id;
    double retired_cpu_s; /* CPU of its processes that left */
    int64_t last_ms;      /* last tick it had a process */
    int frame_idx;        /* this tick's index in frame->jobs; -1: none */
    bool used;            /* a free slot when false */
};

/* Scratch per frame process and per frame job. */
struct jobs_proc {
    unsigned char flags; /* F_* */
    int job;             /* index into frame->jobs; -1: none */
    uint32_t sjob;       /* index into jobs_state.jobs, when job >= 0 */
};
struct jobs_on_gpu {
    uint64_t mem;        /* bytes its processes hold on the GPU */
    bool on;             /* it has a process there */
};

struct jobs_state {
    char hostname[256];
    const uint32_t *follow;
    size_t nfollow;
    struct jobs_pid *pids[2]; /* [cur]: last tick's, [!cur]: built now */
    size_t npids[2], cap_pids[2];
    int cur;
    struct jobs_job *jobs;
    size_t njobs, cap_jobs;
    struct jobs_proc *procs;  /* per frame process */
    size_t cap_procs;
    struct jobs_on_gpu *gsum; /* per frame job, for the GPU at hand */
    size_t cap_gsum;
};

/* Grows *p to hold n elements of size sz (to the next power of two). */
static int grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap)
        return GP_OK;
    size_t nc = *cap ? *cap : 64;
    while (nc < n)
        nc *= 2;
    void *np = realloc(*p, nc * sz);
    if (!np)
        return GP_ENOMEM;
    *p = np;
    *cap = nc;
    return GP_OK;
}

static void jobs_close(void *state)
{
    struct jobs_state *st = state;
    if (!st)
        return;
    free(st->pids[0]);
    free(st->pids[1]);
    free(st->jobs);
    free(st->procs);
    free(st->gsum);
    free(st);
}

static int jobs_open(const struct gp_source_config *cfg, void **state, char *err, size_t errlen)
{
    struct jobs_state *st = calloc(1, sizeof *st);
    if (!st)
        return gp_seterr(err, errlen, GP_ENOMEM, "jobs: out of memory");
    snprintf(st->hostname, sizeof st->hostname, "%s",
             cfg && cfg->hostname && *cfg->hostname ? cfg->hostname : "localhost");
    st->follow = cfg && cfg->nfollow ? cfg->follow : NULL;
    st->nfollow = st->follow ? cfg->nfollow : 0;
    *state = st;
    return GP_OK;
}

static void mark_eligible(struct jobs_state *st, const struct gp_frame *f, uint32_t pid)
{
    const struct gp_proc *p = gp_frame_find_proc(f, pid);
    if (p)
        st->procs[p - f->procs].flags |= F_ELIGIBLE;
}

/* Gives p the job of from; p keeps the ranks it knows itself. */
static void inherit(struct gp_proc *p, const struct gp_job_id *from)
{
    memcpy(p->jid.job, from->job, sizeof p->jid.job);
    p->jid.scheme = from->scheme;
    if (p->jid.rank < 0)
        p->jid.rank = from->rank;
    if (p->jid.local_rank < 0)
        p->jid.local_rank = from->local_rank;
    if (p->jid.world_size < 0)
        p->jid.world_size = from->world_size;
}

/* The nearest ancestor of procs[i] in the frame that has a job (own_only:
 * its own), or NULL. */
static const struct gp_proc *job_ancestor(const struct jobs_state *st, const struct gp_frame *f,
                                          unsigned i, bool own_only)
{
    const struct gp_proc *a = &f->procs[i];
    for (int d = 0; d < JOBS_DEPTH && a->ppid && a->ppid != a->pid; d++) {
        a = gp_frame_find_proc(f, a->ppid);
        if (!a)
            return NULL;
        if (own_only ? (st->procs[a - f->procs].flags & F_OWN) != 0 : a->jid.job[0] != '\0')
            return a;
    }
    return NULL;
}

/* Step 1 of the design comment: every followed process gets its job. */
static void name_jobs(struct jobs_state *st, struct gp_frame *f)
{
    for (unsigned i = 0; i < f->nprocs; i++)
        st->procs[i].flags = f->procs[i].jid.job[0] ? F_OWN : 0;
    for (unsigned g = 0; g < f->ngpus; g++)
        for (unsigned j = 0; j < f->gpus[g].nprocs; j++)
            mark_eligible(st, f, f->gpus[g].procs[j].pid);
    for (unsigned r = 0; r < f->nroots; r++)
        mark_eligible(st, f, f->roots[r]);
    for (size_t r = 0; r < st->nfollow; r++)
        mark_eligible(st, f, st->follow[r]);
    for (unsigned s = 0; s < f->nsteps; s++)
        if (!f->steps[s].node[0])
            mark_eligible(st, f, f->steps[s].pid);

    for (unsigned i = 0; i < f->nprocs; i++) {
        struct gp_proc *p = &f->procs[i];
        if (!p->followed || p->jid.job[0])
            continue;
        const struct gp_proc *a = job_ancestor(st, f, i, true);
        if (a)
            inherit(p, &a->jid);
    }
    /* A step reporter with no job of its own or of its ancestors takes the
     * job its client named (gpulse.meta(job=...)) before a process group:
     * the same name while it runs and after it exits. */
    for (unsigned s = 0; s < f->nsteps; s++) {
        const struct gp_step_stats *ss = &f->steps[s];
        if (ss->node[0] || !ss->client_job || !ss->jid.job[0])
            continue;
        struct gp_proc *p = (struct gp_proc *)gp_frame_find_proc(f, ss->pid);
        if (!p || !p->followed || p->jid.job[0])
            continue;
        struct gp_job_id own = p->jid; /* ranks it knows itself are kept */
        p->jid = ss->jid;
        if (own.rank >= 0)
            p->jid.rank = own.rank;
        if (own.local_rank >= 0)
            p->jid.local_rank = own.local_rank;
        if (own.world_size >= 0)
            p->jid.world_size = own.world_size;
    }
    for (unsigned i = 0; i < f->nprocs; i++) {
        struct gp_proc *p = &f->procs[i];
        if (!p->followed || p->jid.job[0] || !(st->procs[i].flags & F_ELIGIBLE))
            continue;
        char name[sizeof st->hostname + 16];
        int n = snprintf(name, sizeof name, "pg-%u@%s", p->pgid, st->hostname);
        gp_jobattr_sanitize(p->jid.job, name, n > 0 ? strnlen(name, sizeof name) : 0);
        p->jid.scheme = GP_JOB_PGID;
    }
    for (unsigned i = 0; i < f->nprocs; i++) {
        struct gp_proc *p = &f->procs[i];
        if (!p->followed || p->jid.job[0])
            continue;
        const struct gp_proc *a = job_ancestor(st, f, i, false);
        if (a)
            inherit(p, &a->jid);
    }
}

static bool same_job(const struct gp_job_id *a, const struct gp_job_id *b)
{
    return a->rank == b->rank && strcmp(a->job, b->job) == 0;
}

/* The kept job of id, added when new; -1 when out of memory. */
static long state_job(struct jobs_state *st, const struct gp_job_id *id)
{
    size_t free_slot = st->njobs;
    for (size_t k = 0; k < st->njobs; k++) {
        if (!st->jobs[k].used) {
            if (free_slot == st->njobs)
                free_slot = k;
            continue;
        }
        if (same_job(&st->jobs[k].id, id))
            return (long)k;
    }
    if (free_slot == st->njobs) {
        if (grow((void **)&st->jobs, &st->cap_jobs, st->njobs + 1, sizeof *st->jobs) != GP_OK)
            return -1;
        st->njobs++;
    }
    st->jobs[free_slot] = (struct jobs_job){.id = *id, .frame_idx = -1, .used = true};
    return (long)free_slot;
}

/* Step 2 of the design comment. */
static int sum_jobs(struct jobs_state *st, struct gp_frame *f)
{
    for (size_t k = 0; k < st->njobs; k++)
        st->jobs[k].frame_idx = -1;
    size_t nlive = 0;
    for (unsigned i = 0; i < f->nprocs; i++) {
        const struct gp_proc *p = &f->procs[i];
        st->procs[i].job = -1;
        if (!p->followed || !p->jid.job[0])
            continue;
        long k = state_job(st, &p->jid);
        if (k < 0)
            return GP_ENOMEM;
        struct jobs_job *sj = &st->jobs[k];
        if (sj->frame_idx < 0) {
            struct gp_job *j = gp_frame_add_job(f);
            if (!j)
                return GP_ENOMEM;
            sj->frame_idx = (int)(f->njobs - 1);
            j->id = p->jid;
            j->start_time_s = p->start_time_s;
        }
        struct gp_job *j = &f->jobs[sj->frame_idx];
        if (j->id.local_rank < 0)
            j->id.local_rank = p->jid.local_rank;
        if (j->id.world_size < 0)
            j->id.world_size = p->jid.world_size;
        if (p->start_time_s < j->start_time_s)
            j->start_time_s = p->start_time_s;
        j->nprocs++;
        j->rss_bytes += p->rss_bytes;
        j->cpu_seconds += p->utime_s + p->stime_s;
        sj->last_ms = f->time_ms;
        st->procs[i].job = sj->frame_idx;
        st->procs[i].sjob = (uint32_t)k;
        nlive++;
    }

    /* Merge this tick's processes with the kept ones (both by pid). */
    size_t nold = st->npids[st->cur];
    if (grow((void **)&st->pids[!st->cur], &st->cap_pids[!st->cur], nold + nlive,
             sizeof *st->pids[0]) != GP_OK)
        return GP_ENOMEM;
    struct jobs_pid *old = st->pids[st->cur], *now = st->pids[!st->cur];
    size_t n = 0, o = 0;
    for (unsigned i = 0; i <= f->nprocs; i++) {
        const struct gp_proc *p = i < f->nprocs ? &f->procs[i] : NULL;
        if (p && st->procs[i].job < 0)
            continue;
        /* the kept pids below p's (all that are left after the last) are gone */
        for (; o < nold && (!p || old[o].pid < p->pid); o++) {
            struct jobs_pid *e = &old[o];
            if (!e->departed) {
                st->jobs[e->job].retired_cpu_s += e->cpu_s;
                e->departed = true;
                e->departed_ms = f->time_ms;
            }
            if (f->time_ms - e->departed_ms < JOBS_FORGET_MS && st->jobs[e->job].used)
                now[n++] = *e;
        }
        if (!p)
            break;
        struct jobs_pid live = {p->pid, st->procs[i].sjob, false, p->start_time_s,
                                p->utime_s + p->stime_s, 0};
        if (o < nold && old[o].pid == p->pid) {
            struct jobs_pid *e = &old[o++];
            bool same = e->start_time_s == live.start_time_s && e->job == live.job;
            if (same && e->departed) /* back: it was counted as retired */
                st->jobs[e->job].retired_cpu_s -= e->cpu_s;
            else if (!same && !e->departed) /* another process, or another job */
                st->jobs[e->job].retired_cpu_s += e->cpu_s;
        }
        now[n++] = live;
    }
    st->npids[!st->cur] = n;
    st->cur = !st->cur;

    for (size_t k = 0; k < st->njobs; k++) {
        struct jobs_job *sj = &st->jobs[k];
        if (!sj->used)
            continue;
        if (sj->frame_idx >= 0)
            f->jobs[sj->frame_idx].cpu_seconds += sj->retired_cpu_s;
        else if (f->time_ms - sj->last_ms >= JOBS_FORGET_MS)
            sj->used = false;
    }
    return GP_OK;
}

/* The kept record of pid (live or departed within JOBS_FORGET_MS), or
 * NULL: a binary search of the list merged this tick. */
static const struct jobs_pid *kept_pid(const struct jobs_state *st, uint32_t pid)
{
    const struct jobs_pid *v = st->pids[st->cur];
    size_t lo = 0, hi = st->npids[st->cur];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < st->npids[st->cur] && v[lo].pid == pid ? &v[lo] : NULL;
}

/* Step 3 of the design comment. */
static void sum_gpus(struct jobs_state *st, struct gp_frame *f)
{
    for (unsigned g = 0; g < f->ngpus; g++) {
        struct gp_gpu *gpu = &f->gpus[g];
        if (gpu->simulated)
            continue; /* its job is the simulate source's; its pids are not in /proc */
        gpu->job_idx = -1;
        if (gpu->lost || !f->njobs)
            continue;
        memset(st->gsum, 0, f->njobs * sizeof *st->gsum);
        for (unsigned k = 0; k < gpu->nprocs; k++) {
            const struct gp_gpu_proc *gp = &gpu->procs[k];
            const struct gp_proc *p = gp_frame_find_proc(f, gp->pid);
            int ji = p ? st->procs[p - f->procs].job : -1;
            if (ji < 0)
                continue;
            struct gp_job *j = &f->jobs[ji];
            st->gsum[ji].on = true;
            if (gp->mem_valid) {
                st->gsum[ji].mem += gp->mem_bytes;
                j->gpu_memory_bytes += gp->mem_bytes;
                j->gpu_mem_valid = true;
            }
            if (gp->util_valid) {
                j->sm_ratio += gp->sm_util / 100.0;
                j->sm_valid = true;
            }
        }
        for (unsigned ji = 0; ji < f->njobs; ji++) {
            if (!st->gsum[ji].on)
                continue;
            f->jobs[ji].ngpus++;
            if (gpu->job_idx < 0 || st->gsum[ji].mem > st->gsum[gpu->job_idx].mem)
                gpu->job_idx = (int)ji;
        }
    }
}

/* The real uid of the earliest-started frame process whose own identity
 * names job; false when none does. */
static bool frame_owner(const struct jobs_state *st, const struct gp_frame *f, const char *job,
                        uint32_t *uid)
{
    bool found = false;
    double first = 0;
    for (unsigned i = 0; i < f->nprocs; i++) {
        const struct gp_proc *p = &f->procs[i];
        if (!(st->procs[i].flags & F_OWN) || strcmp(p->jid.job, job) != 0)
            continue;
        if (!found || p->start_time_s < first) {
            found = true;
            first = p->start_time_s;
            *uid = p->uid;
        }
    }
    return found;
}

static int jobs_sample(void *state, struct gp_frame *f, unsigned *errors)
{
    struct jobs_state *st = state;
    gp_frame_sort_procs(f);
    if (f->hostname[0] && strcmp(f->hostname, st->hostname) != 0)
        snprintf(st->hostname, sizeof st->hostname, "%s", f->hostname);
    f->njobs = f->nsim_jobs; /* simulated jobs (simulate source) pass through */
    if (grow((void **)&st->procs, &st->cap_procs, f->nprocs, sizeof *st->procs) != GP_OK)
        return GP_ENOMEM;

    name_jobs(st, f);
    int rc = sum_jobs(st, f);
    if (rc != GP_OK)
        return rc;
    if (grow((void **)&st->gsum, &st->cap_gsum, f->njobs, sizeof *st->gsum) != GP_OK)
        return GP_ENOMEM;
    sum_gpus(st, f);

    for (unsigned s = 0; s < f->nsteps; s++) {
        struct gp_step_stats *ss = &f->steps[s];
        if (ss->node[0])
            continue; /* a simulated rank: named by the simulate source */
        const struct gp_proc *p = gp_frame_find_proc(f, ss->pid);
        const struct jobs_pid *e = p ? NULL : kept_pid(st, ss->pid);
        if (p && p->jid.job[0])
            ss->jid = p->jid;
        else if (e && st->jobs[e->job].used)
            ss->jid = st->jobs[e->job].id; /* exited: its series keep their labels */
    }
    unsigned w = 0;
    for (unsigned s = 0; s < f->nsteps; s++) {
        const struct gp_step_stats *ss = &f->steps[s];
        uint32_t owner = 0;
        if (!ss->node[0] && ss->uid != 0 && ss->jid.job[0] &&
            frame_owner(st, f, ss->jid.job, &owner) && owner != ss->uid) {
            (*errors)++;
            continue;
        }
        if (w != s)
            f->steps[w] = *ss;
        w++;
    }
    f->nsteps = w;
    return GP_OK;
}

const struct gp_source_ops gp_source_jobs = {
    .name = "jobs",
    .id = GP_SRC_JOBS,
    .open = jobs_open,
    .sample = jobs_sample,
    .close = jobs_close,
};
