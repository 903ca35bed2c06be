/*
 * detect_fns.c - the detector functions in the order of GP_DETECTORS
 * (detect.h), so the engine runs gp_detect_fns[d] with gp_detectors[d]'s
 * settings. The static assertion below keeps the two tables the same
 * length; the unit tests check each entry against its detector's kind.
 */
#include "detect_util.h"

const gp_detect_fn gp_detect_fns[GP_DET__COUNT] = {
    [GP_DET_MEMORY_HIGH] = gp_det_memory_high,
    [GP_DET_OOM_PREDICTED] = gp_det_oom_predicted,
    [GP_DET_MEMORY_LEAK] = gp_det_memory_leak,
    [GP_DET_FRAGMENTATION] = gp_det_fragmentation,
    [GP_DET_SATURATED] = gp_det_saturated,
    [GP_DET_IDLE_ALLOCATED] = gp_det_idle_allocated,
    [GP_DET_DATA_STARVED] = gp_det_data_starved,
    [GP_DET_NO_TENSOR_CORES] = gp_det_no_tensor_cores,
    [GP_DET_MEMORY_BOUND] = gp_det_memory_bound,
    [GP_DET_THROTTLED] = gp_det_throttled,
    [GP_DET_HW_ERRORS] = gp_det_hw_errors,
    [GP_DET_PCIE_DEGRADED] = gp_det_pcie_degraded,
    [GP_DET_STRAGGLER] = gp_det_straggler,
    [GP_DET_BUDGET] = gp_det_budget,
    [GP_DET_HANG] = gp_det_hang,
    [GP_DET_LOW_GOODPUT] = gp_det_low_goodput,
};

_Static_assert(GP_DET__COUNT == 16, "a new detector needs its function in gp_detect_fns");
