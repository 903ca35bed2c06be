/*
 * check_cmd.c - `gpulse check`: settings, the readings and the push
 * (check.h, docs/health.md "Preflight").
 *
 *  1. Settings from the `check:` table: flags, the YAML file's `check:`
 *     section, defaults.
 *  2. The GPUs: the agent's NVML source opened, sampled once, closed
 *     (the same loading, symbol fallbacks and readers as the agent's, so
 *     a reading means the same here as in its metrics).
 *  3. The XIDs of the last xid_window: the kernel log (/dev/kmsg, or a
 *     file given with --kernel-log). NVML's event API only delivers XIDs
 *     that happen after it registers, so it cannot answer "in the last
 *     hours"; the kernel log keeps them since boot without a server.
 *  4. The fleet's driver version: --driver-version, else the most common
 *     driver of the other nodes' GPUs in the server's /api/v1/gpus; its
 *     CUDA version: --cuda-version (the inventory does not carry it).
 *  5. The result: text or --json on stdout; with --push, POSTed to the
 *     server's /api/v1/health/preflight with the write token. A push
 *     that fails is said on stderr and leaves the exit status alone: the
 *     node's readiness is the checks', not the server's.
 */
#include "check.h"

#include "lib/cfg.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/token.h"
#include "net/httpc.h"
#include "sources/source.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CK_PATH_LEN 512

struct ck_config {
    char config_file[CK_PATH_LEN];
    uint64_t gpus;
    char model[96];
    char driver[80];
    char cuda[24];
    int64_t xid_window_ms;
    char kernel_log[CK_PATH_LEN];
    uint64_t max_temp;
    uint64_t min_power_pct;
    char nvml_library[CK_PATH_LEN];
    char hostname[256];
    char server[512];
    char read_token_file[CK_PATH_LEN];
    char write_token_file[CK_PATH_LEN];
    bool push;
    bool json;
    int64_t timeout_ms;
};

/* X(field, yaml key, flag, type, default, help) */
#define CK_KEYS(X)                                                                                 \
    X(gpus, "gpus", "gpus", UINT, "0", "GPUs this node must have; 0: any number, at least one")    \
    X(model, "model", "model", STR, "",                                                           \
      "text each GPU's model name must contain (\"H100\"); empty: any model")                      \
    X(driver, "driver_version", "driver-version", STR, "",                                        \
      "the fleet's driver version; empty: the server's most common one, when a server is set")    \
    X(cuda, "cuda_version", "cuda-version", STR, "",                                              \
      "the fleet's CUDA version as MAJOR.MINOR (\"12.4\"); empty: not checked")                 \
    X(xid_window_ms, "xid_window", "xid-window", DURATION, "24h",                                 \
      "a hardware XID in the kernel log this recent fails the node")                              \
    X(kernel_log, "kernel_log", "kernel-log", STR, "/dev/kmsg",                                   \
      "where the XIDs are read: /dev/kmsg, or a file of kmsg or dmesg lines; empty: not read")    \
    X(max_temp, "max_temperature", "max-temperature", UINT, "85",                                 \
      "an idle GPU at or above this many °C fails (its cooling); 0: not checked")                 \
    X(min_power_pct, "min_power_limit", "min-power-limit", UINT, "90",                             \
      "the enforced power limit must be at least this % of the model's default")                  \
    X(nvml_library, "nvml_library", "nvml-library", STR, "",                                      \
      "libnvidia-ml.so.1 to load; empty: $GPULSE_NVML_LIBRARY, else the loader's search")         \
    X(hostname, "hostname", "hostname", STR, "", "this node's name; empty: the host name")        \
    X(server, "server", "server", STR, "",                                                        \
      "gpulse server URL (http://host:9402): the fleet's driver, and where --push sends")        \
    X(read_token_file, "read_token_file", "read-token-file", STR, "",                             \
      "file holding the server's read token")                                                     \
    X(write_token_file, "write_token_file", "write-token-file", STR, "",                          \
      "file holding the server's write token (for --push)")                                       \
    X(push, "push", "push", BOOL, "false", "send the result to the server")                       \
    X(json, "json", "json", BOOL, "false", "print the result as JSON")                            \
    X(timeout_ms, "timeout", "timeout", DURATION, "5s", "the most each request to the server takes")

