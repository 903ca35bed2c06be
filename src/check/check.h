/*
 * check.h - `gpulse check`: a preflight of this node before a job
 * (docs/health.md, "Preflight").
 *
 * The command reads the GPUs once through the agent's own NVML source
 * (src/sources/nvml*.c), the XIDs of the last hours from the kernel log
 * (sources/kmsg_xid.h), and evaluates a fixed list of checks over them
 * (gp_check_eval, pure, so unit tests run it on made-up frames). Every
 * finding names a row of the fault catalog (insight/faults.h) for its
 * severity and action, or, for the checks the catalog has no fault for
 * (a missing GPU, a wrong model or driver, a hot idle GPU, a lowered
 * power limit), this module's own action in CHECKS below. The result is
 * printed (text or --json) and optionally pushed to the server.
 *
 * Exit status: 0 every check passed (or was skipped, with its reason),
 * 1 a check failed, 2 the node could not be checked (usage or config
 * error, no NVML, no GPU readings).
 */
#ifndef GP_CHECK_CHECK_H
#define GP_CHECK_CHECK_H

#include "insight/faults.h"
#include "lib/buf.h"
#include "lib/cfg.h"
#include "sources/frame.h"
#include "sources/kmsg_xid.h"

#include <stdbool.h>
#include <stdint.h>

/* X(id, name, action when the catalog has no row for it) */
#define GP_CHECKS(X)                                                                               \
    X(GPUS, "gpus_present", REBOOT)                                                                \
    X(MODEL, "gpu_model", DRAIN_INSPECT)                                                           \
    X(LOST, "gpu_lost", REBOOT)                                                                    \
    X(ECC, "ecc_uncorrectable", RESET_GPU)                                                         \
    X(RETIRE, "page_retirement_pending", RESET_GPU)                                                \
    X(REMAP, "row_remap", RESET_GPU)                                                               \
    X(XID, "recent_xid", RESET_GPU)                                                                \
    X(PCIE, "pcie_link", DRAIN_INSPECT)                                                            \
    X(CLOCKS, "clocks", DRAIN_INSPECT)                                                             \
    X(TEMP, "temperature", DRAIN_INSPECT)                                                          \
    X(POWER, "power_limit", DRAIN_INSPECT)                                                         \
    X(DRIVER, "driver_version", DRAIN_INSPECT)                                                     \
    X(CUDA, "cuda_version", DRAIN_INSPECT)

enum gp_check_id {
#define GP_CK_ENUM_(id, name, act) GP_CK_##id,
    GP_CHECKS(GP_CK_ENUM_)
#undef GP_CK_ENUM_
    GP_CK__COUNT
};
extern const char *const gp_check_names[GP_CK__COUNT];

enum gp_check_status { GP_CHECK_OK, GP_CHECK_FAILED, GP_CHECK_SKIPPED };

struct gp_check_item {
    enum gp_check_id id;
    enum gp_check_status status;
    int gpu;                     /* the GPU's index, -1 for the node */
    char uuid[96];
    char reason[256];
    const struct gp_fault *fault; /* the catalog's row, NULL when it has none */
    enum gp_fault_action action; /* the fault's action, else the check's own */
};

/* What the node must look like. Zero / "" = not checked. */
struct gp_check_expect {
    unsigned gpus;              /* GPUs present */
    const char *model;          /* a substring of each GPU's model name */
    const char *driver;         /* the fleet's driver version */
    const char *driver_source;  /* where it came from, for reasons: "--driver-version", "the server" */
    const char *cuda;           /* the fleet's CUDA version, "12.4" */
    unsigned max_temp_c;        /* an idle GPU at or above this is failing its cooling */
    unsigned min_power_pct;     /* enforced power limit at least this % of the model's default */
    int64_t xid_window_ms;      /* XIDs this recent count */
};

/* The kernel log's XIDs as read (xids may be NULL when the log was not
 * read; then why says why). */
struct gp_check_xids {
    bool read;
    char why[768];
    const struct gp_kxid *x;
    unsigned n;
    unsigned malformed;
    int64_t now_us;             /* CLOCK_MONOTONIC now, as the log's times */
};

struct gp_check_result {
    unsigned n, cap;
    struct gp_check_item *items;
    unsigned failed, skipped;
    enum gp_fault_action action; /* the strongest action of the failed checks */
};

/* Evaluates every check over frame f's GPUs. GP_OK or GP_ENOMEM. */
int gp_check_eval(const struct gp_frame *f, const struct gp_check_expect *e,
                  const struct gp_check_xids *xs, struct gp_check_result *r);
void gp_check_result_free(struct gp_check_result *r);

/* 0, 1 as the header says (2 is the command's). */
int gp_check_exit_code(const struct gp_check_result *r);

/* The result as JSON (docs/health.md): node, time, status, action,
 * checks[]. */
void gp_check_json(const struct gp_check_result *r, const char *node, int64_t time_ms, unsigned ngpus,
                   struct gp_buf *b);

/* The result as text, a line per item, failures first. */
void gp_check_text(const struct gp_check_result *r, const char *node, struct gp_buf *b);

int gp_check_main(int argc, char **argv);

/* The `check:` settings table, for `gpulse help-man` (the man pages). */
struct gp_cfg_section gp_check_cfg_section(void);

#endif
