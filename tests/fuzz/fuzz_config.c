/* Fuzz target: the YAML configuration reader. */
#include "agent/config.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_agent_config c;
    char err[512];
    gp_agent_config_defaults(&c);
    if (gp_agent_config_parse_yaml(&c, (const char *)data, size, err, sizeof err) == 0)
        (void)gp_agent_config_validate(&c, err, sizeof err);
    return 0;
}
