/*
 * jobattr.c - a process's job identity from its environment and cgroup.
 *
 * The environment is scanned once: every entry is split at its first '='
 * and the key compared with the short table of variables docs/jobs.md
 * names (the first occurrence of a key wins, as getenv() does). Then the
 * job comes from the first naming variable with a non-empty value, in
 * precedence order, and each rank from the first variable of its lookup
 * order that holds an integer 0..2^31-1. Values are sanitized into label
 * values (gp_jobattr_sanitize) so nothing a process puts in its
 * environment can break the exposition.
 *
 * The cgroup file is read line by line; each line must have the kernel's
 * shape ("<digits>:<controllers>:/<path>"), anything else is rejected.
 * A pod is recognised only below a path component starting "kubepods",
 * in either cgroup driver's naming: cgroupfs ".../kubepods/burstable/
 * pod<uid>/<container>" and systemd ".../kubepods.slice/
 * kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice/
 * cri-containerd-<id>.scope" (guaranteed pods have no QoS level). The
 * uid is normalised to lowercase with dashes: the job is "pod-<uid>".
 */
#include "jobattr.h"

#include "lib/err.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

void gp_jobattr_clear(struct gp_job_id *id)
{
    memset(id, 0, sizeof *id);
    id->rank = id->local_rank = id->world_size = -1;
    id->scheme = GP_JOB_NONE;
}

/* Length of the valid, printable UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_printable(const unsigned char *s, size_t n)
{
    unsigned char b = s[0];
    size_t len;
    uint32_t cp, min;
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2, cp = b & 0x1fu, min = 0xa0; /* 0x80-0x9f: C1 controls */
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3, cp = b & 0x0fu, min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4, cp = b & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

size_t gp_jobattr_sanitize(char dst[GP_JOB_LEN], const char *src, size_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t n = 1;
        const unsigned char *put = s + i;
        static const unsigned char repl = '_';
        if (s[i] >= 0x80) {
            n = utf8_printable(s + i, len - i);
            if (!n) {
                n = 1;
                put = &repl;
            }
        } else if (s[i] < 0x20 || s[i] == 0x7f) {
            put = &repl;
        }
        size_t out = put == &repl ? 1 : n;
        if (o + out > GP_JOB_LEN - 1)
            break;
        memcpy(dst + o, put, out);
        o += out;
        i += n;
    }
    dst[o] = '\0';
    return o;
}

/* The environment variables read; their order is the enum's. */
enum env_key {
    K_RUN_ID, K_JOB, K_SLURM_JOB_ID, K_TE_RUN_ID,
    K_RANK, K_SLURM_PROCID, K_OMPI_RANK, K_PMI_RANK,
    K_LOCAL_RANK, K_SLURM_LOCALID, K_OMPI_LOCAL_RANK,
    K_WORLD_SIZE, K_SLURM_NTASKS, K_OMPI_SIZE, K_PMI_SIZE,
    K__COUNT
};

static const char *const env_names[K__COUNT] = {
    "GPULSE_RUN_ID", "GPULSE_JOB", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID",
    "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
    "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
    "WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
};

struct span {
    const char *p;
    size_t n;
    bool set;
};

/* An integer min..2^31-1 in decimal digits only (no sign, no blanks), or -1. */
static int32_t parse_rank(const struct span *v, int32_t min)
{
    if (!v->set || v->n == 0 || v->n > 10)
        return -1;
    int64_t x = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (v->p[i] < '0' || v->p[i] > '9')
            return -1;
        x = x * 10 + (v->p[i] - '0');
    }
    return x >= min && x <= INT32_MAX ? (int32_t)x : -1;
}

/* The first of keys[0..n) whose value is an integer in range, else -1. */
static int32_t first_rank(const struct span *vals, const enum env_key *keys, size_t n, int32_t min)
{
    for (size_t i = 0; i < n; i++) {
        int32_t r = parse_rank(&vals[keys[i]], min);
        if (r >= 0)
            return r;
    }
    return -1;
}

