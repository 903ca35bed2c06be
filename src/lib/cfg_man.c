/*
 * cfg_man.c - the settings tables of cfg.h as man(7) roff, for the man
 * pages' OPTIONS and key lists (`gpulse help-man`, run by the build), so
 * the pages say what --help says and cannot drift from the code.
 *
 * Text from the tables is escaped for roff: a backslash becomes \e, a
 * hyphen \- (so flags and paths copy back as ASCII), and a line that
 * would start with a control character ('.' or ') gets \& in front
 * (every text that starts so does: \& is invisible mid-line too).
 */
#include "cfg.h"

#include <string.h>

/* Writes s escaped for the body of a roff text line. */
static void roff_text(FILE *out, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", out);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else if (*s == '\n')
            fputc(' ', out); /* one entry, one text line */
        else
            fputc(*s, out);
    }
}

static const char *flag_arg(enum gp_cfg_type t)
{
    return t == GP_CFG_BOOL       ? ""
           : t == GP_CFG_DURATION ? "DURATION"
           : t == GP_CFG_UINT     ? "N"
           : t == GP_CFG_BYTES    ? "SIZE"
           : t == GP_CFG_MAP      ? "NAME=VALUE"
                                  : "VALUE";
}

static const char *yaml_type(enum gp_cfg_type t)
{
    switch (t) {
    case GP_CFG_STR:
        return "string";
    case GP_CFG_DURATION:
        return "duration";
    case GP_CFG_UINT:
        return "integer";
    case GP_CFG_BOOL:
        return "boolean";
    case GP_CFG_BYTES:
        return "size";
    case GP_CFG_LIST:
        return "list of strings";
    case GP_CFG_MAP:
        return "mapping of names to strings";
    }
    return "string";
}

/* The entry's help, its default and where the other spelling lives. */
static void entry_body(FILE *out, const char *section, const struct gp_cfg_key *k, bool yaml)
{
    roff_text(out, k->help);
    size_t n = strlen(k->help);
    fputs(n && k->help[n - 1] == '.' ? "\n" : ".\n", out);
    if (*k->def) {
        fputs("Default: \\fB", out);
        roff_text(out, k->def);
        fputs("\\fR.\n", out);
    }
    if (yaml) {
        fputs("Flag: \\fB\\-\\-", out);
        roff_text(out, k->flag);
        fputs(k->type == GP_CFG_BOOL ? "\\fR, \\fB\\-\\-no\\-" : "", out);
        if (k->type == GP_CFG_BOOL)
            roff_text(out, k->flag);
        fputs(k->type == GP_CFG_LIST || k->type == GP_CFG_MAP ? "\\fR (repeated for several).\n" : "\\fR.\n",
              out);
    } else {
        fputs("YAML: \\fB", out);
        roff_text(out, section);
        fputc('.', out);
        roff_text(out, k->yaml);
        fputs(k->type == GP_CFG_LIST  ? "\\fR (a list; the flag repeats).\n"
              : k->type == GP_CFG_MAP ? "\\fR (a mapping; the flag repeats as NAME=VALUE).\n"
                                      : "\\fR.\n",
              out);
    }
}

void gp_cfg_man(FILE *out, const struct gp_cfg_section *s, size_t ns, bool yaml)
{
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < s[i].nkeys; j++) {
            const struct gp_cfg_key *k = &s[i].keys[j];
            fputs(".TP\n", out);
            if (yaml) {
                fputs("\\fB", out);
                roff_text(out, k->yaml);
                fprintf(out, "\\fR: \\fI%s\\fR\n", yaml_type(k->type));
            } else {
                fputs("\\fB\\-\\-", out);
                roff_text(out, k->flag);
                fputs("\\fR", out);
                if (k->type == GP_CFG_BOOL) {
                    fputs(", \\fB\\-\\-no\\-", out);
                    roff_text(out, k->flag);
                    fputs("\\fR", out);
                } else {
                    fprintf(out, " \\fI%s\\fR", flag_arg(k->type));
                }
                fputc('\n', out);
            }
            entry_body(out, s[i].name, k, yaml);
        }
}
