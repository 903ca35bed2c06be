/*
 * re2posix.c - see re2posix.h.
 *
 * Parts:
 *  - character sets: every class RE2 writes ([...], \d, ., [[:alpha:]])
 *    becomes a set of ASCII bytes plus one bit for "any non-ASCII
 *    character" (members past ASCII are refused: a bracket of bytes
 *    cannot name one multi-byte character). A set without that bit is a
 *    bracket of bytes; one with it is a character unit,
 *    ([ascii and lead bytes][\x80-\xbf]*): one byte that does not
 *    continue a character, then the bytes that continue it. No atom the
 *    translator writes starts with a continuation byte, so in a valid
 *    UTF-8 value a unit takes whole characters, alone or repeated
 *    ("(b*.+){2}" cannot split "\xc3\xa9" in two), as RE2's "." does.
 *  - the translator: one pass over the pattern with a stack of groups
 *    for the flags they scope. Every group becomes a POSIX group (ERE has
 *    no other), so RE2 group i maps to some POSIX subexpression number;
 *    the map is kept for label_replace's $1 and $name. Case-insensitive
 *    parts spell letters as [aA] and close their sets over case, unless
 *    the whole pattern starts with (?i): then it compiles with REG_ICASE,
 *    and a later (?-i) restarts the translation in the spelled-out form.
 *  - lazy quantifiers: the pattern is always matched whole (anchored at
 *    both ends), so whether a string matches does not depend on which of
 *    its ways to match is preferred: x*? accepts the same strings as x*,
 *    and is translated so. What a capture group holds does depend on it,
 *    and POSIX has only greedy, leftmost-longest submatches: the lazy
 *    flag lets label_replace refuse such a pattern rather than capture
 *    other text than Prometheus does.
 *  - regex_vet: glibc expands counted repetitions into copies, and its
 *    matcher's work per input byte grows with the parts that may be
 *    skipped or repeated (x?, x*, x+, the optional copies of x{n,m}). So
 *    each atom of the translation carries its expanded size and its
 *    optional size, multiplied out through nesting, and the totals are
 *    capped: alternations of thousands of literals pass, ".{0,1000}" does
 *    not. This keeps regcomp's and regexec's work bounded for any input.
 *  - compile and exec: values are passed with their length through
 *    REG_STARTEND on a NUL-terminated copy (sanitizers' regexec
 *    interceptor reads up to the NUL), so NULs inside do not end them.
 */
#include "lib/re2posix.h"

#include "lib/err.h"
#include "lib/hex.h"
#include "lib/utf8.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ERE_BYTES (256 * 1024) /* translation size; the vet caps below it */
#define MAX_SIZE 20000             /* expanded nodes */
#define MAX_OPTIONAL 256           /* expanded optional nodes */
#define UNBOUNDED ((unsigned long)-1)

enum { F_I = 1, F_S = 2, F_M = 4, F_U = 8 };

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_word(int c) { return is_alpha(c) || is_digit(c) || c == '_'; }

/* ---- character sets -------------------------------------------------------- */

struct cset {
    unsigned char a[128]; /* ASCII members */
    bool hi;              /* every non-ASCII character is a member */
};

static void cs_range(struct cset *s, int lo, int hi)
{
    for (int c = lo; c <= hi && c < 128; c++)
        s->a[c] = 1;
}

static void cs_negate(struct cset *s)
{
    for (int c = 0; c < 128; c++)
        s->a[c] = !s->a[c];
    s->hi = !s->hi;
}

static void cs_fold(struct cset *s)
{
    for (int c = 'a'; c <= 'z'; c++)
        if (s->a[c] || s->a[c - 32])
            s->a[c] = s->a[c - 32] = 1;
}

/* Adds \d \D \w \W \s \S (letter e), ASCII-only as in RE2. */
static void cs_perl(struct cset *s, char e)
{
    struct cset t = {{0}, false};
    switch (e | 0x20) {
    case 'd':
        cs_range(&t, '0', '9');
        break;
    case 'w':
        cs_range(&t, '0', '9'), cs_range(&t, 'A', 'Z'), cs_range(&t, 'a', 'z'), t.a['_'] = 1;
        break;
    default: /* s: RE2's \s has no \v */
        t.a['\t'] = t.a['\n'] = t.a['\f'] = t.a['\r'] = t.a[' '] = 1;
        break;
    }
    if (e >= 'A' && e <= 'Z')
        cs_negate(&t);
    for (int c = 0; c < 128; c++)
        s->a[c] |= t.a[c];
    s->hi |= t.hi;
}

