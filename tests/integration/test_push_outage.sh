#!/usr/bin/env bash
# The outage test: the agent pushes to VictoriaMetrics with a disk buffer;
# VictoriaMetrics is stopped for 10 s while the agent keeps sampling, then
# started again on the same data. Afterwards the series have no gap: the
# agent's tick counter, as stored, counts 1, 2, 3, ... with every tick's
# timestamp present exactly once, and a GPU series has a sample at each.
source "$(dirname "$0")/lib.sh"
start_vm
start_agent --simulate 1x2xH100 --interval 200ms --push "$VM_URL" --buffer-dir "$TMP/buffer" \
    --push-max-backoff 1s
target="{target=\"$VM_URL\"}"
wait_until 10 sh -c "[ \"\$(curl -sf http://127.0.0.1:$AGENT_PORT/metrics | awk '/^gpulse_push_samples_sent_total/ {print \$2}')\" != 0 ]" ||
    fail "nothing was delivered before the outage"
sleep 2
stop_vm
note "VictoriaMetrics stopped at tick $(agent_metric gpulse_agent_ticks_total)"
sleep 10
[ "$(agent_metric "gpulse_push_batches_retried_total$target")" -gt 0 ] || fail "no retries during the outage"
buffered=$(agent_metric "gpulse_push_buffer_bytes$target")
[ "${buffered%.*}" -gt 0 ] || fail "nothing buffered on disk during the outage"
note "after 10 s down: $buffered bytes buffered on disk"
start_vm "$VM_PORT"
# Caught up when the queue is empty again.
wait_until 30 sh -c "[ \"\$(curl -sf http://127.0.0.1:$AGENT_PORT/metrics | awk 'index(\$0, \"gpulse_push_queue_bytes{\") == 1 {print \$2}')\" = 0 ]" ||
    { tail -20 "$AGENT_LOG"; fail "the agent did not catch up"; }
sleep 1
last=$(agent_metric gpulse_agent_ticks_total)
stop_agent
metrics_dropped=$(grep -c 'dropped' "$AGENT_LOG" || true)
[ "$metrics_dropped" = 0 ] || { cat "$AGENT_LOG"; fail "the agent logged dropped samples"; }
check() { python3 "$ROOT/tests/integration/compare_push.py" ticks vm "http://127.0.0.1:$VM_PORT" "$last"; }
wait_until 20 check || { check; fail "the series have gaps or repeats after the outage"; }
note "$(check | tail -1)"
