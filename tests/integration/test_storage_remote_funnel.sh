#!/usr/bin/env bash
# gp-timeout: 180
# storage: remote, the fleet funnel over a range reaching before the local
# window (docs/storage.md "Cost and the funnel"): 3 h of 16 GPUs at 5 s
# (funnel_feed.py: jobs starting and ending at times of their own, GPUs no
# job holds, utilization-only and both-family GPUs, idle stretches, minutes
# on both sides of the idle threshold, a few ms of scrape jitter) written
# to an embedded server and, through a remote-mode server with a 20 m
# window, to VictoriaMetrics (Debian's), and one GPU more to both
# directly (not in the remote server's window). Checks: the funnel from 1-minute
# rollups (resolution=1m, what ranges over 6 h and the weekly report read)
# equals the embedded one (compare_api.py: every number within 1e-9
# relative, lists of objects in any order); the remote
# server had VictoriaMetrics compute the minutes (query_range requests,
# gpulse_storage_remote_pushdowns_total) and moved under half of what the
# activity series' raw samples weigh in its JSON
# (gpulse_storage_remote_answer_bytes_total): the owners (processes' uids)
# are read as labels only, a zombie's memory from the minutes after its
# job's end. The raw funnel and
# /api/v1/cost, read raw (a median gap is no PromQL aggregate), equal the
# embedded ones too. With the cluster down the funnel is a 503 that says
# what failed.
source "$(dirname "$0")/lib.sh"
start_vm_now

# the embedded server, then the remote one (a data directory of its own)
start_server --self-scrape-interval 0s
EMB=$SERVER_URL EMB_PID=$SERVER_PID
SERVER_DATA=$TMP/data-remote start_server --self-scrape-interval 0s --remote-window 20m \
    --storage remote --remote-write-url "$VM_URL" --remote-query-url "$VM"
REM=$SERVER_URL

END=$(($(date +%s) / 60 * 60 - 60))
START=$((END - 3 * 3600))
# GPUs 0-15 through the remote server; GPU 16 put into the cluster by
# another writer (not in the remote server's window, though its last
# minutes are within the window's span); all 17 to the embedded server in
# one request (it takes samples older than its raw retention only before
# it compacts)
N=$(python3 "$ROOT/tests/integration/funnel_feed.py" "$END" 3 17 5 "$EMB") ||
    fail "writing the fleet to the embedded server failed"
python3 "$ROOT/tests/integration/funnel_feed.py" "$END" 3 16 5 "$REM" >/dev/null ||
    fail "writing the fleet through the remote server failed"
FIRST_GPU=16 python3 "$ROOT/tests/integration/funnel_feed.py" "$END" 3 1 5 "$VM" >/dev/null ||
    fail "writing GPU 16 to the cluster failed"
ACT='{__name__=~"DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_GPU_UTIL"}'
in_vm() {
    curl -sf "$VM/internal/force_flush" >/dev/null || true
    [ "$(curl -sf "$VM/api/v1/query" --data-urlencode "query=sum(count_over_time(${ACT}[4h]))" \
        -d "time=$((END + 1))" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')" = "$N" ]
}
wait_until 60 in_vm || fail "victoria-metrics does not show the $N samples"

metric() { curl -sf "$REM/metrics" >"$TMP/m.prom" && awk -v n="$1" '$1 == n {print $2; exit}' "$TMP/m.prom"; }
Q="start=$START&end=$END"
B0=$(metric gpulse_storage_remote_answer_bytes_total)
P0=$(metric gpulse_storage_remote_pushdowns_total)
V0=$(vm_ranges)
curl -sf "$REM/api/v1/fleet/funnel?$Q&resolution=1m" >"$TMP/rem-1m.json" || fail "no funnel from the remote server"
B1=$(metric gpulse_storage_remote_answer_bytes_total)
P1=$(metric gpulse_storage_remote_pushdowns_total)
curl -sf "$REM/api/v1/fleet/funnel?$Q&resolution=raw" >"$TMP/rem-raw.json" || fail "no raw funnel (remote)"
curl -sf "$REM/api/v1/cost?$Q" >"$TMP/rem-cost.json" || fail "no cost (remote)"
curl -sf "$REM/api/v1/cost?$Q&by=node" >"$TMP/rem-node.json" || fail "no cost by node (remote)"
for f in "fleet/funnel?$Q&resolution=1m 1m" "fleet/funnel?$Q&resolution=raw raw" "cost?$Q cost" \
    "cost?$Q&by=node node"; do
    curl -sf "$EMB/api/v1/${f% *}" >"$TMP/emb-${f##* }.json" || fail "no ${f% *} from the embedded server"
done

for f in 1m raw cost node; do
    python3 "$ROOT/tests/integration/compare_api.py" "$TMP/emb-$f.json" "$TMP/rem-$f.json" "$f" ||
        fail "the remote answer ($f) differs from the embedded one"
done
python3 - "$TMP" <<'EOF' || fail "the funnel does not hold what the data holds"
import json, sys
tmp = sys.argv[1]
d = json.load(open(tmp + "/emb-1m.json"))["data"]
h = d["gpu_hours"]
assert d["resolution"] == "1m" and d["approximate"] and d["active_uncertain_gpu_hours"] > 0, d
assert h["total"] > h["allocated"] > h["active"] > h["effective"] > 0, h
assert len(d["idle_cost_by"]["job"]) == 4 and len(d["idle_cost_by"]["team"]) == 2, d["idle_cost_by"]
assert d["cost"] > d["idle_cost"] > d["idle_cost_unallocated"] > 0, d
users = sorted(u["user"] for u in d["idle_cost_by"]["user"])
assert users == ["2001", "2003", "u0", "u2"], users  # odd jobs' owners are their processes' uids
z = d["zombies"]
assert "job-1" in {x["job"] for x in z} and d["zombie_memory_bytes"] > 0, z
EOF
note "the remote funnel (1m and raw) and cost (by job and node) equal the embedded ones"

# What moved: the minutes as aggregates the cluster computed (one
# query_range per family), under half of what the activity samples weigh.
MOVED=$((B1 - B0))
RAW=$(curl -sf "$VM/api/v1/query" --data-urlencode "query=${ACT}[3h]" -d "time=$END" | wc -c)
note "the funnel moved $MOVED bytes (pushdowns $P0 -> $P1); the raw samples weigh $RAW"
if [ "$((P1 - P0))" -lt 2 ] || [ "$((MOVED * 2))" -ge "$RAW" ]; then
    fail "the funnel asked for $((P1 - P0)) aggregates (want 2) and moved $MOVED bytes (want under $((RAW / 2)))"
fi
vm_counted() { V1=$(vm_ranges) && [ "$((V1 - V0))" -ge 2 ]; }
wait_until 20 vm_counted || fail "victoria-metrics counted $V0 -> $V1 query_range requests (want 2 more)"
stop_vm
curl -s -o "$TMP/down.json" -w '%{http_code}' "$REM/api/v1/fleet/funnel?$Q&resolution=1m" >"$TMP/down.code"
if ! grep '^503$' "$TMP/down.code" >/dev/null || ! grep 'remote storage: ' "$TMP/down.json" >/dev/null; then
    fail "with the cluster down the funnel answered $(cat "$TMP/down.code") $(head -c 300 "$TMP/down.json")"
fi
note "with the cluster down: 503 $(head -c 200 "$TMP/down.json")"
stop_server
SERVER_PID=$EMB_PID
stop_server
