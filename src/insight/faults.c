/*
 * faults.c - the fault catalog's rows (faults.h, docs/health.md).
 *
 * XIDs: the codes NVIDIA's Xid catalog lists for Ampere and later that a
 * training fleet meets, with NVIDIA's immediate-action bucket and the
 * action gpulse asks for: RESTART_APP -> restart the application,
 * RESET_GPU -> reset the GPU, RESTART_BM -> reboot the node, IGNORE ->
 * none; where NVIDIA's investigatory action or its ECC guidance says the
 * card itself is at fault (a row remap failure), drain and inspect.
 */
#include "insight/faults.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *const gp_fault_action_names[GP_FA__COUNT] = {
#define GP_FA_NAME_(id, name, words) name,
    GP_FAULT_ACTIONS(GP_FA_NAME_)
#undef GP_FA_NAME_
};

const char *const gp_fault_action_words[GP_FA__COUNT] = {
#define GP_FA_WORDS_(id, name, words) words,
    GP_FAULT_ACTIONS(GP_FA_WORDS_)
#undef GP_FA_WORDS_
};

/* X(code, HW: points at the hardware (the card, its memory, links or
 * firmware) or APP: usually the application's own fault, title, NVIDIA
 * bucket, severity, action, explanation) */
#define GP_FAULT_XIDS(X)                                                                           \
    X(8, APP, "GPU stopped processing", "RESTART_APP", WARNING, RESTART_APP,                            \
      "A channel timed out and the driver stopped it: the application on the GPU was killed. "    \
      "Restart it; if it recurs on the same GPU, suspect the hardware.")                           \
    X(13, APP, "graphics engine exception", "RESTART_APP", WARNING, RESTART_APP,                        \
      "Usually the application's own fault (an illegal instruction or out-of-range access); "     \
      "restart it. Repeated on one GPU across jobs, it points at the hardware.")                   \
    X(31, APP, "GPU memory page fault", "RESTART_APP", WARNING, RESTART_APP,                            \
      "The application touched memory it does not own (an MMU fault), almost always a bug in the " \
      "application or framework: restart it.")                                                    \
    X(43, APP, "GPU stopped processing (channel reset)", "RESTART_APP", WARNING, RESTART_APP,          \
      "The driver reset a channel after an application fault; the GPU itself is fine: restart "   \
      "the application.")                                                                          \
    X(45, APP, "preemptive cleanup", "IGNORE", INFO, NONE,                                              \
      "Channels torn down because their process exited or was killed, usually after another "    \
      "error: nothing to do by itself.")                                                          \
    X(48, HW, "double-bit ECC error", "RESET_GPU", CRITICAL, RESET_GPU,                                \
      "An uncorrectable memory error: the process that hit it was stopped. Reset the GPU so the " \
      "row is remapped; replace the card if it recurs.")                                           \
    X(61, HW, "internal micro-controller breakpoint", "RESET_GPU", CRITICAL, RESET_GPU,                \
      "The GPU's internal micro-controller hit a breakpoint: reset the GPU.")                      \
    X(62, HW, "internal micro-controller halt", "RESET_GPU", CRITICAL, RESET_GPU,                      \
      "The GPU's internal micro-controller halted: reset the GPU.")                                \
    X(63, HW, "row remap or page retirement recorded", "RESET_GPU", WARNING, RESET_GPU,               \
      "A failing memory row was marked for remapping (or a page for retirement); it takes effect " \
      "at the next GPU reset: reset the GPU when its jobs allow.")                                 \
    X(64, HW, "row remap or page retirement failure", "RESET_GPU", CRITICAL, DRAIN_INSPECT,            \
      "Remapping a failing row (or retiring a page) failed: NVIDIA's guidance is to replace the "  \
      "card. Drain the node and have the GPU inspected.")                                          \
    X(74, HW, "NVLink error", "RESET_GPU", CRITICAL, RESET_GPU,                                        \
      "An NVLink fault: reset the GPU (all GPUs of an NVSwitch system together); if it recurs, "   \
      "drain the node and inspect the links and baseboard.")                                       \
    X(79, HW, "GPU has fallen off the bus", "RESTART_BM", CRITICAL, REBOOT,                           \
      "The GPU no longer answers on PCIe: reboot the node; if it recurs, drain it and inspect "   \
      "the card, riser, power and slot.")                                                          \
    X(92, HW, "high single-bit ECC error rate", "IGNORE", WARNING, NONE,                               \
      "Correctable memory errors at a high rate: the data is fine, but a rising rate predicts "   \
      "uncorrectable errors. Watch it.")                                                           \
    X(94, HW, "contained ECC error", "RESTART_APP", WARNING, RESTART_APP,                              \
      "An uncorrectable memory error that the GPU contained to the application that touched it: " \
      "restart that application; the row is remapped at the next GPU reset.")                     \
    X(95, HW, "uncontained ECC error", "RESET_GPU", CRITICAL, RESET_GPU,                               \
      "An uncorrectable memory error the GPU could not contain: every application on it is "      \
      "affected. Reset the GPU.")                                                                  \
    X(109, APP, "context switch timeout", "RESTART_APP", WARNING, RESTART_APP,                          \
      "A context switch timed out: restart the application; if it recurs, reset the GPU.")        \
    X(119, HW, "GSP RPC timeout", "RESET_GPU", CRITICAL, RESET_GPU,                                    \
      "The GPU System Processor stopped answering the driver: reset the GPU (reboot if the "      \
      "reset fails).")                                                                              \
    X(120, HW, "GSP error", "RESET_GPU", CRITICAL, RESET_GPU,                                          \
      "The GPU System Processor reported an error: reset the GPU.")                                \
    X(140, HW, "unrecovered ECC error", "RESET_GPU", CRITICAL, RESET_GPU,                              \
      "The GPU found an uncorrectable memory error it could not recover from: reset the GPU.")    \
    X(154, HW, "GPU recovery action changed", "RESTART_BM", CRITICAL, REBOOT,                          \
      "The driver says the GPU needs recovery (its message names a GPU reset or a node reboot); " \
      "gpulse sees only the code, so it asks for the stronger: reboot the node.")

