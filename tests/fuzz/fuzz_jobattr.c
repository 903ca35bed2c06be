/*
 * Fuzz target: the job identity parsers (src/sources/jobattr.c).
 *
 * The first input byte picks the parser (even: /proc/PID/environ, odd:
 * /proc/PID/cgroup), the rest is the file, copied into a buffer of
 * exactly its size so ASan catches any read past len. Whatever the
 * input, the result must be a clean label value: NUL-terminated within
 * GP_JOB_LEN, no control byte, valid UTF-8, a known scheme, a job exactly
 * when the scheme names one, ranks -1 or in 0..2^31-1 (world size >= 1),
 * and a refused input leaves no job.
 */
#include "lib/err.h"
#include "sources/jobattr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks that s (NUL-terminated within n) is a sanitized label value. */
static void check_value(const char *s, size_t n)
{
    const char *end = memchr(s, '\0', n);
    if (!end)
        abort();
    const unsigned char *p = (const unsigned char *)s;
    while (p < (const unsigned char *)end) {
        if (*p < 0x20 || *p == 0x7f)
            abort();
        size_t len = *p < 0x80 ? 1 : *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;
        if (*p >= 0x80 && (*p < 0xc2 || *p > 0xf4))
            abort();
        for (size_t i = 1; i < len; i++)
            if ((p[i] & 0xc0) != 0x80)
                abort();
        p += len;
    }
    if (p != (const unsigned char *)end)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len = size - 1;
    char *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, len);
    struct gp_job_id id;
    gp_jobattr_clear(&id);
    int rc;
    if (data[0] % 2 == 0) {
        rc = gp_jobattr_parse_environ(buf, len, &id);
        if (rc != GP_OK && rc != GP_EPARSE)
            abort();
        if (rc == GP_EPARSE && (id.job[0] || id.rank != -1 || id.scheme != GP_JOB_NONE))
            abort();
        if (id.scheme > GP_JOB_TORCHELASTIC)
            abort();
    } else {
        rc = gp_jobattr_parse_cgroup(buf, len, &id);
        if (rc != GP_OK && rc != GP_EPARSE && rc != GP_ENOTFOUND)
            abort();
        if ((rc == GP_OK) != (id.scheme == GP_JOB_KUBERNETES))
            abort();
        if (rc == GP_OK && (strncmp(id.job, "pod-", 4) != 0 ||
                            (strlen(id.job) != 4 + 36 && strlen(id.job) != 4 + 32)))
            abort();
    }
    check_value(id.job, sizeof id.job);
    if ((id.job[0] != '\0') != (id.scheme != GP_JOB_NONE))
        abort();
    if (id.rank < -1 || id.local_rank < -1 || id.world_size < -1 || id.world_size == 0)
        abort();
    /* the sanitizer on its own, on the raw bytes */
    char out[GP_JOB_LEN];
    size_t n = gp_jobattr_sanitize(out, buf, len);
    if (n >= GP_JOB_LEN || strlen(out) != n)
        abort();
    check_value(out, sizeof out);
    free(buf);
    return 0;
}
