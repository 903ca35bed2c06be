/*
 * pickle.h - a bounded reader of the data subset of Python's pickle
 * format (protocols 2 to 5): None, booleans, integers of up to 64 bits,
 * floats, str, bytes, lists, tuples and dicts, with the memo. It exists
 * for PyTorch's Flight Recorder dumps (sources/flightrec.h), which
 * torch's C++ pickler and Python's pickle.dump both write in this subset.
 *
 * It is a reader of outside data, so it never builds objects: GLOBAL,
 * REDUCE, BUILD and the other opcodes that call code are refused
 * ("unsupported opcode"), as is anything outside the subset. The input is
 * not copied: strings point into it, so it must outlive the result.
 * Bounds: GP_PICKLE_MAX_VALUES values and GP_PICKLE_MAX_EDGES container
 * slots (GP_ETOOBIG beyond), the stack and memo within those; a value
 * fetched twice from the memo is shared, not copied, so nothing grows
 * faster than the input.
 */
#ifndef GP_LIB_PICKLE_H
#define GP_LIB_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#define GP_PICKLE_MAX_VALUES (1u << 21)
#define GP_PICKLE_MAX_EDGES (1u << 22)
#define GP_PICKLE_NONE UINT32_MAX /* "no value" from the lookups */

enum gp_pickle_type { GP_PK_NONE, GP_PK_BOOL, GP_PK_INT, GP_PK_FLOAT, GP_PK_STR, GP_PK_BYTES,
                      GP_PK_LIST, GP_PK_TUPLE, GP_PK_DICT };

struct gp_pickle_val {
    enum gp_pickle_type type;
    int64_t i;          /* BOOL (0/1), INT */
    double f;           /* FLOAT */
    const char *s;      /* STR (UTF-8 as written, not checked), BYTES: into the input */
    size_t len;
    uint32_t first, n;  /* containers: n slots from edges[first]; a dict's are key, value, ... */
};

struct gp_pickle {
    struct gp_pickle_val *v;
    uint32_t nv;
    uint32_t *edges;    /* container slots, each a value index */
    uint32_t nedges;
    uint32_t root;
};

/*
 * Reads one pickle from buf[0..len) into *out (which the caller frees
 * with gp_pickle_free, also on failure). GP_OK; GP_EPARSE with a detail
 * naming the offset ("truncated at offset 12", "unsupported opcode 0x63
 * 'c' at offset 2"); GP_ETOOBIG; GP_ENOMEM.
 */
int gp_pickle_parse(const uint8_t *buf, size_t len, struct gp_pickle *out, char *err, size_t errlen);
void gp_pickle_free(struct gp_pickle *p); /* accepts a zeroed one */

/* The value of key `key` (a str) in dict d; GP_PICKLE_NONE when d is
 * not a dict or has no such key. */
uint32_t gp_pickle_get(const struct gp_pickle *p, uint32_t d, const char *key);
/* Slot i of list or tuple c; GP_PICKLE_NONE when out of range or c is
 * not one. */
uint32_t gp_pickle_item(const struct gp_pickle *p, uint32_t c, uint32_t i);
/* Whether value x is an int (or bool), and its value. */
int gp_pickle_int(const struct gp_pickle *p, uint32_t x, int64_t *out);
/* Whether value x is a str, and it (not NUL-terminated) and its length. */
int gp_pickle_str(const struct gp_pickle *p, uint32_t x, const char **s, size_t *len);

#endif
