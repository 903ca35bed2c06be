#!/usr/bin/env bash
# gp-timeout: 240
# External storage mode end to end (docs/storage.md), twice: one simulated
# agent with a planted fault (a power-throttled GPU) pushes the same ticks
# to three servers: one with the embedded store, one with storage: remote
# on Debian's VictoriaMetrics, one on Debian's Prometheus with its
# remote-write receiver (its reads all from the cluster, no local
# window). The detectors fire gpu_throttled on that GPU in
# all three; then, the agent stopped and the data delivered, the API's
# answers (/api/v1/gpus, /nodes, /query_range, /series, /labels,
# /label/NAME/values) of both remote servers equal the embedded one's
# (values within VictoriaMetrics's 12 significant digits). PromQL
# queries to the VictoriaMetrics server are the cluster's to compute.
source "$(dirname "$0")/lib.sh"
start_vm
# Queries see fresh rows at once (the default hides the newest 30 s).
kill "$VM_PID"; wait "$VM_PID" 2>/dev/null || true
victoria-metrics -httpListenAddr "127.0.0.1:$VM_PORT" -storageDataPath "$TMP/vm" -loggerLevel ERROR \
    -search.latencyOffset 0s -search.disableCache >>"$TMP/vm.log" 2>&1 &
VM_PID=$!
PIDS+=("$VM_PID")
wait_until 30 curl -sf "http://127.0.0.1:$VM_PORT/health" || fail "victoria-metrics did not restart"
VM_URL_ROOT=http://127.0.0.1:$VM_PORT
start_prom_receiver

# No self-scrape: the three stores are compared, and each server's own
# families would differ.
EVAL=(--eval-interval 1s --eval-step 1s --eval-window 60s --alert-clear-for 30s
    --detector-overrides gpu_throttled.for=3s --self-scrape-interval 0s)
start_server "${EVAL[@]}"
EMB=$SERVER_URL EMB_PID=$SERVER_PID EMB_LOG=$SERVER_LOG
start_server "${EVAL[@]}" --storage remote --remote-write-url "$VM_URL" \
    --remote-query-url "http://127.0.0.1:$VM_PORT" --remote-timeout 10s
VMS=$SERVER_URL VMS_PID=$SERVER_PID VMS_LOG=$SERVER_LOG
# The Prometheus server keeps no local window: every read goes to the
# cluster, so both read paths (docs/storage.md "The local window") are
# compared with embedded mode.
start_server "${EVAL[@]}" --storage remote --remote-write-url "$PROM_URL" \
    --remote-query-url "http://127.0.0.1:$PROM_PORT/" --remote-header "X-Scope-OrgID: gpulse-test" \
    --remote-window 0s
PRS=$SERVER_URL PRS_PID=$SERVER_PID PRS_LOG=$SERVER_LOG

start_agent --simulate 2x2xH100 --simulate-faults throttled=sim-node-1/1 --interval 1s \
    --push "$EMB/api/v1/write" --push "$VMS/api/v1/write" --push "$PRS/api/v1/write"

firing() { curl -sf "$1/api/v1/alerts?state=firing&kind=gpu_throttled" | grep '"gpu":"1"' >/dev/null; }
for u in "$EMB" "$VMS" "$PRS"; do
    wait_until 90 firing "$u" || { tail -5 "$VMS_LOG" "$PRS_LOG"; fail "gpu_throttled never fired at $u"; }
done
note "gpu_throttled fires on sim-node-1 GPU 1 in all three modes"
for u in "$EMB" "$VMS" "$PRS"; do curl -sf "$u/api/v1/alerts?state=firing" >"$TMP/alerts-${u##*:}.json"; done

stop_agent
END_MS=$(date +%s%3N)
# Every tick delivered to both clusters: the remote servers' queues empty.
queued() { curl -sf "$1/metrics" | awk '/^gpulse_push_queue_bytes/ {s += $NF} END {exit !(s == 0)}'; }
wait_until 30 queued "$VMS" || fail "the VictoriaMetrics server still queues samples"
wait_until 30 queued "$PRS" || fail "the Prometheus server still queues samples"
sleep 2 # VictoriaMetrics makes fresh rows searchable within a second or so

START=$(( (END_MS / 1000 - 50) ))
QR="match=DCGM_FI_DEV_GPU_UTIL&start=$START&end=$((END_MS / 1000 + 1))&step=5s"
QR2="match=DCGM_FI_DEV_POWER_USAGE%7BHostname%3D%22sim-node-1%22%7D&start=$START&end=$((END_MS / 1000 + 1))&step=2s&agg=avg&by=gpu"
SER="match%5B%5D=DCGM_FI_DEV_GPU_TEMP&start=$START&end=$((END_MS / 1000 + 1))"
PATHS=(${ONLY_PATHS:-/api/v1/labels /api/v1/gpus /api/v1/nodes} "/api/v1/query_range?$QR" "/api/v1/query_range?$QR2"
    "/api/v1/series?$SER" /api/v1/labels /api/v1/label/Hostname/values /api/v1/label/__name__/values
    "/api/v1/labels?$SER" "/api/v1/label/gpu/values?$SER")
