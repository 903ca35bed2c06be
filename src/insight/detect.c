/* detect.c - the detector table and its defaults (detect.h). The
 * detectors themselves live in detect_*.c, listed in detect_fns.c. */
#include "detect.h"
#include "faults.h"

#include "lib/duration.h"
#include "lib/err.h"

#include <string.h>

const char *const gp_severity_names[GP_SEV__COUNT] = {
#define GP_SEV_NAME_(id, name) name,
    GP_SEVERITIES(GP_SEV_NAME_)
#undef GP_SEV_NAME_
};

int gp_severity_parse(const char *s, enum gp_severity *out)
{
    for (int i = 0; i < GP_SEV__COUNT; i++)
        if (s && !strcmp(s, gp_severity_names[i])) {
            *out = (enum gp_severity)i;
            return GP_OK;
        }
    return GP_EPARSE;
}

const struct gp_detector_info gp_detectors[GP_DET__COUNT] = {
#define GP_DET_ROW_(id, name, scope, sev, thr, clr, for_, runbook) \
    [GP_DET_##id] = {name, GP_SCOPE_##scope, GP_SEV_##sev, thr, clr, for_, runbook},
    GP_DETECTORS(GP_DET_ROW_)
#undef GP_DET_ROW_
};

void gp_detector_cfg_defaults(struct gp_detector_cfg cfg[GP_DET__COUNT])
{
    for (int i = 0; i < GP_DET__COUNT; i++) {
        const struct gp_detector_info *d = &gp_detectors[i];
        int64_t ms = 0;
        char err[64];
        /* the table's durations are constants; a bad one fails the unit test */
        if (gp_parse_duration_ms(d->for_, &ms, err, sizeof err) != GP_OK)
            ms = 0;
        cfg[i] = (struct gp_detector_cfg){
            .enabled = true,
            .severity = d->severity,
            .threshold = d->threshold,
            .clear = d->clear,
            .for_ms = ms,
            .cooldown_ms = 10 * 60 * 1000,
            .step_multiple = GP_HANG_STEP_MULTIPLE,
            .checkpoint_multiple = GP_HANG_CHECKPOINT_MULTIPLE,
            .min_stall_ms = GP_HANG_MIN_STALL_MS,
            .first_step_ms = GP_HANG_FIRST_STEP_MS,
        };
    }
}

bool gp_xid_is_hardware(double xid)
{
    return xid > 0 && xid < 65536 && xid == (unsigned)xid && gp_fault_xid((unsigned)xid)->hardware;
}
