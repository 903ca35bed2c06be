/*
 * test_jobattr.c - the environ and cgroup parsers (src/sources/jobattr.c):
 * every scheme's variables and their precedence, the rank lookup orders,
 * sanitizing of label values, both cgroup versions and drivers, and
 * malformed input (cut, no NUL, huge, non-numeric ranks, odd lines).
 */
#include "lib/err.h"
#include "sources/jobattr.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* Parses an environment given as a C literal with embedded NULs
 * (sizeof - 1: the literal's own terminator is not part of the file). */
#define ENV(id, lit) gp_jobattr_parse_environ(lit, sizeof lit - 1, id)

static void test_environ_schemes(void)
{
    struct gp_job_id id;
    CHECK_INT(ENV(&id, "PATH=/bin\0GPULSE_RUN_ID=run-1\0HOME=/root\0"), GP_OK);
    CHECK_STR(id.job, "run-1");
    CHECK_INT(id.scheme, GP_JOB_RUN);
    CHECK_INT(id.rank, -1);
    CHECK_INT(id.local_rank, -1);
    CHECK_INT(id.world_size, -1);

    CHECK_INT(ENV(&id, "GPULSE_JOB=bert-large\0"), GP_OK);
    CHECK_STR(id.job, "bert-large");
    CHECK_INT(id.scheme, GP_JOB_ENV);

    CHECK_INT(ENV(&id, "SLURM_JOB_ID=4242\0SLURM_PROCID=3\0SLURM_LOCALID=1\0SLURM_NTASKS=16\0"),
              GP_OK);
    CHECK_STR(id.job, "4242");
    CHECK_INT(id.scheme, GP_JOB_SLURM);
    CHECK_INT(id.rank, 3);
    CHECK_INT(id.local_rank, 1);
    CHECK_INT(id.world_size, 16);

    CHECK_INT(ENV(&id, "TORCHELASTIC_RUN_ID=te-9\0RANK=5\0LOCAL_RANK=1\0WORLD_SIZE=8\0"), GP_OK);
    CHECK_STR(id.job, "te-9");
    CHECK_INT(id.scheme, GP_JOB_TORCHELASTIC);
    CHECK_INT(id.rank, 5);
    CHECK_INT(id.local_rank, 1);
    CHECK_INT(id.world_size, 8);

    /* ranks without a job: kept, scheme none */
    CHECK_INT(ENV(&id, "OMPI_COMM_WORLD_RANK=2\0OMPI_COMM_WORLD_LOCAL_RANK=0\0OMPI_COMM_WORLD_SIZE=4\0"),
              GP_OK);
    CHECK_STR(id.job, "");
    CHECK_INT(id.scheme, GP_JOB_NONE);
    CHECK_INT(id.rank, 2);
    CHECK_INT(id.local_rank, 0);
    CHECK_INT(id.world_size, 4);
    CHECK_INT(ENV(&id, "PMI_RANK=7\0PMI_SIZE=9\0"), GP_OK);
    CHECK_INT(id.rank, 7);
    CHECK_INT(id.world_size, 9);

    /* nothing: the empty file of a kernel thread, or no variable */
    CHECK_INT(gp_jobattr_parse_environ("", 0, &id), GP_OK);
    CHECK_INT(id.scheme, GP_JOB_NONE);
    CHECK_INT(id.rank, -1);
    CHECK_INT(ENV(&id, "A=1\0B=2\0"), GP_OK);
    CHECK_STR(id.job, "");
}

static void test_environ_precedence(void)
{
    struct gp_job_id id;
    /* every naming variable: gpulse run wins, order in the file does not matter */
    CHECK_INT(ENV(&id, "TORCHELASTIC_RUN_ID=te\0SLURM_JOB_ID=77\0GPULSE_JOB=named\0"
                       "GPULSE_RUN_ID=run-x\0"), GP_OK);
    CHECK_STR(id.job, "run-x");
    CHECK_INT(id.scheme, GP_JOB_RUN);
    CHECK_INT(ENV(&id, "TORCHELASTIC_RUN_ID=te\0SLURM_JOB_ID=77\0GPULSE_JOB=named\0"), GP_OK);
    CHECK_STR(id.job, "named");
    CHECK_INT(ENV(&id, "TORCHELASTIC_RUN_ID=te\0SLURM_JOB_ID=77\0"), GP_OK);
    CHECK_STR(id.job, "77");
    CHECK_INT(id.scheme, GP_JOB_SLURM);
    /* an empty value names nothing: the next rule decides */
    CHECK_INT(ENV(&id, "GPULSE_RUN_ID=\0TORCHELASTIC_RUN_ID=te\0"), GP_OK);
    CHECK_STR(id.job, "te");
    CHECK_INT(id.scheme, GP_JOB_TORCHELASTIC);
    /* the first occurrence of a key wins, as getenv() */
    CHECK_INT(ENV(&id, "GPULSE_JOB=first\0GPULSE_JOB=second\0"), GP_OK);
    CHECK_STR(id.job, "first");
    /* rank: RANK before SLURM_PROCID before OMPI before PMI, whatever the job */
    CHECK_INT(ENV(&id, "SLURM_JOB_ID=1\0PMI_RANK=4\0SLURM_PROCID=3\0RANK=2\0OMPI_COMM_WORLD_RANK=9\0"),
              GP_OK);
    CHECK_INT(id.rank, 2);
    CHECK_INT(ENV(&id, "PMI_RANK=4\0OMPI_COMM_WORLD_RANK=9\0SLURM_PROCID=3\0"), GP_OK);
    CHECK_INT(id.rank, 3);
    CHECK_INT(ENV(&id, "PMI_RANK=4\0OMPI_COMM_WORLD_RANK=9\0"), GP_OK);
    CHECK_INT(id.rank, 9);
    CHECK_INT(ENV(&id, "WORLD_SIZE=8\0SLURM_NTASKS=16\0LOCAL_RANK=3\0SLURM_LOCALID=1\0"), GP_OK);
    CHECK_INT(id.world_size, 8);
    CHECK_INT(id.local_rank, 3);
    /* keys are whole: prefixes and suffixes are other variables */
    CHECK_INT(ENV(&id, "RANKS=1\0XRANK=2\0GPULSE_JOB_NAME=x\0"), GP_OK);
    CHECK_INT(id.rank, -1);
    CHECK_STR(id.job, "");
}

static void test_environ_bad_ranks(void)
{
    struct gp_job_id id;
    static const char *const bad[] = {"-1", "+1", " 1", "1 ", "1.0", "0x10", "abc", "",
                                      "2147483648", "99999999999", "12345678901234567890"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char env[128];
        int n = snprintf(env, sizeof env, "RANK=%s", bad[i]);
        env[n] = '\0';
        CHECK_INT(gp_jobattr_parse_environ(env, (size_t)n + 1, &id), GP_OK);
        if (id.rank != -1)
            gp_test_fail(__FILE__, __LINE__, "RANK=%s read as %d", bad[i], (int)id.rank);
    }
    CHECK_INT(ENV(&id, "RANK=2147483647\0"), GP_OK);
    CHECK_INT(id.rank, 2147483647);
    CHECK_INT(ENV(&id, "RANK=007\0"), GP_OK);
    CHECK_INT(id.rank, 7);
    /* a garbled rank counts as absent: the next of the order is read */
    CHECK_INT(ENV(&id, "RANK=abc\0SLURM_PROCID=5\0"), GP_OK);
    CHECK_INT(id.rank, 5);
    /* a world of 0 processes is no world size */
    CHECK_INT(ENV(&id, "WORLD_SIZE=0\0"), GP_OK);
    CHECK_INT(id.world_size, -1);
    CHECK_INT(ENV(&id, "LOCAL_RANK=0\0"), GP_OK);
    CHECK_INT(id.local_rank, 0);
}

static void test_environ_malformed(void)
{
    struct gp_job_id id;
    /* cut: the last entry has no NUL */
    CHECK_INT(gp_jobattr_parse_environ("GPULSE_JOB=a\0RANK=1", 19, &id), GP_EPARSE);
    CHECK_STR(id.job, "");
    CHECK_INT(id.rank, -1);
    /* no NUL at all */
    CHECK_INT(gp_jobattr_parse_environ("GPULSE_JOB=abc", 14, &id), GP_EPARSE);
    CHECK_INT(id.scheme, GP_JOB_NONE);
    /* entries without '=', empty keys and empty entries are skipped */
    CHECK_INT(ENV(&id, "garbage\0=x\0\0GPULSE_JOB=ok\0"), GP_OK);
    CHECK_STR(id.job, "ok");
    /* a value holding '=' keeps it */
    CHECK_INT(ENV(&id, "GPULSE_JOB=a=b\0"), GP_OK);
    CHECK_STR(id.job, "a=b");
    /* larger than any environment: refused */
    size_t big = GP_JOBATTR_ENVIRON_MAX + 1;
    char *buf = calloc(1, big);
    CHECK(buf);
    CHECK_INT(gp_jobattr_parse_environ(buf, big, &id), GP_EPARSE);
    /* huge but legal: one 1 MiB variable, then the job */
    size_t n = 1024 * 1024;
    memset(buf, 'x', n);
    memcpy(buf, "JUNK=", 5);
    buf[n - 1] = '\0';
    memcpy(buf + n, "GPULSE_JOB=after\0", 17);
    CHECK_INT(gp_jobattr_parse_environ(buf, n + 17, &id), GP_OK);
    CHECK_STR(id.job, "after");
    /* a huge job name is cut to GP_JOB_LEN - 1 bytes */
    memcpy(buf, "GPULSE_JOB=", 11);
    memset(buf + 11, 'j', 1000);
    buf[1011] = '\0';
    CHECK_INT(gp_jobattr_parse_environ(buf, 1012, &id), GP_OK);
    CHECK_INT(strlen(id.job), GP_JOB_LEN - 1);
    CHECK_INT(id.job[0], 'j');
    free(buf);
}

static void test_sanitize(void)
{
    char out[GP_JOB_LEN];
    /* controls, DEL, quotes kept as printable ASCII */
    CHECK_INT(gp_jobattr_sanitize(out, "a\tb\nc\x7f\"d\\", 9), 9);
    CHECK_STR(out, "a_b_c_\"d\\");
    /* valid UTF-8 kept: é (2 bytes), € (3), 😀 (4) */
    const char *u = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    CHECK_INT(gp_jobattr_sanitize(out, u, strlen(u)), 9);
    CHECK_STR(out, u);
    /* invalid: lone continuation, overlong '/', surrogate, C1 control, cut sequence, 0xff */
    const char *bad = "\x80" "\xc0\xaf" "\xed\xa0\x80" "\xc2\x85" "\xff" "\xe2\x82";
    gp_jobattr_sanitize(out, bad, strlen(bad));
    for (const char *p = out; *p; p++)
        CHECK(*p == '_');
    CHECK_INT(gp_jobattr_sanitize(out, "", 0), 0);
    CHECK_STR(out, "");
    /* cut at a character boundary: 126 ASCII + a 2-byte char does not fit */
    char in[200];
    memset(in, 'a', 126);
    memcpy(in + 126, "\xc3\xa9zz", 4);
    CHECK_INT(gp_jobattr_sanitize(out, in, 130), 126);
    CHECK_INT(strlen(out), 126);
    memset(in, 'a', 125);
    memcpy(in + 125, "\xc3\xa9zz", 4);
    CHECK_INT(gp_jobattr_sanitize(out, in, 129), 127);
    CHECK_STR(out + 125, "\xc3\xa9");
}

#define CG(id, lit) gp_jobattr_parse_cgroup(lit, sizeof lit - 1, id)
#define UID "0c2b5ad8-1d2e-4f3a-9b8c-7d6e5f4a3b2c"
#define UID_ "0c2b5ad8_1d2e_4f3a_9b8c_7d6e5f4a3b2c"

static void test_cgroup_kubernetes(void)
{
    struct gp_job_id id;
    /* v2, systemd driver, burstable and besteffort QoS */
    gp_jobattr_clear(&id);
    id.rank = 4;
    CHECK_INT(CG(&id, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
                      ".slice/cri-containerd-abc123.scope\n"), GP_OK);
    CHECK_STR(id.job, "pod-" UID);
    CHECK_INT(id.scheme, GP_JOB_KUBERNETES);
    CHECK_INT(id.rank, 4); /* ranks left alone */
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
                      ".slice/cri-containerd-0123.scope\n"), GP_OK);
    CHECK_STR(id.job, "pod-" UID);
    /* guaranteed pods: no QoS level */
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-77.scope\n"), GP_OK);
    CHECK_STR(id.job, "pod-" UID);
    /* v2, cgroupfs driver */
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "0::/kubepods/burstable/pod" UID "/3f2e1d\n"), GP_OK);
    CHECK_STR(id.job, "pod-" UID);
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "0::/kubepods/pod" UID "/3f2e1d\n"), GP_OK);
    CHECK_STR(id.job, "pod-" UID);
    /* v1, cgroupfs driver, several hierarchies, uppercase hex normalised */
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "12:pids:/kubepods/besteffort/pod0C2B5AD8-1D2E-4F3A-9B8C-7D6E5F4A3B2C/c1\n"
                      "11:cpu,cpuacct:/kubepods/besteffort/pod" UID "/c1\n"
                      "1:name=systemd:/kubepods/besteffort/pod" UID "/c1\n"
                      "0::/\n"), GP_OK);
    CHECK_STR(id.job, "pod-" UID);
    /* v1, systemd driver, without a final newline */
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "5:memory:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
                      ".slice/docker-1.scope"), GP_OK);
    CHECK_STR(id.job, "pod-" UID);
    /* a static pod's uid: 32 bare hex digits */
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "0::/kubepods/burstable/pod5f4b3a2c1d0e9f8a7b6c5d4e3f2a1b0c/x\n"), GP_OK);
    CHECK_STR(id.job, "pod-5f4b3a2c1d0e9f8a7b6c5d4e3f2a1b0c");
}

