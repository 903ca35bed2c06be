/*
 * notify.h - the shared shapes of notifications (docs/notify.md).
 *
 * Flow: alert transitions (insight/alert_event.h) -> the router
 * (router.c: routes by matchers to receivers, groups by group_by with
 * group_wait / group_interval / repeat_interval) -> a notice (one group
 * of alerts for one receiver) written to the outbox (outbox.c, SQLite,
 * before anything is sent) -> the sender thread hands it to the
 * receiver's channel (channel_*.c), which renders and sends it and says
 * what the far end answered -> the outbox marks it done, retries it with
 * back-off, or marks it dead.
 *
 * A channel is one small ops table, as the sources are: the rest of the
 * notifier never knows whether it talks to Slack or to an SMTP server.
 */
#ifndef GP_NOTIFY_H
#define GP_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One alert in a notice. Strings are never NULL ("" when not known). */
struct gp_notice_alert {
    const char *id;          /* the alert's fingerprint */
    const char *kind;        /* detector or rule name */
    const char *severity;    /* info, warning, critical */
    const char *status;      /* "firing" or "resolved" */
    const char *node, *gpu, *job, *rank;
    const char *summary, *evidence, *runbook;
    double value;
    int64_t starts_ms;       /* when it started (pending) */
    int64_t ends_ms;         /* when it resolved; 0 while firing */
};

/* One notification: a group of alerts for one receiver. */
struct gp_notice {
    const char *id;          /* the notification's stable id (outbox): X-Gpulse-Notification-Id, Message-ID */
    const char *receiver;    /* the receiver's name */
    const char *group_key;   /* e.g. "{job=\"bert-1\"}": stable for a group */
    const char *status;      /* "firing" when any alert fires, else "resolved" */
    const char *group_labels[8][2]; /* the group_by labels and their values; NULL-ended */
    const struct gp_notice_alert *alerts;
    size_t nalerts;
    const char *external_url; /* the dashboard's base URL ("" none): links to jobs and alerts */
    bool test;               /* `gpulse notify test`: say so in the message */
};

/* What a channel's send did. */
enum gp_send_result {
    GP_SEND_OK,              /* the far end took it */
    GP_SEND_RETRY,           /* try again later (5xx, 429, timeout, refused connection) */
    GP_SEND_FAIL,            /* it will never take it (4xx but 429, bad address): dead */
};

struct gp_send_outcome {
    enum gp_send_result result;
    int status;              /* HTTP status or SMTP reply code; 0 none */
    int64_t retry_after_ms;  /* the far end's Retry-After; 0 none */
    char detail[256];        /* what the far end answered, secrets redacted */
};

#define GP_NOTIFY_TYPES(X) X(SLACK, "slack") X(EMAIL, "email") X(WEBHOOK, "webhook") \
    X(ALERTMANAGER, "alertmanager")

enum gp_receiver_type {
#define GP_RT_ENUM_(id, name) GP_RT_##id,
    GP_NOTIFY_TYPES(GP_RT_ENUM_)
#undef GP_RT_ENUM_
    GP_RT__COUNT
};

#define GP_NOTIFY_NAME_LEN 64
#define GP_NOTIFY_URL_LEN 1024
#define GP_NOTIFY_TO_MAX 16

/* A receiver as configured (docs/notify.md), secrets resolved. */
struct gp_receiver {
    char name[GP_NOTIFY_NAME_LEN];
    enum gp_receiver_type type;
    char url[GP_NOTIFY_URL_LEN];     /* slack, webhook, alertmanager (base URL); a secret */
    int64_t timeout_ms;
    /* email */
    char smtp_url[GP_NOTIFY_URL_LEN]; /* smtp://host:port (STARTTLS when tls starttls) or smtps:// */
    char smtp_tls[16];               /* "starttls" (required), "implicit" (smtps), "none" */
    char username[256];
    char password[256];              /* a secret */
    bool insecure_skip_verify;       /* tests with a throwaway certificate only */
    char ca_file[512];
    char from[256];
    char to[GP_NOTIFY_TO_MAX][256];
    unsigned nto;
    char subject_template[256];      /* `title` (email: also `subject`): slack header and email
                                      * subject, {status} {count} {group} {receiver}; "" default */
    char bearer_token[1024];         /* webhook, alertmanager: Authorization: Bearer; a secret */
};

struct gp_channel_ops {
    enum gp_receiver_type type;
    /* Renders n for r and sends it; fills out. Never blocks past
     * r->timeout_ms. Returns GP_OK when it could judge the outcome
     * (even a failed send), an error code when it could not even try. */
    int (*send)(const struct gp_receiver *r, const struct gp_notice *n, struct gp_send_outcome *out);
};

extern const struct gp_channel_ops gp_channel_slack, gp_channel_email, gp_channel_webhook,
    gp_channel_alertmanager;
extern const char *const gp_receiver_type_names[GP_RT__COUNT];

/* Sends a document of the caller's (a report: subject, text and HTML
 * parts) to an email receiver r as the email channel sends a notice: the
 * same transport, TLS rules and outcome. */
int gp_email_send_doc(const struct gp_receiver *r, const char *subject, const char *text,
                      const char *html, struct gp_send_outcome *out);

/* The ops of a type. */
const struct gp_channel_ops *gp_channel_of(enum gp_receiver_type t);

/*
 * Copies s into out with every configured secret replaced by "[redacted]"
 * (URLs, passwords, tokens of every receiver, and their URL-encoded
 * forms), for logs, API answers and error messages. out is always
 * NUL-terminated.
 */
void gp_notify_redact(const struct gp_receiver *recv, size_t nrecv, const char *s, char *out,
                      size_t outlen);

#endif
