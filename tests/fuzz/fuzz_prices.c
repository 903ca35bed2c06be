/* Fuzz target: the gpu_prices list (query/cost.h) from YAML and flags. */
#include "query/cost.h"
#include "lib/err.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    struct gp_prices *p = malloc(sizeof *p);
    if (!s || !p) {
        free(s);
        free(p);
        return 0;
    }
    memcpy(s, data, size);
    s[size] = '\0';
    char err[256];
    int rc = gp_prices_parse(p, s, 1.5, err, sizeof err);
    if (rc != GP_OK && rc != GP_ECONFIG)
        abort();
    if (rc == GP_OK) {
        if (p->n > GP_PRICES_MAX || !(p->fallback >= 0) || p->fallback > 1e6)
            abort();
        for (size_t i = 0; i < p->n; i++) {
            double v = gp_prices_of(p, p->e[i].name, strlen(p->e[i].name));
            if (v != p->e[i].usd) /* an entry prices its own model */
                abort();
        }
    } else if (p->n || !err[0]) {
        abort(); /* an error leaves the list empty and says why */
    }
    (void)gp_prices_of(p, s, size);
    free(s);
    free(p);
    return 0;
}
