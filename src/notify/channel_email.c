/*
 * channel_email.c - the email channel: a notice as a MIME message
 * (mime.c) sent with net/httpc's SMTP submission (libcurl's client).
 *
 * Transport security follows the receiver's `tls`:
 *   starttls (the default): an smtp:// URL with TLS required, so libcurl
 *     upgrades with STARTTLS before AUTH or MAIL and gives up (never sends
 *     in clear) when the server does not offer it;
 *   implicit: an smtps:// URL, TLS from the first byte;
 *   none: an smtp:// URL in clear, only when configured so.
 * A URL whose scheme contradicts `tls` is a configuration error. AUTH is
 * used when a username is set; the server's certificate is verified
 * (ca_file adds a CA) unless insecure_skip_verify.
 *
 * The outcome: the last SMTP reply code goes into status; 250 is OK; a
 * 5xx reply (535 auth failure, 550 recipient rejected, 554) is FAIL (the
 * server will never take it); a 4xx reply, a refused or broken
 * connection, a timeout or a failed TLS handshake is RETRY. A server
 * that does not offer STARTTLS when it is required, or a certificate
 * that does not verify, is FAIL: retrying will not change it, and the
 * message must not go in clear. The detail is libcurl's error text with
 * the password (and its URL-encoded form) replaced by "[redacted]".
 *
 * One easy handle per send: email is rare, and a fresh connection per
 * message keeps the channel free of state shared with the sender thread.
 */
#include "lib/err.h"
#include "net/httpc.h"
#include "notify/mime.h"
#include "notify/notify.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define EMAIL_DEFAULT_TIMEOUT_MS 30000

/* Replaces every occurrence of secret in s (a cap-byte buffer), scanning
 * the original text once, so a secret inside the mark cannot loop. */
static void redact_one(char *s, size_t cap, const char *secret)
{
    static const char mark[] = "[redacted]";
    size_t sl = strlen(secret), o = 0;
    if (sl == 0 || cap == 0)
        return;
    char res[1024];
    for (const char *p = s; *p && o + 1 < sizeof res;) {
        if (strncmp(p, secret, sl) == 0) {
            size_t m = sizeof mark - 1 < sizeof res - 1 - o ? sizeof mark - 1 : sizeof res - 1 - o;
            memcpy(res + o, mark, m);
            o += m;
            p += sl;
        } else
            res[o++] = *p++;
    }
    res[o] = '\0';
    snprintf(s, cap, "%s", res);
}

/* The detail buffer with the password in plain and URL-encoded form redacted. */
static void redact(char *s, size_t cap, const struct gp_receiver *r)
{
    if (!r->password[0])
        return;
    redact_one(s, cap, r->password);
    char enc[sizeof r->password * 3];
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)r->password; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~", *p))
            enc[o++] = (char)*p;
        else
            o += (size_t)snprintf(enc + o, sizeof enc - o, "%%%02X", *p);
    }
    enc[o] = '\0';
    if (strcmp(enc, r->password) != 0)
        redact_one(s, cap, enc);
}