/* Adds [:name:] (RE2's ASCII definitions); false when name is unknown. */
static bool cs_named(struct cset *s, const char *name, size_t len, bool neg)
{
    static const struct {
        const char *name;
        const char *ranges; /* pairs lo, hi */
    } classes[] = {
        {"alnum", "09AZaz"},         {"alpha", "AZaz"},
        {"ascii", "\x01\x7f"},       {"blank", "\t\t  "},
        {"cntrl", "\x01\x1f\x7f\x7f"}, {"digit", "09"},
        {"graph", "!~"},             {"lower", "az"},
        {"print", " ~"},             {"punct", "!/:@[`{~"},
        {"space", "\t\r  "},         {"upper", "AZ"},
        {"word", "09AZaz__"},        {"xdigit", "09AFaf"},
    };
    for (size_t k = 0; k < sizeof classes / sizeof classes[0]; k++) {
        if (strlen(classes[k].name) != len || memcmp(classes[k].name, name, len) != 0)
            continue;
        struct cset t = {{0}, false};
        for (const char *r = classes[k].ranges; *r; r += 2)
            cs_range(&t, (unsigned char)r[0], (unsigned char)r[1]);
        if (k == 2 || k == 4) /* ascii and cntrl hold NUL, which a C string cannot */
            t.a[0] = 1;
        if (neg)
            cs_negate(&t);
        for (int c = 0; c < 128; c++)
            s->a[c] |= t.a[c];
        s->hi |= t.hi;
        return true;
    }
    return false;
}

/* ---- the translator ---------------------------------------------------------- */

struct tr {
    const char *p;
    size_t n, i;
    struct gp_buf *o;
    struct gp_re2 *re;
    char *why;
    size_t whylen, *at;
    bool global_icase; /* REG_ICASE: letters need no spelling out */
    bool restart;      /* global_icase was wrong: (?-i) seen */
    size_t nposix;     /* POSIX groups opened so far */
    size_t gcap;
};

static int fail(struct tr *t, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct tr *t, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (t->why && t->whylen)
        vsnprintf(t->why, t->whylen, fmt, ap);
    va_end(ap);
    *t->at = at;
    return GP_EPARSE;
}

/* Ranges stay within one band: glibc's REG_ICASE folds a range's ends
 * and refuses one such as [_-z] ("Invalid range end"). */
static int band(int c) { return c < 'A' ? 0 : c <= 'Z' ? 1 : c < 'a' ? 2 : c <= 'z' ? 3 : 4; }

/* Appends the members of l (bytes 1..255) to a bracket body, as ranges
 * where three or more follow each other, leaving out the bytes whose
 * place in a bracket matters (] [ ^ -): the caller places those. */
static void put_bytes(struct gp_buf *o, const unsigned char *l)
{
    for (int c = 1; c < 256;) {
        bool special = c == ']' || c == '[' || c == '^' || c == '-';
        if (!l[c] || special) {
            c++;
            continue;
        }
        int e = c;
        while (e + 1 < 256 && l[e + 1] && band(e + 1) == band(c) &&
               !(e + 1 == ']' || e + 1 == '[' || e + 1 == '^' || e + 1 == '-'))
            e++;
        if (e - c >= 2) {
            gp_buf_putc(o, (char)c);
            gp_buf_putc(o, '-');
            gp_buf_putc(o, (char)e);
        } else
            for (int k = c; k <= e; k++)
                gp_buf_putc(o, (char)k);
        c = e + 1;
    }
}

static bool ere_special(int c) { return c && strchr(".[\\()*+?{|^$", c) != NULL; }

/* Writes a set of bytes (m[256]; NUL never a member of what is written)
 * as one POSIX atom matching one byte. */
static void put_byteset(struct gp_buf *o, const unsigned char *m)
{
    unsigned char l[256];
    bool all = true;
    for (int c = 1; c < 256; c++)
        all &= m[c] != 0;
    if (all) { /* any byte but NUL, as glibc's "." is */
        gp_buf_putc(o, '.');
        return;
    }
    /* A bracket cannot list NUL: when NUL is a member, list the others. */
    bool neg = m[0] != 0;
    size_t nl = 0;
    int one = 0;
    for (int c = 1; c < 256; c++) {
        l[c] = neg ? !m[c] : m[c] != 0;
        if (l[c])
            nl++, one = c;
    }
    l[0] = 0;
    if (!neg && nl == 1) {
        if (ere_special(one))
            gp_buf_putc(o, '\\');
        gp_buf_putc(o, (char)one);
        return;
    }
    gp_buf_putc(o, '[');
    if (neg)
        gp_buf_putc(o, '^');
    size_t mark = o->len;
    if (l[']'])
        gp_buf_putc(o, ']');
    put_bytes(o, l);
    if (l['['])
        gp_buf_putc(o, '[');
    if (l['^']) {
        if (!neg && o->len == mark) { /* "[^" would negate: "-^" then */
            gp_buf_putc(o, '-');
            l['-'] = 0;
        }
        gp_buf_putc(o, '^');
    }
    if (l['-'])
        gp_buf_putc(o, '-');
    gp_buf_putc(o, ']');
}

/* The tail of a character unit: a set's byte, then the continuation
 * bytes of the character it starts (regex_vet knows this shape). */
#define UNIT_TAIL "[\x80-\xbf]*)"

