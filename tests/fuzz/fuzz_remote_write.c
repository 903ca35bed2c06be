/*
 * Fuzz target: remote-write bodies as a server receives them. A body that
 * decodes must re-encode and decode to the same request (labels, values
 * bit for bit, timestamps): the codec's canonical form is a fixed point.
 * Inputs that are not snappy are also tried as raw protobuf, so the
 * fuzzer reaches the protobuf parser without having to learn snappy.
 * Decoded metadata entries must be what the decoder promises: a valid
 * metric name, UTF-8 help and unit within the caps, a known type.
 */
#include "ingest/remote_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_str(struct gp_str a, struct gp_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static void check_round_trip(const struct gp_batch *a)
{
    struct gp_buf out, scratch;
    gp_buf_init(&out, 0);
    gp_buf_init(&scratch, 0);
    if (gp_rw_encode(a, &out, &scratch) != 0)
        abort(); /* whatever decodes must encode */
    struct gp_batch b;
    char err[256];
    size_t size;
    if (gp_rw_check(a, &size, err, sizeof err) != 0 || size != scratch.len)
        abort(); /* what decodes is canonical, and the in-process check sizes it as encoded */
    if (gp_rw_decode((const uint8_t *)out.data, out.len, (size_t)64 << 20, &b, err, sizeof err))
        abort();
    if (a->nseries != b.nseries || a->nlabels_total != b.nlabels_total ||
        a->nsamples_total != b.nsamples_total)
        abort();
    for (size_t i = 0; i < a->nseries; i++) {
        const struct gp_series *x = &a->series[i], *y = &b.series[i];
        if (x->nlabels != y->nlabels || x->nsamples != y->nsamples)
            abort();
        for (size_t k = 0; k < x->nlabels; k++)
            if (!same_str(x->labels[k].name, y->labels[k].name) ||
                !same_str(x->labels[k].value, y->labels[k].value))
                abort();
        for (size_t k = 0; k < x->nsamples; k++)
            if (memcmp(&x->samples[k].value, &y->samples[k].value, sizeof(double)) ||
                x->samples[k].timestamp_ms != y->samples[k].timestamp_ms)
                abort();
    }
    gp_rw_decoded_free(&b);
    gp_buf_free(&out);
    gp_buf_free(&scratch);
}

static void check_metadata(const struct gp_batch *a)
{
    const struct gp_family_meta *m;
    size_t n = gp_rw_metadata(a, &m);
    for (size_t i = 0; i < n; i++) {
        if (m[i].name.len == 0 || m[i].name.len > GP_RW_MAX_META_LEN ||
            m[i].help.len > GP_RW_MAX_META_LEN || m[i].unit.len > GP_RW_MAX_META_LEN ||
            (unsigned)m[i].type >= GP_MT__COUNT)
            abort();
        /* As label values: UTF-8 (any name passes as "a"'s value). */
        if (!gp_rw_label_valid("a", 1, m[i].name.ptr, m[i].name.len) ||
            !gp_rw_label_valid("a", 1, m[i].help.ptr, m[i].help.len) ||
            !gp_rw_label_valid("a", 1, m[i].unit.ptr, m[i].unit.len))
            abort();
        if (strlen(gp_rw_metric_type_name(m[i].type)) == 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_batch req;
    char err[256];
    if (gp_rw_decode(data, size, (size_t)1 << 20, &req, err, sizeof err) == 0) {
        check_round_trip(&req);
        check_metadata(&req);
        gp_rw_decoded_free(&req);
    }
    if (gp_rw_unmarshal(data, size, &req, err, sizeof err) == 0) {
        check_round_trip(&req);
        check_metadata(&req);
        gp_rw_decoded_free(&req);
    }
    return 0;
}
