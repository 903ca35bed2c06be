/*
 * plural.h - the word for a count users read: "1 node", "2 nodes".
 * Callers pass both forms, so irregular words ("process", "processes")
 * and counts held as doubles ("%.0f errors") need nothing else.
 */
#ifndef GP_PLURAL_H
#define GP_PLURAL_H

/* one when n is exactly 1, else many: printf("%u %s", n, gp_plural(n, "GPU", "GPUs")). */
static inline const char *gp_plural(double n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

#endif