static const struct gp_cfg_key keys[] = {
#define CK_ROW_(field, yaml, flag, type, def, help) GP_CFG_ROW(struct ck_config, field, yaml, flag, type, def, help),
    CK_KEYS(CK_ROW_)
#undef CK_ROW_
};

static struct gp_cfg_section section(struct ck_config *c)
{
    return (struct gp_cfg_section){"check", keys, sizeof keys / sizeof keys[0], c};
}

struct gp_cfg_section gp_check_cfg_section(void)
{
    static struct ck_config table_only; /* for the man pages: the keys, never filled */
    return section(&table_only);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: gpulse check [--config FILE] [flags]\n\n"
                 "Checks this node before a job: the expected GPUs present and answering, no\n"
                 "uncorrectable ECC error, pending page retirement or row remap, no hardware XID\n"
                 "in the kernel log of the last hours, PCIe links at full width, clocks not held\n"
                 "down, temperatures and power limits sane, the fleet's driver. Each failed check\n"
                 "says why and what to do (the fault catalog, docs/health.md).\n\n"
                 "flags (each also a key under 'check:' in the YAML config):\n"
                 "  --config FILE\n      YAML configuration file with a 'check:' section\n");
    struct ck_config c;
    struct gp_cfg_section s = section(&c);
    gp_cfg_usage(out, &s, 1);
    fprintf(out, "\nexit status: 0 every check passed or was skipped; 1 a check failed;\n"
                 "2 the node could not be checked (usage or config error, no NVML, no GPU).\n");
}

/* ---- kernel log ---- */

struct xid_list {
    struct gp_kxid *x;
    unsigned n, cap;
    bool oom;
};

static void keep_xid(void *ctx, const struct gp_kxid *x)
{
    struct xid_list *l = ctx;
    if (l->n == l->cap) {
        unsigned cap = l->cap ? l->cap * 2 : 16;
        struct gp_kxid *n = cap <= 1u << 20 ? realloc(l->x, cap * sizeof *n) : NULL;
        if (!n) {
            l->oom = true;
            return;
        }
        l->x = n;
        l->cap = cap;
    }
    l->x[l->n++] = *x;
}

