/*
 * promql_lex.c - see promql_lex.h.
 *
 * Parts:
 *  - the statement state: operators, numbers and durations (one scan
 *    decides: "5m" is a duration, "5" a number, "5x" an error), names and
 *    keywords, strings, parentheses and brackets;
 *  - the brace state (inside a selector's {...}): keywords are plain
 *    label names there;
 *  - strings: the three quote forms, Go's escapes checked as Prometheus's
 *    lexer checks them (only the string's own quote may be escaped), and
 *    UTF-8 validated; gp_pq_unquote decodes a checked string.
 * Positions are byte offsets; an error's is where Prometheus puts it (the
 * start of the token being read, or the end of input for an unclosed
 * parenthesis or bracket).
 */
#include "query/promql_lex.h"

#include "lib/err.h"
#include "lib/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alpha(int c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

void gp_pq_lex_init(struct gp_pq_lexer *l, const char *s, size_t len)
{
    memset(l, 0, sizeof *l);
    l->s = s;
    l->len = len;
}

static int peek(const struct gp_pq_lexer *l, size_t k)
{
    return l->i + k < l->len ? (unsigned char)l->s[l->i + k] : -1;
}

/* The character at i for messages: its code point, 0xfffd for a byte
 * that is not UTF-8, -1 at the end (Go's next() reads them so). */
static int32_t rune_at(const struct gp_pq_lexer *l, size_t i)
{
    if (i >= l->len)
        return -1;
    uint32_t cp;
    return gp_utf8_decode((const unsigned char *)l->s + i, l->len - i, &cp) ? (int32_t)cp : 0xfffd;
}

/* A rune as Go's %q writes it ('x', '\n', '\\', '\x01', 'é'), or with
 * as_u as Go's %#U (U+0071 'q'). */
static void char_q(int32_t c, int as_u, char *buf, size_t n)
{
    static const char esc[] = "\a\b\f\n\r\t\v", name[] = "abfnrtv";
    if (c < 0)
        c = 0xfffd;
    char g[8];
    if (c >= 0x20 && c != 0x7f && !(c >= 0x80 && c < 0xa0)) {
        g[gp_utf8_encode((uint32_t)c, g)] = '\0';
    } else {
        g[0] = '\0';
    }
    if (as_u) {
        if (g[0])
            snprintf(buf, n, "U+%04X '%s'", (unsigned)c, g);
        else
            snprintf(buf, n, "U+%04X", (unsigned)c);
        return;
    }
    const char *e = c > 0 && c < 0x20 ? strchr(esc, (char)c) : NULL;
    if (c == '\\' || c == '\'')
        snprintf(buf, n, "'\\%c'", (char)c);
    else if (e)
        snprintf(buf, n, "'\\%c'", name[e - esc]);
    else if (g[0])
        snprintf(buf, n, "'%s'", g);
    else
        snprintf(buf, n, c < 0x100 ? "'\\x%02x'" : "'\\u%04x'", (unsigned)c);
}

static void fail(struct gp_pq_lexer *l, struct gp_pq_token *t, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(struct gp_pq_lexer *l, struct gp_pq_token *t, size_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->msg, sizeof l->msg, fmt, ap);
    va_end(ap);
    memset(&l->err, 0, sizeof l->err);
    l->err.type = GP_PQ_TK_ERROR;
    l->err.pos = pos;
    l->err.msg = l->msg;
    l->failed = 1;
    *t = l->err;
}

/* Checks one escape after the backslash at l->i - 1 of a string opened
 * with quote q. 0 or -1 after fail(). */
