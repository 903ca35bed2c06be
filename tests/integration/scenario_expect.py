#!/usr/bin/env python3
"""Reads a stand-in NVML scenario (tests/fakenvml/README.md) and prints the
series the agent must expose for it, one per line:
    METRIC UUID [PID] VALUE
These are the values the scenario sets at start (before any timeline
event), converted to the exposed units. Used by the integration tests to
compare /metrics and Prometheus's query API against the scenario."""
import shlex
import sys

MIB = 1 << 20
DIRECT = {  # scenario key -> (metric, factor)
    "util_gpu": ("DCGM_FI_DEV_GPU_UTIL", 1),
    "util_mem": ("DCGM_FI_DEV_MEM_COPY_UTIL", 1),
    "enc": ("DCGM_FI_DEV_ENC_UTIL", 1),
    "dec": ("DCGM_FI_DEV_DEC_UTIL", 1),
    "temp": ("DCGM_FI_DEV_GPU_TEMP", 1),
    "mem_temp": ("DCGM_FI_DEV_MEMORY_TEMP", 1),
    "power": ("DCGM_FI_DEV_POWER_USAGE", 1e-3),
    "power_limit": ("gpulse_gpu_power_limit_watts", 1e-3),
    "clock_sm": ("DCGM_FI_DEV_SM_CLOCK", 1),
    "clock_mem": ("DCGM_FI_DEV_MEM_CLOCK", 1),
    "clock_sm_max": ("gpulse_gpu_sm_clock_max_hertz", 1e6),
    "clock_mem_max": ("gpulse_gpu_memory_clock_max_hertz", 1e6),
    "mem_total": ("gpulse_gpu_memory_total_bytes", 1),
    "mem_used": ("DCGM_FI_DEV_FB_USED", 1.0 / MIB),
    "mem_reserved": ("DCGM_FI_DEV_FB_RESERVED", 1.0 / MIB),
    "pcie_replay": ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 1),
    "ecc_sbe_vol": ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 1),
    "ecc_dbe_vol": ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 1),
    "ecc_sbe_agg": ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", 1),
    "ecc_dbe_agg": ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 1),
    "remap_cor": ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 1),
    "remap_unc": ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 1),
    "remap_failure": ("DCGM_FI_DEV_ROW_REMAP_FAILURE", 1),
    "remap_pending": ("DCGM_FI_DEV_ROW_REMAP_PENDING", 1),
    "pcie_gen": ("DCGM_FI_DEV_PCIE_LINK_GEN", 1),
    "pcie_gen_max": ("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", 1),
    "pcie_width": ("DCGM_FI_DEV_PCIE_LINK_WIDTH", 1),
    "pcie_width_max": ("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", 1),
}
GPM = {  # GPM metric id -> (metric, factor)
    1: ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.01),
    2: ("DCGM_FI_PROF_SM_ACTIVE", 0.01),
    3: ("DCGM_FI_PROF_SM_OCCUPANCY", 0.01),
    5: ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.01),
    7: ("gpulse_gpu_tensor_hmma_ratio", 0.01),
    10: ("DCGM_FI_PROF_DRAM_ACTIVE", 0.01),
    11: ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", 0.01),
    12: ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", 0.01),
    13: ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", 0.01),
    20: ("DCGM_FI_PROF_PCIE_TX_BYTES", MIB),
    21: ("DCGM_FI_PROF_PCIE_RX_BYTES", MIB),
    60: ("DCGM_FI_PROF_NVLINK_RX_BYTES", MIB),
    61: ("DCGM_FI_PROF_NVLINK_TX_BYTES", MIB),
}


def expectations(path):
    out, gpu, unsupported = [], None, set()
    for raw in open(path, encoding="utf-8"):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = shlex.split(line)
        key = words[0]
        if key == "gpu":
            gpu = {"uuid": None}
            continue
        if gpu is None or key == "at" or key == "fail":
            continue
        if key == "uuid":
            gpu["uuid"] = words[1]
        elif key in DIRECT and gpu.get("uuid"):
            metric, factor = DIRECT[key]
            out.append((metric, gpu["uuid"], None, float(int(words[1], 0)) * factor))
        elif key == "gpm_metric" and gpu.get("uuid") and int(words[1]) in GPM:
            metric, factor = GPM[int(words[1])]
            out.append((metric, gpu["uuid"], None, float(words[2]) * factor))
        elif key == "proc" and gpu.get("uuid"):
            pid, mem, sm = words[1], int(words[2]), float(words[3])
            out.append(("gpulse_gpu_process_memory_bytes", gpu["uuid"], pid, float(mem)))
            out.append(("gpulse_gpu_process_sm_ratio", gpu["uuid"], pid, sm / 100))
    return out


if __name__ == "__main__":
    for metric, uuid, pid, value in expectations(sys.argv[1]):
        print(metric, uuid, pid or "-", repr(value))