i=0
for p in "${PATHS[@]}"; do
    for u in "$EMB" "$VMS" "$PRS"; do
        code=$(curl -s -o "$TMP/a-$i-${u##*:}.json" -w '%{http_code}' "$u$p")
        [ "$code" = 200 ] || { cat "$TMP/a-$i-${u##*:}.json"; fail "$u$p answered $code"; }
    done
    for u in "$VMS" "$PRS"; do
        python3 "$ROOT/tests/integration/compare_api.py" "$TMP/a-$i-${EMB##*:}.json" "$TMP/a-$i-${u##*:}.json" "$p" ||
            fail "$p differs between embedded and remote ($u)"
    done
    i=$((i + 1))
done
note "the API answers of ${#PATHS[@]} queries equal embedded mode's on VictoriaMetrics and Prometheus"
# PromQL goes to the cluster as PromQL and the cluster's answer is
# relayed: the aggregate is computed there. The answers equal
# VictoriaMetrics's own, and MetricsQL's median (which gpulse's engine
# does not know) answers too: only the cluster can have computed it.
T=$((END_MS / 1000 - 5))
AGG='count by (Hostname) (DCGM_FI_DEV_GPU_UTIL)'
curl -sf "$VMS/api/v1/query" --data-urlencode "query=$AGG" -d "time=$T" >"$TMP/pq-gp.json" ||
    fail "PromQL through the remote server failed"
curl -sf "$VMS/api/v1/query_range" --data-urlencode "query=$AGG" -d "start=$START" -d "end=$T" -d step=5 \
    >"$TMP/pqr-gp.json" || fail "PromQL query_range through the remote server failed"
curl -sf "$VMS/api/v1/query" --data-urlencode "query=median(DCGM_FI_DEV_GPU_UTIL) by (Hostname)" \
    -d "time=$T" | grep '"Hostname":"sim-node-1"' >/dev/null || fail "a MetricsQL query was not computed by VictoriaMetrics"
curl -sf "$VM_URL_ROOT/api/v1/query" --data-urlencode "query=$AGG" -d "time=$T" >"$TMP/pq-vm.json"
curl -sf "$VM_URL_ROOT/api/v1/query_range" --data-urlencode "query=$AGG" -d "start=$START" -d "end=$T" -d step=5 \
    >"$TMP/pqr-vm.json"
python3 - "$TMP"/pq-gp.json "$TMP"/pq-vm.json "$TMP"/pqr-gp.json "$TMP"/pqr-vm.json <<'PY' ||
import json, sys
g, v, gr, vr = (json.load(open(p)) for p in sys.argv[1:])
key = lambda d: sorted(json.dumps(s, sort_keys=True) for s in d["data"]["result"])
assert g["data"]["resultType"] == "vector" and len(g["data"]["result"]) == 2, g
assert key(g) == key(v), (g, v)
assert gr["data"]["resultType"] == "matrix" and key(gr) == key(vr), (gr, vr)
PY
    fail "PromQL through the remote server differs from VictoriaMetrics's own answer"
note "PromQL (instant and range aggregates) is computed by VictoriaMetrics, its answers relayed"
python3 - "$TMP/alerts-${EMB##*:}.json" "$TMP/alerts-${VMS##*:}.json" "$TMP/alerts-${PRS##*:}.json" <<'PY' ||
import json, sys
def key(path):
    return sorted((a["kind"], json.dumps(a["labels"], sort_keys=True))
                  for a in json.load(open(path))["data"] if a["kind"] == "gpu_throttled")
e, v, p = (key(x) for x in sys.argv[1:])
assert e and e == v == p, (e, v, p)
PY
    fail "the firing gpu_throttled alerts differ"
curl -sf "$VMS/metrics" >"$TMP/m.prom"
grep -q '^gpulse_storage_remote_queries_total [1-9]' "$TMP/m.prom" || fail "no remote queries counted"
kill -TERM "$VMS_PID" "$PRS_PID" "$EMB_PID"
for p in "$VMS_PID" "$PRS_PID" "$EMB_PID"; do
    rc=0; wait "$p" || rc=$?
    [ $rc -eq 0 ] || { tail -20 "$TMP"/server-*.log; fail "a server exited with $rc"; }
done