static int lex_escape(struct gp_pq_lexer *l, struct gp_pq_token *t, size_t start, int q)
{
    int c = peek(l, 0);
    char cb[16];
    if (c < 0) {
        fail(l, t, start, "escape sequence not terminated");
        return -1;
    }
    l->i++;
    if (strchr("abfnrtv\\", c) || c == q)
        return 0;
    int n, base;
    unsigned long max;
    if (c >= '0' && c <= '7') {
        n = 2, base = 8, max = 255; /* the first digit is c */
    } else if (c == 'x') {
        n = 2, base = 16, max = 255;
    } else if (c == 'u') {
        n = 4, base = 16, max = 0x10ffff;
    } else if (c == 'U') {
        n = 8, base = 16, max = 0x10ffff;
    } else {
        char_q(rune_at(l, l->i - 1), 1, cb, sizeof cb);
        fail(l, t, start, "unknown escape sequence %s", cb);
        return -1;
    }
    unsigned long x = base == 8 ? (unsigned long)(c - '0') : 0;
    for (; n > 0; n--) {
        int d = peek(l, 0);
        int v = d < 0 ? 99 : is_digit(d) ? d - '0' : is_hex(d) ? (d | 0x20) - 'a' + 10 : 99;
        if (v >= base) {
            if (d < 0) {
                fail(l, t, start, "escape sequence not terminated");
            } else {
                char_q(rune_at(l, l->i), 1, cb, sizeof cb);
                fail(l, t, start, "illegal character %s in escape sequence", cb);
            }
            return -1;
        }
        x = x * (unsigned long)base + (unsigned long)v;
        l->i++;
    }
    if (x > max || (x >= 0xd800 && x < 0xe000)) {
        fail(l, t, start, "escape sequence is an invalid Unicode code point");
        return -1;
    }
    return 0;
}

static void lex_string(struct gp_pq_lexer *l, struct gp_pq_token *t, size_t start)
{
    int q = (unsigned char)l->s[start];
    for (;;) {
        int c = peek(l, 0);
        if (c < 0 || (c == '\n' && q != '`')) {
            fail(l, t, start, q == '`' ? "unterminated raw string" : "unterminated quoted string");
            return;
        }
        uint32_t cp;
        size_t k = gp_utf8_decode((const unsigned char *)l->s + l->i, l->len - l->i, &cp);
        if (k == 0) {
            fail(l, t, start, "invalid UTF-8 rune");
            return;
        }
        l->i += k;
        if (c == q)
            break;
        if (c == '\\' && q != '`' && lex_escape(l, t, start, q) < 0)
            return;
    }
    t->type = GP_PQ_TK_STRING;
}

/* Prometheus's keywords, matched case-insensitively; -1: none. */
static int keyword(const char *w, size_t n, struct gp_pq_token *t)
{
    static const struct {
        const char *word;
        enum gp_pq_tok type;
        enum gp_pq_binop op;
    } kw[] = {
        {"and", GP_PQ_TK_BINOP, GP_PQ_OP_AND},     {"or", GP_PQ_TK_BINOP, GP_PQ_OP_OR},
        {"unless", GP_PQ_TK_BINOP, GP_PQ_OP_UNLESS}, {"atan2", GP_PQ_TK_BINOP, GP_PQ_OP_ATAN2},
        {"by", GP_PQ_TK_BY, 0},                    {"without", GP_PQ_TK_WITHOUT, 0},
        {"on", GP_PQ_TK_ON, 0},                    {"ignoring", GP_PQ_TK_IGNORING, 0},
        {"group_left", GP_PQ_TK_GROUP_LEFT, 0},    {"group_right", GP_PQ_TK_GROUP_RIGHT, 0},
        {"bool", GP_PQ_TK_BOOL, 0},                {"offset", GP_PQ_TK_OFFSET, 0},
        {"start", GP_PQ_TK_START, 0},              {"end", GP_PQ_TK_END, 0},
        {"inf", GP_PQ_TK_NUMBER, 0},               {"nan", GP_PQ_TK_NUMBER, 0},
    };
    if (n > 16)
        return -1;
    char low[17];
    for (size_t i = 0; i < n; i++)
        low[i] = (char)((w[i] >= 'A' && w[i] <= 'Z') ? w[i] | 0x20 : w[i]);
    low[n] = '\0';
    for (size_t k = 0; k < sizeof kw / sizeof kw[0]; k++)
        if (strcmp(low, kw[k].word) == 0) {
            t->type = kw[k].type;
            t->binop = kw[k].op;
            return 0;
        }
    for (int a = 0; a < GP_PQ_A_COUNT_; a++)
        if (strcmp(low, gp_pq_agg_name((enum gp_pq_aggop)a)) == 0) {
            t->type = GP_PQ_TK_AGG;
            t->agg = (enum gp_pq_aggop)a;
            return 0;
        }
    return -1;
}

