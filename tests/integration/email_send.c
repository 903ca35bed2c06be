/*
 * email_send.c - the driver of test_notify_email.sh: sends one fixed
 * notice (two alerts for job bert-1, non-ASCII text, an external URL)
 * through gp_channel_email and prints what the channel answered:
 *
 *   result=OK|RETRY|FAIL status=N rc=N detail=...
 *
 * Usage: email_send SMTP_URL TLS USER PASSWORD FROM TO[,TO...]
 *                   [--ca FILE] [--insecure] [--timeout MS] [--subject TEMPLATE]
 * Exit 0 when the server took it, 1 when not, 2 on a usage error.
 * Compiled by the test against build/asan/libgpulse.a.
 */
#include "notify/notify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: email_send SMTP_URL TLS USER PASSWORD FROM TO[,TO...] [options]\n");
        return 2;
    }
    static struct gp_receiver r;
    snprintf(r.name, sizeof r.name, "oncall-mail");
    r.type = GP_RT_EMAIL;
    r.timeout_ms = 5000;
    snprintf(r.smtp_url, sizeof r.smtp_url, "%s", argv[1]);
    snprintf(r.smtp_tls, sizeof r.smtp_tls, "%s", argv[2]);
    snprintf(r.username, sizeof r.username, "%s", argv[3]);
    snprintf(r.password, sizeof r.password, "%s", argv[4]);
    snprintf(r.from, sizeof r.from, "%s", argv[5]);
    char to[2048];
    snprintf(to, sizeof to, "%s", argv[6]);
    for (char *save = NULL, *t = strtok_r(to, ",", &save); t && r.nto < GP_NOTIFY_TO_MAX;
         t = strtok_r(NULL, ",", &save))
        snprintf(r.to[r.nto++], sizeof r.to[0], "%s", t);
    for (int i = 7; i < argc; i++) {
        if (strcmp(argv[i], "--insecure") == 0)
            r.insecure_skip_verify = true;
        else if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc)
            snprintf(r.ca_file, sizeof r.ca_file, "%s", argv[++i]);
        else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            r.timeout_ms = strtoll(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--subject") == 0 && i + 1 < argc)
            snprintf(r.subject_template, sizeof r.subject_template, "%s", argv[++i]);
        else {
            fprintf(stderr, "email_send: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    const struct gp_notice_alert alerts[2] = {
        {.id = "fp1", .kind = "oom_forecast", .severity = "critical", .status = "firing", .node = "n1",
         .gpu = "3", .job = "bert-1", .rank = "0", .summary = "Mémoire épuisée dans 10 min — rank 0",
         .evidence = "free 1.2 GiB, falling 300 MiB/min", .runbook = "https://runbooks.example/oom",
         .value = 0.93, .starts_ms = 1709632800000},
        {.id = "fp2", .kind = "straggler", .severity = "warning", .status = "firing", .node = "n2",
         .gpu = "0", .job = "bert-1", .rank = "5", .summary = "rank 5 is 40% slower <than> the median",
         .evidence = "step 1.4 s vs 1.0 s", .runbook = "", .value = 1.4, .starts_ms = 1709632860000},
    };
    struct gp_notice n = {
        .receiver = "oncall-mail", .group_key = "{job=\"bert-1\"}", .status = "firing",
        .group_labels = {{"job", "bert-1"}}, .alerts = alerts, .nalerts = 2,
        .external_url = "http://gpulse.example:9402",
    };
    struct gp_send_outcome out;
    int rc = gp_channel_email.send(&r, &n, &out);
    static const char *const names[] = {"OK", "RETRY", "FAIL"};
    printf("result=%s status=%d rc=%d detail=%s\n", names[out.result], out.status, rc, out.detail);
    return rc == 0 && out.result == GP_SEND_OK ? 0 : 1;
}
