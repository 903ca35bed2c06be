/*
 * report_cmd.c - `gpulse report JOB`: fetch a job's document from the
 * server and print its report.
 *
 * GET SERVER/api/v1/jobs/<JOB, URL-encoded>?series=1 with libcurl (a
 * bearer token when one is configured, 10 s timeout, at most 64 MiB of
 * answer), check the Prometheus-style envelope, add the job's active
 * alerts (GET /api/v1/alerts?job=JOB; a report without them when the
 * server cannot say, with a warning), add the advice
 * (gp_report_advise), and render: text on stdout, or the JSON document
 * (--json), or an HTML file (--html FILE, written to a temporary file
 * and renamed into place, so a reader never sees half a report) with the
 * text on stdout too. Every failure is one line on stderr naming what
 * failed: exit 1 at run time (unreachable server, no such job, a bad
 * answer, a file that cannot be written), 2 for usage.
 */
#include "report/report.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/token.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_SERVER "http://127.0.0.1:9402"
#define MAX_ANSWER (64u << 20)

struct opts {
    const char *job, *server, *html, *token_file;
    bool json, color;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpulse report JOB [--server URL] [--json | --html FILE] [--token-file FILE]\n\n"
            "Prints the end-of-run report of a training job: its command and state, wall time,\n"
            "GPU-hours and cost, peak GPU memory, GPU activity, step times and throughput, data\n"
            "wait, loss, host CPU and memory, where the time went and what to change: the job's\n"
            "active alerts first, then the advice. The job document comes from the server\n"
            "(GET /api/v1/jobs/JOB?series=1, its alerts from GET /api/v1/alerts?job=JOB; see\n"
            "docs/jobs.md).\n\n"
            "flags:\n"
            "  --server URL\n      the gpulse server [env GPULSE_SERVER, default " DEFAULT_SERVER "]\n"
            "  --token-file FILE\n      bearer token for the server's read_token [env GPULSE_TOKEN_FILE]\n"
            "  --json\n      print the job document (with the advice) as JSON instead of text\n"
            "  --html FILE\n      also write a self-contained HTML report with charts to FILE\n"
            "  --color\n      bold headings and a red failure line, when stdout is a terminal and\n"
            "      NO_COLOR is not set\n\n"
            "exit status: 0 on success, 1 on a runtime failure (server unreachable, no such job,\n"
            "a malformed answer), 2 on a usage error.\n");
}

/* Parses argv (after "report"); 0 to go on, else the exit status (help: 0 via *done). */
static int parse_args(int argc, char **argv, struct opts *o, bool *done)
{
    *done = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            *done = true;
            return 0;
        }
        if (a[0] != '-' || !a[1]) {
            if (o->job) {
                fprintf(stderr, "gpulse report: one job at a time ('%s' and '%s')\n", o->job, a);
                return 2;
            }
            o->job = a;
            continue;
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        }
        if (!strcmp(a, "--color")) {
            o->color = true;
            continue;
        }
        static const char *const valued[] = {"--server", "--html", "--token-file"};
        const char **dst[] = {&o->server, &o->html, &o->token_file};
        bool known = false;
        for (size_t k = 0; k < 3 && !known; k++) {
            size_t n = strlen(valued[k]);
            if (strncmp(a, valued[k], n) || (a[n] && a[n] != '='))
                continue;
            known = true;
            if (a[n] == '=')
                val = a + n + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            if (!val || !*val) {
                fprintf(stderr, "gpulse report: %s needs a value\n", valued[k]);
                return 2;
            }
            *dst[k] = val;
        }
        if (!known) {
            fprintf(stderr, "gpulse report: unknown flag '%s' (see 'gpulse report --help')\n", a);
            return 2;
        }
    }
    if (!o->job || !*o->job) {
        fprintf(stderr, "gpulse report: which job? (usage: gpulse report JOB, see --help)\n");
        return 2;
    }
    if (o->json && o->html) {
        fprintf(stderr, "gpulse report: --json and --html go one at a time\n");
        return 2;
    }
    return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct gp_buf *b = arg;
    gp_buf_append(b, p, size * n);
    return b->err ? 0 : size * n; /* 0 stops the transfer past the cap */
}

