/*
 * gpumodels.h - a table of GPU models and their published capabilities.
 *
 * One row per model: the short name that --simulate specs use ("H100",
 * "MI300X"), the device name the driver reports ("NVIDIA H100 80GB HBM3"),
 * and the spec-sheet figures that matter for telemetry: memory, memory
 * bandwidth, dense tensor and fp32 throughput, power limit, maximum clocks
 * and which readings the hardware has at all (GPM profiling metrics, HBM
 * temperature, ECC, fan, MIG). The simulator builds its GPUs from it; the
 * same rows normalize readings across hardware (a ratio of peak FLOP/s or
 * bandwidth means the same on an A100 and an MI300X).
 *
 * Each row also carries a default price per GPU-hour (query/cost.h
 * reads it; the user's `gpu_prices` override it).
 *
 * The table is static and read-only: lookups return pointers into it that
 * stay valid for the life of the process.
 */
#ifndef GP_GPUMODELS_H
#define GP_GPUMODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Here rather than in sources/frame.h, which uses it too: lib sits below sources. */
enum gp_vendor { GP_VENDOR_NVIDIA, GP_VENDOR_AMD };

enum gp_gpu_arch {
    GP_ARCH_VOLTA,
    GP_ARCH_TURING,
    GP_ARCH_AMPERE,
    GP_ARCH_ADA,
    GP_ARCH_HOPPER,
    GP_ARCH_BLACKWELL,
    GP_ARCH_CDNA2,
    GP_ARCH_CDNA3,
    GP_ARCH_CDNA4,
};

struct gp_gpumodel {
    const char *short_name;   /* "H100": spec name, matched case-insensitively */
    const char *name;         /* device name as NVML (or amdgpu's product_name) reports it */
    enum gp_vendor vendor;
    enum gp_gpu_arch arch;
    uint64_t memory_bytes;    /* total device memory as the driver reports it */
    double mem_bw_gbps;       /* peak memory bandwidth, GB/s (10^9 bytes) */
    double tensor_tflops;     /* peak dense bf16 tensor TFLOP/s (fp16 where no bf16) */
    double fp32_tflops;       /* peak fp32 (non-tensor) TFLOP/s */
    double power_limit_w;     /* default enforced power limit */
    double idle_power_w;      /* typical draw with nothing running (observed, not a spec) */
    unsigned sm_clock_max_mhz;
    unsigned mem_clock_max_mhz;
    double nvlink_gbps;       /* per direction, GB/s; 0 = no NVLink */
    double pcie_gbps;         /* usable x16 bandwidth per direction, GB/s */
    bool gpm;                 /* NVML GPM profiling metrics (Hopper and later) */
    bool tensor_cores;
    bool hbm;                 /* HBM: memory temperature is reported */
    bool ecc;                 /* ECC memory (on by default) */
    bool fan;                 /* has a fan NVML can read (not passive data-center cards) */
    bool mig;                 /* MIG capable */
    double price_usd_hour;    /* default on-demand price per GPU-hour, USD (gpumodels.c says the basis) */
};

/* The number formats a training job computes in (its "precision"), for
 * the peak throughput MFU divides by. */
enum gp_precision { GP_PREC_FP32, GP_PREC_TF32, GP_PREC_FP16, GP_PREC_BF16, GP_PREC_FP8, GP_PREC__COUNT };

/* "fp32", "tf32", "fp16", "bf16", "fp8"; NULL out of range. */
const char *gp_precision_name(enum gp_precision p);

/* Reads one of the names above (exact, lowercase) from s[0..n). false when
 * it is none of them. */
bool gp_precision_parse(const char *s, size_t n, enum gp_precision *out);

/*
 * m's peak dense throughput at precision p, TFLOP/s: fp32 the non-tensor
 * rate, the others the tensor cores' (matrix cores') dense rate from the
 * vendor's data sheet (gpumodels.c cites each). 0 when the card has no
 * such rate (bf16 and fp8 on a V100, fp8 before Ada/Hopper/CDNA3) or the
 * table has no figure for it; 0 when m is NULL.
 */
double gp_gpumodel_peak_tflops(const struct gp_gpumodel *m, enum gp_precision p);

/* Peak dense bf16 tensor TFLOP/s of the H100 SXM: the unit of "H100-equivalents". */
#define GP_H100_TENSOR_TFLOPS 989.4

/* m's peak dense bf16 throughput in H100 SXMs (H100 SXM: 1). */
double gp_gpumodel_h100_equivalents(const struct gp_gpumodel *m);

/*
 * Finds a model by short name or alias ("H100", "h100-sxm", "A100-80GB")
 * or by the driver's device name ("NVIDIA H100 80GB HBM3"), ignoring case
 * and surrounding blanks. NULL when unknown or name is NULL.
 */
const struct gp_gpumodel *gp_gpumodel_find(const char *name);

/* Number of models in the table, and the i-th (NULL when i is out of range). */
size_t gp_gpumodel_count(void);
const struct gp_gpumodel *gp_gpumodel_at(size_t i);

/*
 * Writes the short names, separated by sep, into out (always
 * NUL-terminated when outlen > 0). Returns the length the full list
 * needs, like snprintf.
 */
size_t gp_gpumodel_names(char *out, size_t outlen, const char *sep);

/* NVIDIA only: the driver has row remapping (Ampere+) or page retirement (older). */
bool gp_gpumodel_has_row_remap(const struct gp_gpumodel *m);
bool gp_gpumodel_has_page_retire(const struct gp_gpumodel *m);

#endif
