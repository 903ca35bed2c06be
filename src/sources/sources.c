/*
 * sources.c - the explicit list of sources, in sampling order.
 *
 * procfs must stay after the GPU sources and steps in both lists: it
 * reads only the processes on a GPU and their descendants, following the
 * GPU processes and the roots (step reporters) the sources before it put
 * into this tick's frame. Sources that read procfs's processes (jobs) go
 * after it.
 */
#include "sources.h"

const struct gp_source_ops *const gp_hardware_sources[] = {&gp_source_nvml, &gp_source_amdgpu,
                                                            &gp_source_steps, &gp_source_procfs};
const size_t gp_hardware_sources_count = sizeof gp_hardware_sources / sizeof gp_hardware_sources[0];

/* --simulate replaces the GPU sources; the host is still the real one. */
const struct gp_source_ops *const gp_simulated_sources[] = {&gp_source_simulate, &gp_source_steps,
                                                             &gp_source_procfs};
const size_t gp_simulated_sources_count = sizeof gp_simulated_sources / sizeof gp_simulated_sources[0];
