#!/usr/bin/env bash
# gp-timeout: 180
# storage: remote while the cluster is down (docs/storage.md "Failure"):
# writes are still acknowledged and wait in the disk buffer
# (<data>/remote-buffer), across a restart of the server too; queries
# answer 503 with a message that names the cluster and what failed, and
# the server stays up; once VictoriaMetrics is back, every buffered sample
# reaches it and the same queries answer them.
source "$(dirname "$0")/lib.sh"
start_vm
stop_vm # a port and a data directory, nobody listening yet
ARGS=(--storage remote --remote-write-url "$VM_URL" --remote-query-url "http://127.0.0.1:$VM_PORT"
    --remote-timeout 2s --remote-write-timeout 2s --eval-interval 1s --eval-step 1s --eval-window 30s
    --self-scrape-interval 1s)
start_server "${ARGS[@]}"
NOW=$(date +%s%3N)
for i in 0 1 2 3 4; do
    out=$(rw write "$SERVER_URL" "DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",gpu=\"0\"}=$((60 + i))@$((NOW - 5000 + i * 1000))")
    [ "${out%% *}" = 204 ] || fail "write $i while the cluster is down: $out"
done
note "5 writes acknowledged with the cluster down"
buffered() { curl -sf "$SERVER_URL/metrics" | awk '/^gpulse_push_buffer_bytes/ {s += $NF} END {exit !(s > 0)}'; }
wait_until 10 buffered || fail "nothing in the disk buffer"
ls "$SERVER_DATA/remote-buffer"/*/ >/dev/null || fail "no buffer directory under the data directory"
Q="/api/v1/query_range?match=DCGM_FI_DEV_GPU_TEMP&start=$((NOW / 1000 - 10))&end=$((NOW / 1000 + 1))&step=1s"
for p in "$Q" /api/v1/gpus /api/v1/labels /api/v1/label/gpu/values "/api/v1/series?match%5B%5D=up" /api/v1/fleet/gpus; do
    code=$(curl -s -o "$TMP/q.json" -w '%{http_code}' "$SERVER_URL$p")
    [ "$code" = 503 ] || { cat "$TMP/q.json"; fail "$p with the cluster down answered $code, not 503"; }
    grep -q "remote storage: http://127.0.0.1:$VM_PORT/api/v1/" "$TMP/q.json" ||
        { cat "$TMP/q.json"; fail "$p: the error does not name the cluster"; }
done
note "queries answer 503: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"])' "$TMP/q.json")"
curl -sf "$SERVER_URL/api/v1/health" >/dev/null || fail "health is not ok while the cluster is down"
curl -sf "$SERVER_URL/metrics" >"$TMP/m.prom"
grep -q '^gpulse_storage_remote_query_errors_total [1-9]' "$TMP/m.prom" ||
    fail "query errors not counted"

# A restart with the cluster still down: the buffer is on disk.
stop_server
SERVER_DATA=$SERVER_DATA start_server "${ARGS[@]}"
grep -q 'push buffer recovered' "$SERVER_LOG" || { cat "$SERVER_LOG"; fail "the buffer was not recovered"; }
note "the disk buffer survives a restart"

victoria-metrics -httpListenAddr "127.0.0.1:$VM_PORT" -storageDataPath "$TMP/vm" -loggerLevel ERROR \
    -search.latencyOffset 0s -search.disableCache >>"$TMP/vm.log" 2>&1 &
VM_PID=$!
PIDS+=("$VM_PID")
wait_until 30 curl -sf "http://127.0.0.1:$VM_PORT/health" || fail "victoria-metrics did not come back"
count() {
    curl -sf "$SERVER_URL$Q" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]["result"]
vals = sorted(float(v) for s in d for _, v in s["values"])
sys.exit(0 if set(vals) >= {60.0, 61.0, 62.0, 63.0, 64.0} else 1)'
}
wait_until 60 count || { curl -s "$SERVER_URL$Q" || true; tail -40 "$SERVER_LOG"; fail "the buffered samples never arrived"; }
note "every buffered sample delivered after the cluster came back, and queries answer them"
# A GPU last heard from 6 minutes ago: older than what unbounded selections
# fetch of every series (the newest 2 minutes), within remote_lookback
# (15 minutes): the inventory still lists it, last seen then.
out=$(rw write "$SERVER_URL" "DCGM_FI_DEV_GPU_TEMP{Hostname=\"n2\",gpu=\"3\"}=41@$((NOW - 360000))")
[ "${out%% *}" = 204 ] || fail "write of n2: $out"
n2() {
    curl -sf "$SERVER_URL/api/v1/gpus" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
g = [x for x in d if x.get("node") == "n2" and str(x.get("gpu")) == "3"]
assert g and abs(g[0]["last_seen"] * 1000 - int(sys.argv[1])) < 1, d
n1 = [x for x in d if x.get("node") == "n1"]
assert n1, d' $((NOW - 360000))
}
wait_until 30 n2 || { curl -s "$SERVER_URL/api/v1/gpus"; fail "the inventory lacks a GPU silent for 6 minutes"; }
note "a GPU silent for 6 minutes is still in the inventory"
# The server's self-scrape goes through the same write path: the cluster
# holds its own families under job="gpulse-server", instance=its address.
self_in_vm() {
    curl -sf "http://127.0.0.1:$VM_PORT/api/v1/query" --data-urlencode \
        "query=gpulse_server_series{job=\"gpulse-server\",instance=\"127.0.0.1:$SERVER_PORT\"} > 0 and on(instance) up{job=\"gpulse-server\"} == 1" |
        grep -q '"result":\[{'
}
wait_until 30 self_in_vm || fail "the cluster lacks the server's self-scrape"
note "the server's self-scrape reaches the cluster"
stop_server
