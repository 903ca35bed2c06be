/*
 * Fuzz target: the /proc file parsers (src/sources/procfs_parse.c).
 *
 * The first input byte picks the parser (modulo 7: stat, meminfo,
 * pressure, loadavg, PID/stat, PID/status, PID/io), the rest is the file.
 * The text is copied into a buffer of exactly its size, so ASan catches
 * any read past len. Accepted input must also leave sane output: a
 * NUL-terminated comm, a "some" PSI reading, at least one CPU.
 */
#include "lib/err.h"
#include "sources/procfs_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned which = data[0] % 8;
    size_t len = size - 1;
    char *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, len);

    struct gp_host h;
    memset(&h, 0, sizeof h);
    int rc = GP_EPARSE;
    switch (which) {
    case 0: {
        uint64_t btime;
        rc = gp_procfs_parse_stat(buf, len, 100, &h, &btime);
        if (rc == GP_OK && (!h.cpu_valid || h.ncpus == 0))
            abort();
        break;
    }
    case 1:
        rc = gp_procfs_parse_meminfo(buf, len, &h);
        if (rc == GP_OK && !(h.mem_valid & (1u << GP_MEM_TOTAL)))
            abort();
        break;
    case 2:
        for (int r = 0; r < GP_PSI__COUNT; r++) {
            rc = gp_procfs_parse_pressure(buf, len, (enum gp_psi_resource)r, &h);
            if (rc == GP_OK && !(h.psi_valid[r] & (1u << GP_PSI_SOME)))
                abort();
        }
        break;
    case 3:
        rc = gp_procfs_parse_loadavg(buf, len, &h);
        if (rc == GP_OK && (!h.load_valid || h.load[0] < 0 || h.load[1] < 0 || h.load[2] < 0))
            abort();
        break;
    case 4: {
        struct gp_procfs_pid_stat ps;
        rc = gp_procfs_parse_pid_stat(buf, len, &ps);
        if (rc == GP_OK && (memchr(ps.comm, '\0', sizeof ps.comm) == NULL || ps.state == ' '))
            abort();
        break;
    }
    case 5: {
        struct gp_procfs_pid_status st;
        rc = gp_procfs_parse_pid_status(buf, len, &st);
        break;
    }
    case 7: {
        uint32_t kids[16];
        size_t nk;
        rc = gp_procfs_parse_children(buf, len, kids, 16, &nk);
        if (rc == GP_ETOOBIG)
            rc = GP_EPARSE; /* a clean refusal too */
        if (rc == GP_OK && nk > 16)
            abort();
        break;
    }
    default: {
        uint64_t r, w;
        rc = gp_procfs_parse_pid_io(buf, len, &r, &w);
        break;
    }
    }
    if (rc != GP_OK && rc != GP_EPARSE)
        abort();
    free(buf);
    return 0;
}
