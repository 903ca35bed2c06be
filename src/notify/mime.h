/*
 * mime.h - renders a notice as an Internet message (RFC 5322 + MIME),
 * for the email channel (channel_email.c). Pure: no network, no clock or
 * random source of its own (the caller passes the time and the tokens),
 * so unit tests and the fuzz target drive it byte for byte.
 *
 * The message:
 *
 *   Date: Tue, 05 Mar 2024 10:00:00 +0000          (RFC 5322, UTC)
 *   From: gpulse@example.com
 *   To: a@example.com,
 *    b@example.com                                 (every recipient)
 *   Subject: =?UTF-8?B?...?=                       (RFC 2047, folded)
 *   Message-ID: <token@host>
 *   MIME-Version: 1.0
 *   Content-Type: multipart/alternative; boundary="=_gpulse_..."
 *   (a text/plain part and a text/html part, both UTF-8, quoted-printable)
 *
 * Every line ends in CRLF and is at most 76 characters long (the header
 * fields are folded, the bodies are quoted-printable; only an address
 * longer than a line, up to 254 characters, stands alone on a longer
 * one). The boundary
 * starts with "=_", which quoted-printable output can never contain (an
 * '=' there is always followed by two hex digits or a line break), and
 * the builder checks the parts anyway.
 *
 * Untrusted text (summaries, label values, evidence) is made valid UTF-8
 * (bad bytes become U+FFFD), control characters become spaces in headers
 * (no header injection) and in the HTML everything is escaped; links are
 * only made of http(s) URLs. A notice with many alerts lists the first
 * GP_MIME_MAX_ALERTS of them and summarises the rest, and every field is
 * cut at GP_MIME_FIELD_MAX bytes, so the message stays bounded
 * (GP_MIME_MAX_BYTES).
 */
#ifndef GP_MIME_H
#define GP_MIME_H

#include "lib/buf.h"
#include "notify/notify.h"

#include <stddef.h>
#include <stdint.h>

#define GP_MIME_MAX_ALERTS 50         /* listed in full; the rest are counted */
#define GP_MIME_FIELD_MAX 1024        /* bytes of one field (summary, evidence...) */
#define GP_MIME_MAX_BYTES (2u << 20)  /* a whole message */
#define GP_MIME_SUBJECT_MAX 512       /* bytes of the subject text (before encoding), NUL included */

struct gp_mime_opts {
    const char *from;             /* the From address (plain addr-spec) */
    const char *const *to;        /* nto recipients (plain addr-specs) */
    size_t nto;
    const char *subject_template; /* NULL or "": the default subject */
    int64_t date_ms;              /* the Date header (Unix ms, written in UTC) */
    const char *msgid_token;      /* left of '@' in Message-ID: the notification id or a random token */
    const char *msgid_host;       /* right of '@' ("" or NULL: "gpulse.localhost") */
    const char *boundary_token;   /* random letters/digits for the boundary (NULL: derived) */
};

/*
 * Appends the whole message for n to out (which the caller owns and
 * frees; out->max should be at least GP_MIME_MAX_BYTES). Returns GP_OK,
 * GP_ECONFIG for an address that cannot go into a header (no '@',
 * spaces, control or non-ASCII characters, angle brackets, commas), or
 * out's latched error (GP_ENOMEM / GP_ETOOBIG), or GP_EINTERNAL should
 * the boundary ever occur in a part. err (may be NULL) gets
 * the detail.
 */
int gp_mime_build(const struct gp_notice *n, const struct gp_mime_opts *o, struct gp_buf *out,
                  char *err, size_t errlen);

/*
 * As gp_mime_build for a message of the caller's: subject (UTF-8, before
 * encoding), a text/plain part text[0..tlen) and a text/html part
 * html[0..hlen) (a report, not a notice). The same errors.
 */
int gp_mime_build_parts(const char *subject, const char *text, size_t tlen, const char *html,
                        size_t hlen, const struct gp_mime_opts *o, struct gp_buf *out, char *err,
                        size_t errlen);

/*
 * The subject text (UTF-8, before encoding) into out (always
 * NUL-terminated). The default: "[gpulse] FIRING: 3 alerts for job
 * bert-1", "[gpulse] RESOLVED: 1 alert for node n1, gpu 3", with "TEST "
 * before the status for a test notice and ", 2 resolved" after the count
 * when a firing notice also carries resolutions. A template replaces
 * {status} (FIRING/RESOLVED), {count} (alerts in the notice), {group}
 * ("job bert-1") and {receiver}; other text is kept.
 */
void gp_mime_subject(const struct gp_notice *n, const char *tmpl, char *out, size_t outlen);

/*
 * Appends "Subject: " and text as RFC 2047 B-encoded UTF-8 words, folded
 * so no line passes 76 columns, ending in CRLF. Words never split a
 * UTF-8 character. text must be valid UTF-8 without control characters
 * (gp_mime_subject's output is).
 */
void gp_mime_put_subject(struct gp_buf *out, const char *text);

/*
 * Appends the quoted-printable encoding (RFC 2045 6.7) of s[0..n): line
 * breaks ("\n" or "\r\n") become CRLF hard breaks, lines are soft-broken
 * at 76 columns, '=', control and 8-bit bytes, a leading '.' and
 * trailing white space are encoded.
 */
void gp_mime_put_qp(struct gp_buf *out, const char *s, size_t n);

/* Whether s is an address that can go into From/To/MAIL FROM/RCPT TO. */
int gp_mime_addr_ok(const char *s);

#endif
