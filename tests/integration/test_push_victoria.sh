#!/usr/bin/env bash
# The agent pushes to Debian's real VictoriaMetrics over remote write, and
# what VictoriaMetrics stored (read back raw through /api/v1/export) is
# what the agent's own /metrics showed: every series of five snapshots, at
# exactly their frame times, with exactly the same values (values longer
# than 12 significant digits to VictoriaMetrics's own 12-digit precision;
# the Prometheus test checks every value bit for bit), and every series
# that lacks a host label carries the agent's (Hostname=vm-node).
source "$(dirname "$0")/lib.sh"
start_vm
start_agent --simulate 1x2xH100 --interval 200ms --push "$VM_URL" --hostname vm-node
snapshot_metrics 5 "$TMP/snaps"
compare() {
    python3 "$ROOT/tests/integration/compare_push.py" vm "http://127.0.0.1:$VM_PORT" --add Hostname=vm-node \
        "$TMP"/snaps/*.prom
}
# Fresh rows become searchable in VictoriaMetrics within a second or two.
wait_until 30 compare || { compare; tail -20 "$AGENT_LOG"; fail "VictoriaMetrics holds other values than /metrics showed"; }
note "$(compare | tail -1)"
target="{target=\"$VM_URL\"}"
[ "$(agent_metric "gpulse_push_batches_retried_total$target")" = 0 ] || fail "requests were retried"
metrics | grep '^gpulse_push_samples_dropped_total' | grep -v ' 0$' >/dev/null && fail "samples were dropped"
[ "$(agent_metric "gpulse_push_samples_sent_total$target")" -gt 0 ] || fail "nothing counted as sent"
metrics >"$TMP/final.prom"
check_exposition "$TMP/final.prom"
stop_agent
