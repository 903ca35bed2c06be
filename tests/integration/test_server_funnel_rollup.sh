#!/usr/bin/env bash
# The fleet funnel from 1-minute rollups (docs/api.md "Fleet funnel",
# long ranges). 50 minutes of planted history at 15 s steps, written over
# remote write: a job's GPU whose minutes are idle, busy or both (its
# first two samples idle, the last two busy), a free GPU reporting
# utilization in percent, and a steady job of user bob. Over the same
# whole minutes, resolution=1m must equal this script's computation from
# the minutes' count, min, max and sum (the documented estimator), and be
# within its stated bound (active_uncertain_gpu_hours) of resolution=raw,
# equal to it in held and effective time; a 7 h range reads rollups by
# itself; a bad resolution answers 400.
source "$(dirname "$0")/lib.sh"
start_server
now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
end=$(( $(now_ms) / 60000 * 60000 ))
start=$((end - 50 * 60000))
python3 - "$start" >"$TMP/samples" <<'PY'
import sys
start = int(sys.argv[1])
H = 'Hostname="rhost",modelName="NVIDIA H100 80GB HBM3"'
for i in range(200):  # 15 s steps over 50 minutes
    t, m, k = start + i * 15000, i // 4, i % 4
    a = (0.01, 0.7, (0.0, 0.02, 0.6, 0.9)[k])[m % 3]
    print('DCGM_FI_PROF_SM_ACTIVE{%s,gpu="0",job="ja",team="t1"}=%r@%d' % (H, a, t))
    print('DCGM_FI_DEV_GPU_UTIL{%s,gpu="1"}=30@%d' % (H, t))
    print('DCGM_FI_PROF_SM_ACTIVE{%s,gpu="2",job="jb",user="bob"}=0.3@%d' % (H, t))
PY
mapfile -t series <"$TMP/samples"
out=$(rw write "$SERVER_URL" "${series[@]}")
[ "${out%% *}" = 204 ] || fail "writing the planted history: $out"
get() { curl -sf "$SERVER_URL/api/v1/fleet/funnel?start=$(($1 / 1000))&end=$(($2 / 1000))&$3" >"$TMP/$4" ||
    fail "the funnel $3: $(curl -s "$SERVER_URL/api/v1/fleet/funnel?start=$(($1 / 1000))&end=$(($2 / 1000))&$3")"; }
get "$start" "$end" resolution=1m roll
get "$start" "$end" resolution=raw raw
get $((end - 7 * 3600000)) "$end" "" auto
python3 - "$TMP/samples" "$TMP/roll" "$TMP/raw" "$TMP/auto" <<'PY' || fail "the rollup funnel is wrong: $(cat "$TMP/roll")"
import json, re, sys
PRICE = 3.5 / 3600
minutes = {}  # (gpu, minute) -> values as fractions
for line in open(sys.argv[1]):
    m = re.match(r'(\w+)\{.*gpu="(\d)".*\}=([^@]+)@(\d+)', line)
    v = float(m.group(3)) / (100 if m.group(1) == "DCGM_FI_DEV_GPU_UTIL" else 1)
    minutes.setdefault((m.group(2), int(m.group(4)) // 60000), []).append(v)
roll, raw, auto = (json.load(open(p))["data"] for p in sys.argv[2:5])
# by hand from the minutes' count, min, max, sum: 15 s a sample
held = {g: 0.0 for g in "012"}; idle = dict(held); unused = dict(held); unsure = 0.0
for (g, _), vs in minutes.items():
    c, lo, hi, mean = len(vs), min(vs), max(vs), sum(vs) / len(vs)
    held[g] += c * 15
    unused[g] += (1 - mean) * c * 15
    if hi < 0.05:
        idle[g] += c * 15
    elif lo < 0.05:
        idle[g] += min(max((1 - (mean - lo) / (hi - lo)) * c, 1), c - 1) * 15
        unsure += c * 15 * (g != "1")
alloc = held["0"] + held["2"]
want = {"total": alloc + held["1"], "allocated": alloc,
        "active": alloc - idle["0"] - idle["2"], "effective": alloc - unused["0"] - unused["2"]}
def near(a, b, what, tol=1e-9):
    assert abs(a - b) <= tol * max(1, abs(b)), (what, a, b)
assert roll["resolution"] == "1m" and roll["approximate"] is True, roll
assert raw["resolution"] == "raw" and raw["approximate"] is False, raw
near(roll["active_uncertain_gpu_hours"], unsure / 3600, "uncertain")
assert unsure > 0
for k, v in want.items():
    near(roll["gpu_hours"][k], v / 3600, k)
    near(roll["gpus"][k], v / 3000, k + " GPUs")
near(roll["idle_cost_allocated"], (idle["0"] + idle["2"]) * PRICE, "allocated idle cost")
near(roll["idle_cost_unallocated"], held["1"] * PRICE, "unallocated idle cost")
# against the raw samples: equal held and effective time, active within the bound
for k in ("total", "allocated", "effective"):
    near(roll["gpu_hours"][k], raw["gpu_hours"][k], k + " raw")
bound = roll["active_uncertain_gpu_hours"]
assert abs(roll["gpu_hours"]["active"] - raw["gpu_hours"]["active"]) <= bound + 1e-12, (roll, raw)
assert abs(roll["idle_cost"] - raw["idle_cost"]) <= bound * 3.5 + 1e-12, (roll, raw)
assert raw["gpu_hours"]["active"] != roll["gpu_hours"]["active"]  # the mixed minutes are estimated
# 7 h: rollups by themselves, the same GPU time over a longer range
assert auto["resolution"] == "1m", auto
for k in want:
    near(auto["gpu_hours"][k], roll["gpu_hours"][k], k + " 7 h")
near(auto["gpus"]["total"], want["total"] / (7 * 3600), "7 h GPUs")
print("  - 1m: active %.5f GPU-h (raw %.5f, bound %.5f); effective %.5f = raw" % (
    roll["gpu_hours"]["active"], raw["gpu_hours"]["active"], bound, roll["gpu_hours"]["effective"]))
PY
code=$(curl -s -o "$TMP/bad" -w '%{http_code}' "$SERVER_URL/api/v1/fleet/funnel?resolution=5m")
[ "$code" = 400 ] && grep -q "invalid parameter 'resolution'" "$TMP/bad" || fail "resolution=5m: $code $(cat "$TMP/bad")"
note "the rollup funnel equals the hand computation from the minutes, within its bound of raw"
stop_server
