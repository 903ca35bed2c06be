/*
 * snapshot.h - the latest frame as JSON, for /api/v1/snapshot.
 *
 * The same facts as /metrics, shaped for programs: GPUs with identity,
 * readings keyed by metric name (unsupported readings are absent),
 * clock-event reasons, XID counts and processes; the host; processes; and
 * the state of every source.
 */
#ifndef GP_SNAPSHOT_H
#define GP_SNAPSHOT_H

#include "agent/expo.h"
#include "lib/buf.h"
#include "sources/frame.h"

/* Appends the JSON document to out: the host processes selected by
 * o->process_series, as /metrics. Returns GP_OK or an error. */
int gp_snapshot_render(struct gp_buf *out, const struct gp_frame *f, const struct gp_expo_options *o,
                       const struct gp_agent_stats *st);

#endif
