/*
 * steps_trust.c - reads, under the procfs root, which job a step sender's
 * process tree belongs to and which uid owns a job (steps_trust.h).
 *
 * A job's name is whatever its processes put in their environment
 * (GPULSE_JOB, SLURM_JOB_ID...) or the pod of their cgroup, so anyone can
 * name any job: ownership is therefore the real uid of the EARLIEST
 * started process naming it. A second user who starts a process with
 * GPULSE_JOB=theirs later, or whose step client says `meta job=theirs`,
 * does not become the job's owner.
 *
 * The owner scan reads environ, cgroup, stat and status of every process:
 * tens of milliseconds on a busy node. steps.c calls it once per new
 * sender and per job a sender names, never per record. Files are read
 * into one buffer kept across calls (at most the parsers' own caps).
 */
#include "steps_trust.h"

#include "jobattr.h"
#include "procfs_parse.h"

#include "lib/err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRUST_DEPTH 64 /* bound on an ancestor walk (pid loops in a fake tree) */

struct gp_steps_trust {
    int root; /* directory fd of the procfs root */
    char *buf;
    size_t cap;
};

const char *gp_steps_refusal_name(enum gp_steps_refusal r)
{
    static const char *const names[] = {
        "",
#define GP_STEPS_REF_NAME_(id, name) name,
        GP_STEPS_REFUSALS(GP_STEPS_REF_NAME_)
#undef GP_STEPS_REF_NAME_
    };
    return (unsigned)r < GP_STEPS__NREFUSALS ? names[r] : "";
}

struct gp_steps_trust *gp_steps_trust_new(const char *proc_root)
{
    struct gp_steps_trust *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 64 * 1024;
    t->buf = malloc(t->cap);
    t->root = open(proc_root && proc_root[0] ? proc_root : "/proc",
                   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!t->buf || t->root < 0) {
        gp_steps_trust_free(t);
        return NULL;
    }
    return t;
}

void gp_steps_trust_free(struct gp_steps_trust *t)
{
    if (!t)
        return;
    if (t->root >= 0)
        close(t->root);
    free(t->buf);
    free(t);
}

/* Reads "<pid>/<leaf>" whole into t->buf (growing up to max); its length,
 * or -1 when unreadable or larger than max. */
static ssize_t read_pid(struct gp_steps_trust *t, uint32_t pid, const char *leaf, size_t max)
{
    char rel[48];
    snprintf(rel, sizeof rel, "%u/%s", pid, leaf);
    int fd = openat(t->root, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    ssize_t n;
    for (;;) {
        n = pread(fd, t->buf, t->cap, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (size_t)n < t->cap)
            break;
        if (t->cap >= max) { /* a whole snapshot or nothing */
            n = -1;
            break;
        }
        char *nb = realloc(t->buf, t->cap * 2);
        if (!nb) {
            n = -1;
            break;
        }
        t->buf = nb;
        t->cap *= 2;
    }
    close(fd);
    return n;
}

/* pid's own job (environment, else cgroup), as procfs reads it. */
static void own_job(struct gp_steps_trust *t, uint32_t pid, struct gp_job_id *id)
{
    gp_jobattr_clear(id);
    ssize_t n = read_pid(t, pid, "environ", GP_JOBATTR_ENVIRON_MAX);
    if (n >= 0 && gp_jobattr_parse_environ(t->buf, (size_t)n, id) != GP_OK)
        gp_jobattr_clear(id);
    if (id->scheme == GP_JOB_NONE) {
        n = read_pid(t, pid, "cgroup", GP_JOBATTR_CGROUP_MAX);
        if (n >= 0)
            gp_jobattr_parse_cgroup(t->buf, (size_t)n, id);
    }
}

static bool read_stat(struct gp_steps_trust *t, uint32_t pid, struct gp_procfs_pid_stat *ps)
{
    ssize_t n = read_pid(t, pid, "stat", 64 * 1024);
    return n > 0 && gp_procfs_parse_pid_stat(t->buf, (size_t)n, ps) == GP_OK;
}

void gp_steps_trust_tree(struct gp_steps_trust *t, uint32_t pid, const uint32_t *follow,
                         size_t nfollow, char job[GP_JOB_LEN], bool *in_follow)
{
    job[0] = '\0';
    if (in_follow)
        *in_follow = false;
    uint32_t p = pid;
    for (int d = 0; d < TRUST_DEPTH && p > 0; d++) {
        for (size_t i = 0; follow && i < nfollow; i++)
            if (follow[i] == p && in_follow)
                *in_follow = true;
        if (!job[0]) {
            struct gp_job_id id;
            own_job(t, p, &id);
            if (id.job[0])
                memcpy(job, id.job, GP_JOB_LEN);
        }
        if (job[0] && (!in_follow || *in_follow))
            return;
        struct gp_procfs_pid_stat ps;
        if (!read_stat(t, p, &ps) || ps.ppid == p)
            return;
        p = ps.ppid;
    }
}

bool gp_steps_trust_owner(struct gp_steps_trust *t, const char *job, uint32_t *uid)
{
    int fd = dup(t->root);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    rewinddir(d); /* the dup shares the offset of earlier scans */
    bool found = false;
    uint64_t first = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        unsigned long pid = strtoul(de->d_name, &end, 10);
        if (*end || de->d_name[0] < '1' || de->d_name[0] > '9' || pid > UINT32_MAX)
            continue;
        struct gp_job_id id;
        own_job(t, (uint32_t)pid, &id);
        if (strcmp(id.job, job) != 0)
            continue;
        struct gp_procfs_pid_stat ps;
        struct gp_procfs_pid_status pst;
        if (!read_stat(t, (uint32_t)pid, &ps))
            continue;
        ssize_t n = read_pid(t, (uint32_t)pid, "status", 64 * 1024);
        if (n <= 0 || gp_procfs_parse_pid_status(t->buf, (size_t)n, &pst) != GP_OK)
            continue;
        if (!found || ps.starttime < first) {
            found = true;
            first = ps.starttime;
            *uid = pst.uid;
        }
    }
    closedir(d);
    return found;
}