int gp_jobattr_parse_environ(const char *buf, size_t len, struct gp_job_id *id)
{
    gp_jobattr_clear(id);
    if (len == 0)
        return GP_OK;
    if (len > GP_JOBATTR_ENVIRON_MAX || buf[len - 1] != '\0')
        return GP_EPARSE;
    struct span vals[K__COUNT];
    memset(vals, 0, sizeof vals);
    for (const char *p = buf, *end = buf + len; p < end;) {
        const char *nul = memchr(p, '\0', (size_t)(end - p)); /* found: the last byte is NUL */
        const char *eq = memchr(p, '=', (size_t)(nul - p));
        if (eq && eq > p) {
            size_t kl = (size_t)(eq - p);
            for (int k = 0; k < K__COUNT; k++)
                if (!vals[k].set && strlen(env_names[k]) == kl && memcmp(env_names[k], p, kl) == 0) {
                    vals[k] = (struct span){eq + 1, (size_t)(nul - eq - 1), true};
                    break;
                }
        }
        p = nul + 1;
    }
    static const uint8_t schemes[] = {GP_JOB_RUN, GP_JOB_ENV, GP_JOB_SLURM, GP_JOB_TORCHELASTIC};
    for (int k = K_RUN_ID; k <= K_TE_RUN_ID; k++) {
        if (!vals[k].set || vals[k].n == 0)
            continue;
        if (gp_jobattr_sanitize(id->job, vals[k].p, vals[k].n) == 0)
            continue;
        id->scheme = schemes[k - K_RUN_ID];
        break;
    }
    static const enum env_key rank[] = {K_RANK, K_SLURM_PROCID, K_OMPI_RANK, K_PMI_RANK};
    static const enum env_key local[] = {K_LOCAL_RANK, K_SLURM_LOCALID, K_OMPI_LOCAL_RANK};
    static const enum env_key world[] = {K_WORLD_SIZE, K_SLURM_NTASKS, K_OMPI_SIZE, K_PMI_SIZE};
    id->rank = first_rank(vals, rank, sizeof rank / sizeof rank[0], 0);
    id->local_rank = first_rank(vals, local, sizeof local / sizeof local[0], 0);
    id->world_size = first_rank(vals, world, sizeof world / sizeof world[0], 1);
    return GP_OK;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/*
 * Reads a pod uid from s[0..n) exactly (sep: '-' or '_' between the
 * 8-4-4-4-12 groups, or 32 bare hex digits) into out, lowercase with
 * dashes. Returns false when s is not a uid.
 */
static bool read_uid(const char *s, size_t n, char sep, char out[37])
{
    if (n == 32) {
        for (size_t i = 0; i < 32; i++) {
            if (!is_hex(s[i]))
                return false;
            out[i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] + 32 : s[i]);
        }
        out[32] = '\0';
        return true;
    }
    if (n != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != sep : !is_hex(s[i]))
            return false;
        out[i] = dash ? '-' : (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] + 32 : s[i]);
    }
    out[36] = '\0';
    return true;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
    size_t pl = strlen(prefix);
    return n >= pl && memcmp(s, prefix, pl) == 0;
}

/* The pod uid named by one path component below "kubepods", if any. */
static bool component_uid(const char *c, size_t n, char out[37])
{
    if (starts(c, n, "pod")) /* cgroupfs: pod<uid> */
        return read_uid(c + 3, n - 3, '-', out);
    static const char slice[] = ".slice";
    size_t sl = sizeof slice - 1;
    if (!starts(c, n, "kubepods-") || n < sl || memcmp(c + n - sl, slice, sl) != 0)
        return false;
    /* systemd: kubepods[-<qos>]-pod<uid_>.slice: the uid follows the last "-pod" */
    for (size_t i = n - sl; i >= 4; i--)
        if (memcmp(c + i - 4, "-pod", 4) == 0)
            return read_uid(c + i, n - sl - i, '_', out);
    return false;
}

/* The pod uid in one cgroup path, if any. */
static bool path_uid(const char *p, size_t n, char out[37])
{
    bool below = false;
    for (size_t i = 0; i < n;) {
        while (i < n && p[i] == '/')
            i++;
        size_t s = i;
        while (i < n && p[i] != '/')
            i++;
        if (i == s)
            break;
        if (below && component_uid(p + s, i - s, out))
            return true;
        if (starts(p + s, i - s, "kubepods"))
            below = true;
    }
    return false;
}

int gp_jobattr_parse_cgroup(const char *buf, size_t len, struct gp_job_id *id)
{
    if (len > GP_JOBATTR_CGROUP_MAX || memchr(buf, '\0', len))
        return GP_EPARSE;
    char uid[37];
    bool found = false;
    for (size_t i = 0; i < len;) {
        const char *line = buf + i;
        const char *nl = memchr(line, '\n', len - i);
        size_t n = nl ? (size_t)(nl - line) : len - i;
        i += n + (nl ? 1 : 0);
        if (n == 0) {
            if (nl && i < len)
                return GP_EPARSE; /* an empty line inside the file */
            continue;
        }
        size_t k = 0;
        while (k < n && line[k] >= '0' && line[k] <= '9')
            k++;
        if (k == 0 || k > 10 || k == n || line[k] != ':')
            return GP_EPARSE;
        const char *ctrl = line + k + 1;
        const char *colon = memchr(ctrl, ':', n - k - 1);
        if (!colon)
            return GP_EPARSE;
        for (const char *c = ctrl; c < colon; c++)
            if ((unsigned char)*c <= ' ' || *c == 0x7f)
                return GP_EPARSE;
        const char *path = colon + 1;
        size_t pl = (size_t)(line + n - path);
        if (pl == 0 || path[0] != '/')
            return GP_EPARSE;
        if (!found && path_uid(path, pl, uid))
            found = true;
    }
    if (!found)
        return GP_ENOTFOUND;
    memcpy(id->job, "pod-", 4);
    memcpy(id->job + 4, uid, strlen(uid) + 1);
    id->scheme = GP_JOB_KUBERNETES;
    return GP_OK;
}
