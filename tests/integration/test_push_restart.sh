#!/usr/bin/env bash
# An agent stopped while its target is down keeps what it could not send
# in its disk buffer; the next agent on the same buffer directory sends it
# first, in order, once the target is back. Afterwards every tick of both
# runs is stored exactly once: the tick counter counts 1..N for the first
# run and 1..M for the second, without a gap.
source "$(dirname "$0")/lib.sh"
start_vm
start_agent --simulate 1x2xH100 --interval 200ms --push "$VM_URL" --buffer-dir "$TMP/buffer" \
    --push-max-backoff 1s
sleep 2
stop_vm
sleep 3
first_last=$(agent_metric gpulse_agent_ticks_total)
stop_agent
note "first agent stopped at tick $first_last with VictoriaMetrics down"
ls "$TMP"/buffer/*/*.seg >/dev/null 2>&1 || fail "no buffer segment on disk"

start_agent --simulate 1x2xH100 --interval 200ms --push "$VM_URL" --buffer-dir "$TMP/buffer" \
    --push-max-backoff 1s
grep -q 'push buffer recovered' "$AGENT_LOG" || { cat "$AGENT_LOG"; fail "the second agent found no buffer"; }
sleep 2
start_vm "$VM_PORT"
wait_until 30 sh -c "[ \"\$(curl -sf http://127.0.0.1:$AGENT_PORT/metrics | awk 'index(\$0, \"gpulse_push_queue_bytes{\") == 1 {print \$2}')\" = 0 ]" ||
    { tail -20 "$AGENT_LOG"; fail "the second agent did not deliver the buffer"; }
sleep 1
last=$(agent_metric gpulse_agent_ticks_total)
stop_agent
check() { python3 "$ROOT/tests/integration/compare_push.py" ticks vm "http://127.0.0.1:$VM_PORT" "$last"; }
wait_until 20 check || { check; fail "ticks are missing or repeated across the restart"; }
out=$(check | tail -1)
# Two runs, the first reaching at least the tick seen before it was stopped.
python3 - "$out" "$first_last" <<'PY' || fail "the first run lost its last ticks: $out"
import re, sys
runs = [int(x) for x in re.search(r"runs of \[([0-9, ]+)\]", sys.argv[1]).group(1).split(",")]
sys.exit(0 if len(runs) == 2 and runs[0] >= int(sys.argv[2]) else 1)
PY
note "$out"
