/*
 * gpumodels.c - the GPU model table and its lookups.
 *
 * Where the numbers come from (dense figures throughout, never the
 * "with sparsity" ones that data sheets print first):
 * - NVIDIA data sheets: Tesla V100 (SXM2 32 GB), Tesla T4, A10, A100
 *   (SXM4 40/80 GB), L4, L40S, H100 (SXM5 and PCIe), H200 (SXM), GH200
 *   Grace Hopper Superchip (96 GB HBM3), HGX/DGX B200; the NVIDIA Ada
 *   GPU architecture whitepaper (Appendix A) for the GeForce RTX 4090
 *   (its bf16 figure is with fp32 accumulate, as training uses).
 * - AMD data sheets: Instinct MI250X and MI300X. An MI250X package holds
 *   two GCDs and amdgpu shows each GCD as its own card, so its row holds
 *   per-GCD figures: half the package's 128 GB, 3.2768 TB/s, 383 bf16
 *   TFLOP/s, 47.9 fp32 TFLOP/s and 560 W.
 * - V100 and T4 have no bf16: their tensor figure is fp16. The B200's
 *   fp32 figure (80) is approximate: NVIDIA's HGX B200 sheet prints
 *   tensor figures only.
 * - memory_bytes is the total that nvidia-smi shows for the model (public
 *   outputs), which is a little less than the marketing size on recent
 *   parts; V100, MI250X and MI300X use the nominal size.
 * - Consumer and workstation cards: the NVIDIA Ampere GA102 whitepaper
 *   (GeForce RTX 3090: 71 fp16/bf16 tensor TFLOP/s with fp32
 *   accumulate, half the RTX A6000's rate; 35.6 fp32), the Ada whitepaper
 *   Appendix A (RTX 4080: 97.5 / 48.7; RTX 6000 Ada: 364.2 / 91.1), the
 *   RTX A6000 data sheet (309.7 sparse, so 154.8 dense; 38.7 fp32).
 *   Aliases cover driver names of close variants (PCIe A100s, 16 GB
 *   V100s, the MI300X OAM name) whose compute figures match a row; their
 *   memory is then read from the driver, never from the row.
 * - Prices (price_usd_hour): a default on-demand price per GPU-hour in
 *   USD, typical public cloud list prices in 2026 (between the big clouds'
 *   on-demand rates and the GPU clouds' list rates), rounded. They are a
 *   starting point only: the server's `gpu_prices` key overrides them.
 * - Maximum clocks are the boost clocks nvidia-smi -q reports under
 *   "Max Clocks" for data-center parts; idle power is a typical observed
 *   draw, only used to make simulated idle GPUs look plausible.
 * - The cards the clouds rent (rows added later; dense = half the sparse
 *   figure the sheets print):
 *   A10G (AWS G5): NVIDIA publishes no data sheet; memory and bandwidth as
 *   the A10 (AWS, nvidia-smi: 23028 MiB), 70 bf16 TFLOP/s as Baseten's
 *   "NVIDIA A10 vs A10G" compares them, fp32 from its 9216 cores at
 *   1710 MHz, the 300 W limit nvidia-smi shows on G5 instances.
 *   L40 data sheet (362.1 sparse bf16, 90.5 fp32, 300 W): a row of its
 *   own, no longer an alias of the L40S, which has twice its tensor rate.
 *   H100 NVL (H100 data sheet, NVL column: 94 GB, 3.9 TB/s, 1671 sparse
 *   bf16, 60 fp32, 400 W, 600 GB/s NVLink bridge both ways) and H200 NVL
 *   (H200 data sheet, NVL column: 141 GB, 4.8 TB/s, 1671 sparse, 60 fp32,
 *   600 W, 900 GB/s bridge); NVML calls them "NVIDIA H100 NVL" and
 *   "NVIDIA H200 NVL", which are neither "NVIDIA H100 80GB HBM3" nor
 *   "NVIDIA H200": the names match exactly, never by prefix (an H20 is
 *   not an H200). H20: 96 GB HBM3, 4.0 TB/s, 148 dense bf16, 44 fp32,
 *   400 W (NVIDIA's H20 product brief as resellers publish it).
 *   GB200 NVL72 data sheet per GPU (rack figures / 72): 186 GB HBM3e,
 *   8 TB/s, 2.5 dense bf16 PFLOP/s, 80 fp32, 1200 W. HGX B300 sheet per
 *   GPU: 288 GB HBM3e, 8 TB/s, 2.25 dense bf16 PFLOP/s, 75 fp32,
 *   1100 W, PCIe Gen6; nvidia-smi names it "NVIDIA B300 SXM6 AC".
 *   AMD Instinct MI325X data sheet: 256 GB HBM3E, 6 TB/s, 1307.4 dense
 *   bf16 and 163.4 fp32 (the MI300X's compute), 1000 W. MI355X data
 *   sheet: 288 GB HBM3E, 8 TB/s, 2.5 dense bf16 PFLOP/s, 157.3 fp32,
 *   1400 W. The new rows' memory is the nominal size except where an
 *   nvidia-smi total is quoted above; the driver's figure wins at run time.
 */