static void random_hex(char *out, size_t nbytes)
{
    unsigned char r[32];
    if (nbytes > sizeof r)
        nbytes = sizeof r;
    if (getrandom(r, nbytes, GRND_NONBLOCK) != (ssize_t)nbytes) {
        /* No entropy yet (early boot): time and pid still make it unique. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
        for (size_t i = 0; i < nbytes; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            r[i] = (unsigned char)x;
        }
    }
    for (size_t i = 0; i < nbytes; i++)
        sprintf(out + 2 * i, "%02x", r[i]);
}

static int fail_config(struct gp_send_outcome *out, const char *msg)
{
    out->result = GP_SEND_FAIL;
    out->status = 0;
    snprintf(out->detail, sizeof out->detail, "%s", msg);
    return GP_ECONFIG;
}

/* Sorts a finished submission into OK / RETRY / FAIL (see the top comment). */
static enum gp_send_result classify(const struct gp_httpc_res *r)
{
    if (!r->err[0])
        return r->status == 0 || (r->status >= 200 && r->status < 300) ? GP_SEND_OK
               : r->status >= 500                                       ? GP_SEND_FAIL
                                                                        : GP_SEND_RETRY;
    if (r->permanent || (r->status >= 500 && r->status < 600))
        return GP_SEND_FAIL;
    return GP_SEND_RETRY; /* 4xx, refused, reset, timeout, TLS handshake */
}

/* The notification's id as the Message-ID's left part (docs/notify.md:
 * the same id on every retry, so a receiver can drop a repeat) when it is
 * a plain token; else a random one. */
static bool id_token(const struct gp_notice *n)
{
    if (!n->id || !n->id[0] || strlen(n->id) > 64)
        return false;
    for (const char *p = n->id; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
            return false;
    return true;
}

/* The message's options for r (to[] and the tokens in the caller's
 * buffers) and whether the URL asks for TLS; GP_OK, or GP_ECONFIG with
 * out filled. */
static int prepare(const struct gp_receiver *r, const char *id, const char **to, char tok[33],
                   char btok[33], char host[256], struct gp_mime_opts *mo, bool *require_tls,
                   struct gp_send_outcome *out)
{
    memset(out, 0, sizeof *out);
    const char *tls = r->smtp_tls[0] ? r->smtp_tls : "starttls";
    int smtps = strncasecmp(r->smtp_url, "smtps://", 8) == 0;
    int smtp = strncasecmp(r->smtp_url, "smtp://", 7) == 0;
    if (strcmp(tls, "starttls") == 0 && smtp)
        *require_tls = true;
    else if (strcmp(tls, "implicit") == 0 && smtps)
        *require_tls = true;
    else if (strcmp(tls, "none") == 0 && smtp)
        *require_tls = false;
    else
        return fail_config(out, "email: smtp URL must be smtp:// for tls starttls or none, smtps:// for "
                                "tls implicit");
    if (r->password[0] && !r->username[0])
        return fail_config(out, "email: a password needs a username");
    if (r->nto == 0 || r->nto > GP_NOTIFY_TO_MAX)
        return fail_config(out, "email: no recipient");
    for (unsigned i = 0; i < r->nto; i++)
        to[i] = r->to[i];
    random_hex(tok, 16);
    random_hex(btok, 16);
    host[0] = '\0';
    if (gethostname(host, 255) != 0)
        host[0] = '\0';
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    *mo = (struct gp_mime_opts){
        .from = r->from, .to = to, .nto = r->nto, .subject_template = r->subject_template,
        .date_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000,
        .msgid_token = id ? id : tok, .msgid_host = host, .boundary_token = btok,
    };
    return GP_OK;
}

/* Submits the built message msg (rc: how building it went) and frees it. */
static int submit(const struct gp_receiver *r, bool require_tls, const char **to, int rc,
                  const char *err, struct gp_buf *msg, struct gp_send_outcome *out)
{
    if (rc != GP_OK) {
        gp_buf_free(msg);
        if (rc == GP_ECONFIG)
            return fail_config(out, err);
        out->result = GP_SEND_RETRY;
        snprintf(out->detail, sizeof out->detail, "%s", err);
        return rc;
    }
    struct gp_httpc_mail m = {
        .url = r->smtp_url, .require_tls = require_tls, .from = r->from, .to = to, .nto = r->nto,
        .username = r->username, .password = r->password, .ca_file = r->ca_file,
        .insecure_skip_verify = r->insecure_skip_verify, .msg = msg->data, .len = msg->len,
        .timeout_ms = r->timeout_ms > 0 ? r->timeout_ms : EMAIL_DEFAULT_TIMEOUT_MS,
    };
    struct gp_httpc_res res;
    rc = gp_httpc_mail(&m, &res);
    if (rc != GP_OK) {
        out->result = GP_SEND_RETRY;
        snprintf(out->detail, sizeof out->detail, "email: %.240s", res.err);
    } else {
        out->result = classify(&res);
        /* The status is the reply that decided: a failure after a 2xx/3xx
         * (the STARTTLS greeting, EHLO) was not the server's answer. */
        long code = res.status;
        if (res.err[0] && code < 400)
            code = 0;
        out->status = (int)code;
        const char *why = res.err[0] ? res.err : "accepted";
        /* Redacted before it is cut to fit, so no prefix of the password survives. */
        char full[1024];
        if (code > 0)
            snprintf(full, sizeof full, "smtp %ld: %s", code, why);
        else
            snprintf(full, sizeof full, "smtp: %s", why);
        redact(full, sizeof full, r);
        snprintf(out->detail, sizeof out->detail, "%.255s", full);
    }
    gp_buf_free(msg);
    return rc;
}

static int email_send(const struct gp_receiver *r, const struct gp_notice *n, struct gp_send_outcome *out)
{
    const char *to[GP_NOTIFY_TO_MAX];
    char tok[33], btok[33], host[256];
    struct gp_mime_opts mo;
    bool require_tls;
    int rc = prepare(r, id_token(n) ? n->id : NULL, to, tok, btok, host, &mo, &require_tls, out);
    if (rc)
        return rc;
    struct gp_buf msg;
    gp_buf_init(&msg, GP_MIME_MAX_BYTES);
    char err[200] = "";
    rc = gp_mime_build(n, &mo, &msg, err, sizeof err);
    return submit(r, require_tls, to, rc, err, &msg, out);
}

int gp_email_send_doc(const struct gp_receiver *r, const char *subject, const char *text,
                      const char *html, struct gp_send_outcome *out)
{
    if (r->type != GP_RT_EMAIL)
        return fail_config(out, "not an email receiver");
    const char *to[GP_NOTIFY_TO_MAX];
    char tok[33], btok[33], host[256];
    struct gp_mime_opts mo;
    bool require_tls;
    int rc = prepare(r, NULL, to, tok, btok, host, &mo, &require_tls, out);
    if (rc)
        return rc;
    struct gp_buf msg;
    gp_buf_init(&msg, GP_MIME_MAX_BYTES);
    char err[200] = "";
    rc = gp_mime_build_parts(subject, text, strlen(text), html, strlen(html), &mo, &msg, err,
                             sizeof err);
    return submit(r, require_tls, to, rc, err, &msg, out);
}

const struct gp_channel_ops gp_channel_email = {
    .type = GP_RT_EMAIL,
    .send = email_send,
};
