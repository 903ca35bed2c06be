/*
 * Fuzz target: an agent's answer to `gpulse top --agent`'s GET
 * /api/v1/snapshot. Bytes -> gp_top_snapshot_parse -> the view and the
 * rendered screen. Whatever the peer sends, parsing never crashes, a
 * failure leaves an empty frame and a message, counts stay within their
 * caps, and nothing unprintable reaches the terminal's cells.
 */
#include "lib/err.h"
#include "top/layout.h"
#include "top/top_agent.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_frame f;
    gp_frame_init(&f);
    char err[300];
    int rc = gp_top_snapshot_parse((const char *)data, size, &f, err, sizeof err);
    if (rc != GP_OK && rc != GP_EPARSE && rc != GP_ENOMEM)
        abort();
    if (rc != GP_OK && (f.ngpus || f.nprocs || f.njobs || !memchr(err, '\0', sizeof err)))
        abort();
    if (f.ngpus > GP_TOP_AGENT_MAX_GPUS || f.nprocs > GP_TOP_AGENT_MAX_PROCS ||
        f.njobs > GP_TOP_AGENT_MAX_JOBS)
        abort();
    for (unsigned g = 0; g < f.ngpus; g++)
        if (f.gpus[g].job_idx >= (int)f.njobs || f.gpus[g].nxids > GP_MAX_XIDS)
            abort();
    if (rc == GP_OK) {
        struct gp_top_view v;
        gp_top_view_init(&v);
        gp_top_view_update(&v, &f);
        gp_top_view_update(&v, &f);
        struct gp_top_screen s = {0};
        unsigned widths[] = {20, 80, 200};
        for (unsigned i = 0; i < 3; i++) {
            if (gp_top_render(&v, &f, &s, widths[i], 40) != GP_OK)
                abort();
            for (size_t k = 0; k < (size_t)s.nrows * s.w; k++)
                if ((unsigned char)s.text[k] < 0x20 || (unsigned char)s.text[k] >= 0x7f)
                    abort();
        }
        gp_top_screen_free(&s);
        gp_top_view_free(&v);
    }
    gp_frame_free(&f);
    return 0;
}
