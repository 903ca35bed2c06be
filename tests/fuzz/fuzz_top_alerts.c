/*
 * Fuzz target: a server's answer to `gpulse top`'s GET /api/v1/alerts.
 * Bytes -> gp_top_alerts_parse -> the rendered screen. Whatever the
 * server sends, parsing never crashes, keeps its counts straight, and
 * nothing unprintable reaches the terminal's cells.
 */
#include "lib/err.h"
#include "top/layout.h"
#include "top/top_alerts.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gp_top_view v;
    struct gp_top_alerts *a = malloc(sizeof *a);
    if (!a)
        return 0;
    char err[200];
    int rc = gp_top_alerts_parse((const char *)data, size, a, err, sizeof err);
    if (rc != GP_OK && rc != GP_EPARSE)
        abort();
    if (rc == GP_OK) {
        if (a->n > GP_TOP_MAX_ALERTS || a->n > a->total || a->firing > a->total)
            abort();
        gp_top_view_init(&v);
        v.alerts_on = v.alerts_valid = true;
        v.alerts = *a;
        struct gp_frame f;
        gp_frame_init(&f);
        struct gp_top_screen s = {0};
        unsigned widths[] = {20, 80, 200};
        for (unsigned i = 0; i < 3; i++) {
            if (gp_top_render(&v, &f, &s, widths[i], 24) != GP_OK)
                abort();
            for (size_t k = 0; k < (size_t)s.nrows * s.w; k++)
                if ((unsigned char)s.text[k] < 0x20 || (unsigned char)s.text[k] >= 0x7f)
                    abort();
        }
        gp_top_screen_free(&s);
        gp_frame_free(&f);
        gp_top_view_free(&v);
    } else if (!memchr(err, '\0', sizeof err)) {
        abort();
    }
    free(a);
    return 0;
}
