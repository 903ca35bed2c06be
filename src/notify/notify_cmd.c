/*
 * notify_cmd.c - `gpulse notify test RECEIVER [--config FILE]`
 * (docs/notify.md): loads the config file's notify: section, builds a
 * test notice (test = true, one firing sample alert with a fixed id) and
 * sends it straight through the receiver's channel (gp_channel_of; no
 * outbox: nothing is queued or retried), then prints what the far end
 * answered on one line, redacted:
 *
 *   receiver=NAME type=TYPE result=OK|RETRY|FAIL status=N detail="..."
 *
 * Exit 0 when the far end took it, 1 when not, 2 on a usage or config
 * error (an unknown receiver lists the configured ones).
 */
#include "notify/notify_cmd.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "notify/config.h"
#include "notify/notify.h"

#include <stdio.h>
#include <string.h>

#define TEST_ALERT_ID "0000000000000000"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpulse notify test RECEIVER [--config FILE]\n\n"
            "Sends a test notification (one sample firing alert, marked as a test) through\n"
            "RECEIVER of FILE's notify: section, directly (not through the outbox), and\n"
            "prints what the far end answered:\n"
            "  receiver=NAME type=TYPE result=OK|RETRY|FAIL status=N detail=\"...\"\n"
            "Secrets are printed as [redacted]. Exit status: 0 the far end took it,\n"
            "1 it did not, 2 a usage or configuration error.\n");
}

static int test_cmd(const char *name, const char *config)
{
    struct gp_notify_config c;
    gp_notify_config_init(&c);
    char err[512];
    if (config) {
        int rc = gp_notify_config_load_file(config, &c, err, sizeof err);
        if (rc) {
            fprintf(stderr, "gpulse notify: %s: notify: %s\n", config, err);
            gp_notify_config_free(&c);
            return 2;
        }
    }
    const struct gp_receiver *r = gp_notify_receiver(&c, name);
    if (!r) {
        char names[1024] = "";
        size_t o = 0;
        for (size_t i = 0; i < c.nrecv && o < sizeof names; i++)
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", c.recv[i].name);
        if (c.nrecv)
            fprintf(stderr, "gpulse notify: no receiver '%s' (configured: %s)\n", name, names);
        else
            fprintf(stderr, "gpulse notify: no receiver '%s' (%s has no receivers)\n", name,
                    config ? config : "no --config FILE given: there are");
        gp_notify_config_free(&c);
        return 2;
    }
    const struct gp_channel_ops *ops = gp_channel_of(r->type);
    const char *tname = gp_receiver_type_names[r->type];
    if (!ops || !ops->send) {
        fprintf(stderr, "gpulse notify: receiver '%s': this build cannot send to type %s\n", name,
                tname);
        gp_notify_config_free(&c);
        return 2;
    }
    int64_t now = gp_wall_ms();
    struct gp_notice_alert a = {
        .id = TEST_ALERT_ID, .kind = "gpulse_test", .severity = "info", .status = "firing",
        .node = "test-node", .gpu = "0", .job = "test-job", .rank = "0",
        .summary = "gpulse test notification: this receiver works",
        .evidence = "sent by `gpulse notify test`", .runbook = "nothing to do", .value = 1,
        .starts_ms = now, .ends_ms = 0};
    char gkey[GP_NOTIFY_NAME_LEN + 32];
    snprintf(gkey, sizeof gkey, "{test=\"%s\"}", r->name);
    struct gp_notice n = {.id = "gpulse-test-" TEST_ALERT_ID, .receiver = r->name, .group_key = gkey,
                          .status = "firing", .alerts = &a, .nalerts = 1,
                          .external_url = c.external_url, .test = true};
    n.group_labels[0][0] = "job";
    n.group_labels[0][1] = "test-job";
    struct gp_send_outcome out;
    memset(&out, 0, sizeof out);
    int rc = ops->send(r, &n, &out);
    char detail[sizeof out.detail * 2];
    if (rc) {
        out.result = GP_SEND_FAIL;
        snprintf(detail, sizeof detail, "cannot send: %s%s%s", gp_strerror(rc), out.detail[0] ? ": " : "",
                 out.detail);
    } else {
        snprintf(detail, sizeof detail, "%s", out.detail);
    }
    char red[sizeof detail];
    gp_notify_redact(c.recv, c.nrecv, detail, red, sizeof red);
    for (char *p = red; *p; p++)
        if (*p == '"' || *p == '\n' || *p == '\r')
            *p = *p == '"' ? '\'' : ' ';
    static const char *const results[] = {"OK", "RETRY", "FAIL"};
    printf("receiver=%s type=%s result=%s status=%d detail=\"%s\"\n", r->name, tname,
           results[out.result <= GP_SEND_FAIL ? out.result : GP_SEND_FAIL], out.status, red);
    gp_notify_config_free(&c);
    return out.result == GP_SEND_OK ? 0 : 1;
}

int gp_notify_main(int argc, char **argv)
{
    const char *config = NULL, *name = NULL;
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        usage(argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (strcmp(argv[0], "test")) {
        fprintf(stderr, "gpulse notify: unknown subcommand '%s' (see 'gpulse notify --help')\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--config")) {
            if (++i >= argc) {
                fprintf(stderr, "gpulse notify: flag '--config' needs a value\n");
                return 2;
            }
            config = argv[i];
        } else if (!strncmp(a, "--config=", 9)) {
            config = a + 9;
        } else if (a[0] == '-') {
            fprintf(stderr, "gpulse notify: unknown flag '%s' (see 'gpulse notify --help')\n", a);
            return 2;
        } else if (name) {
            fprintf(stderr, "gpulse notify: unexpected argument '%s'\n", a);
            return 2;
        } else {
            name = a;
        }
    }
    if (!name) {
        fprintf(stderr, "gpulse notify test: which receiver? (see 'gpulse notify --help')\n");
        return 2;
    }
    return test_cmd(name, config);
}