/* After a number's digits: the rest of a duration ("m", "ms", "h30m").
 * 1 when it is one and is not followed by a letter or digit. */
static int rest_of_duration(struct gp_pq_lexer *l)
{
    int c = peek(l, 0);
    if (c < 0 || !strchr("smhdwy", c))
        return 0;
    l->i++;
    if (peek(l, 0) == 's')
        l->i++;
    while (is_digit(peek(l, 0))) {
        while (is_digit(peek(l, 0)))
            l->i++;
        c = peek(l, 0);
        if (c < 0 || !strchr("smhdw", c))
            return 0;
        l->i++;
        if (peek(l, 0) == 's')
            l->i++;
    }
    if (!is_alnum(peek(l, 0)))
        return 1;
    l->i++; /* read by the failed check, so part of the error's text */
    return 0;
}

/* Digits, a fraction, an exponent (hex after 0x): 1 when what follows
 * cannot continue a word, so this is a number; 0 when a letter follows. */
static int scan_number(struct gp_pq_lexer *l)
{
    int hex = 0;
    if (peek(l, 0) == '0' && (peek(l, 1) == 'x' || peek(l, 1) == 'X'))
        hex = 1, l->i += 2;
    while (hex ? is_hex(peek(l, 0)) : is_digit(peek(l, 0)))
        l->i++;
    if (peek(l, 0) == '.') {
        l->i++;
        while (hex ? is_hex(peek(l, 0)) : is_digit(peek(l, 0)))
            l->i++;
    }
    if (peek(l, 0) == 'e' || peek(l, 0) == 'E') {
        l->i++;
        if (peek(l, 0) == '+' || peek(l, 0) == '-')
            l->i++;
        while (is_digit(peek(l, 0)))
            l->i++;
    }
    return !is_alnum(peek(l, 0));
}

static void lex_number(struct gp_pq_lexer *l, struct gp_pq_token *t, size_t start)
{
    if (scan_number(l)) {
        t->type = GP_PQ_TK_NUMBER;
        return;
    }
    if (rest_of_duration(l)) {
        t->type = GP_PQ_TK_DURATION;
        return;
    }
    fail(l, t, start, "bad number or duration syntax: \"%.*s\"", (int)(l->i - start > 40 ? 40 : l->i - start),
         l->s + start);
}

/* Right after '[' only a duration may come, as in Prometheus's lexer. */
static void lex_duration(struct gp_pq_lexer *l, struct gp_pq_token *t)
{
    l->want_duration = 0;
    while (l->i < l->len && is_space((unsigned char)l->s[l->i]))
        l->i++;
    size_t start = l->i;
    t->pos = start;
    if (scan_number(l)) {
        fail(l, t, start, "missing unit character in duration");
        return;
    }
    if (!rest_of_duration(l)) {
        fail(l, t, start, "bad duration syntax: \"%.*s\"", (int)(l->i - start > 40 ? 40 : l->i - start),
             l->s + start);
        return;
    }
    t->type = GP_PQ_TK_DURATION;
    t->len = l->i - start;
}

