/*
 * Fuzz target: Prometheus text exposition as a scrape or the pusher reads
 * it. Whatever parses must be a well-formed set of series (labels sorted
 * and unique, __name__ present, one sample each), must encode as remote
 * write (the pusher's next step) and decode back to the same values bit
 * for bit, and must parse the same way a second time with the parser's
 * buffers reused.
 */
#include "ingest/remote_write.h"
#include "ingest/textparse.h"
#include "lib/bits.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp(struct gp_str a, struct gp_str b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int r = n ? memcmp(a.ptr, b.ptr, n) : 0;
    return r ? r : (a.len > b.len) - (a.len < b.len);
}

static void check(const struct gp_batch *r)
{
    for (size_t i = 0; i < r->nseries; i++) {
        const struct gp_series *s = &r->series[i];
        int named = 0;
        if (s->nsamples != 1 || s->nlabels == 0 || s->nlabels > GP_RW_MAX_LABELS)
            abort();
        for (size_t j = 0; j < s->nlabels; j++) {
            if (j && cmp(s->labels[j - 1].name, s->labels[j].name) >= 0)
                abort();
            named |= s->labels[j].name.len == 8 && !memcmp(s->labels[j].name.ptr, "__name__", 8);
        }
        if (!named)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so ASan sees any read past the end. */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    struct gp_text_parser p = {0};
    p.max_series = 20000;
    char err[256];
    if (gp_text_parse(&p, text, size, 42, err, sizeof err) == 0) {
        check(&p.req);
        size_t n = p.req.nseries;
        struct gp_buf body, scratch;
        gp_buf_init(&body, 0);
        gp_buf_init(&scratch, 0);
        if (gp_rw_encode(&p.req, &body, &scratch) != 0)
            abort(); /* whatever parses must encode */
        struct gp_batch back;
        if (gp_rw_decode((const uint8_t *)body.data, body.len, (size_t)64 << 20, &back, err,
                         sizeof err) != 0 ||
            back.nseries != n)
            abort();
        for (size_t i = 0; i < n; i++)
            if (gp_f64_bits(back.series[i].samples[0].value) !=
                    gp_f64_bits(p.req.series[i].samples[0].value) ||
                back.series[i].samples[0].timestamp_ms != p.req.series[i].samples[0].timestamp_ms)
                abort();
        gp_rw_decoded_free(&back);
        gp_buf_free(&body);
        gp_buf_free(&scratch);
        if (gp_text_parse(&p, text, size, 42, err, sizeof err) != 0 || p.req.nseries != n)
            abort();
    }
    gp_text_parser_free(&p);
    free(text);
    return 0;
}
