/* Fuzz target: the `notify:` section of the server config (notify/config.h),
 * and redaction with whatever secrets it configured. */
#include "notify/config.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_notify_config c;
    gp_notify_config_init(&c);
    char err[512];
    if (gp_notify_config_parse((const char *)data, size, &c, err, sizeof err) == 0) {
        char out[128];
        gp_notify_redact(c.recv, c.nrecv, "post http://x/hook failed: token abc%2F", out, sizeof out);
    }
    gp_notify_config_free(&c);
    return 0;
}