/* Writes a set as one atom matching one character. */
static int put_set(struct tr *t, const struct cset *s)
{
    unsigned char m[256] = {0};
    bool any = s->hi;
    for (int c = 0; c < 128; c++)
        any |= (m[c] = s->a[c]) != 0;
    if (!any) { /* [^\x00-\x{10FFFF}]: a byte no UTF-8 text holds */
        gp_buf_putc(t->o, '\xff');
        return GP_OK;
    }
    if (!s->hi) {
        put_byteset(t->o, m);
        return GP_OK;
    }
    /* One ASCII member or a lead byte, then its continuation bytes: no
     * other atom starts with a continuation byte, so in valid UTF-8 a
     * unit takes whole characters, repeated or not. */
    memset(m + 0xc0, 1, 0x40);
    gp_buf_putc(t->o, '(');
    t->nposix++;
    put_byteset(t->o, m);
    gp_buf_puts(t->o, UNIT_TAIL);
    return GP_OK;
}

/* One literal character (code point cp) as an atom; *multi when it took
 * more than one byte (a quantifier then needs a group around it). */
static int put_literal(struct tr *t, uint32_t cp, int flags, size_t at, bool *multi)
{
    *multi = false;
    if (cp == 0)
        return fail(t, at, "NUL byte in a regular expression");
    if (cp >= 0x80) {
        if (flags & F_I)
            return fail(t, at, "case-insensitive matching of non-ASCII characters is not supported");
        char u[4];
        gp_buf_append(t->o, u, gp_utf8_encode(cp, u));
        *multi = true;
        return GP_OK;
    }
    if ((flags & F_I) && !t->global_icase && is_alpha((int)cp)) {
        gp_buf_printf(t->o, "[%c%c]", (char)(cp | 0x20), (char)(cp & ~0x20u));
        return GP_OK;
    }
    if (ere_special((int)cp))
        gp_buf_putc(t->o, '\\');
    gp_buf_putc(t->o, (char)cp);
    return GP_OK;
}

/* One escape at p[i] == '\\' that stands for a character (not a class or
 * an anchor): sets *cp and t->i past it. */
static int parse_escape(struct tr *t, uint32_t *cp)
{
    size_t at = t->i, i = t->i + 1;
    const char *p = t->p;
    if (i >= t->n)
        return fail(t, at, "trailing backslash at end of expression");
    unsigned char c = (unsigned char)p[i++];
    if (c < 0x80 && !is_alpha(c) && !is_digit(c)) {
        *cp = c; /* escaped punctuation is itself */
        t->i = i;
        return GP_OK;
    }
    static const char simple[] = "aftnrv";
    static const char actual[] = "\a\f\t\n\r\v";
    const char *sp = c ? strchr(simple, c) : NULL;
    if (sp) {
        *cp = (unsigned char)actual[sp - simple];
        t->i = i;
        return GP_OK;
    }
    if (c >= '0' && c <= '7' && (c == '0' || (i < t->n && p[i] >= '0' && p[i] <= '7'))) {
        uint32_t v = c - '0';
        for (int k = 1; k < 3 && i < t->n && p[i] >= '0' && p[i] <= '7'; k++)
            v = v * 8 + (uint32_t)(p[i++] - '0');
        *cp = v;
        t->i = i;
        return GP_OK;
    }
    if (c == 'x') {
        uint32_t v = 0;
        if (i < t->n && p[i] == '{') {
            size_t nd = 0;
            for (i++; i < t->n && gp_hex_digit(p[i]) >= 0; i++, nd++) {
                v = (v << 4) | (uint32_t)gp_hex_digit(p[i]);
                if (v > 0x10ffff)
                    return fail(t, at, "invalid escape sequence: \\x{...} past U+10FFFF");
            }
            if (nd == 0 || i >= t->n || p[i] != '}')
                return fail(t, at, "invalid escape sequence: \\x{ needs hex digits and '}'");
            i++;
        } else {
            for (int k = 0; k < 2; k++, i++) {
                if (i >= t->n || gp_hex_digit(p[i]) < 0)
                    return fail(t, at, "invalid escape sequence: \\x needs two hex digits");
                v = (v << 4) | (uint32_t)gp_hex_digit(p[i]);
            }
        }
        *cp = v;
        t->i = i;
        return GP_OK;
    }
    if (is_digit(c))
        return fail(t, at, "backreferences ('\\%c') are not supported by RE2", c);
    if (c >= 0x80)
        return fail(t, at, "invalid escape sequence: backslash before a non-ASCII character");
    return fail(t, at, "invalid escape sequence '\\%c'", c);
}

/* A character of a bracket at t->i (escape or UTF-8 rune): ASCII only. */
static int class_char(struct tr *t, int *out)
{
    size_t at = t->i;
    uint32_t cp;
    if (t->p[t->i] == '\\') {
        int rc = parse_escape(t, &cp);
        if (rc)
            return rc;
    } else {
        size_t k = gp_utf8_decode((const unsigned char *)t->p + t->i, t->n - t->i, &cp);
        if (k == 0)
            return fail(t, at, "invalid UTF-8 in regular expression");
        t->i += k;
    }
    if (cp == 0)
        return fail(t, at, "NUL byte in a regular expression");
    if (cp >= 0x80)
        return fail(t, at, "non-ASCII characters inside [...] are not supported; write them "
                           "outside a bracket, as alternatives");
    *out = (int)cp;
    return GP_OK;
}

