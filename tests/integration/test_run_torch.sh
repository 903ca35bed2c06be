#!/usr/bin/env bash
# gpulse run around a real PyTorch training loop (Debian's python3-torch,
# CPU): the report's step count, step times, throughput and peak RSS agree
# with what the script measured itself, and the loss it sent is in the
# text, JSON and HTML report; exit statuses 0, 1, a signal
# death and "command not found" come out of gpulse run unchanged.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || fail "Debian's python3-torch is not installed (scripts/deps.sh test)"
export PYTHONPATH=$ROOT/python
TRAIN=$ROOT/tests/integration/py/train_torch.py

# 1. A real loop, 300 steps: the report against the script's own numbers.
"$GPULSE" run --quiet --job torch-e2e --interval 200ms --gpu-hour-price 2.5 \
    --json "$TMP/doc.json" --html "$TMP/report.html" \
    -- $PY "$TRAIN" "$TMP/self.json" 300 2>"$TMP/report.txt" ||
    { cat "$TMP/report.txt"; fail "gpulse run exited non-zero"; }
python3 - "$TMP/doc.json" "$TMP/self.json" <<'PYEOF' || { cat "$TMP/report.txt"; fail "report disagrees with the script"; }
import json, sys
doc, me = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t = doc["totals"]
def close(name, got, want, tol=0.02):
    ok = got is not None and abs(got - want) <= tol * abs(want)
    print(f"  {name}: report {got} script {want} {'ok' if ok else 'DIFFERS'}")
    return ok
ok = doc["id"] == "torch-e2e" and doc["state"] == "finished" and doc["exit_status"] == 0
ok &= t["steps"] == me["steps"]
print(f"  steps: report {t['steps']} script {me['steps']}")
ok &= close("samples", t["samples"], me["samples"], 0)
ok &= close("step mean (s)", t["step_seconds"]["mean"], me["step_mean"])
ok &= close("step p50 (s)", t["step_seconds"]["p50"], me["step_p50"])
ok &= close("samples/s", t["samples_per_second"], me["samples_per_second"])
ok &= close("host RSS peak (bytes)", t["host_rss_peak_bytes"], me["ru_maxrss_bytes"])
for k in ("loss_first", "loss_last", "loss_min"):   # the JSON has 15 digits
    ok &= close(k, t[k], me[k], 1e-12)
loss = [v for v in doc["series"]["steps"]["loss"] if v is not None]
ok &= len(loss) >= 2 and loss[0] > loss[-1]        # the curve: SGD brings it down
print(f"  loss curve: {len(loss)} points, {loss[0]:.4g} .. {loss[-1]:.4g}")
ok &= t["host_cpu_seconds"] is not None and t["host_cpu_seconds"] > 0
ok &= t["gpu_hours"] == 0 and t["cost"] == 0   # no GPU here: nothing to pay for
ok &= len(doc["series"]["host"]["t"]) >= 3      # sampled while it ran
ok &= any(r["rank"] is None for r in doc["ranks"]) or len(doc["ranks"]) >= 1
sys.exit(0 if ok else 1)
PYEOF
grep -q "torch-e2e" "$TMP/report.txt" || fail "the text report does not name the job"
grep -qi "steps" "$TMP/report.txt" || fail "the text report has no steps"
grep -q "<svg" "$TMP/report.html" || fail "the HTML report has no chart"
grep -Eq '^  loss          first [0-9.]+, last [0-9.]+, lowest [0-9.]+$' "$TMP/report.txt" ||
    fail "the text report has no loss: $(grep -i loss "$TMP/report.txt")"
python3 - "$TMP/report.html" <<'PYEOF' || fail "the HTML report has no loss chart"
import re, sys
h = open(sys.argv[1]).read()
m = re.search(r"<figcaption>Loss[^<]*</figcaption>((?:(?!</figure>).)*)</figure>", h, re.S)
sys.exit(0 if m and "<path " in m.group(1) else 1)
PYEOF

# 2. Exit statuses pass through (20 steps each).
expect_rc() { # expect_rc WANT ARGS... (script arguments)
    local want=$1; shift
    local rc=0
    "$GPULSE" run --quiet --no-report --json "$TMP/rc.json" -- $PY "$TRAIN" "$TMP/x.json" 20 "$@" \
        2>"$TMP/rc.err" || rc=$?
    [ "$rc" -eq "$want" ] || { cat "$TMP/rc.err"; fail "'$*': gpulse run exited $rc, want $want"; }
}
expect_rc 0
expect_rc 1 --exit 1
expect_rc 143 --die SIGTERM
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["state"]=="killed" and d["signal"]==15 and d["exit_status"]==143))' "$TMP/rc.json" ||
    fail "a SIGTERM death is not reported as killed by signal 15"
rc=0; "$GPULSE" run --quiet --no-report -- gpulse-no-such-command 2>"$TMP/nf.err" || rc=$?
[ $rc -eq 127 ] || fail "a missing command exited $rc, want 127"
grep -q "cannot run 'gpulse-no-such-command'" "$TMP/nf.err" || fail "no message for a missing command"
note "report agrees with the script; exit 0, 1, SIGTERM, 127 passed through"
