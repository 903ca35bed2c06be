/*
 * sources.c - the explicit list of sources, in sampling order.
 *
 * procfs comes after every source that puts processes into the frame: it
 * reads only the processes on a GPU, the roots in frame->roots and their
 * descendants, following what the sources before it put into this tick's
 * frame. jobs is last in both lists: it names the jobs of what procfs
 * read.
 */
#include "sources.h"

const struct gp_source_ops *const gp_hardware_sources[] = {&gp_source_nvml, &gp_source_amdgpu,
                                                            &gp_source_steps, &gp_source_procfs,
                                                            &gp_source_jobs};
const size_t gp_hardware_sources_count = sizeof gp_hardware_sources / sizeof gp_hardware_sources[0];

/* --simulate replaces the GPU sources; the host is still the real one. */
const struct gp_source_ops *const gp_simulated_sources[] = {&gp_source_simulate, &gp_source_steps,
                                                             &gp_source_procfs, &gp_source_jobs};
const size_t gp_simulated_sources_count = sizeof gp_simulated_sources / sizeof gp_simulated_sources[0];