/* A bracket expression at t->i == '[' into s. */
static int parse_class(struct tr *t, int flags, struct cset *s)
{
    size_t start = t->i;
    const char *p = t->p;
    memset(s, 0, sizeof *s);
    t->i++;
    bool neg = false, first = true;
    if (t->i < t->n && p[t->i] == '^')
        neg = true, t->i++;
    for (;;) {
        if (t->i >= t->n)
            return fail(t, start, "missing closing ] of a character class");
        char c = p[t->i];
        if (c == ']' && !first) {
            t->i++;
            break;
        }
        first = false;
        if (c == '[' && t->i + 1 < t->n && p[t->i + 1] == ':') {
            const char *e = NULL;
            for (size_t j = t->i + 2; j + 1 < t->n && !e; j++)
                if (p[j] == ':' && p[j + 1] == ']')
                    e = p + j;
            if (e) { /* as RE2: "[:" without ":]" later is a plain '[' */
                const char *nm = p + t->i + 2;
                bool nneg = nm < e && *nm == '^';
                if (nneg)
                    nm++;
                if (!cs_named(s, nm, (size_t)(e - nm), nneg))
                    return fail(t, t->i, "invalid character class range '[:%.*s:]'",
                                (int)(e - nm), nm);
                t->i = (size_t)(e - p) + 2;
                continue;
            }
        }
        if (c == '\\' && t->i + 1 < t->n && strchr("dDwWsS", p[t->i + 1]) && p[t->i + 1]) {
            cs_perl(s, p[t->i + 1]);
            t->i += 2;
            continue;
        }
        if (c == '\\' && t->i + 1 < t->n && (p[t->i + 1] == 'p' || p[t->i + 1] == 'P'))
            return fail(t, t->i, "Unicode classes ('\\p', '\\P') cannot be translated to POSIX");
        size_t cat = t->i;
        int lo, hi;
        int rc = class_char(t, &lo);
        if (rc)
            return rc;
        hi = lo;
        if (t->i + 1 < t->n && p[t->i] == '-' && p[t->i + 1] != ']') {
            t->i++;
            if (p[t->i] == '\\' && t->i + 1 < t->n && strchr("dDwWsSpP", p[t->i + 1]) &&
                p[t->i + 1])
                return fail(t, cat, "invalid character class range");
            if ((rc = class_char(t, &hi)))
                return rc;
            if (hi < lo)
                return fail(t, cat, "invalid character class range %.*s", (int)(t->i - cat),
                            p + cat);
        }
        cs_range(s, lo, hi);
    }
    if (flags & F_I)
        cs_fold(s);
    if (neg)
        cs_negate(s);
    return GP_OK;
}

/* "{n}", "{n,}" or "{n,m}" at p[i]: 1 (with *end after '}'), 0 when it is
 * not a count (RE2 then reads '{' literally), -1 when a bad one. */
static int parse_interval(const char *p, size_t len, size_t i, size_t *end, unsigned long *lo,
                          unsigned long *hi)
{
    size_t j = i + 1;
    unsigned long n = 0, m = 0;
    bool has_m = false, comma = false;
    if (j >= len || !is_digit(p[j]))
        return 0;
    while (j < len && is_digit(p[j])) {
        if (n <= GP_RE2_MAX_REPEAT)
            n = n * 10 + (unsigned long)(p[j] - '0');
        j++;
    }
    if (j < len && p[j] == ',') {
        comma = true;
        for (j++; j < len && is_digit(p[j]); j++, has_m = true)
            if (m <= GP_RE2_MAX_REPEAT)
                m = m * 10 + (unsigned long)(p[j] - '0');
    }
    if (j >= len || p[j] != '}')
        return 0;
    *end = j + 1;
    *lo = n;
    *hi = has_m ? m : comma ? UNBOUNDED : n;
    if (n > GP_RE2_MAX_REPEAT || (has_m && (m > GP_RE2_MAX_REPEAT || m < n)))
        return -1;
    return 1;
}

static int add_group(struct tr *t, char *name)
{
    struct gp_re2 *re = t->re;
    if (re->ngroups + 1 >= t->gcap) {
        size_t cap = t->gcap ? t->gcap * 2 : 16;
        size_t *g = realloc(re->group, cap * sizeof *g);
        if (g)
            re->group = g;
        char **nm = g ? realloc(re->name, cap * sizeof *nm) : NULL;
        if (!nm)
            return GP_ENOMEM;
        re->name = nm;
        t->gcap = cap;
    }
    re->ngroups++;
    re->group[re->ngroups] = t->nposix;
    re->name[re->ngroups] = name;
    return GP_OK;
}

