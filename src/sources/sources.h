/* sources.h - which sources the agent opens, in order. */
#ifndef GP_SOURCES_H
#define GP_SOURCES_H

#include "source.h"

extern const struct gp_source_ops *const gp_hardware_sources[];
extern const size_t gp_hardware_sources_count;
extern const struct gp_source_ops *const gp_simulated_sources[];
extern const size_t gp_simulated_sources_count;

#endif
