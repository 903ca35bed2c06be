#!/usr/bin/env bash
# The fleet check's two halves that need no alert engine: the agent's
# ground truth for the issue's spec (--simulate-truth -: one fault of
# each kind, each alone on its node, deterministic by seed, the override
# honoured, a misfit override refused with exit 2), written to a file
# at start by `gpulse up` as bench/fleet_faults.sh uses it, and the
# scoring of bench/fleet_truth.py on canned alerts.
source "$(dirname "$0")/lib.sh"
SPEC=8x8xH100,4x8xA100,2x8xMI300X
"$GPULSE" agent --simulate "$SPEC" --simulate-truth - >"$TMP/t1.json" || fail "truth: exit $?"
"$GPULSE" agent --simulate "$SPEC" --simulate-truth - >"$TMP/t1b.json"
"$GPULSE" agent --simulate "$SPEC" --seed 2 --simulate-truth - >"$TMP/t2.json"
cmp -s "$TMP/t1.json" "$TMP/t1b.json" || fail "the same seed gave another truth"
cmp -s "$TMP/t1.json" "$TMP/t2.json" && fail "seeds 1 and 2 gave the same truth"
python3 - "$TMP/t1.json" "$TMP/t2.json" <<'PY' || fail "truth does not hold one of each fault"
import json, sys
for path in sys.argv[1:]:
    t = json.load(open(path))
    f = t["faults"]
    assert sorted(x["kind"] for x in f) == ["ecc", "hang", "idle", "leak", "powercap", "restart", "starved",
                                            "straggler", "throttled"], f
    assert len({x["node"] for x in f}) == 9, f
    by = {x["kind"]: x for x in f}
    assert int(by["ecc"]["node"].split("-")[-1]) < 8 + 4, by["ecc"]      # an H100 or A100
    assert by["leak"]["expect"] == ["memory_leak", "oom_predicted"], by["leak"]
    assert by["straggler"]["allow"] == ["gpu_throttled"], by["straggler"]
    jobs = {j["job"]: j for j in t["jobs"]}
    assert len(jobs) == 17, jobs
    for k in ("starved", "throttled", "idle"):
        assert jobs[by[k]["job"]]["ranks"] == 1 and by[k]["rank"] == "0", (k, by[k])
    assert jobs[by["straggler"]["job"]]["ranks"] == 8
    assert by["throttled"]["job"] != by["straggler"]["job"]
    for k in ("hang", "restart"):  # a whole job of its own node
        assert by[k]["scope"] == "job" and jobs[by[k]["job"]]["ranks"] == 8 and jobs[by[k]["job"]]["fault"] == k, by[k]
    assert by["hang"]["says"] == "rank " + by["hang"]["rank"] and jobs[by["hang"]["job"]]["hang_at_s"] > 0
    assert jobs[by["restart"]["job"]]["crash_every_s"] > 0
    assert jobs[by["powercap"]["job"]]["ranks"] == 8 and by["powercap"]["job"] != by["straggler"]["job"]
print("  - truth: one fault of each kind, each alone on its node, single-GPU jobs where planned")
PY
# an explicit plan
"$GPULSE" agent --simulate "$SPEC" --simulate-faults "leak=sim-node-2/3,straggler=sim-node-5/1,idle=sim-node-13/0" \
    --simulate-truth - >"$TMP/t3.json"
python3 - "$TMP/t3.json" <<'PY' || fail "override not honoured"
import json, sys
f = {x["kind"]: x for x in json.load(open(sys.argv[1]))["faults"]}
assert sorted(f) == ["idle", "leak", "straggler"], f
assert (f["leak"]["node"], f["leak"]["gpu"], f["leak"]["rank"]) == ("sim-node-2", "3", "3"), f["leak"]
assert (f["straggler"]["node"], f["straggler"]["gpu"]) == ("sim-node-5", "1"), f["straggler"]
assert (f["idle"]["node"], f["idle"]["gpu"], f["idle"]["rank"]) == ("sim-node-13", "0", "0"), f["idle"]
PY
rc=0
"$GPULSE" agent --simulate "$SPEC" --simulate-faults "leak=sim-node-14/0" --simulate-truth - \
    >/dev/null 2>"$TMP/err" || rc=$?
[ $rc -eq 2 ] || fail "a misfit override: exit $rc, want 2"
grep -q "the fleet has nodes 0 to 13" "$TMP/err" || fail "misfit message: $(cat "$TMP/err")"
rc=0
"$GPULSE" agent --simulate-faults "leak=sim-node-0/0" --simulate-truth - >/dev/null 2>"$TMP/err" || rc=$?
[ $rc -eq 2 ] && grep -q "simulate_faults is set but simulate is not" "$TMP/err" || fail "faults without simulate: $rc $(cat "$TMP/err")"
note "override honoured, misfits refused with exit 2"
# gpulse up writes the same truth to a file at start
SERVER_CMD=up start_server --simulate "$SPEC" --interval 500ms --steps-socket "" --simulate-truth "$TMP/up-truth.json"
cmp -s "$TMP/t1.json" "$TMP/up-truth.json" || fail "up's truth file differs from the agent's"
stop_server
note "gpulse up --simulate-truth FILE: the same truth"
python3 "$ROOT/tests/integration/fleet_truth_check.py" "$TMP/t1.json"
# bench/fleet_faults.sh itself, against a stand-in for gpulse up that
# serves canned alerts (tests/integration/fake_alerts_up.py)
export GPULSE
fleet() { "$ROOT/bench/fleet_faults.sh" --bin "$ROOT/tests/integration/fake_alerts_up.py" --poll 1 --wait 3 "$@"; }
fleet >"$TMP/f1" 2>&1 || { cat "$TMP/f1"; fail "fleet check on perfect alerts failed"; }
grep -q "precision 1.000  recall 1.000  (9 faults, 9 firing alerts, 0 false alarms)" "$TMP/f1" || fail "$(cat "$TMP/f1")"
rc=0; FAKE_DROP=idle_gpu_allocated fleet >"$TMP/f2" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "recall 0.889" "$TMP/f2" && grep -q "idle .*MISSED" "$TMP/f2" || fail "a missed fault: rc $rc $(cat "$TMP/f2")"
rc=0; FAKE_FALSE=1 fleet --seed 3 >"$TMP/f3" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "precision 0.900  recall 1.000" "$TMP/f3" && grep -q "false alarm: straggler on sim-node-0 nope#0" "$TMP/f3" ||
    fail "a false alarm: rc $rc $(cat "$TMP/f3")"
# goodput and MFU from the job documents, once the jobs step (9-13 s in)
first=$(python3 -c 'import json,sys; print(min(json.load(open(sys.argv[1]))["jobs"], key=lambda j: j["first_step_s"])["job"])' "$TMP/t1.json")
fleet --poll 15 --wait 15 >"$TMP/f4" 2>&1 || { cat "$TMP/f4"; fail "fleet check on perfect figures failed"; }
grep -q "^  $first .* ok .* ok" "$TMP/f4" || fail "no figures of $first: $(cat "$TMP/f4")"
rc=0; FAKE_OFF=$first fleet --poll 15 --wait 15 >"$TMP/f5" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "^  $first .* OFF" "$TMP/f5" || fail "a goodput off: rc $rc $(cat "$TMP/f5")"
note "bench/fleet_faults.sh: 0 on a perfect answer, 1 on a miss, a false alarm or a job's figures off"
note "fleet truth ok"