/* GETs url into body; *status gets the HTTP code. GP_OK or GP_ENET/GP_ETOOBIG with detail. */
static int fetch(const char *url, const char *token, struct gp_buf *body, long *status, char *err,
                 size_t errlen)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    char curl_err[CURL_ERROR_SIZE] = "";
    if (!c)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    if (token && *token) {
        char h[600];
        snprintf(h, sizeof h, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(NULL, h);
        memset(h, 0, sizeof h);
        if (!hdrs) {
            curl_easy_cleanup(c);
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        }
    }
    int bad = 0;
    bad |= curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_USERAGENT, "gpulse/" GP_VERSION) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEDATA, body) != CURLE_OK;
    int rc = GP_OK;
    if (bad) {
        rc = gp_seterr(err, errlen, GP_EINTERNAL, "libcurl refused an option");
    } else {
        CURLcode cc = curl_easy_perform(c);
        if (body->err == GP_ETOOBIG)
            rc = gp_seterr(err, errlen, GP_ETOOBIG, "the answer is larger than %u MiB", MAX_ANSWER >> 20);
        else if (body->err)
            rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        else if (cc != CURLE_OK)
            rc = gp_seterr(err, errlen, GP_ENET, "%s", curl_err[0] ? curl_err : curl_easy_strerror(cc));
        else
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return rc;
}

/* Makes s one plain line: control and non-ASCII bytes (C1 controls hide there) become blanks. */
static void one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f || (unsigned char)*s >= 0x80)
            *s = ' ';
}

/* The server's own one-line error from an error envelope, or "". */
static void envelope_error(const json_t *root, char *out, size_t n)
{
    const json_t *e = json_is_object(root) ? json_object_get(root, "error") : NULL;
    snprintf(out, n, "%s", json_is_string(e) ? json_string_value(e) : "");
    one_line(out);
}

/* Writes data to path through path.tmp.PID + fsync + rename. */
static int write_atomic(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return gp_seterr(err, errlen, GP_EIO, "cannot write '%s': path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return gp_seterr(err, errlen, GP_EIO, "cannot write '%s': %s", path, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return gp_seterr(err, errlen, GP_EIO, "cannot write '%s': %s", path, strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return gp_seterr(err, errlen, GP_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return gp_seterr(err, errlen, GP_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    return GP_OK;
}

/* The server URL without trailing slashes, into out. */
static void server_label(const char *server, char *out, size_t n)
{
    snprintf(out, n, "%s", server);
    size_t sl = strlen(out);
    while (sl && out[sl - 1] == '/')
        out[--sl] = '\0';
}

/* Fills url (8 KiB at most) with server, before, the job URL-encoded, after.
 * GP_OK, GP_ENOMEM, or GP_ETOOBIG when the job name is too long. */
static int job_url(struct gp_buf *url, const char *server, const char *before, const char *job,
                   const char *after)
{
    char label[512];
    server_label(server, label, sizeof label);
    char *esc = curl_easy_escape(NULL, job, 0);
    if (!esc)
        return GP_ENOMEM;
    gp_buf_printf(url, "%s%s%s%s", label, before, esc, after);
    curl_free(esc);
    return url->err ? GP_ETOOBIG : GP_OK;
}

int gp_report_add_alerts(json_t *doc, const char *server, const char *token, const char *job, char *err,
                         size_t errlen)
{
    char e[512] = "";
    struct gp_buf url, body;
    gp_buf_init(&url, 8192);
    gp_buf_init(&body, MAX_ANSWER);
    long status = 0;
    json_t *root = NULL, *keep = NULL;
    int rc = job_url(&url, server, "/api/v1/alerts?state=active&limit=1000&job=", job, "");
    if (rc) {
        gp_seterr(err, errlen, rc, rc == GP_ENOMEM ? "out of memory" : "the job name is too long");
        goto out;
    }
    if ((rc = fetch(url.data, token, &body, &status, err, errlen)))
        goto out;
    json_error_t je;
    root = json_loadb(body.data ? body.data : "", body.len, 0, &je);
    envelope_error(root, e, sizeof e);
    const json_t *data = json_is_object(root) ? json_object_get(root, "data") : NULL;
    if (status != 200) {
        rc = gp_seterr(err, errlen, GP_ENET, "HTTP %ld%s%s", status, e[0] ? ": " : "", e);
        goto out;
    }
    if (!json_is_array(data)) {
        rc = gp_seterr(err, errlen, GP_EPARSE, "no {\"status\":\"success\",\"data\":[...]} envelope");
        goto out;
    }
    keep = json_array();
    if (!keep) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto out;
    }
    /* only what is active: an older server may ignore state=active */
    size_t i;
    json_t *a;
    json_array_foreach(data, i, a) {
        const char *st = json_string_value(json_object_get(a, "state"));
        if (json_is_object(a) && st && (!strcmp(st, "firing") || !strcmp(st, "pending")))
            json_array_append(keep, a);
    }
    if (json_object_set(doc, "alerts", keep))
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
out:
    json_decref(keep);
    json_decref(root);
    gp_buf_free(&url);
    gp_buf_free(&body);
    return rc;
}

