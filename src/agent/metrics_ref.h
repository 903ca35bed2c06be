/*
 * metrics_ref.h - docs/metrics.md's reference section, written from the
 * code's own tables: GP_GPU_FIELDS (sources/frame.h) and GP_METRICS
 * (lib/metrics.h). `gpulse metrics-reference` prints it, scripts/docs.sh
 * splices it into the page, and a unit test fails when the committed page
 * differs from it.
 */
#ifndef GP_METRICS_REF_H
#define GP_METRICS_REF_H

#include "lib/buf.h"

/* The markers around the generated text in docs/metrics.md. */
#define GP_METRICS_REF_BEGIN "<!-- BEGIN metrics-reference (generated: scripts/docs.sh) -->\n"
#define GP_METRICS_REF_END "<!-- END metrics-reference -->\n"

/* Appends the reference (the text between the markers) to out. Returns
 * GP_OK or out->err. */
int gp_metrics_reference(struct gp_buf *out);

#endif