#include "gpumodels.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MIB (1024ull * 1024ull)
#define GIB (1024ull * MIB)

#define NV GP_VENDOR_NVIDIA
#define AMD GP_VENDOR_AMD

/* PCIe x16 per-direction bandwidth by generation, GB/s. */
#define PCIE3 15.75
#define PCIE4 31.5
#define PCIE5 63.0
#define PCIE6 126.0

static const struct gp_gpumodel models[] = {
    /* short, name, vendor, arch, memory, bw, tensor, fp32, power, idle, sm, mem, nvlink, pcie,
       gpm, tensor cores, hbm, ecc, fan, mig, price */
    {"V100", "Tesla V100-SXM2-32GB", NV, GP_ARCH_VOLTA, 32 * GIB, 900, 125, 15.7, 300, 40, 1530,
     877, 150, PCIE3, false, true, true, true, false, false, 2.5},
    {"T4", "Tesla T4", NV, GP_ARCH_TURING, 15360 * MIB, 320, 65, 8.1, 70, 10, 1590, 5001, 0,
     PCIE3, false, true, false, true, false, false, 0.5},
    {"A10", "NVIDIA A10", NV, GP_ARCH_AMPERE, 23028 * MIB, 600, 125, 31.2, 150, 20, 1695, 6251, 0,
     PCIE4, false, true, false, true, false, false, 1.0},
    {"A10G", "NVIDIA A10G", NV, GP_ARCH_AMPERE, 23028 * MIB, 600, 70, 31.5, 300, 20, 1710, 6251, 0,
     PCIE4, false, true, false, true, false, false, 1.0},
    {"A100-40GB", "NVIDIA A100-SXM4-40GB", NV, GP_ARCH_AMPERE, 40960 * MIB, 1555, 312, 19.5, 400,
     55, 1410, 1215, 300, PCIE4, false, true, true, true, false, true, 2.5},
    {"A100", "NVIDIA A100-SXM4-80GB", NV, GP_ARCH_AMPERE, 81920 * MIB, 2039, 312, 19.5, 400, 60,
     1410, 1593, 300, PCIE4, false, true, true, true, false, true, 3.0},
    {"L4", "NVIDIA L4", NV, GP_ARCH_ADA, 23034 * MIB, 300, 121, 30.3, 72, 16, 2040, 6251, 0, PCIE4,
     false, true, false, true, false, false, 0.8},
    {"L40S", "NVIDIA L40S", NV, GP_ARCH_ADA, 46068 * MIB, 864, 362.05, 91.6, 350, 35, 2520, 9001, 0,
     PCIE4, false, true, false, true, false, false, 1.9},
    {"L40", "NVIDIA L40", NV, GP_ARCH_ADA, 46068 * MIB, 864, 181.05, 90.5, 300, 35, 2490, 9001, 0,
     PCIE4, false, true, false, true, false, false, 1.4},
    {"H100", "NVIDIA H100 80GB HBM3", NV, GP_ARCH_HOPPER, 81559 * MIB, 3350, GP_H100_TENSOR_TFLOPS,
     67, 700, 70, 1980, 2619, 450, PCIE5, true, true, true, true, false, true, 3.5},
    {"H100-PCIE", "NVIDIA H100 PCIe", NV, GP_ARCH_HOPPER, 81559 * MIB, 2000, 756, 51, 350, 45, 1755,
     1593, 0, PCIE5, true, true, true, true, false, true, 2.8},
    {"H100-NVL", "NVIDIA H100 NVL", NV, GP_ARCH_HOPPER, 94 * GIB, 3900, 835.5, 60, 400, 60, 1785, 2619,
     300, PCIE5, true, true, true, true, false, true, 3.2},
    {"H20", "NVIDIA H20", NV, GP_ARCH_HOPPER, 96 * GIB, 4000, 148, 44, 400, 60, 1980, 2619, 450, PCIE5,
     true, true, true, true, false, true, 1.5},
    {"H200", "NVIDIA H200", NV, GP_ARCH_HOPPER, 143771 * MIB, 4800, 989.4, 67, 700, 75, 1980, 3201,
     450, PCIE5, true, true, true, true, false, true, 4.5},
    {"H200-NVL", "NVIDIA H200 NVL", NV, GP_ARCH_HOPPER, 143771 * MIB, 4800, 835.5, 60, 600, 70, 1785,
     3201, 450, PCIE5, true, true, true, true, false, true, 4.0},
    {"GH200", "NVIDIA GH200 480GB", NV, GP_ARCH_HOPPER, 97871 * MIB, 4000, 989.4, 67, 900, 90,
     1980, 2619, 450, PCIE5, true, true, true, true, false, true, 4.0},
    {"B200", "NVIDIA B200", NV, GP_ARCH_BLACKWELL, 183359 * MIB, 8000, 2250, 80, 1000, 140, 1965,
     3996, 900, PCIE5, true, true, true, true, false, true, 6.5},
    {"GB200", "NVIDIA GB200", NV, GP_ARCH_BLACKWELL, 186 * GIB, 8000, 2500, 80, 1200, 150, 1965, 3996,
     900, PCIE5, true, true, true, true, false, true, 7.0},
    {"B300", "NVIDIA B300 SXM6 AC", NV, GP_ARCH_BLACKWELL, 288 * GIB, 8000, 2250, 75, 1100, 150, 1965,
     3996, 900, PCIE6, true, true, true, true, false, true, 8.0},
    {"MI250X", "AMD Instinct MI250X", AMD, GP_ARCH_CDNA2, 64 * GIB, 1638.4, 191.5, 23.95, 280, 45,
     1700, 1600, 0, PCIE4, false, true, true, true, false, false, 1.5},
    {"MI300X", "AMD Instinct MI300X", AMD, GP_ARCH_CDNA3, 192 * GIB, 5300, 1307.4, 163.4, 750, 140,
     2100, 1300, 0, PCIE5, false, true, true, true, false, false, 3.0},
    {"MI325X", "AMD Instinct MI325X", AMD, GP_ARCH_CDNA3, 256 * GIB, 6000, 1307.4, 163.4, 1000, 150,
     2100, 1300, 0, PCIE5, false, true, true, true, false, false, 3.5},
    {"MI355X", "AMD Instinct MI355X", AMD, GP_ARCH_CDNA4, 288 * GIB, 8000, 2500, 157.3, 1400, 180, 2400,
     2000, 0, PCIE5, false, true, true, true, false, false, 6.0},
    {"RTX3090", "NVIDIA GeForce RTX 3090", NV, GP_ARCH_AMPERE, 24576 * MIB, 936, 71, 35.6, 350,
     25, 1695, 9751, 0, PCIE4, false, true, false, false, true, false, 0.35},
    {"RTX4080", "NVIDIA GeForce RTX 4080", NV, GP_ARCH_ADA, 16376 * MIB, 716.8, 97.5, 48.7, 320,
     20, 2505, 11201, 0, PCIE4, false, true, false, false, true, false, 0.4},
    {"RTXA6000", "NVIDIA RTX A6000", NV, GP_ARCH_AMPERE, 49140 * MIB, 768, 154.8, 38.7, 300, 25,
     1800, 8001, 0, PCIE4, false, true, false, false, true, false, 0.8},
    {"RTX6000ADA", "NVIDIA RTX 6000 Ada Generation", NV, GP_ARCH_ADA, 49140 * MIB, 960, 364.2,
     91.1, 300, 25, 2505, 10001, 0, PCIE4, false, true, false, false, true, false, 1.2},
    /* RTX4090 stays last: --simulate's error message ends with it. */
    {"RTX4090", "NVIDIA GeForce RTX 4090", NV, GP_ARCH_ADA, 24564 * MIB, 1008, 165.2, 82.6, 450, 25,
     2520, 10501, 0, PCIE4, false, true, false, false, true, false, 0.6},
};

