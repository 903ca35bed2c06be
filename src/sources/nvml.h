/*
 * nvml.h - the NVIDIA source's public knobs.
 *
 * The source itself is `gp_source_nvml` (source.h). It loads
 * libnvidia-ml.so.1 with dlopen: cfg->nvml_library if set, else
 * $GPULSE_NVML_LIBRARY, else the loader's search (LD_LIBRARY_PATH).
 */
#ifndef GP_NVML_H
#define GP_NVML_H

#include <stdint.h>

/*
 * Slowly changing readings (ECC counters, retired pages, remapped rows,
 * maximum clocks) are read at most this often and carried over, still
 * valid, in between. Default 10000; tests set 0 to read them every tick.
 */
extern int64_t gp_nvml_slow_interval_ms;

#endif
