/*
 * Fuzz target: PromQL queries (src/query/promql_parse.c, promql_lex.c,
 * promql_format.c) as the query API receives them. Any bytes go to
 * gp_promql_parse. A refusal must carry a message and no tree. A tree
 * must format to text that parses back (unless formatting made it longer
 * than the length cap) to a tree of the same type that formats the same:
 * the canonical text is a fixed point. abort() on any disagreement.
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "query/promql.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_pq_node *e = (struct gp_pq_node *)1;
    char err[512];
    err[0] = '\0';
    int rc = gp_promql_parse((const char *)data, size, &e, err, sizeof err);
    if (rc != GP_OK) {
        if (e != NULL || err[0] == '\0' ||
            (rc != GP_EPARSE && rc != GP_ETOOBIG && rc != GP_ENOMEM))
            abort();
        return 0;
    }
    if (!e)
        abort();
    struct gp_buf t1, t2;
    gp_buf_init(&t1, 0);
    gp_buf_init(&t2, 0);
    gp_promql_format(e, &t1);
    if (t1.err || t1.len == 0)
        abort();
    if (t1.len <= GP_PROMQL_MAX_QUERY_LEN) {
        struct gp_pq_node *again = NULL;
        if (gp_promql_parse(t1.data, t1.len, &again, err, sizeof err) != GP_OK)
            abort(); /* the canonical text must parse */
        gp_promql_format(again, &t2);
        if (t2.err || t1.len != t2.len || memcmp(t1.data, t2.data, t1.len) != 0 ||
            again->type != e->type)
            abort();
        gp_promql_free(again);
    }
    gp_buf_free(&t1);
    gp_buf_free(&t2);
    gp_promql_free(e);
    return 0;
}
