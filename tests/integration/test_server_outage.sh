#!/usr/bin/env bash
# The outage test, end to end: an agent pushes to the gpulse server with
# a disk buffer; the server is stopped for 10 s while the agent keeps
# sampling, then started again on the same data directory and port.
# Afterwards the series have no gap: read raw from the store (the server
# stopped, bench/storetool dump), the agent's tick counter counts 1, 2,
# 3, ... with timestamps strictly increasing and each tick stored once,
# and a GPU series has exactly one sample at every tick's timestamp.
# (test_push_outage.sh does the same with VictoriaMetrics as the target.)
source "$(dirname "$0")/lib.sh"
STORETOOL=$ROOT/build/rel/storetool
[ -x "$STORETOOL" ] || fail "$STORETOOL missing (make check-build builds it)"
SERVER_DATA=$TMP/data start_server
PORT=$SERVER_PORT
start_agent --simulate 1x2xH100 --interval 200ms --push "$SERVER_URL/api/v1/write" --buffer-dir "$TMP/buffer" \
    --push-max-backoff 1s
target="{target=\"$SERVER_URL/api/v1/write\"}"
wait_until 10 sh -c "[ \"\$(curl -sf http://127.0.0.1:$AGENT_PORT/metrics | awk '/^gpulse_push_samples_sent_total/ {print \$2}')\" != 0 ]" ||
    fail "nothing was delivered before the outage"
sleep 2
stop_server
note "server stopped at tick $(agent_metric gpulse_agent_ticks_total)"
sleep 10
[ "$(agent_metric "gpulse_push_batches_retried_total$target")" -gt 0 ] || fail "no retries during the outage"
buffered=$(agent_metric "gpulse_push_buffer_bytes$target")
[ "${buffered%.*}" -gt 0 ] || fail "nothing buffered on disk during the outage"
note "after 10 s down: $buffered bytes buffered on disk"
# Back on the same port and data.
"$GPULSE" server --listen "127.0.0.1:$PORT" --data "$TMP/data" >>"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
wait_until 30 curl -sf "$SERVER_URL/api/v1/health" || { cat "$SERVER_LOG" >&2; fail "server did not come back"; }
wait_until 30 sh -c "[ \"\$(curl -sf http://127.0.0.1:$AGENT_PORT/metrics | awk 'index(\$0, \"gpulse_push_queue_bytes{\") == 1 {print \$2}')\" = 0 ]" ||
    { tail -20 "$AGENT_LOG"; fail "the agent did not catch up"; }
sleep 1
last=$(agent_metric gpulse_agent_ticks_total)
stop_agent
stop_server
"$STORETOOL" dump "$TMP/data" gpulse_agent_ticks_total >"$TMP/ticks.txt" || fail "storetool dump failed"
"$STORETOOL" dump "$TMP/data" 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}' >"$TMP/gpu.txt" || fail "storetool dump failed"
python3 - "$TMP/ticks.txt" "$TMP/gpu.txt" "$last" <<'PY' || fail "the series have gaps or repeats after the outage"
import sys
def series(path):
    out = []
    for line in open(path):
        if line.startswith("series "):
            out.append([])
        else:
            t, v = line.split()
            out[-1].append((int(t), float(v)))
    return out
ticks, gpu = series(sys.argv[1]), series(sys.argv[2])
if len(ticks) != 1 or len(gpu) != 1:
    sys.exit(f"want one series each, got {len(ticks)} and {len(gpu)}")
c, g = ticks[0], gpu[0]
bad = [f"tick {i}: t={t} value {v}" for i, (t, v) in enumerate(c, 1) if v != i]
bad += [f"timestamps not increasing at {c[i][0]}" for i in range(1, len(c)) if c[i][0] <= c[i - 1][0]]
gt = [t for t, _ in g]
if sorted(gt) != gt or len(set(gt)) != len(gt):
    bad.append("GPU series out of order or repeated")
if set(gt) != {t for t, _ in c}:
    bad.append(f"GPU series has {len(set(gt) - {t for t, _ in c})} extra and "
               f"{len({t for t, _ in c} - set(gt))} missing tick timestamps")
if len(c) < int(float(sys.argv[3])):
    bad.append(f"only {len(c)} ticks stored, the agent counted {sys.argv[3]}")
if bad:
    sys.exit("\n".join(bad[:10]))
print(f"  - {len(c)} ticks stored once each, counting 1..{len(c)}; the GPU series has a sample at each")
PY
