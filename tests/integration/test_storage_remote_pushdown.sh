#!/usr/bin/env bash
# gp-timeout: 120
# storage: remote pushes aggregates down for reads older than the local
# window (docs/storage.md "Old reads: aggregates, not raw samples"): two
# hours of 8 GPUs at 15 s, imported into VictoriaMetrics (Debian's) as an
# older past no write passed through the server, then range queries of
# gpulse's form (match=, agg, by; on rollups and on raw windows) over the
# part before the window. Checks: each answer equals the mean/max the
# samples give (computed here from the same numbers, the rollups' minutes
# [t - step, t) or the raw windows (t - step, t]); VictoriaMetrics itself
# counts query_range requests (the *_over_time PromQL) for them;
# gpulse_storage_remote_pushdowns_total counts them; and the answers'
# bytes (gpulse_storage_remote_answer_bytes_total) are a small part of
# what the raw samples of that range weigh in JSON.
source "$(dirname "$0")/lib.sh"
start_vm_now

NOW=$(($(date +%s) / 60 * 60))
T0=$((NOW - 7200))
python3 - "$VM" "$T0" "$NOW" <<'EOF'
import sys, urllib.request
vm, t0, now = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = []
for g in range(8):
    for t in range(t0, now - 1800, 15):  # nothing in the last 30 min: older than the window
        v = 40 + g + ((t // 15) * 7 + g * 3) % 23 * 0.5
        lines.append('DCGM_FI_DEV_GPU_TEMP{Hostname="old-1",gpu="%d"} %s %d' % (g, v, t * 1000))
        lines.append('DCGM_FI_DEV_POWER_USAGE{Hostname="old-1",gpu="%d"} %s %d' % (g, 2 * v, t * 1000))
urllib.request.urlopen(vm + "/api/v1/import/prometheus", data="\n".join(lines).encode()).read()
EOF
imported() {
    [ "$(curl -sf "$VM/api/v1/query" --data-urlencode 'query=count(last_over_time({Hostname="old-1"}[3h]))' |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')" = 16 ]
}
curl -sf "$VM/internal/force_flush" >/dev/null || true
wait_until 30 imported || fail "victoria-metrics does not show the 16 imported series"

start_server --storage remote --remote-write-url "$VM_URL" --remote-query-url "$VM" \
    --self-scrape-interval 0s --remote-window 10m
metric() { curl -sf "$SERVER_URL/metrics" >"$TMP/m.prom" && awk -v n="$1" '$1 == n {print $2; exit}' "$TMP/m.prom"; }
B0=$(metric gpulse_storage_remote_answer_bytes_total)
P0=$(metric gpulse_storage_remote_pushdowns_total)
V0=$(vm_ranges)

START=$((T0 + 600)) END=$((NOW - 1800))
q() { curl -sf "$SERVER_URL/api/v1/query_range" -G --data-urlencode "match=$1" -d "start=$START" \
    -d "end=$END" -d "step=$2" ${3:+-d "$3"} ${4:+-d "$4"} >"$TMP/$5.json" ||
    fail "query $5 failed: $(curl -s "$SERVER_URL/api/v1/query_range" -G --data-urlencode "match=$1" -d "start=$START" -d "end=$END" -d "step=$2" ${3:+-d "$3"})"; }
q 'DCGM_FI_DEV_GPU_TEMP' 60 agg=avg by=gpu roll_avg
q '{Hostname="old-1"}' 120 "" "" roll_none
q 'DCGM_FI_DEV_POWER_USAGE' 45 agg=max "" raw_max
q 'DCGM_FI_DEV_GPU_TEMP' 300 agg=sum "" roll_sum
python3 - "$TMP" "$T0" "$NOW" "$START" "$END" <<'EOF' || fail "an answer differs from the samples"
import json, sys
tmp, t0, now, start, end = sys.argv[1], *map(int, sys.argv[2:])
def val(g, t, name):
    v = 40 + g + ((t // 15) * 7 + g * 3) % 23 * 0.5
    return 2 * v if name == "DCGM_FI_DEV_POWER_USAGE" else v
times = list(range(t0, now - 1800, 15))
def window(g, name, t, step, rollups):
    return [val(g, s, name) for s in times if (t - step <= s < t if rollups else t - step < s <= t)]
def check(file, step, rollups, name, per, combine):
    d = json.load(open("%s/%s.json" % (tmp, file)))["data"]
    assert (d.get("resolution") == "1m") == rollups, (file, d.get("resolution"))
    got = {}
    for s in d["result"]:
        key = tuple(sorted(s["metric"].items()))
        got[key] = {int(float(t)): float(v) for t, v in s["values"]}
    want = {}
    for g in range(8):
        for nm in name:
            key = combine[0](g, nm)
            for t in range(start, end + 1, step):
                w = window(g, nm, t, step, rollups)
                if w:
                    want.setdefault(key, {}).setdefault(t, []).append(per(w))
    want = {k: {t: combine[1](v) for t, v in p.items()} for k, p in want.items()}
    assert set(got) == set(want), (file, sorted(got)[:3], sorted(want)[:3])
    for k in want:
        assert set(got[k]) == set(want[k]), (file, k, len(got[k]), len(want[k]))
        for t in want[k]:
            a, b = got[k][t], want[k][t]
            assert abs(a - b) <= 1e-9 * max(1, abs(b)), (file, k, t, a, b)
mean = lambda w: sum(w) / len(w)
TEMP, POWER = ["DCGM_FI_DEV_GPU_TEMP"], ["DCGM_FI_DEV_POWER_USAGE"]
check("roll_avg", 60, True, TEMP, mean, (lambda g, n: (("gpu", str(g)),), mean))
check("roll_none", 120, True, TEMP + POWER, mean,
      (lambda g, n: (("Hostname", "old-1"), ("__name__", n), ("gpu", str(g))), lambda v: v[0]))
check("raw_max", 45, False, POWER, max, (lambda g, n: (), max))
check("roll_sum", 300, True, TEMP, mean, (lambda g, n: (), sum))
EOF
note "4 range queries before the window equal the samples' means and peaks (rollup and raw windows)"

P1=$(metric gpulse_storage_remote_pushdowns_total)
[ "$((P1 - P0))" -ge 5 ] || fail "pushdowns counted: $P0 -> $P1 (want 5: 4 queries, one of them per name)"
# VictoriaMetrics's /metrics lags its requests by a moment.
vm_saw() { V1=$(vm_ranges) && [ "$((V1 - V0))" -ge 5 ]; }
wait_until 20 vm_saw || fail "victoria-metrics saw $V0 -> $V1 query_range requests (want 5)"
B1=$(metric gpulse_storage_remote_answer_bytes_total)
RAW=$(curl -sf "$VM/api/v1/query" --data-urlencode "query={Hostname=\"old-1\"}[$((END - START + 300))s]" \
    -d "time=$END" | wc -c)
[ "$(((B1 - B0) * 2))" -lt "$RAW" ] || # the 4 queries read it twice over
    fail "the answers moved $((B1 - B0)) bytes, the raw samples of the range weigh $RAW"
note "victoria-metrics evaluated them (query_range $V0 -> $V1); $((B1 - B0)) bytes moved, the raw samples weigh $RAW"
stop_server