/* (?flags) or (?flags: at t->i == '(': sets *nf, *colon, t->i after it. */
static int parse_flags(struct tr *t, int flags, int *nf, bool *colon)
{
    size_t at = t->i, j = t->i + 2;
    bool neg = false, any = false, seen = false;
    for (; j < t->n; j++) {
        char c = t->p[j];
        int f = c == 'i' ? F_I : c == 's' ? F_S : c == 'm' ? F_M : c == 'U' ? F_U : 0;
        if (f) {
            flags = neg ? flags & ~f : flags | f;
            any = seen = true;
            if (neg && f == F_I && t->global_icase)
                t->restart = true;
        } else if (c == '-' && !neg) {
            neg = true;
            any = false;
        } else if (c == ':' || c == ')') {
            break;
        } else
            return fail(t, at, "invalid or unsupported Perl syntax '(?%c'", c);
    }
    if (j >= t->n)
        return fail(t, at, "missing closing ) of a flag group");
    *colon = t->p[j] == ':';
    if ((neg && !any) || (!seen && !*colon))
        return fail(t, at, "missing flags in a flag group '(?%.*s'", (int)(j - at - 1),
                    t->p + at + 2);
    *nf = flags;
    t->i = j + 1;
    return GP_OK;
}

/*
 * Where anchors may stand. glibc reads a '^' or '$' inside the pattern as
 * a line anchor in places ("[^x]*^b" matches "a\nb"), where RE2's match
 * only the start and end of the value. Inside the anchored whole they
 * agree when a '^' comes before anything that consumes text and a '$'
 * after it all; elsewhere (rare: "a^b" matches nothing in RE2) the
 * pattern is refused. Per group level: whether nothing consumes before
 * this point (lead; lead0 at the start of each alternative), whether a
 * '$' precedes it (dol, dol0), and what the group held.
 */
struct lvl {
    bool lead0, lead, dol0, dol, consumed, dol_any, has_anchor;
};

/* A consuming atom comes at `at`. */
static int consume(struct tr *t, struct lvl *l, size_t at)
{
    if (l->dol)
        return fail(t, at, "text after '$' or '\\z' cannot be translated to POSIX");
    l->lead = false;
    l->consumed = true;
    return GP_OK;
}

/* '^' (start) or '$' where cur says one may stand. */
static int put_anchor(struct tr *t, struct lvl *cur, bool start, size_t at)
{
    if (start && !cur->lead)
        return fail(t, at, "'^' or '\\A' after text that consumes cannot be translated to POSIX");
    if (!start)
        cur->dol = cur->dol_any = true;
    cur->has_anchor = true;
    gp_buf_putc(t->o, start ? '^' : '$');
    return GP_OK;
}

