/* Fuzz target: the Kubernetes API server's answer to GET
 * /api/v1/nodes/NAME, as remediation reads it (gp_rem_k8s_taints). The
 * input is the answer; for cordon and uncordon, what comes back is NULL
 * or an array of objects that holds gpulse's taint exactly once when
 * cordoning and never when uncordoning, with a terminated
 * resourceVersion. */
#include "insight/remediate.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct gp_rem_k8s k = {.taint_key = "gpulse.io/unhealthy"};
    for (int cordon = 0; cordon < 2; cordon++) {
        char rv[128];
        memset(rv, 'x', sizeof rv);
        json_t *t = gp_rem_k8s_taints((const char *)data, size, &k, cordon, "gpu_xid", rv, sizeof rv);
        if (!t)
            continue;
        if (!json_is_array(t) || !memchr(rv, 0, sizeof rv))
            abort();
        size_t i, ours = 0;
        json_t *e;
        json_array_foreach(t, i, e) {
            if (!json_is_object(e))
                abort();
            const char *key = json_string_value(json_object_get(e, "key"));
            ours += key && !strcmp(key, k.taint_key);
        }
        if (ours != (size_t)cordon)
            abort();
        json_decref(t);
    }
    return 0;
}
