#!/usr/bin/env bash
# The agent pushes to Debian's Prometheus 2.42 running as a remote-write
# receiver (--web.enable-remote-write-receiver, no scraping), and the raw
# samples read back through its query API (a range selector, so the stored
# timestamps come back too) are exactly what the agent's /metrics showed,
# every value bit for bit, with the agent's host label and its external
# labels on every series that lacks them (/metrics shows neither).
source "$(dirname "$0")/lib.sh"
# The same agent pushes to VictoriaMetrics at the same time: two targets,
# each with its own queue, both receiving every tick.
start_prom_receiver
start_vm
start_agent --simulate 1x2xH100 --interval 200ms --push "$PROM_URL" --push "$VM_URL" \
    --hostname push-node --external-label cluster=it-a --external-label datacenter=dc-1
snapshot_metrics 5 "$TMP/snaps"
compare() {
    python3 "$ROOT/tests/integration/compare_push.py" "$1" "$2" --add Hostname=push-node \
        --add cluster=it-a --add datacenter=dc-1 "$TMP"/snaps/*.prom
}
wait_until 30 compare prom "http://127.0.0.1:$PROM_PORT" ||
    { compare prom "http://127.0.0.1:$PROM_PORT"; tail -20 "$AGENT_LOG"; tail -20 "$TMP/prom.log"
      fail "Prometheus holds other values than /metrics showed"; }
note "Prometheus: $(compare prom "http://127.0.0.1:$PROM_PORT" | tail -1)"
wait_until 30 compare vm "http://127.0.0.1:$VM_PORT" ||
    { compare vm "http://127.0.0.1:$VM_PORT"; fail "VictoriaMetrics (second target) differs"; }
note "VictoriaMetrics: $(compare vm "http://127.0.0.1:$VM_PORT" | tail -1)"
metrics | grep '^gpulse_push_samples_dropped_total' | grep -v ' 0$' >/dev/null && fail "samples were dropped"
[ "$(metrics | grep -c '^gpulse_push_samples_sent_total{')" = 2 ] || fail "want two targets in /metrics"
stop_agent
