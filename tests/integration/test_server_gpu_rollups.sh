#!/usr/bin/env bash
# The GPU page on a window whose raw samples have expired (docs/api.md
# "Rollups", docs/dashboard.md). 30 minutes of one GPU's history, 5 hours
# old (so the 2-hour windows holding it ended over an hour ago at any
# time of day: at 3 hours they had not from :30 to :59 of even hours),
# written over remote write at 15 s steps, and a sample now (the GPU
# still reports); the server restarted with retention_raw 1h compacts the
# history into 1-minute rollups and expires its raw samples. Then:
# - the PromQL route and rollups=false answer nothing for the old window
#   (the engine reads raw samples only);
# - the match= form with rollups=auto, asked as the GPU page asks it (a
#   15 s step from a start off the minute), answers from the rollups on
#   the whole minutes, says so (resolution 1m, start, end, step) and
#   equals this script's means of the samples written, minute by minute;
# - in headless Chromium the GPU page of that window draws its charts
#   from the rollups and says "1-minute averages" (tests/e2e/dashboard.mjs
#   old).
source "$(dirname "$0")/lib.sh"
start_server
now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
now=$(now_ms)
t0=$(( (now - 5 * 3600000) / 60000 * 60000 + 7000 )) # 7 s past a minute
python3 - "$t0" "$now" >"$TMP/samples" <<'PY'
import sys
t0, now = int(sys.argv[1]), int(sys.argv[2])
L = 'Hostname="oldn",gpu="0",modelName="NVIDIA H100 80GB HBM3"'
for i in range(120):  # 15 s steps over 30 minutes
    t = t0 + i * 15000
    print('DCGM_FI_DEV_GPU_UTIL{%s}=%d@%d' % (L, (i * 37) % 101, t))
    print('DCGM_FI_DEV_POWER_USAGE{%s}=%r@%d' % (L, 300 + (i * 13) % 200 + 0.25, t))
    print('gpulse_gpu_memory_used_bytes{%s}=%d@%d' % (L, (20 + i % 40) * 2**30, t))
print('DCGM_FI_DEV_GPU_UTIL{%s}=50@%d' % (L, now - 1000))
print('DCGM_FI_DEV_POWER_USAGE{%s}=400@%d' % (L, now - 1000))
print('gpulse_gpu_memory_used_bytes{%s}=%d@%d' % (L, 2**34, now - 1000))
PY
mapfile -t series <"$TMP/samples"
out=$(rw write "$SERVER_URL" "${series[@]}")
[ "${out%% *}" = 204 ] || fail "writing the planted history: $out"
stop_server
start_server --retention-raw 1h
sel='{Hostname="oldn",gpu="0"}'
start=$(( (t0 + 30000) / 1000 )) end=$(( (t0 + 1800000) / 1000 ))
q() { curl -sf -G "$SERVER_URL/api/v1/query_range" --data-urlencode "$1" --data-urlencode "start=$start" \
    --data-urlencode "end=$end" --data-urlencode step=15 "${@:2}"; }
# compaction (into rollups) and retention run in the server's
# background: wait until the raw samples are gone
wait_until 60 sh -c "curl -sf -G '$SERVER_URL/api/v1/query_range' --data-urlencode 'query=DCGM_FI_DEV_GPU_UTIL$sel' \
    --data-urlencode start=$start --data-urlencode end=$end --data-urlencode step=15 | grep -q '\"result\":\[\]'" ||
    fail "PromQL reads raw samples 5 h old with retention_raw 1h: $(q "query=DCGM_FI_DEV_GPU_UTIL$sel" | head -c 300)"
q "match=DCGM_FI_DEV_GPU_UTIL$sel" --data-urlencode rollups=false >"$TMP/raw" || fail "rollups=false failed"
grep -q '"result":\[\]' "$TMP/raw" || fail "rollups=false read expired raw samples: $(cat "$TMP/raw")"
for m in DCGM_FI_DEV_GPU_UTIL DCGM_FI_DEV_POWER_USAGE; do
    q "match=$m$sel" --data-urlencode agg=avg >"$TMP/$m" || fail "the form on $m: $(q "match=$m$sel" --data-urlencode agg=avg)"
done
q "match=gpulse_gpu_memory_used_bytes$sel" --data-urlencode agg=max >"$TMP/mem" || fail "the form's max failed"
python3 - "$TMP/samples" "$start" "$end" "$TMP/DCGM_FI_DEV_GPU_UTIL" "$TMP/DCGM_FI_DEV_POWER_USAGE" "$TMP/mem" <<'PY' ||
import json, re, sys
samples = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\w+)\{.*\}=([^@]+)@(\d+)', line)
    samples.setdefault(m.group(1), []).append((int(m.group(3)), float(m.group(2))))
start, end = int(sys.argv[2]) * 1000, int(sys.argv[3]) * 1000
want_start = start // 60000 * 60000
for path, name, f in ((sys.argv[4], "DCGM_FI_DEV_GPU_UTIL", None), (sys.argv[5], "DCGM_FI_DEV_POWER_USAGE", None),
                      (sys.argv[6], "gpulse_gpu_memory_used_bytes", max)):
    d = json.load(open(path))["data"]
    assert d["resolution"] == "1m" and d["step"] == 60, d
    assert d["start"] * 1000 == want_start and d["end"] * 1000 == end, d
    vals = d["result"][0]["values"]
    got = {int(t * 1000): float(v) for t, v in vals}
    want = {}
    t = want_start
    while t <= end:  # each step: the minute [t - 60 s, t)
        w = [v for (ts, v) in samples[name] if t - 60000 <= ts < t]
        if w:
            want[t] = f(w) if f else sum(w) / len(w)
        t += 60000
    assert len(want) >= 29, (name, len(want))
    assert sorted(got) == sorted(want), (name, sorted(got), sorted(want))
    for t in want:
        assert abs(got[t] - want[t]) <= 1e-9 * max(1, abs(want[t])), (name, t, got[t], want[t])
PY
    fail "the form's rollup answer is not the minutes' means of the samples written"
note "old window: PromQL and rollups=false empty; the form read the rollups (resolution 1m), equal to the minutes' means"
e2e_setup
node "$E2E/dashboard.mjs" old "$SERVER_URL" "$TMP/art" "oldn/0" "$start" "$end" || fail "the GPU page of the old window"
stop_server