#define NMODELS (sizeof models / sizeof models[0])

/* Other spellings of a short name. */
static const struct {
    const char *alias, *short_name;
} aliases[] = {
    {"A100-80GB", "A100"}, {"A100-SXM", "A100"},  {"H100-SXM", "H100"},
    {"H100-SXM5", "H100"}, {"H100PCIE", "H100-PCIE"}, {"RTX-4090", "RTX4090"},
    {"4090", "RTX4090"}, {"RTX-3090", "RTX3090"}, {"3090", "RTX3090"},
    {"RTX-4080", "RTX4080"}, {"4080", "RTX4080"}, {"A6000", "RTXA6000"},
    {"RTX-A6000", "RTXA6000"}, {"RTX6000-ADA", "RTX6000ADA"}, {"H100NVL", "H100-NVL"},
    {"H200NVL", "H200-NVL"}, {"NVIDIA B300", "B300"}, {"AMD Instinct MI325X OAM", "MI325X"},
    {"MI300X-OAM", "MI300X"}, {"AMD Instinct MI300X OAM", "MI300X"},
    {"NVIDIA A100 80GB PCIe", "A100"}, {"NVIDIA A100-PCIE-40GB", "A100-40GB"},
    {"Tesla V100-SXM2-16GB", "V100"},
};