static void lex_braces(struct gp_pq_lexer *l, struct gp_pq_token *t, size_t start)
{
    int c = (unsigned char)l->s[l->i++];
    char cb[16];
    if (is_alpha(c)) {
        while (is_alnum(peek(l, 0)))
            l->i++;
        t->type = GP_PQ_TK_IDENT;
    } else if (c == ',') {
        t->type = GP_PQ_TK_COMMA;
    } else if (c == '"' || c == '\'' || c == '`') {
        lex_string(l, t, start);
    } else if (c == '=') {
        t->type = GP_PQ_TK_ASSIGN;
        if (peek(l, 0) == '~')
            l->i++, t->type = GP_PQ_TK_EQL_REGEX;
    } else if (c == '!') {
        int d = peek(l, 0);
        if (d == '~' || d == '=') {
            l->i++;
            t->type = d == '~' ? GP_PQ_TK_NEQ_REGEX : GP_PQ_TK_NEQ;
            t->binop = GP_PQ_OP_NEQ;
        } else {
            char_q(rune_at(l, l->i), 0, cb, sizeof cb);
            fail(l, t, start, "unexpected character after '!' inside braces: %s", cb);
        }
    } else if (c == '{') {
        /* {{...}} is how Prometheus's tests write native histograms. */
        if (l->i >= 2 && l->s[l->i - 2] == '{')
            fail(l, t, start, "native histogram literals are not supported");
        else
            fail(l, t, start, "unexpected left brace '{'");
    } else if (c == '}') {
        t->type = GP_PQ_TK_RBRACE;
        l->brace_open = 0;
    } else {
        char_q(rune_at(l, start), 0, cb, sizeof cb);
        fail(l, t, start, "unexpected character inside braces: %s", cb);
    }
}

static void set_op(struct gp_pq_token *t, enum gp_pq_binop op)
{
    t->type = GP_PQ_TK_BINOP;
    t->binop = op;
}

void gp_pq_lex_next(struct gp_pq_lexer *l, struct gp_pq_token *t)
{
    if (l->failed) {
        *t = l->err;
        return;
    }
    memset(t, 0, sizeof *t);
    if (l->want_duration) {
        lex_duration(l, t);
        return;
    }
    for (;;) { /* spaces and comments */
        int c = peek(l, 0);
        if (is_space(c)) {
            l->i++;
        } else if (c == '#') {
            while (l->i < l->len && l->s[l->i] != '\n')
                l->i++;
        } else {
            break;
        }
    }
    size_t start = l->i;
    t->pos = start;
    if (l->i >= l->len) {
        if (l->brace_open)
            fail(l, t, start, "unexpected end of input inside braces");
        else if (l->paren_depth != 0)
            fail(l, t, start, "unclosed left parenthesis");
        else if (l->bracket_open)
            fail(l, t, start, "unclosed left bracket");
        else
            t->type = GP_PQ_TK_EOF;
        return;
    }
    if (l->brace_open) {
        lex_braces(l, t, start);
        t->len = l->i - start;
        return;
    }
    int c = (unsigned char)l->s[l->i];
    char cb[16];
    if (is_digit(c) || (c == '.' && is_digit(peek(l, 1)))) {
        lex_number(l, t, start);
        t->len = l->i - start;
        return;
    }
    if (is_alpha(c) || c == ':') {
        if (l->bracket_open) {
            /* Prometheus 2.42 reads any one letter inside brackets as the
             * colon ("x[5m a]" is "x[5m:]"); so do we. */
            l->i++;
            if (l->got_colon) {
                char_q(rune_at(l, start), 0, cb, sizeof cb);
                fail(l, t, start, "unexpected colon %s", cb);
                return;
            }
            l->got_colon = 1;
            t->type = GP_PQ_TK_COLON;
            t->len = 1;
            return;
        }
        int colon = 0;
        while (is_alnum(peek(l, 0)) || peek(l, 0) == ':')
            colon |= l->s[l->i++] == ':';
        t->len = l->i - start;
        if (colon || keyword(l->s + start, t->len, t) < 0)
            t->type = colon ? GP_PQ_TK_METRIC : GP_PQ_TK_IDENT;
        return;
    }
    l->i++;
    int d = peek(l, 0);
    switch (c) {
    case ',': t->type = GP_PQ_TK_COMMA; break;
    case '*': set_op(t, GP_PQ_OP_MUL); break;
    case '/': set_op(t, GP_PQ_OP_DIV); break;
    case '%': set_op(t, GP_PQ_OP_MOD); break;
    case '+': set_op(t, GP_PQ_OP_ADD); break;
    case '-': set_op(t, GP_PQ_OP_SUB); break;
    case '^': set_op(t, GP_PQ_OP_POW); break;
    case '@': t->type = GP_PQ_TK_AT; break;
    case '=':
        if (d == '=') {
            l->i++;
            set_op(t, GP_PQ_OP_EQL);
        } else if (d == '~') {
            fail(l, t, start, "unexpected character after '=': '~'");
            return;
        } else {
            t->type = GP_PQ_TK_ASSIGN;
        }
        break;
    case '!':
        if (d != '=') {
            char_q(rune_at(l, l->i), 0, cb, sizeof cb);
            fail(l, t, start, "unexpected character after '!': %s", cb);
            return;
        }
        l->i++;
        t->type = GP_PQ_TK_NEQ;
        t->binop = GP_PQ_OP_NEQ;
        break;
    case '<':
    case '>':
        if (d == '=')
            l->i++;
        set_op(t, c == '<' ? (d == '=' ? GP_PQ_OP_LTE : GP_PQ_OP_LSS)
                           : (d == '=' ? GP_PQ_OP_GTE : GP_PQ_OP_GTR));
        break;
    case '"':
    case '\'':
    case '`':
        lex_string(l, t, start);
        break;
    case '(':
        t->type = GP_PQ_TK_LPAREN;
        l->paren_depth++;
        break;
    case ')':
        /* Prometheus reports a stray ')' just after it. */
        if (--l->paren_depth < 0) {
            fail(l, t, l->i, "unexpected right parenthesis ')'");
            return;
        }
        t->type = GP_PQ_TK_RPAREN;
        break;
    case '{':
        t->type = GP_PQ_TK_LBRACE;
        l->brace_open = 1;
        break;
    case '[':
        if (l->bracket_open) {
            fail(l, t, start, "unexpected left bracket '['");
            return;
        }
        l->got_colon = 0;
        l->bracket_open = 1;
        l->want_duration = 1;
        t->type = GP_PQ_TK_LBRACKET;
        break;
    case ']':
        if (!l->bracket_open) {
            fail(l, t, start, "unexpected right bracket ']'");
            return;
        }
        l->bracket_open = 0;
        t->type = GP_PQ_TK_RBRACKET;
        break;
    default:
        char_q(rune_at(l, start), 0, cb, sizeof cb);
        fail(l, t, start, "unexpected character: %s", cb);
        return;
    }
    t->len = l->i - start;
}

