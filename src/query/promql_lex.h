/*
 * promql_lex.h - the PromQL lexer, and what the parser's files share
 * (query-internal: promql_parse.c, promql_format.c, promql_ast.c).
 *
 * A streaming lexer with Prometheus 2.42's states (promql/parser/lex.go):
 * inside braces only label names, strings, matcher operators and commas
 * are tokens; inside brackets durations, numbers and one colon; parentheses
 * are counted so that a stray ')' or an unclosed '(' is reported where
 * Prometheus reports it. Keywords and aggregation names are matched
 * case-insensitively, as Prometheus does; function names stay identifiers.
 * Right after '[' only a duration is lexed ("x[5]" is "missing unit
 * character in duration" there, as in Prometheus).
 * After an error every further token is that same error.
 */
#ifndef GP_QUERY_PROMQL_LEX_H
#define GP_QUERY_PROMQL_LEX_H

#include "query/promql_ast.h"

#include <stddef.h>
#include <stdint.h>

enum gp_pq_tok {
    GP_PQ_TK_EOF,
    GP_PQ_TK_ERROR,      /* text: the lexer's message */
    GP_PQ_TK_IDENT,      /* label or function name, or a metric name without ':' */
    GP_PQ_TK_METRIC,     /* a name with ':' */
    GP_PQ_TK_NUMBER,     /* 1, 1.5e3, 0x1f, Inf, NaN */
    GP_PQ_TK_DURATION,   /* 5m, 1h30m */
    GP_PQ_TK_STRING,     /* quotes included in the span */
    GP_PQ_TK_LPAREN, GP_PQ_TK_RPAREN, GP_PQ_TK_LBRACE, GP_PQ_TK_RBRACE,
    GP_PQ_TK_LBRACKET, GP_PQ_TK_RBRACKET, GP_PQ_TK_COMMA, GP_PQ_TK_COLON, GP_PQ_TK_AT,
    GP_PQ_TK_ASSIGN,     /* = */
    GP_PQ_TK_EQL_REGEX,  /* =~ */
    GP_PQ_TK_NEQ_REGEX,  /* !~ */
    GP_PQ_TK_NEQ,        /* != (a matcher inside braces, a comparison outside) */
    GP_PQ_TK_BINOP,      /* binop: + - * / % ^ == < <= > >= and or unless atan2 */
    GP_PQ_TK_AGG,        /* agg: sum, topk, ... */
    GP_PQ_TK_BY, GP_PQ_TK_WITHOUT, GP_PQ_TK_ON, GP_PQ_TK_IGNORING, GP_PQ_TK_GROUP_LEFT,
    GP_PQ_TK_GROUP_RIGHT, GP_PQ_TK_BOOL, GP_PQ_TK_OFFSET, GP_PQ_TK_START, GP_PQ_TK_END,
};

struct gp_pq_token {
    enum gp_pq_tok type;
    size_t pos, len;          /* span in the query */
    enum gp_pq_binop binop;   /* GP_PQ_TK_BINOP; GP_PQ_TK_NEQ is GP_PQ_OP_NEQ */
    enum gp_pq_aggop agg;     /* GP_PQ_TK_AGG */
    const char *msg;          /* GP_PQ_TK_ERROR (points into the lexer) */
};

struct gp_pq_lexer {
    const char *s;
    size_t len, i;
    int paren_depth;
    int brace_open, bracket_open, got_colon;
    int want_duration;        /* just after '[' */
    int failed;
    struct gp_pq_token err;   /* the error, repeated once failed */
    char msg[128];
};

void gp_pq_lex_init(struct gp_pq_lexer *l, const char *s, size_t len);
/* The next token (comments and spaces skipped). */
void gp_pq_lex_next(struct gp_pq_lexer *l, struct gp_pq_token *t);

/*
 * Decodes a string token's text (quotes included; the lexer has checked
 * its escapes) into a new NUL-terminated buffer, *out (caller frees), and
 * its length. GP_OK or GP_ENOMEM.
 */
int gp_pq_unquote(const char *s, size_t len, char **out, size_t *outlen);

/* A description of t for "unexpected ..." messages, as Prometheus words
 * them: "end of input", "identifier \"foo\"", "number \"1\"", "\")\"",
 * "<op:+>", "<aggr:sum>", "<by>". */
void gp_pq_tok_desc(const char *query, const struct gp_pq_token *t, char *buf, size_t n);

/* Frees a label list's names and empties it (promql_ast.c). */
void gp_pq_labels_free(struct gp_pq_labels *l);

/* An operator as PromQL writes it ("+", "atan2", "unless"). */
const char *gp_pq_binop_text(enum gp_pq_binop op);

#endif