/* Compares name (length n) with s, ignoring case. */
static bool eq_n(const char *name, size_t n, const char *s)
{
    return strlen(s) == n && strncasecmp(name, s, n) == 0;
}

const struct gp_gpumodel *gp_gpumodel_find(const char *name)
{
    if (!name)
        return NULL;
    while (*name == ' ' || *name == '\t')
        name++;
    size_t n = strlen(name);
    while (n && (name[n - 1] == ' ' || name[n - 1] == '\t' || name[n - 1] == '\n'))
        n--;
    if (!n)
        return NULL;
    for (size_t i = 0; i < NMODELS; i++)
        if (eq_n(name, n, models[i].short_name) || eq_n(name, n, models[i].name))
            return &models[i];
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (eq_n(name, n, aliases[i].alias))
            return gp_gpumodel_find(aliases[i].short_name);
    return NULL;
}

size_t gp_gpumodel_count(void) { return NMODELS; }

const struct gp_gpumodel *gp_gpumodel_at(size_t i) { return i < NMODELS ? &models[i] : NULL; }

size_t gp_gpumodel_names(char *out, size_t outlen, const char *sep)
{
    size_t len = 0;
    if (out && outlen)
        out[0] = '\0';
    for (size_t i = 0; i < NMODELS; i++) {
        const char *parts[2] = {i ? sep : "", models[i].short_name};
        for (int k = 0; k < 2; k++) {
            for (const char *p = parts[k]; *p; p++, len++)
                if (out && len + 1 < outlen) {
                    out[len] = *p;
                    out[len + 1] = '\0';
                }
        }
    }
    return len;
}

double gp_gpumodel_h100_equivalents(const struct gp_gpumodel *m)
{
    return m ? m->tensor_tflops / GP_H100_TENSOR_TFLOPS : 0;
}

