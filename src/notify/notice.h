/*
 * notice.h - a notice (notify.h) as JSON, the form the outbox stores and
 * the API shows, in both directions:
 *
 *   {"receiver":"..","group_key":"..","status":"firing",
 *    "group_labels":[["job","bert-1"]],"external_url":"","test":false,
 *    "alerts":[{"id","kind","severity","status","node","gpu","job","rank",
 *               "summary","evidence","runbook","value","starts_ms","ends_ms"}]}
 *
 * The value is null when it is not finite.
 */
#ifndef GP_NOTIFY_NOTICE_H
#define GP_NOTIFY_NOTICE_H

#include "notify/notify.h"

#include <stddef.h>

#define GP_NOTICE_ALERTS_MAX 10000
#define GP_NOTICE_JSON_MAX (16u << 20)

/* A parsed notice: n points into root (jansson) and alerts. */
struct gp_notice_doc {
    struct gp_notice n;
    struct gp_notice_alert *alerts; /* owned */
    void *root;                     /* json_t *, owned */
};

/* The notice as compact JSON into *out (the caller frees). GP_OK or GP_ENOMEM. */
int gp_notice_to_json(const struct gp_notice *n, char **out);

/* Parses text (len bytes) into d (the caller frees with
 * gp_notice_doc_free, also after a failure). GP_OK, GP_EPARSE or GP_ENOMEM with detail. */
int gp_notice_from_json(const char *text, size_t len, struct gp_notice_doc *d, char *err,
                        size_t errlen);

/* Frees a doc; accepts NULL and a zeroed doc. */
void gp_notice_doc_free(struct gp_notice_doc *d);

#endif