static void read_kernel_log(const char *path, struct xid_list *l, struct gp_check_xids *xs)
{
    memset(xs, 0, sizeof *xs);
    if (!*path) {
        snprintf(xs->why, sizeof xs->why, "the kernel log is not read (kernel_log is empty)");
        return;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(xs->why, sizeof xs->why, "cannot read the kernel log %s: %s%s", path, strerror(errno),
                 errno == EPERM || errno == EACCES ? " (run as root, or allow it: kernel.dmesg_restrict=0)" : "");
        return;
    }
    struct stat st;
    bool dev = !fstat(fd, &st) && S_ISCHR(st.st_mode);
    char err[160];
    int rc = gp_kxid_scan_fd(fd, dev, keep_xid, l, &xs->malformed, err, sizeof err);
    close(fd);
    if (rc || l->oom) {
        snprintf(xs->why, sizeof xs->why, "%s", rc ? err : "out of memory reading the kernel log");
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    xs->read = true;
    xs->x = l->x;
    xs->n = l->n;
    xs->now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the server ---- */

static int load_token(const char *file, const char *what, char *out, size_t len, char *err, size_t errlen)
{
    return gp_token_load(NULL, file, what, out, len, err, errlen);
}

/* The most common driver of the other nodes' GPUs in the server's
 * inventory, into out ("" when it lists none). */
static int fleet_driver(const struct ck_config *c, const char *node, char *out, size_t len, char *err,
                        size_t errlen)
{
    char token[512];
    int rc = load_token(c->read_token_file, "read_token", token, sizeof token, err, errlen);
    if (rc)
        return rc;
    char url[600];
    snprintf(url, sizeof url, "%s/api/v1/gpus", c->server);
    struct gp_buf body;
    gp_buf_init(&body, 16u << 20);
    long status = 0;
    struct gp_httpc_opts o = {.timeout_ms = c->timeout_ms, .bearer = token};
    rc = gp_httpc_get(&o, url, &body, &status, err, errlen);
    memset(token, 0, sizeof token);
    if (!rc && status != 200)
        rc = gp_seterr(err, errlen, GP_ENET, "server %s answered %ld to GET /api/v1/gpus", c->server, status);
    json_t *doc = rc ? NULL : json_loadb(body.data, body.len, 0, NULL);
    gp_buf_free(&body);
    if (!rc && !json_is_array(json_object_get(doc, "data")))
        rc = gp_seterr(err, errlen, GP_EPARSE, "server %s: /api/v1/gpus is not a list of GPUs", c->server);
    out[0] = '\0';
    if (!rc) {
        /* a few distinct versions at most: count each by a linear scan */
        json_t *data = json_object_get(doc, "data");
        size_t best = 0;
        for (size_t i = 0; i < json_array_size(data); i++) {
            const char *d = json_string_value(json_object_get(json_array_get(data, i), "driver"));
            const char *n = json_string_value(json_object_get(json_array_get(data, i), "node"));
            if (!d || !*d || (n && !strcmp(n, node)))
                continue;
            size_t k = 0;
            for (size_t j = 0; j < json_array_size(data); j++) {
                const char *d2 = json_string_value(json_object_get(json_array_get(data, j), "driver"));
                const char *n2 = json_string_value(json_object_get(json_array_get(data, j), "node"));
                k += d2 && !strcmp(d, d2) && !(n2 && !strcmp(n2, node));
            }
            if (k > best) {
                best = k;
                snprintf(out, len, "%s", d);
            }
        }
    }
    json_decref(doc);
    return rc;
}

static int push(const struct ck_config *c, const struct gp_buf *doc, char *err, size_t errlen)
{
    char token[512];
    int rc = load_token(c->write_token_file, "write_token", token, sizeof token, err, errlen);
    if (rc)
        return rc;
    char url[600];
    snprintf(url, sizeof url, "%s/api/v1/health/preflight", c->server);
    const char *hdr[] = {"Content-Type: application/json"};
    struct gp_httpc_opts o = {.timeout_ms = c->timeout_ms, .bearer = token, .headers = hdr, .nheaders = 1};
    struct gp_httpc_req req = {.url = url, .body = doc->data, .len = doc->len};
    struct gp_httpc_res res;
    rc = gp_httpc_request(&o, &req, &res);
    memset(token, 0, sizeof token);
    if (res.status == 0)
        return gp_seterr(err, errlen, GP_ENET, "cannot reach gpulse server %s: %s", c->server, res.err);
    if (res.status / 100 != 2) {
        char line[200];
        gp_httpc_head_line(&res, line, sizeof line);
        return gp_seterr(err, errlen, GP_ENET, "gpulse server %s answered %d to the preflight push: %s", c->server,
                         res.status, line);
    }
    return GP_OK;
}

/* ---- the command ---- */

static int validate(const struct ck_config *c, char *err, size_t errlen)
{
    if (c->server[0] && strncmp(c->server, "http://", 7) && strncmp(c->server, "https://", 8))
        return gp_seterr(err, errlen, GP_ECONFIG, "server '%s' must start with http:// or https://", c->server);
    if (c->push && !c->server[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "push needs a server (--server URL)");
    unsigned maj, min;
    char tail;
    if (c->cuda[0] && (sscanf(c->cuda, "%u.%u%c", &maj, &min, &tail) != 2 || maj > 99 || min > 99))
        return gp_seterr(err, errlen, GP_ECONFIG, "cuda_version '%s' must be MAJOR.MINOR, e.g. 12.4", c->cuda);
    if (c->gpus > 1024)
        return gp_seterr(err, errlen, GP_ECONFIG, "gpus must be at most 1024");
    if (c->max_temp > 150)
        return gp_seterr(err, errlen, GP_ECONFIG, "max_temperature must be at most 150 (°C)");
    if (c->min_power_pct > 100)
        return gp_seterr(err, errlen, GP_ECONFIG, "min_power_limit must be a percentage, at most 100");
    if (c->xid_window_ms < 60000 || c->xid_window_ms > 30LL * 86400000)
        return gp_seterr(err, errlen, GP_ECONFIG, "xid_window must be between 1m and 30d");
    if (c->timeout_ms < 100 || c->timeout_ms > 600000)
        return gp_seterr(err, errlen, GP_ECONFIG, "timeout must be between 100ms and 10m");
    return GP_OK;
}

int gp_check_main(int argc, char **argv)
{
    struct ck_config c;
    memset(&c, 0, sizeof c);
    struct gp_cfg_section s = section(&c);
    gp_cfg_defaults(&s, 1);
    char err[512];
    bool help = false;
    int rc = gp_cfg_from_args(&s, 1, "check", argc, argv, c.config_file, sizeof c.config_file, &help, err,
                              sizeof err);
    if (help) {
        usage(stdout);
        return 0;
    }
    if (!rc)
        rc = validate(&c, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse check: %s\n", err);
        return 2;
    }
    gp_log_min = GP_LOG_ERROR; /* the result is the output; NVML's chatter is not */
    if (!c.hostname[0] && gethostname(c.hostname, sizeof c.hostname - 1))
        snprintf(c.hostname, sizeof c.hostname, "localhost");

    struct gp_source_config sc = {.proc_root = "/proc", .sysfs_root = "/sys", .nvml_library = c.nvml_library,
                                  .hostname = c.hostname, .interval_ms = 1000};
    void *st = NULL;
    rc = gp_source_nvml.open(&sc, &st, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse check: cannot read the GPUs: %s\n",
                rc == GP_ENODEV ? "no NVIDIA driver or GPU found (NVML did not load or sees no GPU)" : err);
        return 2;
    }
    struct gp_frame f;
    gp_frame_init(&f);
    f.time_ms = gp_wall_ms();
    unsigned errors = 0;
    rc = gp_source_nvml.sample(st, &f, &errors);
    gp_source_nvml.close(st);
    if (rc || !f.ngpus) {
        fprintf(stderr, "gpulse check: cannot read the GPUs: %s\n", rc ? gp_strerror(rc) : "NVML lists no GPU");
        gp_frame_free(&f);
        return 2;
    }

    struct xid_list xl = {0};
    struct gp_check_xids xs;
    read_kernel_log(c.kernel_log, &xl, &xs);

    int ret = 2;
    char fleet[80] = "";
    struct gp_check_expect e = {.gpus = (unsigned)c.gpus, .model = c.model, .driver = c.driver,
                                .driver_source = "driver_version", .cuda = c.cuda, .max_temp_c = (unsigned)c.max_temp,
                                .min_power_pct = (unsigned)c.min_power_pct, .xid_window_ms = c.xid_window_ms};
    bool curl = false;
    if (c.server[0]) {
        if (gp_httpc_global_init() != GP_OK) {
            fprintf(stderr, "gpulse check: libcurl did not start\n");
            goto out;
        }
        curl = true;
    }
    if (!c.driver[0] && c.server[0]) {
        if (fleet_driver(&c, c.hostname, fleet, sizeof fleet, err, sizeof err))
            fprintf(stderr, "gpulse check: the fleet's driver is unknown: %s\n", err);
        e.driver = fleet;
        e.driver_source = "the server's GPUs";
    }
    struct gp_check_result r;
    if (gp_check_eval(&f, &e, &xs, &r)) {
        fprintf(stderr, "gpulse check: out of memory\n");
        goto out;
    }
    unsigned ngpus = 0;
    for (unsigned i = 0; i < f.ngpus; i++)
        ngpus += f.gpus[i].mig_gi < 0;
    struct gp_buf doc, text;
    gp_buf_init(&doc, 0);
    gp_buf_init(&text, 0);
    gp_check_json(&r, c.hostname, f.time_ms, ngpus, &doc);
    if (!c.json)
        gp_check_text(&r, c.hostname, &text);
    const struct gp_buf *outb = c.json ? &doc : &text;
    if (doc.err || text.err) {
        fprintf(stderr, "gpulse check: out of memory\n");
    } else {
        fwrite(outb->data, 1, outb->len, stdout);
        ret = fflush(stdout) ? 2 : gp_check_exit_code(&r);
        if (c.push && push(&c, &doc, err, sizeof err))
            fprintf(stderr, "gpulse check: the result was not pushed: %s\n", err);
    }
    gp_buf_free(&doc);
    gp_buf_free(&text);
    gp_check_result_free(&r);
out:
    if (curl)
        gp_httpc_global_cleanup();
    free(xl.x);
    gp_frame_free(&f);
    return ret;
}
