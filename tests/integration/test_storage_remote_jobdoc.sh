#!/usr/bin/env bash
# gp-timeout: 180
# storage: remote, a job document reaching before the local window
# (docs/storage.md "Old reads: aggregates, not raw samples"): a 3 h job of
# 16 GPUs at 15 s (longjob_feed.py: SM active, FB used/free, two families
# the document never reads, the ranks' step counters, CPU, RSS, loss)
# written to an embedded server and, through a remote-mode server with a
# 10 m window, to VictoriaMetrics (Debian's). Checks: the remote server's
# document (with and without series=1) equals the embedded one's, every
# number within 1e-9 relative (VictoriaMetrics keeps 12 digits); the
# remote server asked the cluster for aggregates (VictoriaMetrics counts
# query_range requests, gpulse_storage_remote_pushdowns_total counts
# them) and moved under half of what the raw samples of the job's series
# weigh in VictoriaMetrics's JSON (gpulse_storage_remote_answer_bytes_total),
# reading raw samples of no family the cluster aggregates (the processes,
# model FLOPs, info, samples and tokens counters; host CPU without
# series=1: gpulse_storage_remote_samples_read_total). long-2, whose second
# GPU has memory but no activity series, and long-3, whose tokens counter
# resets, are read raw and equal too; long-4, still running (its range
# ends now), shows the same figures from both. With the cluster down the
# document is a 503 that says what failed.
source "$(dirname "$0")/lib.sh"
start_vm_now

ARGS=(--self-scrape-interval 0s --jobs-scan-interval 1s)
start_server "${ARGS[@]}"
EMB=$SERVER_URL EMB_PID=$SERVER_PID
# shellcheck disable=SC2034 # start_server reads it: a data directory of its own
SERVER_DATA=$TMP/data-remote
start_server "${ARGS[@]}" --storage remote --remote-write-url "$VM_URL" --remote-query-url "$VM" \
    --remote-window 10m
REM=$SERVER_URL

END=$(($(date +%s) / 60 * 60 - 60))
N=$(python3 "$ROOT/tests/integration/longjob_feed.py" "$END" 3 16 15 0 "$EMB" "$REM") ||
    fail "writing the job failed"
in_vm() {
    curl -sf "$VM/internal/force_flush" >/dev/null || true
    [ "$(curl -sf "$VM/api/v1/query" --data-urlencode 'query=sum(count_over_time({job="long-1"}[4h]))' \
        -d "time=$((END + 1))" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')" = "$N" ]
}
wait_until 60 in_vm || fail "victoria-metrics does not show the $N samples of the job"
ended() { curl -sf "$1/api/v1/jobs/${2:-long-1}" 2>/dev/null | grep '"state":"finished"' >/dev/null; }
wait_until 30 ended "$EMB" || fail "the embedded server does not show long-1 finished"
wait_until 30 ended "$REM" || fail "the remote server does not show long-1 finished"

metric() { curl -sf "$REM/metrics" >"$TMP/m.prom" && awk -v n="$1" '$1 == n {print $2; exit}' "$TMP/m.prom"; }
B0=$(metric gpulse_storage_remote_answer_bytes_total)
P0=$(metric gpulse_storage_remote_pushdowns_total)
S0=$(metric gpulse_storage_remote_samples_read_total)
V0=$(vm_ranges)
curl -sf "$REM/api/v1/jobs/long-1" >"$TMP/rem.json" || fail "no document from the remote server"
B1=$(metric gpulse_storage_remote_answer_bytes_total)
S1=$(metric gpulse_storage_remote_samples_read_total)
curl -sf "$REM/api/v1/jobs/long-1?series=1" >"$TMP/rem-series.json" || fail "no series=1 document (remote)"
P1=$(metric gpulse_storage_remote_pushdowns_total)
S2=$(metric gpulse_storage_remote_samples_read_total)
curl -sf "$EMB/api/v1/jobs/long-1" >"$TMP/emb.json" || fail "no document from the embedded server"
curl -sf "$EMB/api/v1/jobs/long-1?series=1" >"$TMP/emb-series.json" || fail "no series=1 document (embedded)"
# long-2's second GPU has memory but no activity: read raw, still equal
wait_until 30 ended "$REM" long-2 || fail "the remote server does not show long-2 finished"
curl -sf "$REM/api/v1/jobs/long-2" >"$TMP/rem-2.json" || fail "no document of long-2 (remote)"
curl -sf "$EMB/api/v1/jobs/long-2" >"$TMP/emb-2.json" || fail "no document of long-2 (embedded)"
# long-3's tokens counter resets: read raw, still equal
wait_until 30 ended "$REM" long-3 || fail "the remote server does not show long-3 finished"
wait_until 30 ended "$EMB" long-3 || fail "the embedded server does not show long-3 finished"
curl -sf "$REM/api/v1/jobs/long-3" >"$TMP/rem-3.json" || fail "no document of long-3 (remote)"
curl -sf "$EMB/api/v1/jobs/long-3" >"$TMP/emb-3.json" || fail "no document of long-3 (embedded)"
# long-4 is running: its range ends now, which the cluster is asked about
running() { curl -sf "$1/api/v1/jobs/long-4" 2>/dev/null | grep '"state":"running"' >/dev/null; }
wait_until 30 running "$REM" || fail "the remote server does not show long-4 running"
curl -sf "$REM/api/v1/jobs/long-4" >"$TMP/rem-4.json" || fail "no document of long-4 (remote)"
curl -sf "$EMB/api/v1/jobs/long-4" >"$TMP/emb-4.json" || fail "no document of long-4 (embedded)"