static int translate(struct tr *t)
{
    struct {
        int flags;
        size_t open;
        size_t at;
        struct lvl lv;
    } stk[GP_RE2_MAX_DEPTH];
    struct lvl cur = {true, true, false, false, false, false, false};
    bool atom_anchor = false; /* the last atom is a group holding an anchor */
    size_t depth = 0;
    const char *p = t->p;
    int flags = t->global_icase ? F_I : 0, rc;
    bool have_atom = false, anchor = false, multi = false, after_quant = false;
    size_t atom_at = 0;
    gp_buf_puts(t->o, "^(");
    t->nposix = 1;
    while (t->i < t->n) {
        size_t at = t->i;
        unsigned char c = (unsigned char)p[at];
        unsigned long lo = 0, hi = 0;
        size_t qend = at + 1;
        int q = c == '*' || c == '+' || c == '?';
        if (c == '{') {
            q = parse_interval(p, t->n, at, &qend, &lo, &hi);
            if (q < 0)
                return fail(t, at, "invalid repeat count (over %d, or {n,m} with m < n)",
                            GP_RE2_MAX_REPEAT);
        }
        if (q) {
            if (after_quant)
                return fail(t, at, "invalid nested repetition operator");
            if (anchor)
                return fail(t, at, "a repeated anchor (such as '^*') cannot be translated");
            if (atom_anchor)
                return fail(t, at, "a repeated group holding an anchor cannot be translated");
            if (!have_atom)
                return fail(t, at, "missing argument to repetition operator");
            if (multi) { /* é* repeats the character, not its last byte */
                gp_buf_putc(t->o, ')');
                if (gp_buf_reserve(t->o, 1) == GP_OK) {
                    memmove(t->o->data + atom_at + 1, t->o->data + atom_at,
                            t->o->len - atom_at);
                    t->o->data[atom_at] = '(';
                    t->o->len++;
                    t->o->data[t->o->len] = '\0';
                }
                t->nposix++;
                multi = false;
            }
            if (c == '{')
                gp_buf_append(t->o, p + at, qend - at);
            else
                gp_buf_putc(t->o, (char)c);
            t->i = qend;
            bool lazy = t->i < t->n && p[t->i] == '?';
            if (lazy)
                t->i++;
            if (lazy != ((flags & F_U) != 0))
                t->re->lazy = 1;
            after_quant = true;
            continue;
        }
        after_quant = anchor = multi = atom_anchor = false;
        have_atom = true;
        atom_at = t->o->len;
        switch (c) {
        case '(': {
            if (depth == GP_RE2_MAX_DEPTH)
                return fail(t, at, "groups nested deeper than %d", GP_RE2_MAX_DEPTH);
            int nf = flags;
            char *name = NULL;
            bool capture = true;
            if (at + 1 < t->n && p[at + 1] == '?') {
                if (at + 3 < t->n && p[at + 2] == 'P' && p[at + 3] == '<') {
                    size_t s = at + 4, e = s;
                    while (e < t->n && is_word((unsigned char)p[e]))
                        e++;
                    if (e == s || e >= t->n || p[e] != '>')
                        return fail(t, at, "invalid named capture group");
                    if (!(name = strndup(p + s, e - s)))
                        return GP_ENOMEM;
                    t->i = e + 1;
                } else if (at + 2 < t->n && p[at + 2] == '<') {
                    return fail(t, at, "named groups are written (?P<name>...) in Prometheus's "
                                       "RE2, not (?<name>...)");
                } else {
                    bool colon = false;
                    if ((rc = parse_flags(t, flags, &nf, &colon)))
                        return rc;
                    if (t->restart)
                        return GP_OK;
                    if (!colon) { /* (?i): for the rest of the current group */
                        flags = nf; /* (?m) is checked where ^ or $ follow */
                        have_atom = false;
                        continue;
                    }
                    capture = false;
                }
            } else
                t->i++;
            if (capture) {
                if (t->re->ngroups >= GP_RE2_MAX_GROUPS) {
                    free(name);
                    return fail(t, at, "more than %d capture groups", GP_RE2_MAX_GROUPS);
                }
                t->nposix++;
                if ((rc = add_group(t, name))) {
                    free(name);
                    return rc;
                }
            } else
                t->nposix++;
            stk[depth].flags = flags;
            stk[depth].open = t->o->len;
            stk[depth].at = at;
            stk[depth].lv = cur;
            depth++;
            cur = (struct lvl){cur.lead, cur.lead, cur.dol, cur.dol, false, false, false};
            flags = nf;
            gp_buf_putc(t->o, '(');
            have_atom = false;
            continue;
        }
        case ')':
            if (depth == 0)
                return fail(t, at, "unexpected ')'");
            depth--;
            flags = stk[depth].flags;
            atom_at = stk[depth].open;
            {
                struct lvl in = cur;
                cur = stk[depth].lv;
                cur.lead = cur.lead && !in.consumed;
                cur.dol = cur.dol || in.dol_any;
                cur.dol_any |= in.dol_any;
                cur.consumed |= in.consumed;
                cur.has_anchor |= in.has_anchor;
                atom_anchor = in.has_anchor;
            }
            gp_buf_putc(t->o, ')');
            t->i++;
            continue;
        case '|':
            cur.lead = cur.lead0;
            cur.dol = cur.dol0;
            gp_buf_putc(t->o, '|');
            have_atom = false;
            t->i++;
            continue;
        case '^':
        case '$':
            if (flags & F_M)
                return fail(t, at, "multi-line anchors ((?m) with '^' or '$') are not supported");
            if ((rc = put_anchor(t, &cur, c == '^', at)))
                return rc;
            anchor = true;
            t->i++;
            continue;
        case '.': {
            if ((rc = consume(t, &cur, at)))
                return rc;
            struct cset s = {{0}, true};
            cs_range(&s, 0, 127);
            if (!(flags & F_S))
                s.a['\n'] = 0; /* RE2's "." stops at a newline unless (?s) */
            t->i++;
            if ((rc = put_set(t, &s)))
                return rc;
            continue;
        }
        case '[': {
            struct cset s;
            if ((rc = consume(t, &cur, at)) || (rc = parse_class(t, flags, &s)) ||
                (rc = put_set(t, &s)))
                return rc;
            continue;
        }
        case '\\': {
            char e = at + 1 < t->n ? p[at + 1] : 0;
            if (e == 'A' || e == 'z') {
                if ((rc = put_anchor(t, &cur, e == 'A', at)))
                    return rc;
                anchor = true;
                t->i += 2;
                continue;
            }
            if (e == 'b' || e == 'B')
                return fail(t, at, "word boundaries ('\\b', '\\B') cannot be translated to POSIX");
            if (e == 'p' || e == 'P')
                return fail(t, at, "Unicode classes ('\\p', '\\P') cannot be translated to POSIX");
            if ((rc = consume(t, &cur, at)))
                return rc;
            if (e && strchr("dDwWsS", e)) {
                struct cset s = {{0}, false};
                cs_perl(&s, e);
                t->i += 2;
                if ((rc = put_set(t, &s)))
                    return rc;
                continue;
            }
            if (e == 'Q') { /* literal text up to \E: a quantifier takes the last character */
                t->i += 2;
                have_atom = false;
                while (t->i < t->n && !(p[t->i] == '\\' && t->i + 1 < t->n && p[t->i + 1] == 'E')) {
                    uint32_t cp;
                    size_t k = gp_utf8_decode((const unsigned char *)p + t->i, t->n - t->i, &cp);
                    if (k == 0)
                        return fail(t, t->i, "invalid UTF-8 in regular expression");
                    atom_at = t->o->len;
                    if ((rc = put_literal(t, cp, flags, t->i, &multi)))
                        return rc;
                    have_atom = true;
                    t->i += k;
                }
                if (t->i < t->n)
                    t->i += 2;
                continue;
            }
            uint32_t cp;
            if ((rc = parse_escape(t, &cp)) || (rc = put_literal(t, cp, flags, at, &multi)))
                return rc;
            continue;
        }
        default: {
            uint32_t cp;
            size_t k = gp_utf8_decode((const unsigned char *)p + at, t->n - at, &cp);
            if (k == 0)
                return fail(t, at, "invalid UTF-8 in regular expression");
            if ((rc = consume(t, &cur, at)) || (rc = put_literal(t, cp, flags, at, &multi)))
                return rc;
            t->i += k;
            continue;
        }
        }
    }
    if (depth > 0)
        return fail(t, stk[depth - 1].at, "missing closing ) of the group opened here");
    gp_buf_puts(t->o, ")$");
    return GP_OK;
}

