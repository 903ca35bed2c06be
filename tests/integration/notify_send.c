/*
 * notify_send.c - the integration tests' driver of the HTTP channels:
 * sends one fixed notice through gp_channel_of(TYPE)->send and prints
 * the outcome, until `gpulse notify test` (another branch) can do it
 * from a configuration file.
 *
 * Usage: notify-send TYPE URL [firing|resolved] [TIMEOUT_MS] [BEARER]
 * Prints "result=OK|RETRY|FAIL status=N retry_after_ms=N detail=..." and
 * exits 0 when the far end took it, 1 when not, 2 on a usage error.
 */
#include "lib/clock.h"
#include "notify/notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *result_name(enum gp_send_result r)
{
    return r == GP_SEND_OK ? "OK" : r == GP_SEND_RETRY ? "RETRY" : "FAIL";
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 6) {
        fprintf(stderr, "usage: notify-send TYPE URL [firing|resolved] [TIMEOUT_MS] [BEARER]\n");
        return 2;
    }
    const struct gp_channel_ops *ops = NULL;
    struct gp_receiver r;
    memset(&r, 0, sizeof r);
    for (int t = 0; t < GP_RT__COUNT; t++)
        if (strcmp(argv[1], gp_receiver_type_names[t]) == 0) {
            r.type = (enum gp_receiver_type)t;
            ops = gp_channel_of(r.type);
        }
    if (!ops || strlen(argv[2]) >= sizeof r.url) {
        fprintf(stderr, "notify-send: no HTTP channel '%s', or the URL is too long\n", argv[1]);
        return 2;
    }
    snprintf(r.name, sizeof r.name, "it-%s", argv[1]);
    snprintf(r.url, sizeof r.url, "%s", argv[2]);
    bool resolved = argc > 3 && strcmp(argv[3], "resolved") == 0;
    r.timeout_ms = argc > 4 ? atoll(argv[4]) : 5000;
    if (argc > 5)
        snprintf(r.bearer_token, sizeof r.bearer_token, "%s", argv[5]);
    int64_t now = gp_wall_ms();
    struct gp_notice_alert a[2] = {
        {.id = "4f1c2a9e0b7d3e51", .kind = "GpulseItOomForecast", .severity = "critical",
         .status = resolved ? "resolved" : "firing", .node = "node-1", .gpu = "0", .job = "bert-1",
         .rank = "3", .summary = "GPU 0 will run out of memory in 10 minutes \"<&>\" \xc3\xa9",
         .evidence = "used 74.1 GiB of 80\nrising 1.2 GiB/min", .runbook = "https://runbooks.example/oom",
         .value = 600, .starts_ms = now - 60000, .ends_ms = resolved ? now : 0},
        {.id = "9a0b1c2d3e4f5061", .kind = "GpulseItStraggler", .severity = "warning", .status = "resolved",
         .node = "node-2", .gpu = "", .job = "bert-1", .rank = "7", .summary = "rank 7 is 30% slower",
         .evidence = "", .runbook = "", .value = 1.3, .starts_ms = now - 120000, .ends_ms = now - 1000},
    };
    struct gp_notice n = {
        .id = "it-notification-1", .receiver = r.name, .group_key = "{job=\"bert-1\"}",
        .status = resolved ? "resolved" : "firing", .group_labels = {{"job", "bert-1"}, {NULL, NULL}},
        .alerts = a, .nalerts = 2, .external_url = "http://gpulse.example:9402", .test = false,
    };
    struct gp_send_outcome o;
    int rc = ops->send(&r, &n, &o);
    printf("result=%s status=%d retry_after_ms=%lld rc=%d detail=%s\n", result_name(o.result), o.status,
           (long long)o.retry_after_ms, rc, o.detail);
    return o.result == GP_SEND_OK ? 0 : 1;
}
