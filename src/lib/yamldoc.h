/*
 * yamldoc.h - a top-level section of a YAML config file as a libyaml
 * document tree, for the sections the flat key table (cfg.h) cannot
 * hold: lists of rules, receivers and routes. Errors name the line.
 */
#ifndef GP_LIB_YAMLDOC_H
#define GP_LIB_YAMLDOC_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

/*
 * Loads yaml[0..len) into *d and finds the top-level key `name`: *sec is
 * its value, or NULL when the file has none. GP_OK (the caller deletes
 * *d with yaml_document_delete), GP_EPARSE (not YAML: line and problem in
 * err), GP_ECONFIG (the key given twice) or GP_ENOMEM; on error nothing
 * is left to free.
 */
int gp_yaml_section(const char *yaml, size_t len, const char *name, yaml_document_t *d,
                    const yaml_node_t **sec, char *err, size_t errlen);

/*
 * Reads a config file (at most 1 MiB) into *out (NUL-terminated, the
 * caller frees) and its length into *len. GP_OK, GP_ECONFIG (cannot open,
 * too large: named in err) or GP_ENOMEM.
 */
int gp_yaml_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen);

/* A scalar's text, or NULL for another node (or NULL). */
const char *gp_yaml_scalar(const yaml_node_t *n);

/* The 1-based line a node starts on; 0 for NULL. */
unsigned gp_yaml_line(const yaml_node_t *n);

/* A scalar's text copied into out (size len): GP_OK, or GP_ECONFIG naming
 * the line and `what` (not a single value, longer than len - 1). */
int gp_yaml_text(const yaml_node_t *v, const char *what, char *out, size_t len, char *err,
                 size_t errlen);

/* A duration scalar ("30s", "5m") in milliseconds, >= 0: GP_OK or
 * GP_ECONFIG naming the line. */
int gp_yaml_duration(const yaml_node_t *v, const char *what, int64_t *out, char *err,
                     size_t errlen);

#endif