void gp_re2_free(struct gp_re2 *re)
{
    if (!re)
        return;
    if (re->compiled)
        regfree(&re->re);
    for (size_t g = 0; re->name && g <= re->ngroups; g++)
        free(re->name[g]);
    free(re->name);
    free(re->group);
    memset(re, 0, sizeof *re);
}

/* A pattern that starts with (?i) (flags without '-', i among them). */
static bool leading_icase(const char *p, size_t n)
{
    if (n < 4 || p[0] != '(' || p[1] != '?')
        return false;
    bool i = false;
    for (size_t j = 2; j < n; j++) {
        if (p[j] == ')')
            return i;
        if (p[j] == 'i')
            i = true;
        else if (p[j] != 's' && p[j] != 'U')
            return false;
    }
    return false;
}

int gp_re2_translate(struct gp_re2 *re, const char *pat, size_t len, struct gp_buf *ere,
                     char *why, size_t whylen, size_t *at)
{
    size_t at0, base = ere->len;
    if (!at)
        at = &at0;
    *at = 0;
    memset(re, 0, sizeof *re);
    for (int pass = 0; pass < 2; pass++) {
        struct tr t = {.p = pat, .n = len, .o = ere, .re = re, .why = why, .whylen = whylen,
                       .at = at, .global_icase = pass == 0 && leading_icase(pat, len)};
        if (pass == 0 && !t.global_icase)
            pass = 1;
        t.re->group = malloc(16 * sizeof *t.re->group);
        t.re->name = malloc(16 * sizeof *t.re->name);
        if (!t.re->group || !t.re->name) {
            gp_re2_free(re);
            return GP_ENOMEM;
        }
        t.gcap = 16;
        re->group[0] = 0; /* the whole match */
        re->name[0] = NULL;
        int rc = translate(&t);
        if (rc == GP_OK && t.restart) { /* (?i) ... (?-i): spell the cases out */
            gp_re2_free(re);
            ere->len = base;
            continue;
        }
        if (rc == GP_OK && ere->err)
            rc = ere->err == GP_ENOMEM ? GP_ENOMEM : fail(&t, 0, "regular expression too costly once translated to POSIX");
        if (rc != GP_OK) {
            gp_re2_free(re);
            ere->len = base;
            if (ere->data)
                ere->data[base] = '\0';
            return rc;
        }
        re->icase = t.global_icase;
        return GP_OK;
    }
    return GP_EPARSE; /* not reached: the second pass never restarts */
}

/* ---- cost vetting of the translation ------------------------------------------ */

/* The translation's counts are well formed; reads "{n}", "{n,}", "{n,m}". */
static size_t read_count(const char *p, size_t i, unsigned long *lo, unsigned long *hi)
{
    unsigned long n = 0, m = 0;
    bool has_m = false, comma = false;
    for (i++; is_digit(p[i]); i++)
        n = n * 10 + (unsigned long)(p[i] - '0');
    if (p[i] == ',')
        for (comma = true, i++; is_digit(p[i]); i++, has_m = true)
            m = m * 10 + (unsigned long)(p[i] - '0');
    *lo = n;
    *hi = has_m ? m : comma ? UNBOUNDED : n;
    return i + 1;
}

/* After a bracket expression starting at p[i] (the translator's: no [:
 * inside). */
static size_t bracket_end(const char *p, size_t len, size_t i)
{
    size_t j = i + 1;
    if (j < len && p[j] == '^')
        j++;
    if (j < len && p[j] == ']')
        j++;
    while (j < len && p[j] != ']')
        j++;
    return j + 1;
}

/* When p[i] starts a character unit "([...]" UNIT_TAIL, the offset after
 * it, else 0. Its continuation bytes are at most three per character, so
 * glibc's work for a unit is a bracket's. */
static size_t unit_end(const char *p, size_t len, size_t i)
{
    size_t tl = sizeof UNIT_TAIL - 1;
    if (i + 1 >= len || p[i + 1] != '[')
        return 0;
    size_t j = bracket_end(p, len, i + 1);
    return j + tl <= len && memcmp(p + j, UNIT_TAIL, tl) == 0 ? j + tl : 0;
}