static void test_cgroup_no_pod(void)
{
    struct gp_job_id id;
    gp_jobattr_clear(&id);
    CHECK_INT(CG(&id, "0::/user.slice/user-1000.slice/session-2.scope\n"), GP_ENOTFOUND);
    CHECK_INT(CG(&id, "0::/\n"), GP_ENOTFOUND);
    CHECK_INT(gp_jobattr_parse_cgroup("", 0, &id), GP_ENOTFOUND);
    CHECK_INT(CG(&id, "12:pids:/system.slice/docker.service\n1:name=systemd:/init.scope\n"),
              GP_ENOTFOUND);
    /* pod-looking names outside kubepods, and near misses of a uid */
    CHECK_INT(CG(&id, "0::/pod" UID "/x\n"), GP_ENOTFOUND);
    CHECK_INT(CG(&id, "0::/kubepods/burstable/pod0c2b5ad8-1d2e-4f3a-9b8c-7d6e5f4a3b2/x\n"),
              GP_ENOTFOUND); /* one digit short */
    CHECK_INT(CG(&id, "0::/kubepods/burstable/pod0c2b5ad8-1d2e-4f3a-9b8c-7d6e5f4a3bzz/x\n"),
              GP_ENOTFOUND);
    CHECK_INT(CG(&id, "0::/kubepods/burstable/pod" UID_ "/x\n"), GP_ENOTFOUND); /* cgroupfs: dashes */
    CHECK_INT(CG(&id, "0::/kubepods.slice/kubepods-pod" UID ".slice/x\n"), GP_ENOTFOUND); /* systemd: _ */
    CHECK_INT(CG(&id, "0::/kubepods.slice/kubepods-burstable.slice\n"), GP_ENOTFOUND);
    CHECK_STR(id.job, "");
    CHECK_INT(id.scheme, GP_JOB_NONE);
}

