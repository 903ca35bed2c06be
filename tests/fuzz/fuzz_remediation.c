/* Fuzz target: remediation entries from the server config, and the
 * substitution of hostile label values into what they parse to. The
 * input is "ENTRY\0NODE": a parsed rule must hold only terminated
 * arguments, a command name without '-' or placeholders, and an
 * expansion that succeeds only with a node value that passes the host
 * name check (never one with '/', a leading '.' or '..'), and a path
 * check that never crashes; a built-in action ("@slurm-drain") holds no
 * arguments. */
#include "insight/alert_event.h"
#include "insight/remediate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t n = strlen(s);
    const char *node = n < size ? s + n + 1 : "n1";
    static struct gp_rem_rule r;
    char err[256];
    if (gp_rem_parse_rule(s, &r, err, sizeof err) == 0 && r.action != GP_REM_COMMAND) {
        if (r.argc || r.action >= GP_REM_ACTION__COUNT)
            abort(); /* a built-in action has no command */
    } else if (gp_rem_parse_rule(s, &r, err, sizeof err) == 0) {
        if (!r.argc || r.argc > GP_REM_MAX_ARGS || r.argv[0][0] == '-' || !r.argv[0][0] ||
            strchr(r.argv[0], '{'))
            abort();
        for (unsigned i = 0; i < r.argc; i++)
            if (!memchr(r.argv[i], 0, GP_REM_ARG_LEN))
                abort();
        struct gp_obs_key k = {.rank = 1};
        strncpy(k.node, node, sizeof k.node - 1);
        strcpy(k.gpu, "0");
        strcpy(k.job, "j");
        struct gp_alert_event ev = {.kind = "k", .key = &k, .to = GP_ALERT_FIRING};
        static char out[GP_REM_MAX_ARGS][GP_REM_ARG_LEN];
        int bad;
        int rc = gp_rem_expand(&r, &ev, out, &bad, err, sizeof err);
        bool uses_node = false;
        for (unsigned i = 0; i < r.argc; i++)
            uses_node |= strstr(r.argv[i], "{node}") != NULL;
        if (rc == 0 && uses_node && !gp_rem_value_ok("node", k.node))
            abort(); /* a hostile value got in */
        if (rc == 0 && uses_node && (strchr(k.node, '/') || k.node[0] == '.' || strstr(k.node, "..")))
            abort(); /* a host name that could walk a path */
        if (rc != 0 && bad >= 0 && !strstr(err, "label "))
            abort(); /* a refusal names its placeholder */
        if (rc == 0)
            gp_rem_check_paths(&r, out, "/tmp", err, sizeof err); /* must not crash */
        for (unsigned i = 0; rc == 0 && i < r.argc; i++)
            if (strchr(out[i], '\n') && !strchr(r.argv[i], '\n'))
                abort();
    }
    free(s);
    return 0;
}
