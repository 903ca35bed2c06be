#!/usr/bin/env bash
# GET /api/v1/fleet/funnel on `gpulse up --simulate 1x4xH100` with the
# simulator's allocated-idle fault planted on sim-node-0/1, plus series
# written over remote write: a GPU no job holds (busy, so all its cost is
# idle spend), a job's idle GPU with team and user labels, a job whose
# owner is only its processes' uid, a zombie (GPU memory 2 GB, 120 s
# after its job reported its end), a process inside the exit grace and a
# live job's process (neither a zombie). The funnel must equal what this
# script computes by hand from the raw samples (/api/v1/query with a
# range selector over the same 8 s [start, end]); the idle job leads the jobs
# by idle cost; bad ranges answer 400.
source "$(dirname "$0")/lib.sh"
SERVER_CMD=up start_server --simulate 1x4xH100 --simulate-faults idle=sim-node-0/1 --interval 500ms
wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/fleet' | grep -q '\"gpus\":4,'" ||
    fail "the fleet never showed 4 GPUs: $(curl -s "$SERVER_URL/api/v1/fleet")"
# past the simulated jobs' loading (at most 13 s), so only the idle fault idles
sleep 16
now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
t0=$(now_ms)
H='Hostname="zhost",modelName="NVIDIA H100 80GB HBM3"'
series=()
for i in 0 1 2 3 4; do
    t=$((t0 - 5000 + i * 1000))
    series+=("DCGM_FI_PROF_SM_ACTIVE{$H,gpu=\"1\"}=0.9@$t"
        "DCGM_FI_PROF_SM_ACTIVE{$H,gpu=\"2\",job=\"tjob\",team=\"vision\",user=\"bob\"}=0.01@$t"
        "DCGM_FI_DEV_GPU_UTIL{$H,gpu=\"3\",job=\"ujob\"}=50@$t"
        "gpulse_process_info{Hostname=\"zhost\",pid=\"77\",comm=\"train\",job=\"ujob\",uid=\"1001\"}=1@$t"
        "gpulse_gpu_process_memory_bytes{$H,gpu=\"0\",pid=\"4242\",comm=\"python\",job=\"zjob\"}=2e9@$t"
        "gpulse_gpu_process_memory_bytes{$H,gpu=\"0\",pid=\"4300\",comm=\"python\",job=\"graced\"}=1e9@$t"
        "gpulse_gpu_process_memory_bytes{$H,gpu=\"3\",pid=\"77\",comm=\"train\",job=\"ujob\"}=3e9@$t")
done
end_s=$((t0 / 1000))
series+=("gpulse_job_end_time_seconds{Hostname=\"zhost\",job=\"zjob\",pid=\"4241\"}=$((end_s - 120))@$((t0 - 55000))"
    "gpulse_job_end_time_seconds{Hostname=\"zhost\",job=\"graced\",pid=\"4300\"}=$((end_s - 20))@$((t0 - 55000))")
out=$(rw write "$SERVER_URL" "${series[@]}")
[ "${out%% *}" = 204 ] || fail "writing the planted series: $out"
sleep 1
end=$(( $(now_ms) - 300 ))
start=$((end - 8000))
q() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1"; }
sel=$(q '{__name__=~"DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_GPU_UTIL"}[8s]')
at=$(python3 -c "print($end / 1000)")
curl -sf "$SERVER_URL/api/v1/query?query=$sel&time=$at" >"$TMP/raw" || fail "raw samples"
curl -sf "$SERVER_URL/api/v1/fleet/funnel?start=$(python3 -c "print($start / 1000)")&end=$at" \
    >"$TMP/funnel" || fail "the funnel: $(curl -s "$SERVER_URL/api/v1/fleet/funnel")"
python3 - "$TMP/raw" "$TMP/funnel" <<'PY' || fail "the funnel differs from the hand computation: $(cat "$TMP/funnel")"
import json, sys
raw = json.load(open(sys.argv[1]))["data"]["result"]
f = json.load(open(sys.argv[2]))["data"]
PRICE = 3.5 / 3600  # H100, the model table's USD per GPU-hour, per second
best = {}
for r in raw:
    m = r["metric"]
    key = (m.get("Hostname"), m["gpu"], m.get("GPU_I_ID", ""), m.get("job", ""))
    sm = m["__name__"] == "DCGM_FI_PROF_SM_ACTIVE"
    if key not in best or sm:  # SM activity wins over utilization
        best[key] = (m, [(float(t), float(v) / (1 if sm else 100)) for t, v in r["values"]])