python3 - "$TMP" <<'EOF' || fail "the remote document differs from the embedded one"
import json, sys
tmp = sys.argv[1]
def same(a, b, path):
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (path, sorted(set(a) ^ set(b)))
        for k in a:
            same(a[k], b[k], path + "." + k)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (path, len(a), len(b) if isinstance(b, list) else b)
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, "%s[%d]" % (path, i))
    elif isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            abs(a - b) <= 1e-9 * max(1, abs(b)), (path, a, b)
    else:
        assert a == b, (path, a, b)
for f in ("", "-series", "-2", "-3"):
    rem, emb = (json.load(open("%s/%s%s.json" % (tmp, w, f))) for w in ("rem", "emb"))
    same(rem, emb, "doc" + f)
# a running job's range ends at each server's own now: what does not hang on it
rem, emb = (json.load(open("%s/%s-4.json" % (tmp, w)))["data"] for w in ("rem", "emb"))
assert emb["command"] == "python run.py" and emb["totals"]["tokens"] == 4096 * 720, emb["totals"]
for k in ("command", "totals.tokens", "totals.steps", "totals.peak_gpu_memory_bytes", "totals.activity_avg",
          "gpus.0.memory_total_bytes", "gpus.0.gpu_seconds"):
    a, b = rem, emb
    for p in k.split("."):
        a, b = (a[int(p)], b[int(p)]) if isinstance(a, list) else (a[p], b[p])
    same(a, b, "long-4." + k)
emb = json.load(open(tmp + "/emb-2.json"))
assert emb["data"]["gpus"][1]["gpu_seconds"] > 0, emb["data"]["gpus"]
t3 = json.load(open(tmp + "/emb-3.json"))["data"]["totals"]
assert t3["tokens"] == 100 * (360 - 1) + 100 * (720 - 360), t3  # 721 samples, reset at the 361st
emb = json.load(open(tmp + "/emb-series.json"))["data"]
t = emb["totals"]
assert len(emb["gpus"]) == 16 and t["peak_gpu_memory_bytes"] > 0 and t["steps"] > 0, t
assert 0 < t["activity_avg"] < 1 and t["gpu_seconds"] > 10000 and t["host_rss_peak_bytes"] > 0, t
assert t["tokens"] == 2 * 65536 * 720 + 2 * (720 * 37 % 11) and t["samples"] == 2 * 32 * 720, t
assert t["host_cpu_seconds"] > 0 and t["mfu"] > 0 and emb["ranks"][0]["processes"] in (1, 2), t
assert max(max(v for v in g["memory_bytes"] if v is not None) for g in emb["series"]["gpus"]) > 0
EOF
note "the remote documents (long-1 with and without series=1; long-2 and long-3, read raw; running long-4) equal the embedded ones"

[ "$((P1 - P0))" -ge 5 ] || fail "pushdowns counted: $P0 -> $P1 (want 5: 2 for the document, 3 with series=1)"
# raw samples only of SM active (16 GPUs) and, per rank (2), steps, step
# seconds, RSS and loss, plus host CPU with series=1: 721 samples each
RAW_MAX=$(((16 + 2 * 4) * 721))
[ "$((S1 - S0))" -gt 0 ] && [ "$((S1 - S0))" -le "$RAW_MAX" ] ||
    fail "the document read $((S1 - S0)) raw samples from the cluster, want at most $RAW_MAX"
[ "$((S2 - S1))" -le "$((RAW_MAX + 2 * 721))" ] ||
    fail "the series=1 document read $((S2 - S1)) raw samples, want at most $((RAW_MAX + 2 * 721))"
note "raw samples read: $((S1 - S0)) (series=1: $((S2 - S1))), at most $RAW_MAX"
vm_saw() { V1=$(vm_ranges) && [ "$((V1 - V0))" -ge 5 ]; }
wait_until 20 vm_saw || fail "victoria-metrics saw $V0 -> $V1 query_range requests (want 5)"
RAW=$(curl -sf "$VM/api/v1/query" --data-urlencode 'query={job="long-1"}[4h]' -d "time=$((END + 301))" | wc -c)
[ "$(((B1 - B0) * 2))" -lt "$RAW" ] ||
    fail "the document moved $((B1 - B0)) bytes, the raw samples of the job's series weigh $RAW"
note "victoria-metrics evaluated aggregates (query_range $V0 -> $V1); the document moved $((B1 - B0)) bytes, the job's raw samples weigh $RAW"
stop_vm
CODE=$(curl -s -o "$TMP/down.json" -w '%{http_code}' "$REM/api/v1/jobs/long-1")
if [ "$CODE" != 503 ] || ! grep 'remote storage: .*/api/v1/query_range' "$TMP/down.json" >/dev/null; then
    fail "with the cluster down the document answered $CODE $(head -c 300 "$TMP/down.json")"
fi
note "with the cluster down: 503 $(head -c 200 "$TMP/down.json")"
stop_server
SERVER_PID=$EMB_PID
stop_server
