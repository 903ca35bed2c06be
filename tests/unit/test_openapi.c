/*
 * test_openapi.c - docs/openapi.yaml documents every route of the
 * server's route table: each documented path is put through the server's
 * own router (gp_srv_route_of, {params} filled in), and every route of
 * GP_SRV_ROUTES but the catch-all must be reached by at least one. The
 * answers themselves are checked against the file by
 * tests/integration/test_openapi.sh.
 */
#include "test.h"

#include "server/server_int.h"

#include <stdlib.h>

static const char *const route_names[] = {
#define ROUTE_NAME_(id, name) name,
    GP_SRV_ROUTES(ROUTE_NAME_)
#undef ROUTE_NAME_
};

/* Documented paths that server.c's catch-all answers (no route of their
 * own, so no handler label on /metrics): the plain-text route list. */
static const char *const catch_all[] = {"/api"};

/* Calls fn for each key of the file's paths: section ("  /path:"). */
static int each_path(const char *yaml, void (*fn)(const char *path, void *ctx), void *ctx)
{
    const char *p = strstr(yaml, "\npaths:\n");
    if (!p)
        return 0;
    int n = 0;
    for (p += 8; *p; ) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len && p[0] != ' ' && p[0] != '#')
            break; /* the next top-level key */
        if (len > 4 && !strncmp(p, "  /", 3) && p[len - 1] == ':') {
            char path[256];
            snprintf(path, sizeof path, "%.*s", (int)(len - 3), p + 2);
            fn(path, ctx);
            n++;
        }
        p += len + (eol != NULL);
    }
    return n;
}

struct cover {
    int hit[GP_SRV_R_COUNT];
};

static void route_path(const char *path, void *ctx)
{
    struct cover *c = ctx;
    char real[512];
    size_t o = 0;
    /* {param} -> a value, as a client would send it */
    for (const char *s = path; *s && o + 16 < sizeof real; s++) {
        if (*s == '{') {
            const char *e = strchr(s, '}');
            CHECK(e != NULL);
            o += (size_t)snprintf(real + o, sizeof real - o, "%s", "x1");
            s = e;
        } else {
            real[o++] = *s;
        }
    }
    real[o] = '\0';
    enum gp_srv_route r = gp_srv_route_of(real);
    if (r == GP_SRV_R_OTHER) {
        for (size_t i = 0; i < sizeof catch_all / sizeof catch_all[0]; i++)
            if (!strcmp(path, catch_all[i]))
                return;
        gp_test_fail(__FILE__, __LINE__, "docs/openapi.yaml documents %s, which the server does not route",
                     path);
    }
    c->hit[r]++;
}

static void test_every_route_documented(void)
{
    struct cover c;
    memset(&c, 0, sizeof c);
    int n = each_path(gp_test_repo_text("docs/openapi.yaml"), route_path, &c);
    CHECK(n >= 20);
    for (int r = 0; r < GP_SRV_R_COUNT; r++)
        if (r != GP_SRV_R_OTHER && !c.hit[r])
            gp_test_fail(__FILE__, __LINE__, "route '%s' of GP_SRV_ROUTES has no path in docs/openapi.yaml",
                         route_names[r]);
}

/* The scanner finds paths and stops at the next top-level key. */
static void count_path(const char *path, void *ctx)
{
    (void)path;
    (*(int *)ctx)++;
}

static void test_path_scanner(void)
{
    int n = 0;
    CHECK_INT(each_path("openapi: 3.1.0\npaths:\n  /a:\n    get:\n  /b/{id}:\n    delete: {}\n"
                        "components:\n  /not-a-path:\n",
                        count_path, &n),
              2);
    CHECK_INT(n, 2);
    CHECK_INT(each_path("openapi: 3.1.0\n", count_path, &n), 0);
}

const struct gp_test gp_tests_openapi[] = {
    {"every_route_documented", test_every_route_documented},
    {"path_scanner", test_path_scanner},
    {0},
};
