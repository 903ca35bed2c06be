#!/usr/bin/env bash
# `gpulse agent --simulate`: a mixed fleet served with simulated="true",
# every GPU once, lint-clean, deterministic for a seed, values moving;
# once its jobs run, every GPU series carries its job and rank, the
# gpulse_job_* and step families carry the simulated node, and the
# planted faults of --simulate-truth are where the series say.
source "$(dirname "$0")/lib.sh"
start_agent --simulate 2x8xH100,1x4xMI300X --interval 100ms --seed 7
sleep 0.5
metrics >"$TMP/m1"
check_exposition "$TMP/m1"
n=$(grep -c '^DCGM_FI_DEV_GPU_UTIL{' "$TMP/m1")
[ "$n" -eq 20 ] || fail "want 20 GPUs, got $n"
[ "$(grep '^DCGM_FI_DEV_GPU_UTIL{' "$TMP/m1" | grep -c 'simulated="true"')" -eq 20 ] || fail "a simulated series lacks simulated=\"true\""
for node in sim-node-0 sim-node-1 sim-node-2; do
    grep -q "Hostname=\"$node\"" "$TMP/m1" || fail "node $node missing"
done
# GPM-only fields on the Hopper nodes, not on the AMD one
[ "$(grep '^DCGM_FI_PROF_SM_ACTIVE{' "$TMP/m1" | grep -c 'vendor="amd"' || true)" -eq 0 ] || fail "PROF_* on an AMD GPU"
[ "$(grep -c '^DCGM_FI_PROF_SM_ACTIVE{' "$TMP/m1")" -eq 16 ] || fail "want PROF_SM_ACTIVE on 16 H100s"
sleep 1
metrics >"$TMP/m2"
e1=$(awk '/^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"/ {print $NF; exit}' "$TMP/m1")
e2=$(awk '/^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"/ {print $NF; exit}' "$TMP/m2")
python3 -c "import sys; sys.exit(0 if float('$e2') > float('$e1') else 1)" || fail "energy counter did not grow ($e1 -> $e2)"
uuid=$(grep -m1 -o 'UUID="GPU-[^"]*"' "$TMP/m1")
# Jobs start 1-5 s after the first tick and step after 8 s of loading.
wait_until 25 sh -c "curl -sf http://127.0.0.1:$AGENT_PORT/metrics | grep -c '^gpulse_job_steps_total{' | grep -qx 19" ||
    fail "want 19 step reporters (20 GPUs, one idle)"
metrics >"$TMP/m5"
check_exposition "$TMP/m5"
"$GPULSE" agent --simulate 2x8xH100,1x4xMI300X --seed 7 --simulate-truth - >"$TMP/truth.json"
python3 - "$TMP/m5" "$TMP/truth.json" <<'PY' || fail "simulated jobs and steps do not match the plan"
import json, re, sys
text = open(sys.argv[1]).read()
truth = json.load(open(sys.argv[2]))
lab = re.compile(r'(\w+)="([^"]*)"')
def series(name):
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            out.append((dict(lab.findall(line[len(name) + 1:line.rindex("}")])), float(line.split()[-1])))
    return out
util = series("DCGM_FI_DEV_GPU_UTIL")
assert len(util) == 20 and all("job" in l and "rank" in l for l, _ in util), "a GPU without job/rank"
gpu_job = {(l["Hostname"], l["gpu"]): (l["job"], l["rank"]) for l, _ in util}
info = series("gpulse_job_info")
assert len(info) == 20, len(info)
assert all(l["Hostname"].startswith("sim-node-") and l["scheme"] == "gpulse_job" for l, _ in info)
assert {(l["job"], l["rank"]) for l, _ in info} == set(gpu_job.values())
steps = series("gpulse_job_steps_total")
assert all(l["Hostname"].startswith("sim-node-") and v >= 0 for l, v in steps), steps
assert sum(v > 0 for _, v in steps) >= 10, "the ranks do not step"
for fam in ("gpulse_job_step_seconds_total", "gpulse_job_data_wait_seconds_total", "gpulse_job_samples_total",
            "gpulse_job_tokens_total"):
    assert len(series(fam)) == 19, fam
