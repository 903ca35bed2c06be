/*
 * Fuzz target: the email message builder (src/notify/mime.c). The input
 * is a notice: byte 0 the number of alerts (0-255), byte 1 flags (bit 0:
 * resolved notice, bit 1: test, bit 2: use a subject template, bit 3:
 * derive the boundary), then NUL-separated fields: receiver, external
 * URL, template, a group label name and value, then per alert kind,
 * severity, status, node, gpu, job, rank, summary, evidence, runbook
 * (missing fields read as ""). Every message built must keep the
 * invariants of tests/mime_check.h: CRLF only, lines <= 76, 7-bit,
 * decodable quoted-printable and encoded words, valid UTF-8 parts, the
 * boundary only where it delimits.
 */
#include "lib/buf.h"
#include "mime_check.h"
#include "notify/mime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FIELDS (5 + 255 * 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t nalerts = data[0], flags = data[1];
    char *s = malloc(size - 2 + 1);
    const char **f = calloc(MAX_FIELDS, sizeof *f);
    struct gp_notice_alert *a = calloc(nalerts ? nalerts : 1, sizeof *a);
    if (!s || !f || !a)
        abort();
    memcpy(s, data + 2, size - 2);
    s[size - 2] = '\0';
    size_t nf = 0;
    for (char *p = s; nf < MAX_FIELDS;) {
        f[nf++] = p;
        size_t l = strlen(p);
        if (p + l >= s + size - 2)
            break;
        p += l + 1;
    }
    for (size_t i = nf; i < MAX_FIELDS; i++)
        f[i] = "";
    for (size_t i = 0; i < nalerts; i++) {
        const char **af = f + 5 + i * 10;
        a[i] = (struct gp_notice_alert){
            .id = "x", .kind = af[0], .severity = af[1], .status = af[2], .node = af[3], .gpu = af[4],
            .job = af[5], .rank = af[6], .summary = af[7], .evidence = af[8], .runbook = af[9],
            .value = (double)i / 3.0, .starts_ms = (int64_t)i * 1000003, .ends_ms = (int64_t)i * 7,
        };
    }
    struct gp_notice n = {
        .receiver = f[0], .group_key = "k", .status = (flags & 1) ? "resolved" : "firing",
        .group_labels = {{f[3], f[4]}}, .alerts = a, .nalerts = nalerts, .external_url = f[1],
        .test = (flags & 2) != 0,
    };
    static const char *const to[] = {"oncall@example.com", "ml-team@example.com"};
    struct gp_mime_opts o = {
        .from = "gpulse@example.com", .to = to, .nto = 2,
        .subject_template = (flags & 4) ? f[2] : NULL, .date_ms = 1709632800000,
        .msgid_token = f[0], .msgid_host = f[1], .boundary_token = (flags & 8) ? NULL : f[2],
    };
    struct gp_buf b;
    gp_buf_init(&b, GP_MIME_MAX_BYTES);
    if (gp_mime_build(&n, &o, &b, NULL, 0) != 0)
        abort(); /* the addresses are fine: any notice must render */
    const char *why = mc_check(b.data, b.len, NULL, NULL, NULL, 0);
    if (why) {
        fprintf(stderr, "fuzz_mime: %s\n", why);
        abort();
    }
    char v[4096], subj[4096], want[GP_MIME_SUBJECT_MAX];
    gp_mime_subject(&n, o.subject_template, want, sizeof want);
    if (!mc_header(b.data, "Subject", v, sizeof v) || !mc_decode_words(v, subj, sizeof subj) ||
        strcmp(subj, want) != 0) {
        fprintf(stderr, "fuzz_mime: the subject does not round-trip\n");
        abort();
    }
    gp_buf_free(&b);
    free(a);
    free(f);
    free(s);
    return 0;
}
