/*
 * test_steps_trust.c - who may report for a job on the step socket
 * (docs/steps.md "Who may report for a job"), over a real socket.
 *
 * The "other user" is simulated through the check's inputs: a fake /proc
 * tree (the source's procfs root) holds the job's process, of uid 1000,
 * and the sender's own process; the sender's uid is the kernel's
 * SCM_CREDENTIALS, which root may set to any uid (the pid stays the test
 * process's, a real one). Without root the kernel reports our own uid, so
 * the job's process gets another one: the same check either way.
 */
#include "lib/err.h"
#include "sources/frame.h"
#include "sources/source.h"
#include "sources/steps_proto.h"
#include "sources/steps_trust.h"
#include "test.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define JOB_PID 4242u

static bool is_root(void) { return geteuid() == 0; }

/* The uid the job's process runs as, and the forging sender's. */
static uint32_t owner_uid(void) { return is_root() ? 1000 : (uint32_t)getuid() + 1; }
static uint32_t other_uid(void) { return is_root() ? 1001 : (uint32_t)getuid(); }

static const char *path_in(const char *leaf)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", gp_test_tmpdir(), leaf);
    return p;
}

/* Writes len bytes (environ holds NULs) at proc/<pid>/<leaf>. */
static void put(uint32_t pid, const char *leaf, const char *data, size_t len)
{
    char rel[64];
    snprintf(rel, sizeof rel, "proc/%u/%s", pid, leaf);
    gp_test_write_file(gp_test_tmpdir(), rel, "");
    FILE *f = fopen(path_in(rel), "w");
    CHECK(f != NULL);
    CHECK(fwrite(data, 1, len, f) == len);
    fclose(f);
}

/* A fake process: environ (NUL-separated), parent, start time and uid. */
static void fake_proc(uint32_t pid, const char *environ, size_t envlen, uint32_t ppid,
                      unsigned long long start, uint32_t uid)
{
    char b[512];
    put(pid, "environ", environ, envlen);
    int n = snprintf(b, sizeof b,
                     "%u (python) S %u %u %u 0 -1 4194304 100 0 0 0 10 5 0 0 20 0 1 0 %llu "
                     "1000000 100 18446744073709551615\n",
                     pid, ppid, pid, pid, start);
    put(pid, "stat", b, (size_t)n);
    n = snprintf(b, sizeof b, "Name:\tpython\nUid:\t%u\t%u\t%u\t%u\nThreads:\t1\n", uid, uid, uid, uid);
    put(pid, "status", b, (size_t)n);
    put(pid, "cgroup", "0::/user.slice\n", 15);
}

#define ENV(lit) lit, sizeof lit - 1

/* The victim's job: one process of owner_uid() named secretjob; the
 * sender's own process names no job. */
static void fake_tree(void)
{
    fake_proc(JOB_PID, ENV("HOME=/home/alice\0GPULSE_JOB=secretjob\0"), 1, 100, owner_uid());
    fake_proc((uint32_t)getpid(), ENV("HOME=/home/mallory\0"), 1, 200, other_uid());
}

static void *open_src(const char *sock, bool per_job, const uint32_t *follow, size_t nfollow)
{
    static char proc[512];
    snprintf(proc, sizeof proc, "%s/proc", gp_test_tmpdir());
    struct gp_source_config cfg = {.steps_socket = sock, .proc_root = proc,
                                   .steps_per_job = per_job, .follow = follow, .nfollow = nfollow};
    void *st = NULL;
    char err[256];
    if (gp_source_steps.open(&cfg, &st, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "open: %s", err);
    return st;
}

/* Sends text as pid (getpid() unless a child sends) with uid: explicit
 * credentials when root, the kernel's own otherwise. */
static void send_as(const char *sock, uint32_t uid, const char *text)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    struct iovec iov = {(void *)text, strlen(text)};
    struct msghdr m = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    if (is_root()) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.b;
        m.msg_controllen = sizeof ctl.b;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_CREDENTIALS;
        c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
        struct ucred cr = {.pid = getpid(), .uid = uid, .gid = getgid()};
        memcpy(CMSG_DATA(c), &cr, sizeof cr);
    } else {
        CHECK(uid == (uint32_t)getuid());
    }
    if (sendmsg(fd, &m, 0) != (ssize_t)strlen(text))
        gp_test_fail(__FILE__, __LINE__, "sendmsg: %s", strerror(errno));
    close(fd);
}

static uint64_t refused_total(const struct gp_frame *f)
{
    uint64_t n = 0;
    for (int i = 0; i < GP_STEPS_NREFUSED; i++)
        n += f->steps_self.refused[i];
    return n;
}

/* Samples until `records` records were kept or refused (5 s). */
static void sample_until(void *st, struct gp_frame *f, uint64_t records)
{
    unsigned errors = 0;
    for (int i = 0; i < 500; i++) {
        gp_frame_reset(f);
        CHECK_INT(gp_source_steps.sample(st, f, &errors), GP_OK);
        if (f->steps_self.records + refused_total(f) >= records)
            return;
        usleep(10000);
    }
    gp_test_fail(__FILE__, __LINE__, "only %llu kept and %llu refused, wanted %llu",
                 (unsigned long long)f->steps_self.records, (unsigned long long)refused_total(f),
                 (unsigned long long)records);
}

