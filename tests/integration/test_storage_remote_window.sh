#!/usr/bin/env bash
# gp-timeout: 180
# storage: remote keeps its recent window (docs/storage.md "The local
# window"): the writes that pass through the server are kept in a local
# store, and the detectors, /api/v1/gpus, /api/v1/fleet/gpus and range
# queries within the window are answered without asking the cluster. A
# restart wipes the window and refills it from the cluster (Debian's
# VictoriaMetrics): the restarted server answers the same inventory and
# the same samples as before, its detectors' view holds every GPU at once,
# and none of it asks the cluster again. VM_ARGS, SIM and GPUS (extra
# VictoriaMetrics flags, the simulated fleet and its GPUs) let
# test_storage_remote_refill.sh run it against a cluster that limits
# the series a query may touch.
source "$(dirname "$0")/lib.sh"
start_vm
# Queries see fresh rows at once (the default hides the newest 30 s).
stop_vm
victoria-metrics -httpListenAddr "127.0.0.1:$VM_PORT" -storageDataPath "$TMP/vm" -loggerLevel ERROR \
    -search.latencyOffset 0s -search.disableCache ${VM_ARGS:-} >>"$TMP/vm.log" 2>&1 &
VM_PID=$!
PIDS+=("$VM_PID")
wait_until 30 curl -sf "http://127.0.0.1:$VM_PORT/health" || fail "victoria-metrics did not restart"
ARGS=(--storage remote --remote-write-url "$VM_URL" --remote-query-url "http://127.0.0.1:$VM_PORT"
    --eval-interval 1s --eval-step 1s --eval-window 60s --self-scrape-interval 0s ${WINDOW_ARGS:-})
start_server "${ARGS[@]}"
start_agent --simulate "${SIM:-2x2xH100}" --interval 1s --push "$SERVER_URL/api/v1/write"

metric() { # the whole answer first: an awk that stops early would fail curl
    curl -sf "$SERVER_URL/metrics" >"$TMP/m.prom" && awk -v n="$1" '$1 == n {print $2; exit}' "$TMP/m.prom"
}
GPUS=${GPUS:-4}
view4() { [ "$(metric gpulse_server_eval_view_gpus)" = "$GPUS" ]; }
wait_until 60 view4 || { tail -20 "$SERVER_LOG"; fail "the detectors never saw $GPUS GPUs"; }
sleep 8 # some history
r=$(metric gpulse_storage_remote_window_reads_total)
[ "${r:-0}" -gt 0 ] 2>/dev/null || fail "no read answered from the local window (reads: '${r:-none}')"
note "the detectors and the API read the local window ($r reads)"

stop_agent
queued() { curl -sf "$SERVER_URL/metrics" | awk '/^gpulse_push_queue_bytes/ {s += $NF} END {exit !(s == 0)}'; }
wait_until 30 queued || fail "the server still queues samples for the cluster"
sleep 2
END=$(date +%s)
Q="/api/v1/query_range?match=DCGM_FI_DEV_GPU_UTIL&start=$((END - 30))&end=$END&step=1s"
shape_gpus() { # the inventory without what moves with the clock
    python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
print(json.dumps(sorted([g.get("node"), str(g.get("gpu")), g.get("uuid"), g.get("last_seen")] for g in d)))'
}
shape_range() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]["result"]
print(json.dumps(sorted([sorted(s["metric"].items()), s["values"]] for s in d)))'
}
curl -sf "$SERVER_URL/api/v1/gpus" | shape_gpus >"$TMP/gpus-before.json"
curl -sf "$SERVER_URL$Q" | shape_range >"$TMP/range-before.json"
grep -q sim-node-1 "$TMP/gpus-before.json" || fail "the inventory before the restart: $(cat "$TMP/gpus-before.json")"
grep -q '\[\[' "$TMP/range-before.json" || fail "no samples before the restart"

SERIES_BEFORE=$(metric gpulse_server_series)
stop_server
SERVER_DATA=$SERVER_DATA start_server "${ARGS[@]}"
grep -q 'remote window refilled' "$SERVER_LOG" || { cat "$SERVER_LOG"; fail "the window was not refilled"; }
filled=$(metric gpulse_storage_remote_window_refilled_samples)
held=$(metric gpulse_storage_remote_window_held_seconds)
awk -v f="$filled" -v h="$held" 'BEGIN {exit !(f > 100 && h >= 60)}' ||
    fail "refilled $filled samples, complete for ${held}s"
refilled=$(sed -n 's/.*remote window refilled.* series=\([0-9]*\).*/\1/p' "$SERVER_LOG")
[ "$refilled" = "$SERIES_BEFORE" ] || fail "refilled $refilled series, the window held $SERIES_BEFORE"
note "the restart refilled the window from VictoriaMetrics: $refilled series, $filled samples, ${held}s complete"

q0=$(metric gpulse_storage_remote_queries_total)
t0=$(metric gpulse_server_eval_ticks_total)
curl -sf "$SERVER_URL/api/v1/gpus" | shape_gpus >"$TMP/gpus-after.json"
curl -sf "$SERVER_URL$Q" | shape_range >"$TMP/range-after.json"
curl -sf "$SERVER_URL/api/v1/fleet/gpus" >"$TMP/fleet.json" || fail "/api/v1/fleet/gpus after the restart"
cmp -s "$TMP/gpus-before.json" "$TMP/gpus-after.json" ||
    fail "/api/v1/gpus changed across the restart: $(cat "$TMP/gpus-before.json") vs $(cat "$TMP/gpus-after.json")"
cmp -s "$TMP/range-before.json" "$TMP/range-after.json" || fail "the samples of the window changed across the restart"
note "/api/v1/gpus and a range query answer as before the restart"
ticked() { [ "$(metric gpulse_server_eval_ticks_total)" -ge $((t0 + 3)) ]; }
wait_until 30 ticked || fail "no evaluation ticks after the restart"
view4 || fail "the detectors' view after the restart holds $(metric gpulse_server_eval_view_gpus) GPUs, not $GPUS"
q1=$(metric gpulse_storage_remote_queries_total)
[ "$q1" = "$q0" ] || fail "the cluster was asked $((q1 - q0)) times for reads within the window"
note "the detectors' view holds all $GPUS GPUs at once, and nothing within the window asks the cluster"
stop_server