int gp_pq_unquote(const char *s, size_t len, char **out, size_t *outlen)
{
    /* The text between the quotes; decoding never makes it longer. */
    char *o = malloc(len + 1);
    if (!o)
        return GP_ENOMEM;
    size_t n = 0, i = 1, end = len - 1;
    int raw = s[0] == '`';
    while (i < end) {
        char c = s[i++];
        if (raw || c != '\\') {
            o[n++] = c;
            continue;
        }
        static const char from[] = "abfnrtv\\'\"";
        static const char to[] = "\a\b\f\n\r\t\v\\'\"";
        c = s[i++];
        const char *f = strchr(from, c);
        if (f) {
            o[n++] = to[f - from];
            continue;
        }
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 2;
        int base = (c == 'x' || c == 'u' || c == 'U') ? 16 : 8;
        unsigned long x = base == 8 ? (unsigned long)(c - '0') : 0;
        for (int k = 0; k < digits && i < end; k++, i++) {
            int d = (unsigned char)s[i];
            x = x * (unsigned long)base +
                (unsigned long)(is_digit(d) ? d - '0' : (d | 0x20) - 'a' + 10);
        }
        if (c == 'u' || c == 'U')
            n += gp_utf8_encode((uint32_t)x, o + n);
        else
            o[n++] = (char)x; /* \x and octal escapes are bytes */
    }
    o[n] = '\0';
    *out = o;
    *outlen = n;
    return GP_OK;
}

