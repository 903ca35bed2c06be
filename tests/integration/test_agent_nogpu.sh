#!/usr/bin/env bash
# A machine with no GPU driver: host and process metrics still served,
# one clear line says no GPU driver was found, output lints clean.
source "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/sys"
GPULSE_NVML_LIBRARY=$TMP/none/libnvidia-ml.so.1 start_agent --sysfs-root "$TMP/sys" --process-series all
metrics >"$TMP/m"
grep -q '^gpulse_host_cpu_seconds_total{mode="user"}' "$TMP/m" || fail "no host cpu metrics"
grep -q '^gpulse_host_memory_bytes{kind="total"}' "$TMP/m" || fail "no host memory metrics"
grep -q "^gpulse_process_resident_memory_bytes{pid=\"$AGENT_PID\"" "$TMP/m" || fail "agent's own process missing"
grep -q 'DCGM_FI_' "$TMP/m" && fail "GPU metrics without a GPU"
grep -q '^gpulse_source_up{source="nvml"} 0' "$TMP/m" || fail "nvml should be down"
check_exposition "$TMP/m"
n=$(grep -c 'no GPU driver found' "$AGENT_LOG" || true)
[ "$n" -eq 1 ] || { cat "$AGENT_LOG"; fail "want exactly one 'no GPU driver found' line, got $n"; }
curl -sf "http://127.0.0.1:$AGENT_PORT/api/v1/snapshot" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["gpus"] == [], d["gpus"]
assert d["host"]["cpus"] >= 1
assert any(p["comm"] == "gpulse" for p in d["processes"]), "own process missing"
'
stop_agent
note "no-GPU machine ok"
# `gpulse up` without a GPU: the same one line, and it suggests --simulate.
GPULSE_NVML_LIBRARY=$TMP/none/libnvidia-ml.so.1 SERVER_CMD=up start_server --sysfs-root "$TMP/sys"
wait_until 10 grep -q 'no GPU driver found' "$SERVER_LOG" || { cat "$SERVER_LOG"; fail "up: no 'no GPU driver found' line"; }
[ "$(grep -c 'no GPU driver found.*hint=.*--simulate 1x8xH100' "$SERVER_LOG")" -eq 1 ] ||
    { cat "$SERVER_LOG"; fail "up: the no-GPU line does not suggest --simulate"; }
stop_server
note "no-GPU up says so and suggests --simulate"