tot = alloc = active = eff = idle_alloc = idle_free = 0.0
jobs, users, teams = {}, {}, {}
for key, (m, pts) in best.items():
    if len(pts) < 2:
        continue
    gaps = sorted(b[0] - a[0] for a, b in zip(pts, pts[1:]))
    step = gaps[len(gaps) // 2]
    tot += step * len(pts)
    if not key[3]:
        idle_free += step * len(pts) * PRICE
        continue
    alloc += step * len(pts)
    active += step * sum(1 for _, a in pts if a >= 0.05)
    eff += step * sum(min(max(a, 0), 1) for _, a in pts)
    idle = step * sum(1 for _, a in pts if a < 0.05) * PRICE
    idle_alloc += idle
    user = m.get("user") or ("1001" if key[3] == "ujob" else None)
    for d, k in ((jobs, key[3]), (users, user), (teams, m.get("team"))):
        d[k] = d.get(k, 0) + idle
span = 8.0
def near(a, b, what):
    assert abs(a - b) <= 1e-9 * max(1, abs(b)), (what, a, b)
for name, v in (("total", tot), ("allocated", alloc), ("active", active), ("effective", eff)):
    near(f["gpu_hours"][name], v / 3600, name + " GPU-hours")
    near(f["gpus"][name], v / span, name + " GPUs")
near(f["idle_cost_allocated"], idle_alloc, "allocated idle cost")
near(f["idle_cost_unallocated"], idle_free, "unallocated idle cost")
near(f["idle_cost"], idle_alloc + idle_free, "idle cost")
for by, want in (("job", jobs), ("user", users), ("team", teams)):
    got = {g[by]: g["idle_cost"] for g in f["idle_cost_by"][by]}
    assert set(got) == set(want), (by, got, want)
    for k in want:
        near(got[k], want[k], "idle cost of %s %s" % (by, k))
# the planted conditions, independently of the arithmetic above
g = f["gpus"]
assert g["total"] >= g["allocated"] >= g["active"] >= g["effective"] > 0, g
assert 5.2 < g["total"] < 6.2, g  # 4 simulated GPUs over the 8 s, 3 planted for 5 s
near(f["idle_cost_unallocated"], 5 * PRICE, "the busy GPU no job holds")
top = f["idle_cost_by"]["job"][0]
assert top["job"].startswith("sim-job-") and top["gpus"] == 1, top  # the idle fault: 8 s idle
near(top["idle_cost"], top["cost"], "the idle job's whole cost is idle")
assert top["idle_cost"] > 6 * PRICE, top
teams = {t["team"]: t for t in f["idle_cost_by"]["team"]}
near(teams["vision"]["idle_cost"], 5 * PRICE, "team vision")
users = {u["user"]: u for u in f["idle_cost_by"]["user"]}
assert users["bob"]["gpus"] == 1 and users["1001"]["idle_cost"] == 0, users
z = f["zombies"]
assert len(z) == 1 and z[0]["pid"] == "4242" and z[0]["job"] == "zjob", z
assert z[0]["memory_bytes"] == 2e9 and f["zombie_memory_bytes"] == 2e9, z
print("  - funnel: %.3f total, %.3f allocated, %.3f active, %.3f effective GPUs; idle %.4f USD" % (
    g["total"], g["allocated"], g["active"], g["effective"], f["idle_cost"]))
PY
for bad in "start=yesterday" "start=$((end_s + 10))&end=$end_s" "start=$((end_s - 40 * 86400))&end=$end_s"; do
    code=$(curl -s -o "$TMP/bad" -w '%{http_code}' "$SERVER_URL/api/v1/fleet/funnel?$bad")
    [ "$code" = 400 ] || fail "$bad answered $code, not 400"
    grep -q '"errorType":"bad_data"' "$TMP/bad" || fail "$bad: $(cat "$TMP/bad")"
done
note "the funnel equals the hand computation; one zombie; bad ranges answer 400"
stop_server