static const struct gp_fault xids[] = {
#define GP_FX_ROW_(code, cause, title, bucket, sev, act, expl)                                     \
    {code, "xid_" #code, title, bucket, GP_SEV_##sev, GP_FA_##act, GP_FX_##cause, expl},
#define GP_FX_HW true
#define GP_FX_APP false
    GP_FAULT_XIDS(GP_FX_ROW_)
#undef GP_FX_ROW_
#define GP_FC_ROW_(id, name, sev, act, title, expl) {0, name, title, "", GP_SEV_##sev, GP_FA_##act, true, expl},
    GP_FAULT_CONDS(GP_FC_ROW_)
#undef GP_FC_ROW_
};

#define NXIDS (sizeof xids / sizeof xids[0] - GP_FC__COUNT)

static const struct gp_fault unknown_xid = {
    0, "xid_other", "an XID the catalog does not list", "", GP_SEV_WARNING, GP_FA_NONE, false,
    "An XID gpulse's catalog does not list: look it up in NVIDIA's Xid catalog "
    "(docs.nvidia.com/deploy/xid-errors) for its resolution."};

const struct gp_fault *gp_fault_cond(enum gp_fault_cond c)
{
    return &xids[NXIDS + (unsigned)c];
}

const struct gp_fault *gp_fault_xid(unsigned xid)
{
    for (size_t i = 0; i < NXIDS; i++)
        if (xids[i].xid == xid)
            return &xids[i];
    return &unknown_xid;
}

bool gp_fault_xid_known(unsigned xid)
{
    return gp_fault_xid(xid) != &unknown_xid;
}

const struct gp_fault *gp_fault_table(unsigned *n)
{
    *n = (unsigned)(sizeof xids / sizeof xids[0]);
    return xids;
}

const struct gp_fault *gp_fault_stronger(const struct gp_fault *a, const struct gp_fault *b)
{
    if (!a || !b)
        return a ? a : b;
    if (a->action != b->action)
        return a->action > b->action ? a : b;
    return b->severity > a->severity ? b : a;
}

void gp_fault_runbook(const struct gp_fault *f, char *out, size_t len)
{
    if (!len)
        return;
    char xid[24] = "";
    if (f->xid)
        snprintf(xid, sizeof xid, "XID %u, ", f->xid);
    int n = snprintf(out, len, "%s (%s%s). %s", gp_fault_action_words[f->action], xid, f->title,
                     f->explanation);
    if (n > 0)
        out[0] = (char)toupper((unsigned char)out[0]);
}