/* Go's %q of a token's text (at most 10 bytes then "...", as Prometheus
 * shortens long items), into buf. */
static void quote_text(const char *s, size_t len, int cut, char *buf, size_t n)
{
    size_t o = 0, k = cut && len > 10 ? 10 : len;
    if (o + 1 < n)
        buf[o++] = '"';
    for (size_t i = 0; i < k && o + 5 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            buf[o++] = '\\', buf[o++] = (char)c;
        else if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    if (o + 1 < n)
        buf[o++] = '"';
    if (k < len && o + 4 < n)
        memcpy(buf + o, "...", 3), o += 3;
    buf[o < n ? o : n - 1] = '\0';
}

void gp_pq_tok_desc(const char *query, const struct gp_pq_token *t, char *buf, size_t n)
{
    const char *text = query + t->pos;
    int len = (int)(t->len > 64 ? 64 : t->len);
    char q[96];
    switch (t->type) {
    case GP_PQ_TK_EOF:
        snprintf(buf, n, "end of input");
        return;
    case GP_PQ_TK_ERROR:
        snprintf(buf, n, "%s", t->msg);
        return;
    case GP_PQ_TK_IDENT:
    case GP_PQ_TK_METRIC:
        quote_text(text, t->len, 0, q, sizeof q);
        snprintf(buf, n, "%s %s", t->type == GP_PQ_TK_IDENT ? "identifier" : "metric identifier", q);
        return;
    case GP_PQ_TK_NUMBER:
    case GP_PQ_TK_DURATION:
    case GP_PQ_TK_STRING:
        quote_text(text, t->len, 1, q, sizeof q);
        snprintf(buf, n, "%s %s",
                 t->type == GP_PQ_TK_NUMBER ? "number" : t->type == GP_PQ_TK_STRING ? "string" : "duration",
                 q);
        return;
    case GP_PQ_TK_BINOP:
    case GP_PQ_TK_NEQ:
    case GP_PQ_TK_EQL_REGEX:
    case GP_PQ_TK_NEQ_REGEX: /* Prometheus's item strings: <op:+>, <aggr:sum>, <by> */
        snprintf(buf, n, "<op:%.*s>", len, text);
        return;
    case GP_PQ_TK_AGG:
        snprintf(buf, n, "<aggr:%.*s>", len, text);
        return;
    case GP_PQ_TK_BY:
    case GP_PQ_TK_WITHOUT:
    case GP_PQ_TK_ON:
    case GP_PQ_TK_IGNORING:
    case GP_PQ_TK_GROUP_LEFT:
    case GP_PQ_TK_GROUP_RIGHT:
    case GP_PQ_TK_BOOL:
    case GP_PQ_TK_OFFSET:
        snprintf(buf, n, "<%.*s>", len, text);
        return;
    default: /* punctuation, quoted */
        quote_text(text, t->len, 0, q, sizeof q);
        snprintf(buf, n, "%s", q);
        return;
    }
}

const char *gp_pq_binop_text(enum gp_pq_binop op)
{
    static const char *const t[] = {
        [GP_PQ_OP_ADD] = "+",  [GP_PQ_OP_SUB] = "-",  [GP_PQ_OP_MUL] = "*",
        [GP_PQ_OP_DIV] = "/",  [GP_PQ_OP_MOD] = "%",  [GP_PQ_OP_POW] = "^",
        [GP_PQ_OP_ATAN2] = "atan2", [GP_PQ_OP_EQL] = "==", [GP_PQ_OP_NEQ] = "!=",
        [GP_PQ_OP_GTR] = ">",  [GP_PQ_OP_LSS] = "<",  [GP_PQ_OP_GTE] = ">=",
        [GP_PQ_OP_LTE] = "<=", [GP_PQ_OP_AND] = "and", [GP_PQ_OP_OR] = "or",
        [GP_PQ_OP_UNLESS] = "unless",
    };
    return (unsigned)op < sizeof t / sizeof t[0] ? t[op] : "?";
}
