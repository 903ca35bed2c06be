/*
 * http_post.h - the one HTTP POST of the HTTP channels (Slack, webhook,
 * Alertmanager).
 *
 * A channel renders its body and hands it here with the receiver's URL;
 * this sends it (net/httpc.h) and turns what came back into a
 * gp_send_outcome: 2xx is OK; 429, 5xx, a refused or dropped connection
 * and a timeout are RETRY (with the far end's Retry-After, seconds or an
 * HTTP date); any other answer (4xx, a redirect: none is followed) is
 * FAIL. The URL is a secret (a Slack webhook URL carries its token): it
 * is never copied into the outcome, and the transport's error text is redacted
 * of it, of its path, query and credentials, and of the bearer token.
 */
#ifndef GP_NOTIFY_HTTP_POST_H
#define GP_NOTIFY_HTTP_POST_H

#include "notify/notify.h"

#include <stddef.h>
#include <stdint.h>

struct gp_http_post {
    const char *url;        /* the full URL; a secret */
    const char *bearer;     /* Authorization: Bearer <it>; NULL or "" none; a secret */
    const char *notice_id;  /* X-Gpulse-Notification-Id; NULL or "" none */
    const char *body;       /* JSON, sent as application/json */
    size_t len;
    int64_t timeout_ms;     /* the whole request; <= 0 means 10 s */
};

/*
 * Sends p and fills out (always, even on an error return). Returns GP_OK
 * when the outcome could be judged, GP_ENOMEM / GP_EINTERNAL when libcurl
 * could not even be set up (out->result is then RETRY). Borrows
 * everything in p; blocks at most p->timeout_ms.
 */
int gp_http_post_send(const struct gp_http_post *p, struct gp_send_outcome *out);

/* Which result an answer's HTTP status gives (2xx OK, 429/5xx RETRY, else FAIL). */
enum gp_send_result gp_http_post_classify(int status);

/*
 * Copies s into out (outlen bytes, always NUL-terminated) with every
 * occurrence of the non-empty secrets[0..n) replaced by "[redacted]",
 * longest first wins at each position.
 */
void gp_http_post_redact(const char *s, const char *const *secrets, size_t n, char *out,
                         size_t outlen);

#endif