/* The finding's forgery: another uid says `meta job=secretjob` and sends
 * steps. Nothing of it counts; the owner's own records then do. */
static void test_forged_meta_refused_owner_counts(void)
{
    fake_tree();
    char sock[100];
    snprintf(sock, sizeof sock, "%s", path_in("s.sock"));
    void *st = open_src(sock, false, NULL, 0);
    send_as(sock, other_uid(), "meta seq=1 job=secretjob rank=0 target=1\n"
                               "step seq=2 n=100000 dur=5\nstep seq=3 n=100001 dur=5\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until(st, &f, 3);
    CHECK_INT(f.steps_self.records, 0);
    CHECK_INT(f.steps_self.refused[GP_STEPS_UID_MISMATCH - 1], 3);
    CHECK_INT(f.nsteps, 0); /* no step series, no target, for anyone */
    if (is_root()) {
        /* the same pid now as the job's own uid (a new process there) */
        send_as(sock, owner_uid(), "meta seq=1 job=secretjob target=10\nstep seq=2 n=1 dur=0.5\n");
        sample_until(st, &f, 5);
        CHECK_INT(f.steps_self.records, 2);
        CHECK_INT(f.nsteps, 1);
        CHECK_STR(f.steps[0].jid.job, "secretjob");
        CHECK_INT(f.steps[0].steps_total, 1);
        CHECK_INT(f.steps[0].target_steps, 10);
        /* root may speak for any job */
        send_as(sock, 0, "step seq=3 n=2 dur=0.5\n");
        sample_until(st, &f, 6);
        CHECK_INT(f.steps_self.records, 3);
    }
    CHECK_INT(f.steps_self.refused[GP_STEPS_UID_MISMATCH - 1], 3);
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

/* A sender whose own environment names the job (GPULSE_JOB=secretjob)
 * does not own it either: the earliest process naming it does. */
static void test_own_environment_does_not_make_owner(void)
{
    fake_tree();
    fake_proc((uint32_t)getpid(), ENV("GPULSE_JOB=secretjob\0"), 1, 200, other_uid());
    char sock[100];
    snprintf(sock, sizeof sock, "%s", path_in("s.sock"));
    void *st = open_src(sock, false, NULL, 0);
    send_as(sock, other_uid(), "step seq=1 n=5 dur=1\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until(st, &f, 1);
    CHECK_INT(f.steps_self.records, 0);
    CHECK_INT(f.steps_self.refused[GP_STEPS_UID_MISMATCH - 1], 1);
    CHECK_INT(f.nsteps, 0);
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

/* A sender naming no job speaks for its own process group: kept. */
static void test_own_records_kept(void)
{
    fake_tree();
    char sock[100];
    snprintf(sock, sizeof sock, "%s", path_in("s.sock"));
    void *st = open_src(sock, false, NULL, 0);
    send_as(sock, other_uid(), "step seq=1 n=5 dur=1\nmeta seq=2 job=mine\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until(st, &f, 2);
    CHECK_INT(f.steps_self.records, 2);
    CHECK_INT(refused_total(&f), 0);
    CHECK_INT(f.nsteps, 1);
    CHECK_STR(f.steps[0].jid.job, "mine");
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

/* A name no process carries belongs to the first uid whose client named
 * it, while that sender is tracked. Two uids need root. */
static void test_client_named_job_first_claim(void)
{
    if (!is_root()) {
        printf("skipped: needs root to send as two uids\n");
        return;
    }
    fake_tree();
    char sock[100];
    snprintf(sock, sizeof sock, "%s", path_in("s.sock"));
    void *st = open_src(sock, false, NULL, 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        /* the first claimant: a real other process (its own pid) */
        int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
        const char *t = "meta seq=1 job=freejob\nstep seq=2 dur=1\n";
        struct iovec iov = {(void *)t, strlen(t)};
        union {
            struct cmsghdr h;
            char b[CMSG_SPACE(sizeof(struct ucred))];
        } ctl;
        memset(&ctl, 0, sizeof ctl);
        struct msghdr m = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov,
                           .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_CREDENTIALS;
        c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
        struct ucred cr = {.pid = getpid(), .uid = 1000, .gid = 0};
        memcpy(CMSG_DATA(c), &cr, sizeof cr);
        _exit(sendmsg(fd, &m, 0) == (ssize_t)strlen(t) ? 0 : 1);
    }
    int ws;
    CHECK(waitpid(child, &ws, 0) == child && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until(st, &f, 2);
    CHECK_INT(f.steps_self.records, 2);
    send_as(sock, 1001, "meta seq=1 job=freejob\nstep seq=2 dur=9\n");
    sample_until(st, &f, 4);
    CHECK_INT(f.steps_self.records, 2);
    CHECK_INT(f.steps_self.refused[GP_STEPS_JOB_CLAIMED - 1], 2);
    CHECK_INT(f.nsteps, 1);
    CHECK_INT(f.steps[0].pid, child);
    /* the same uid as the claimant may join the job */
    send_as(sock, 1000, "meta seq=3 job=freejob\nstep seq=4 dur=1\n");
    sample_until(st, &f, 6);
    CHECK_INT(f.steps_self.records, 4);
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

/* gpulse run's own socket: a sender outside its command's tree and of
 * another uid is refused; its command's tree counts. */
static void test_per_job_socket(void)
{
    fake_tree();
    char sock[100];
    snprintf(sock, sizeof sock, "%s", path_in("s.sock"));
    uint32_t follow = JOB_PID;
    void *st = open_src(sock, true, &follow, 1);
    if (!is_root()) { /* gpulse run's own user counts: nothing to refuse */
        gp_source_steps.close(st);
        printf("skipped: needs root to send as another uid\n");
        return;
    }
    send_as(sock, other_uid(), "step seq=1 n=5 dur=1\n");
    struct gp_frame f;
    gp_frame_init(&f);
    sample_until(st, &f, 1);
    CHECK_INT(f.steps_self.refused[GP_STEPS_NOT_IN_JOB - 1], 1);
    CHECK_INT(f.steps_self.records, 0);
    gp_source_steps.close(st);
    /* the sender below the followed pid */
    fake_proc((uint32_t)getpid(), ENV("HOME=/\0"), JOB_PID, 200, other_uid());
    st = open_src(sock, true, &follow, 1);
    send_as(sock, other_uid(), "step seq=1 n=5 dur=1\n");
    sample_until(st, &f, 1);
    CHECK_INT(f.steps_self.records, 1);
    CHECK_INT(refused_total(&f), 0);
    gp_source_steps.close(st);
    gp_frame_free(&f);
}

/* The owner is the earliest-started process naming the job. */
static void test_owner_is_earliest(void)
{
    fake_proc(10, ENV("SLURM_JOB_ID=77\0"), 1, 500, 1000);
    fake_proc(11, ENV("SLURM_JOB_ID=77\0"), 1, 300, 1002);
    fake_proc(12, ENV("SLURM_JOB_ID=78\0"), 1, 100, 1003);
    put(13, "environ", "X", 1); /* garbled: names nothing */
    struct gp_steps_trust *t = gp_steps_trust_new(path_in("proc"));
    CHECK(t != NULL);
    uint32_t uid = 0;
    CHECK(gp_steps_trust_owner(t, "77", &uid));
    CHECK_INT(uid, 1002);
    CHECK(gp_steps_trust_owner(t, "78", &uid));
    CHECK_INT(uid, 1003);
    CHECK(!gp_steps_trust_owner(t, "79", &uid));
    char job[GP_JOB_LEN];
    bool in;
    fake_proc(20, ENV("HOME=/\0"), 11, 600, 1002); /* a worker of job 77 */
    uint32_t follow = 11;
    gp_steps_trust_tree(t, 20, &follow, 1, job, &in);
    CHECK_STR(job, "77");
    CHECK(in);
    gp_steps_trust_tree(t, 12, &follow, 1, job, &in);
    CHECK_STR(job, "78");
    CHECK(!in);
    gp_steps_trust_free(t);
    CHECK(gp_steps_trust_new(path_in("no-such-dir")) == NULL);
    CHECK_STR(gp_steps_refusal_name(GP_STEPS_UID_MISMATCH), "uid_mismatch");
}

/* steps_socket_mode / steps_socket_group reach the socket file. */
static void test_socket_mode_and_group(void)
{
    char sock[100];
    snprintf(sock, sizeof sock, "%s", path_in("m.sock"));
    gid_t gid = getgid() == 0 ? 12345 : getgid(); /* root may give it any group */
    char group[16];
    snprintf(group, sizeof group, "%u", (unsigned)gid);
    struct gp_source_config cfg = {.steps_socket = sock, .steps_socket_mode = 0660,
                                   .steps_socket_group = group};
    void *st = NULL;
    char err[256];
    CHECK_INT(gp_source_steps.open(&cfg, &st, err, sizeof err), GP_OK);
    struct stat sb;
    CHECK_INT(stat(sock, &sb), 0);
    CHECK_INT(sb.st_mode & 0777, 0660);
    CHECK_INT(sb.st_gid, gid);
    gp_source_steps.close(st);
    cfg.steps_socket_group = "no-such-group-here";
    CHECK_INT(gp_source_steps.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    CHECK_CONTAINS(err, "steps_socket_group names no group");
}

const struct gp_test gp_tests_steps_trust[] = {
    {"forged_meta_refused_owner_counts", test_forged_meta_refused_owner_counts},
    {"own_environment_does_not_make_owner", test_own_environment_does_not_make_owner},
    {"own_records_kept", test_own_records_kept},
    {"client_named_job_first_claim", test_client_named_job_first_claim},
    {"per_job_socket", test_per_job_socket},
    {"owner_is_earliest", test_owner_is_earliest},
    {"socket_mode_and_group", test_socket_mode_and_group},
    {0},
};