/* NULL when the ERE (as the translator writes it) is within the caps. */
static const char *regex_vet(const char *p, size_t len)
{
    uint64_t size[GP_RE2_MAX_DEPTH + 3], opt[GP_RE2_MAX_DEPTH + 3];
    size_t depth = 0, next;
    uint64_t tsize = 0, topt = 0, lsize = 0, lopt = 0;
    size[0] = opt[0] = 0;
    for (size_t i = 0; i < len; i = next) {
        char c = p[i];
        next = i + 1;
        unsigned long lo = 0, hi = 0;
        bool quant = true;
        if (c == '*')
            hi = UNBOUNDED;
        else if (c == '+')
            lo = 1, hi = UNBOUNDED;
        else if (c == '?')
            hi = 1;
        else if (c == '{')
            next = read_count(p, i, &lo, &hi);
        else
            quant = false;
        if (quant) {
            if (lsize == 0)
                continue;
            /* lo required copies keep their own optional parts; the rest
             * (hi - lo copies, or one starred copy) are optional whole. */
            uint64_t copies = hi == UNBOUNDED ? lo + 1 : hi;
            uint64_t extra = hi == UNBOUNDED ? 1 : hi - lo;
            if (copies == 0)
                copies = 1;
            uint64_t nsize = lsize * copies, nopt = lopt * lo + lsize * extra;
            if (lo == 0 && nopt < lsize)
                nopt = lsize;
            size[depth] += nsize - lsize;
            tsize += nsize - lsize;
            opt[depth] += nopt - lopt;
            topt += nopt - lopt;
            lsize = nsize;
            lopt = nopt;
        } else {
            lopt = 0;
            lsize = 1;
            switch (c) {
            case '\\':
                next = i + 2;
                break;
            case '[':
                next = bracket_end(p, len, i);
                break;
            case '(':
                if ((next = unit_end(p, len, i)) != 0)
                    break; /* a character unit counts as one atom */
                next = i + 1;
                if (depth == GP_RE2_MAX_DEPTH + 2) /* the outer group and a set's */
                    return "groups nested too deeply";
                depth++;
                size[depth] = opt[depth] = 0;
                lsize = 0;
                continue;
            case ')':
                lsize = size[depth] + 1; /* the group node itself */
                lopt = opt[depth];
                depth--;
                size[depth] += lsize;
                opt[depth] += lopt;
                tsize++;
                break;
            case '|':
            case '^':
            case '$':
                size[depth]++;
                tsize++;
                lsize = 0;
                break;
            default:
                break;
            }
            if (c != ')' && c != '|' && c != '^' && c != '$') { /* a one-node atom */
                size[depth] += lsize;
                tsize += lsize;
            }
        }
        if (tsize > MAX_SIZE || topt > MAX_OPTIONAL)
            return "regular expression too costly once its counts are expanded";
    }
    return NULL;
}

int gp_re2_compile(struct gp_re2 *re, const char *pat, size_t len, int nosub, char *why,
                   size_t whylen, size_t *at)
{
    size_t at0;
    if (!at)
        at = &at0;
    struct gp_buf ere;
    gp_buf_init(&ere, MAX_ERE_BYTES);
    int rc = gp_re2_translate(re, pat, len, &ere, why, whylen, at);
    if (rc != GP_OK) {
        gp_buf_free(&ere);
        return rc;
    }
    const char *vw = regex_vet(ere.data, ere.len);
    if (vw) {
        snprintf(why, whylen, "%s", vw);
        *at = 0;
        rc = GP_EPARSE;
    } else {
        int flags = REG_EXTENDED | (nosub ? REG_NOSUB : 0) | (re->icase ? REG_ICASE : 0);
        int rrc = regcomp(&re->re, ere.data, flags);
        if (rrc == 0)
            re->compiled = 1;
        else if (rrc == REG_ESPACE)
            rc = GP_ENOMEM;
        else {
            char b[96];
            regerror(rrc, &re->re, b, sizeof b);
            snprintf(why, whylen, "%s", b);
            *at = 0;
            rc = GP_EPARSE;
        }
    }
    gp_buf_free(&ere);
    if (rc != GP_OK)
        gp_re2_free(re);
    return rc;
}

int gp_re2_exec(const struct gp_re2 *re, const char *s, size_t len, regmatch_t *sub, size_t nsub)
{
    if (!re->compiled)
        return 0;
    char stack[512];
    regmatch_t pst[64], *pm = pst;
    size_t np = sub ? re->re.re_nsub + 1 : 1;
    char *copy = len < sizeof stack ? stack : malloc(len + 1);
    if (np > sizeof pst / sizeof pst[0])
        pm = malloc(np * sizeof *pm);
    int hit = 0;
    if (copy && pm) {
        if (len)
            memcpy(copy, s, len);
        copy[len] = '\0';
        pm[0].rm_so = 0;
        pm[0].rm_eo = (regoff_t)len;
        hit = regexec(&re->re, copy, np, pm, REG_STARTEND) == 0;
    }
    for (size_t i = 0; sub && i < nsub; i++) {
        sub[i].rm_so = sub[i].rm_eo = -1;
        if (hit && i <= re->ngroups)
            sub[i] = pm[re->group[i]];
    }
    if (copy != stack)
        free(copy);
    if (pm != pst)
        free(pm);
    return hit;
}

long gp_re2_group_named(const struct gp_re2 *re, const char *name, size_t len, size_t from)
{
    for (size_t g = from ? from : 1; g <= re->ngroups; g++)
        if (re->name[g] && strlen(re->name[g]) == len && memcmp(re->name[g], name, len) == 0)
            return (long)g;
    return -1;
}
