#!/usr/bin/env bash
# The agent pushes to Debian's Prometheus 2.42 running as a remote-write
# receiver (--web.enable-remote-write-receiver, no scraping), and the raw
# samples read back through its query API (a range selector, so the stored
# timestamps come back too) are exactly what the agent's /metrics showed.
source "$(dirname "$0")/lib.sh"
start_prom_receiver
start_agent --simulate 1x2xH100 --interval 200ms --push "$PROM_URL"
snapshot_metrics 5 "$TMP/snaps"
compare() { python3 "$ROOT/tests/integration/compare_push.py" prom "http://127.0.0.1:$PROM_PORT" "$TMP"/snaps/*.prom; }
wait_until 30 compare || { compare; tail -20 "$AGENT_LOG"; tail -20 "$TMP/prom.log"; fail "Prometheus holds other values than /metrics showed"; }
note "$(compare | tail -1)"
metrics | grep '^gpulse_push_samples_dropped_total' | grep -qv ' 0$' && fail "samples were dropped"
stop_agent