static void test_cgroup_malformed(void)
{
    struct gp_job_id id;
    gp_jobattr_clear(&id);
    static const char *const bad[] = {
        "garbage\n",
        "0:/kubepods/pod" UID "/x\n",       /* one colon */
        "x::/kubepods/pod" UID "/x\n",      /* no hierarchy id */
        "::/kubepods/pod" UID "/x\n",
        "0::kubepods/pod" UID "/x\n",       /* relative path */
        "0::\n",                            /* no path */
        "0:c p u:/\n",                      /* blank in the controllers */
        "12345678901::/\n",                 /* hierarchy id too long */
        "0::/\n\n0::/\n",                   /* empty line inside */
        "0::/kubepods/pod" UID "/x\nbad\n", /* one good line does not excuse a bad one */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gp_jobattr_parse_cgroup(bad[i], strlen(bad[i]), &id) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "accepted %s", bad[i]);
    CHECK_INT(gp_jobattr_parse_cgroup("0::/kube\0pods\n", 14, &id), GP_EPARSE);
    CHECK_STR(id.job, "");
    /* too large for a cgroup file */
    size_t big = GP_JOBATTR_CGROUP_MAX + 1;
    char *buf = malloc(big);
    CHECK(buf);
    memset(buf, '/', big);
    memcpy(buf, "0::", 3);
    CHECK_INT(gp_jobattr_parse_cgroup(buf, big, &id), GP_EPARSE);
    /* deep but within the cap: no pod, no crash */
    CHECK_INT(gp_jobattr_parse_cgroup(buf, GP_JOBATTR_CGROUP_MAX, &id), GP_ENOTFOUND);
    free(buf);
}

const struct gp_test gp_tests_jobattr[] = {
    {"environ_schemes", test_environ_schemes},
    {"environ_precedence", test_environ_precedence},
    {"environ_bad_ranks", test_environ_bad_ranks},
    {"environ_malformed", test_environ_malformed},
    {"sanitize", test_sanitize},
    {"cgroup_kubernetes", test_cgroup_kubernetes},
    {"cgroup_no_pod", test_cgroup_no_pod},
    {"cgroup_malformed", test_cgroup_malformed},
    {0},
};
