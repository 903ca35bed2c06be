/*
 * faults.h - the fault catalog: what each GPU fault means and what an
 * operator does about it, in one table (docs/health.md).
 *
 * A fault is an XID the driver reported (by code) or a condition gpulse
 * reads (an ECC or row-remap state, a GPU off the bus, a PCIe link below
 * its maximum, throttling that persists). Each row gives a severity, an
 * action and the explanation a person reads in the alert, the
 * notifications and the dashboard. The XID rows follow the "Resolution
 * Bucket (Immediate Action)" column of NVIDIA's Xid catalog (Ampere and
 * later); the ECC rows NVIDIA's page-retirement and row-remapping
 * guidance (a pending remap or retirement is applied by a GPU reset; a
 * remap failure means the card is replaced).
 *
 * Actions are ordered from mild to strong, so "the strongest action" of
 * several faults is their maximum. Severity maps to health: warning
 * makes a GPU degraded, critical unhealthy. The detectors, the health
 * states and a preflight check all read this table; none keeps its own
 * list of XIDs.
 */
#ifndef GP_INSIGHT_FAULTS_H
#define GP_INSIGHT_FAULTS_H

#include "insight/detect.h"

#include <stdbool.h>
#include <stddef.h>

/* X(id, name (JSON, config), words for "what to do") */
#define GP_FAULT_ACTIONS(X)                                                                        \
    X(NONE, "none", "no action needed")                                                            \
    X(RESTART_APP, "restart_app", "restart the application")                                      \
    X(RESET_GPU, "reset_gpu", "reset the GPU")                                                     \
    X(REBOOT, "reboot", "reboot the node")                                                         \
    X(DRAIN_INSPECT, "drain_inspect", "drain the node and inspect the hardware")

enum gp_fault_action {
#define GP_FA_ENUM_(id, name, words) GP_FA_##id,
    GP_FAULT_ACTIONS(GP_FA_ENUM_)
#undef GP_FA_ENUM_
    GP_FA__COUNT
};
extern const char *const gp_fault_action_names[GP_FA__COUNT];
extern const char *const gp_fault_action_words[GP_FA__COUNT];

/* The conditions that are not XIDs: X(id, name, severity, action, title,
 * explanation). */
#define GP_FAULT_CONDS(X)                                                                          \
    X(ECC_DBE, "ecc_uncorrectable", CRITICAL, RESET_GPU,                                           \
      "uncorrectable ECC errors since the last reset",                                            \
      "Double-bit (uncorrectable) memory errors since the driver loaded: data on this GPU may be " \
      "wrong. Let jobs checkpoint, then reset the GPU so the bad row is remapped (or the page "    \
      "retired); replace the card if they return.")                                               \
    X(RETIRED_PENDING, "page_retirement_pending", WARNING, RESET_GPU,                              \
      "pages pending retirement",                                                                  \
      "Memory pages are marked for retirement but still in use until the driver reloads: reset "  \
      "the GPU (or reboot) when its jobs allow, so the pages are retired.")                        \
    X(REMAP_PENDING, "row_remap_pending", WARNING, RESET_GPU, "a row remap pending",               \
      "A memory row is marked for remapping and takes effect at the next GPU reset (NVIDIA's "    \
      "row-remapping guidance): reset the GPU when its jobs allow.")                               \
    X(REMAP_FAILURE, "row_remap_failure", CRITICAL, DRAIN_INSPECT, "a row remap failure",          \
      "The GPU ran out of spare rows to remap a failing memory row: per NVIDIA's row-remapping "  \
      "guidance the card must be replaced. Drain the node and have the GPU inspected (RMA).")     \
    X(REMAP_UNCORRECTABLE, "rows_remapped_uncorrectable", INFO, NONE,                              \
      "rows remapped for uncorrectable errors",                                                    \
      "Rows were remapped after uncorrectable errors and the remapping worked: nothing to do "    \
      "unless remap failures or new uncorrectable errors follow.")                                 \
    X(HW_XID, "hardware_xid", CRITICAL, RESET_GPU, "a hardware XID",                             \
      "The driver reported XIDs that point at the hardware, but not which code (no last-XID "     \
      "reading): reset the GPU, and look the code up in the kernel log (dmesg) and NVIDIA's Xid " \
      "catalog.")                                                                                  \
    X(LOST, "gpu_lost", CRITICAL, REBOOT, "the GPU fell off the bus",                              \
      "The GPU stopped answering on PCIe (NVML GPU_IS_LOST, XID 79): reboot the node; if it "     \
      "happens again, drain it and inspect the card, riser, power and slot.")                      \
    X(PCIE_DEGRADED, "pcie_link_degraded", WARNING, DRAIN_INSPECT,                                 \
      "the PCIe link below its maximum",                                                           \
      "The PCIe link trained below the width or generation the card and slot support, so host "   \
      "transfers are slower: drain the node and reseat the card or riser, check the slot and "    \
      "BIOS link settings.")                                                                       \
    X(THROTTLED, "throttling_persistent", WARNING, DRAIN_INSPECT, "clocks held down",              \
      "The clocks stay held down by temperature or power: the card and every rank of its job "    \
      "run slower. Drain the node and inspect cooling, fans, airflow and the power limit.")

enum gp_fault_cond {
#define GP_FC_ENUM_(id, name, sev, act, title, expl) GP_FC_##id,
    GP_FAULT_CONDS(GP_FC_ENUM_)
#undef GP_FC_ENUM_
    GP_FC__COUNT
};

/* One row of the catalog. xid 0: a condition row. */
struct gp_fault {
    unsigned xid;
    const char *name;        /* "xid_79", "row_remap_pending" */
    const char *title;       /* a few words: "GPU has fallen off the bus" */
    const char *bucket;      /* NVIDIA's resolution bucket for an XID, "" else */
    enum gp_severity severity;
    enum gp_fault_action action;
    bool hardware;           /* points at the hardware, not the application */
    const char *explanation; /* what it means and what to do, for people */
};

/* The row of condition c. */
const struct gp_fault *gp_fault_cond(enum gp_fault_cond c);

/* The row of XID code xid; an XID the catalog does not list gets a
 * generic row (warning, no action, "look it up"), never NULL. */
const struct gp_fault *gp_fault_xid(unsigned xid);

/* true when the catalog lists xid. */
bool gp_fault_xid_known(unsigned xid);

/* Rows in the catalog (XIDs then conditions), for docs and the API:
 * *n gets the count. */
const struct gp_fault *gp_fault_table(unsigned *n);

/* The stronger of two faults: the stronger action, then the higher
 * severity; a NULL loses. */
const struct gp_fault *gp_fault_stronger(const struct gp_fault *a, const struct gp_fault *b);

/* What an alert about fault f says to do: "Reset the GPU: XID 48
 * (double-bit ECC error). <explanation>" into out (always terminated). */
void gp_fault_runbook(const struct gp_fault *f, char *out, size_t len);

#endif