/* Fetches and checks the document; *doc is the caller's (json_decref). Exit status. */
static int get_doc(const struct opts *o, const char *token, json_t **doc)
{
    char label[512], err[512] = "";
    server_label(o->server, label, sizeof label);
    struct gp_buf url, body;
    gp_buf_init(&url, 8192);
    gp_buf_init(&body, MAX_ANSWER);
    long status = 0;
    int ret = 1;
    json_t *root = NULL;
    int rc = job_url(&url, o->server, "/api/v1/jobs/", o->job, "?series=1");
    if (rc) {
        fprintf(stderr, "gpulse report: %s\n", rc == GP_ENOMEM ? "out of memory" : "the job name is too long");
        goto out;
    }
    if (fetch(url.data, token, &body, &status, err, sizeof err)) {
        fprintf(stderr, "gpulse report: cannot reach server %s: %s\n", label, err);
        goto out;
    }
    json_error_t je;
    root = json_loadb(body.data ? body.data : "", body.len, 0, &je);
    envelope_error(root, err, sizeof err);
    if (status == 404) {
        fprintf(stderr, "gpulse report: no job '%s' on %s\n", o->job, label);
        goto out;
    }
    if (status == 401 || status == 403) {
        fprintf(stderr, "gpulse report: server %s refused the request (HTTP %ld): %s\n", label, status,
                token && *token ? "check --token-file" : "it needs a token, give --token-file");
        goto out;
    }
    if (status != 200) {
        fprintf(stderr, "gpulse report: server %s answered HTTP %ld%s%s\n", label, status,
                err[0] ? ": " : "", err);
        goto out;
    }
    if (!root) {
        one_line(je.text); /* it quotes the answer */
        fprintf(stderr, "gpulse report: bad JSON from %s: %s (line %d)\n", label, je.text, je.line);
        goto out;
    }
    const json_t *st = json_object_get(root, "status"), *data = json_object_get(root, "data");
    if (!json_is_string(st) || strcmp(json_string_value(st), "success") || !json_is_object(data)) {
        fprintf(stderr, "gpulse report: bad answer from %s: no {\"status\":\"success\",\"data\":{...}}"
                        " envelope%s%s\n",
                label, err[0] ? ": " : "", err);
        goto out;
    }
    *doc = json_incref((json_t *)data);
    ret = 0;
out:
    json_decref(root);
    gp_buf_free(&url);
    gp_buf_free(&body);
    return ret;
}

int gp_report_main(int argc, char **argv)
{
    struct opts o = {0};
    bool done;
    int rc = parse_args(argc, argv, &o, &done);
    if (rc || done)
        return rc;
    if (!o.server)
        o.server = getenv("GPULSE_SERVER") && *getenv("GPULSE_SERVER") ? getenv("GPULSE_SERVER")
                                                                        : DEFAULT_SERVER;
    if (!o.token_file && getenv("GPULSE_TOKEN_FILE") && *getenv("GPULSE_TOKEN_FILE"))
        o.token_file = getenv("GPULSE_TOKEN_FILE");
    char token[512], err[512];
    if (gp_token_load(NULL, o.token_file, "token", token, sizeof token, err, sizeof err)) {
        fprintf(stderr, "gpulse report: %s\n", err);
        return 2;
    }
    const char *nc = getenv("NO_COLOR");
    o.color = o.color && !(nc && *nc) && isatty(STDOUT_FILENO);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "gpulse report: libcurl did not start\n");
        return 1;
    }
    json_t *doc = NULL;
    int ret = get_doc(&o, token, &doc);
    /* the report goes on without them: it then says the alerts are unknown */
    if (!ret && gp_report_add_alerts(doc, o.server, token, o.job, err, sizeof err))
        fprintf(stderr, "gpulse report: cannot read the alerts of job '%s' from %s: %s\n", o.job, o.server,
                err);
    memset(token, 0, sizeof token);
    curl_global_cleanup();
    if (ret)
        return ret;
    struct gp_buf out;
    gp_buf_init(&out, 0);
    ret = 1;
    if ((rc = gp_report_advise(doc))) {
        fprintf(stderr, "gpulse report: advice: %s\n", gp_strerror(rc));
        goto done;
    }
    if (o.html) {
        if ((rc = gp_report_html(&out, doc))) {
            fprintf(stderr, "gpulse report: html: %s\n", gp_strerror(rc));
            goto done;
        }
        if (write_atomic(o.html, out.data, out.len, err, sizeof err)) {
            fprintf(stderr, "gpulse report: %s\n", err);
            goto done;
        }
        gp_buf_reset(&out);
    }
    struct gp_report_opts ro = {o.color};
    rc = o.json ? gp_report_json(&out, doc) : gp_report_text(&out, doc, &ro);
    if (rc) {
        fprintf(stderr, "gpulse report: %s\n", gp_strerror(rc));
        goto done;
    }
    if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(stderr, "gpulse report: cannot write to stdout: %s\n", strerror(errno));
        goto done;
    }
    if (o.html)
        fprintf(stderr, "gpulse report: wrote %s\n", o.html);
    ret = 0;
done:
    gp_buf_free(&out);
    json_decref(doc);
    return ret;
}
