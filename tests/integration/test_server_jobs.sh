#!/usr/bin/env bash
# The jobs registry and API end to end: remote-write the synthetic jobs of
# jobs_feed.py (a finished two-rank job on two GPUs with steps, a killed
# one, a lost one, two running ones, one with an id that needs escaping)
# to the real server, then read GET /api/v1/jobs and /api/v1/jobs/ID and
# check states, filters, totals and the 404; restart the server on the
# same data directory and find the registry still there (the unit tests
# check that it is loaded from state.db, not rebuilt by a scan).
source "$(dirname "$0")/lib.sh"
start_server --jobs-scan-interval 200ms --gpu-prices H100=2.5
NOW=$(date +%s)
T0=$(python3 "$ROOT/tests/integration/jobs_feed.py" "$SERVER_URL" "$NOW") || fail "feeding the jobs"
wait_until 20 sh -c "curl -sf '$SERVER_URL/api/v1/jobs' | grep -q killed-1" ||
    { cat "$SERVER_LOG"; fail "the scanner never registered the jobs"; }
# get URL FILE: 200 into FILE, or the status, the answer and the server's
# last lines (a failure under load once showed nothing more than its name)
get() {
    local code
    code=$(curl -s -o "$2" -w '%{http_code}' "$1")
    [ "$code" = 200 ] && return 0
    echo "HTTP $code from $1: $(head -c 400 "$2")" >&2
    tail -20 "$SERVER_LOG" >&2
    return 1
}
get "$SERVER_URL/api/v1/jobs" "$TMP/list.json" || fail "GET /api/v1/jobs"
get "$SERVER_URL/api/v1/jobs/train-1?series=1" "$TMP/train.json" || fail "GET /api/v1/jobs/train-1"
get "$SERVER_URL/api/v1/jobs/odd%20job%2Fx%3Fy%25z" "$TMP/odd.json" || fail "GET the odd id"
curl -sf "$SERVER_URL/api/v1/jobs?state=running&node=n2&limit=1" >"$TMP/filtered.json" || fail "filters"
code=$(curl -s -o "$TMP/404.json" -w '%{http_code}' "$SERVER_URL/api/v1/jobs/no-such-job")
[ "$code" = 404 ] || fail "unknown job answered $code"
code=$(curl -s -o "$TMP/400.json" -w '%{http_code}' "$SERVER_URL/api/v1/jobs?limit=5000")
[ "$code" = 400 ] || fail "limit=5000 answered $code"
python3 - "$TMP" "$T0" <<'PY' || fail "the answers are wrong (above)"
import json, sys
tmp, t0 = sys.argv[1], float(sys.argv[2])
L = json.load(open(tmp + "/list.json"))["data"]
by = {j["id"]: j for j in L}
want = {"train-1": "finished", "killed-1": "killed", "lost-1": "lost", "run-1": "running",
        "odd job/x?y%z": "running"}
for k, v in want.items():
    assert by[k]["state"] == v, (k, by[k])
starts = [j["start"] for j in L]
assert starts == sorted(starts, reverse=True), starts
t = by["train-1"]
assert (t["ranks"], t["gpus"], t["nodes"], t["exit_status"], t["start"], t["end"]) == \
    (2, 2, ["n1"], 0, t0, t0 + 100), t
assert by["killed-1"]["exit_status"] == 137 and by["lost-1"]["end"] is None
d = json.load(open(tmp + "/train.json"))
assert d["status"] == "success"
d = d["data"]
T = d["totals"]
checks = {"gpu_seconds": 220, "gpu_hours": 220 / 3600, "activity_avg": 0.65, "activity_p50": 0.5,
          "activity_p90": 0.8, "peak_gpu_memory_bytes": 2000 * 2**20, "peak_gpu_memory_ratio": 0.5,
          "steps": 220, "steps_per_second": 220 / 105, "stepping_seconds": 105, "price_per_gpu_hour": 2.5, "cost": 220 / 3600 * 2.5}
for k, v in checks.items():
    assert abs(T[k] - v) < 1e-9, (k, T[k], v)
assert T["step_seconds"]["mean"] == 0.5 and T["step_seconds"]["p99"] == 0.5, T["step_seconds"]
for k in ("samples", "tokens", "host_cpu_seconds", "host_rss_peak_bytes", "data_wait_ratio"):
    assert T[k] is None, (k, T[k])
assert T["currency"] == "USD"
assert d["wall_seconds"] == 100 and d["state"] == "finished" and d["signal"] is None
src = {g["gpu"]: g["activity_source"] for g in d["gpus"]}
assert src == {"0": "sm_active", "1": "gpu_util"}, src
assert len(d["series"]["gpus"]) == 2 and len(d["series"]["gpus"][0]["t"]) <= 500
assert [r["rank"] for r in d["ranks"]] == [0, 1]
o = json.load(open(tmp + "/odd.json"))["data"]
assert o["id"] == "odd job/x?y%z" and o["state"] == "running" and o["end"] is None, o
F = json.load(open(tmp + "/filtered.json"))["data"]
assert len(F) == 1 and F[0]["id"] in ("run-1", "odd job/x?y%z"), F
e = json.load(open(tmp + "/404.json"))
assert e["status"] == "error" and e["errorType"] == "not_found", e
e = json.load(open(tmp + "/400.json"))
assert e["errorType"] == "bad_data" and "limit" in e["error"], e
PY
note "states, filters, totals, escaped ids and errors as expected"
stop_server
SERVER_DATA_KEEP=$SERVER_DATA
SERVER_DATA=$SERVER_DATA_KEEP start_server
[ -s "$SERVER_DATA/state.db" ] || fail "no state.db in the data directory"
curl -sf "$SERVER_URL/api/v1/jobs/killed-1" >"$TMP/k.json" || fail "killed-1 gone after a restart"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["data"]
assert d["state"] == "killed" and d["exit_status"] == 137 and d["signal"] == 9, d
' "$TMP/k.json" || fail "killed-1 after a restart"
n=$(curl -sf "$SERVER_URL/api/v1/jobs" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
[ "$n" = 5 ] || fail "$n jobs after a restart, want 5"
note "the registry survived a restart"
stop_server
