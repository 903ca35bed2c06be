/*
 * cfg.h - table-driven settings: defaults, a YAML file, command-line flags.
 *
 * Each role describes its settings once, as a table of keys (YAML name,
 * flag name, type, field, default, help); this engine derives from the
 * tables the YAML reader, the flag parser and the --help text, and the
 * docs test checks the docs against the same tables. A command may take
 * several sections (`gpulse up` takes `server:` and `agent:`); a flag is
 * looked up in the sections in order, so the first section wins a name
 * both have. Precedence: defaults, then the --config file, then flags.
 *
 * YAML: a top-level mapping of section names to mappings of scalar keys;
 * a LIST key also takes a sequence of scalars, a MAP key takes a mapping
 * of scalars (and its flag repeats as NAME=VALUE). Sections no section table
 * names are skipped (they configure other roles); unknown keys inside a
 * known section are errors that name their line.
 */
#ifndef GP_LIB_CFG_H
#define GP_LIB_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum gp_cfg_type {
    GP_CFG_STR,      /* char[size] */
    GP_CFG_DURATION, /* int64_t ms: "100ms", "1s", "5m", "15d" */
    GP_CFG_UINT,     /* uint64_t */
    GP_CFG_BOOL,     /* bool */
    GP_CFG_BYTES,    /* uint64_t bytes: "512MiB", "1GiB", "1000000", "2GB" */
    GP_CFG_LIST,     /* struct gp_cfg_list: repeated flag or YAML sequence */
    GP_CFG_MAP,      /* struct gp_cfg_list of "NAME=VALUE": repeated flag or YAML mapping */
};

#define GP_CFG_LIST_MAX 8
#define GP_CFG_LIST_LEN 512
struct gp_cfg_list {
    unsigned n;
    char v[GP_CFG_LIST_MAX][GP_CFG_LIST_LEN];
};

struct gp_cfg_key {
    const char *yaml, *flag;
    enum gp_cfg_type type;
    size_t offset, size;
    const char *def, *help;
};

/* One section of a command's settings: its table and the struct it fills. */
struct gp_cfg_section {
    const char *name; /* the YAML section: "agent", "server" */
    const struct gp_cfg_key *keys;
    size_t nkeys;
    void *target;
};

/* Builds a key table row from an X-macro row of a settings struct. */
#define GP_CFG_ROW(st, field, yaml, flag, type, def, help) \
    {yaml, flag, GP_CFG_##type, offsetof(st, field), sizeof(((st *)0)->field), def, help}

/* Zeroes nothing: sets every key of every section to its default. */
void gp_cfg_defaults(const struct gp_cfg_section *s, size_t ns);

/* Parses a YAML document into the sections. GP_OK, GP_EPARSE or GP_ECONFIG. */
int gp_cfg_parse_yaml(const struct gp_cfg_section *s, size_t ns, const char *yaml, size_t len,
                      char *err, size_t errlen);

/* Reads (at most 1 MiB) and parses a file. GP_OK or GP_ECONFIG/GP_ENOMEM. */
int gp_cfg_load_file(const struct gp_cfg_section *s, size_t ns, const char *path, char *err,
                     size_t errlen);

/* Sets one key by flag name from text (a LIST key appends; a MAP key
 * appends "NAME=VALUE" and refuses a NAME it already holds). */
int gp_cfg_set(const struct gp_cfg_section *s, size_t ns, const char *flag, const char *value,
               char *err, size_t errlen);

/*
 * Parses argv (after the command word): --config FILE first (its path is
 * copied into config_file when that is not NULL), then the flags in
 * order; `--flag value`, `--flag=value`, `--bool`, `--no-bool`. A LIST
 * or MAP flag given on the command line replaces the file's list or map. Sets *help for
 * --help/-h. cmd names the command in messages. GP_OK, GP_EUSAGE or
 * GP_ECONFIG.
 */
int gp_cfg_from_args(const struct gp_cfg_section *s, size_t ns, const char *cmd, int argc,
                     char **argv, char *config_file, size_t config_len, bool *help, char *err,
                     size_t errlen);

/* Prints one "--flag VALUE (yaml: section.key)\n    help [default]" entry per key. */
void gp_cfg_usage(FILE *out, const struct gp_cfg_section *s, size_t ns);

/*
 * Writes one man(7) .TP entry per key, escaped for roff (lib/cfg_man.c):
 * the flag with its YAML key, or with yaml true the YAML key with its
 * type and flag; help and default follow. The man pages are built from it.
 */
void gp_cfg_man(FILE *out, const struct gp_cfg_section *s, size_t ns, bool yaml);

/* Parses a byte size: an integer with an optional unit (B, KB, MB, GB, TB
 * powers of 1000; KiB, MiB, GiB, TiB powers of 1024). */
int gp_parse_bytes(const char *s, uint64_t *out, char *err, size_t errlen);

/* Splits "ADDR:PORT" / "[V6]:PORT" into host and port. */
int gp_parse_listen(const char *s, char *host, size_t hostlen, unsigned *port, char *err,
                    size_t errlen);

#endif