alloc = series("gpulse_job_allocator_bytes")
assert len(alloc) == 19 * 3 and all(l["kind"] in ("allocated", "reserved", "peak") for l, _ in alloc)
by = {f["kind"]: f for f in truth["faults"]}
for k, f in by.items():
    assert gpu_job[(f["node"], f["gpu"])] == (f["job"], f["rank"]), (k, f, gpu_job[(f["node"], f["gpu"])])
idle = by["idle"]
assert not [l for l, _ in steps if l["job"] == idle["job"]], "the idle job reports steps"
wait = {(l["job"], l["rank"]): v for l, v in series("gpulse_job_data_wait_seconds_total")}
secs = {(l["job"], l["rank"]): v for l, v in series("gpulse_job_step_seconds_total")}
st = by["starved"]
assert wait[(st["job"], st["rank"])] >= 0.5 * secs[(st["job"], st["rank"])], "starved rank waits little"
healthy = [k for k in secs if k != (st["job"], st["rank"]) and secs[k] > 0]
assert healthy and all(wait[k] < 0.05 * secs[k] for k in healthy), "a healthy rank waits for data"
dbe = {(l["Hostname"], l["gpu"]): v for l, v in series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")}
assert sum(dbe.values()) == 0, "a DBE before the planted time"
temp = {(l["Hostname"], l["gpu"]): v for l, v in series("DCGM_FI_DEV_GPU_TEMP")}
sg = by["straggler"]
assert temp[(sg["node"], sg["gpu"])] >= 87, "the straggler is not hot"
assert sum(t >= 87 for t in temp.values()) == 1, "another GPU runs as hot as the straggler"
print("  - jobs and steps: %d GPUs with job/rank, %d step reporters, faults where the truth says" % (len(util), len(steps)))
PY
stop_agent
# Same seed, same identities.
start_agent --simulate 2x8xH100,1x4xMI300X --interval 100ms --seed 7
metrics >"$TMP/m3"; grep -q "$uuid" "$TMP/m3" || fail "seed 7 gave other UUIDs on a second run"
stop_agent
# dcgm-exporter's newer label spelling, by config switch.
start_agent --simulate 1x2xA100 --hostname-label hostname
metrics >"$TMP/m4"
grep -q '^DCGM_FI_DEV_GPU_UTIL{.*,hostname="sim-node-0",' "$TMP/m4" || fail "hostname_label: hostname not applied"
grep -q 'Hostname=' "$TMP/m4" && fail "Hostname label still present"
stop_agent
note "simulated fleet ok"
# A bad spec or fault is refused before anything listens or is created:
# exit 2, one line on stderr, no data or buffer directory, no log line.
for cmd in agent up; do
    for bad in "2x8xFOO" "2xx" "1x1xH100 --simulate-faults bogus"; do
        port=$(free_port)
        dirs=(--buffer-dir "$TMP/bad-buf" --push "http://127.0.0.1:$port/api/v1/write")
        [ $cmd = up ] && dirs+=(--data "$TMP/bad-data")
        # shellcheck disable=SC2086
        rc=0; "$GPULSE" $cmd --listen "127.0.0.1:$port" "${dirs[@]}" --simulate $bad 2>"$TMP/err" || rc=$?
        [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err"; fail "$cmd --simulate $bad: exit $rc, want 2 and one line"; }
        grep -q "^gpulse $cmd: invalid" "$TMP/err" || fail "$cmd --simulate $bad: $(cat "$TMP/err")"
        [ ! -e "$TMP/bad-data" ] && [ ! -e "$TMP/bad-buf" ] || fail "$cmd --simulate $bad created a directory"
    done
done
note "bad --simulate specs and faults: exit 2 before listening or creating anything"
