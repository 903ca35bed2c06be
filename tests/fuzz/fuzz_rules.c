/* Fuzz target: the `rules:` section of the server config (insight/rules.h),
 * and the summary templates over the parsed rules. */
#include "insight/rules.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_rules rs = {0};
    char err[512];
    if (gp_rules_parse_yaml((const char *)data, size, &rs, err, sizeof err) == 0)
        for (size_t i = 0; i < rs.n; i++) {
            char out[256];
            gp_rule_template(rs.r[i].summary, rs.r[i].threshold, NULL, 0, out, sizeof out);
        }
    gp_rules_free(&rs);
    return 0;
}