/*
 * Peak dense tensor throughput by precision, TFLOP/s, for MFU (fp16 and
 * bf16 are the row's tensor_tflops, fp32 its fp32_tflops). Dense, that is
 * half the "with sparsity" figure the data sheets print first. Sources:
 * - NVIDIA data sheets, TF32 / FP8 Tensor Core rows: A10 (62.5), A100
 *   (156), L4 (60 / 242.5), L40S (183 / 733), L40 (90.5 / 362), H100 SXM
 *   (494.7 / 1978.9), H100 PCIe (378 / 1513), H100 NVL (417.5 / 1670.5),
 *   H200 and GH200 (as the H100 SXM), H200 NVL (as the H100 NVL), H20 (74
 *   / 296, the product brief), HGX B200 and HGX B300 (18 and 72 sparse
 *   PFLOP/s for 8 GPUs: 1125 / 4500 each), GB200 NVL72 (180 and 720
 *   sparse PFLOP/s for 72 GPUs: 1250 / 5000 each).
 * - AMD data sheets, TF32 / FP8 matrix: MI300X and MI325X (653.7 /
 *   2614.9); MI355X (FP8 5 PFLOP/s dense, no TF32 row); MI250X has
 *   neither (CDNA2), V100 and T4 neither nor bf16 (their tensor figure
 *   is fp16 only).
 * - A10G: no data sheet; tf32 half its bf16 figure, as on the A10.
 * - Workstation and consumer cards: the Ampere GA102 and Ada whitepapers
 *   (TF32 half the fp16/bf16-with-fp32-accumulate figure; FP8 with fp32
 *   accumulate on Ada: RTX 4090 330.3, RTX 4080 194.9, RTX 6000 Ada
 *   728.5; Ampere has no FP8).
 * A short name missing here has no tf32 or fp8 figure (0: "n/a").
 */
static const struct {
    const char *short_name;
    double tf32, fp8;
} peaks[] = {
    {"A10", 62.5, 0},        {"A10G", 35, 0},           {"A100-40GB", 156, 0},
    {"A100", 156, 0},        {"L4", 60, 242.5},         {"L40S", 183, 733},
    {"L40", 90.5, 362},      {"H100", 494.7, 1978.9},   {"H100-PCIE", 378, 1513},
    {"H100-NVL", 417.5, 1670.5}, {"H20", 74, 296},      {"H200", 494.7, 1978.9},
    {"H200-NVL", 417.5, 1670.5}, {"GH200", 494.7, 1978.9}, {"B200", 1125, 4500},
    {"GB200", 1250, 5000},   {"B300", 1125, 4500},      {"MI300X", 653.7, 2614.9},
    {"MI325X", 653.7, 2614.9}, {"MI355X", 0, 5000},     {"RTX3090", 35.6, 0},
    {"RTX4080", 48.7, 194.9}, {"RTXA6000", 77.4, 0},    {"RTX6000ADA", 182.1, 728.5},
    {"RTX4090", 82.6, 330.3},
};

static const char *const precision_names[GP_PREC__COUNT] = {
    [GP_PREC_FP32] = "fp32", [GP_PREC_TF32] = "tf32", [GP_PREC_FP16] = "fp16",
    [GP_PREC_BF16] = "bf16", [GP_PREC_FP8] = "fp8",
};

const char *gp_precision_name(enum gp_precision p)
{
    return (unsigned)p < GP_PREC__COUNT ? precision_names[p] : NULL;
}

bool gp_precision_parse(const char *s, size_t n, enum gp_precision *out)
{
    for (int p = 0; p < GP_PREC__COUNT; p++)
        if (strlen(precision_names[p]) == n && !memcmp(s, precision_names[p], n)) {
            *out = (enum gp_precision)p;
            return true;
        }
    return false;
}

double gp_gpumodel_peak_tflops(const struct gp_gpumodel *m, enum gp_precision p)
{
    if (!m)
        return 0;
    switch (p) {
    case GP_PREC_FP32:
        return m->fp32_tflops;
    case GP_PREC_FP16:
        return m->tensor_tflops;
    case GP_PREC_BF16: /* Volta and Turing tensor cores have no bf16 */
        return m->arch == GP_ARCH_VOLTA || m->arch == GP_ARCH_TURING ? 0 : m->tensor_tflops;
    case GP_PREC_TF32:
    case GP_PREC_FP8:
        for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++)
            if (!strcmp(peaks[i].short_name, m->short_name))
                return p == GP_PREC_TF32 ? peaks[i].tf32 : peaks[i].fp8;
        return 0;
    case GP_PREC__COUNT:
        break;
    }
    return 0;
}

bool gp_gpumodel_has_row_remap(const struct gp_gpumodel *m)
{
    return m->vendor == GP_VENDOR_NVIDIA && m->ecc && m->arch >= GP_ARCH_AMPERE;
}

bool gp_gpumodel_has_page_retire(const struct gp_gpumodel *m)
{
    return m->vendor == GP_VENDOR_NVIDIA && m->ecc && m->arch < GP_ARCH_AMPERE;
}
