/*
 * alert_event.h - one alert transition, as the alert engine hands it to
 * whoever acts on alerts (remediation hooks now, notifications later).
 * Everything is borrowed for the duration of the call.
 */
#ifndef GP_INSIGHT_ALERT_EVENT_H
#define GP_INSIGHT_ALERT_EVENT_H

#include "insight/detect.h"

#include <stdint.h>

enum gp_alert_state { GP_ALERT_PENDING, GP_ALERT_FIRING, GP_ALERT_RESOLVED };

struct gp_alert_event {
    const char *id;          /* the alert's fingerprint (hex), stable across restarts */
    const char *kind;        /* detector name, or a custom rule's name */
    enum gp_severity severity;
    enum gp_alert_state from, to;
    const struct gp_obs_key *key; /* node, gpu, job, rank, pid */
    const char *summary, *evidence, *runbook;
    double value;
    int64_t at_ms;           /* when the transition happened */
    bool silenced;
};

/* Called for every transition; must not block for long (it runs on the
 * evaluation thread). */
typedef void (*gp_alert_listener)(void *ctx, const struct gp_alert_event *ev);

#endif
