#!/usr/bin/env bash
# test_deploy_rules.sh - deploy/prometheus/gpulse-rules.yml: promtool's
# syntax check, its unit tests (gpulse-rules.test.yml: every alerting rule
# fires on synthetic series and stays quiet on others), and that the rules
# keep docs/insight.md's numbers: each detector in its table has a rule
# labelled detector=NAME (or is named below as not expressible) with the
# same `for`, and the rule's expression holds its threshold and clear level.
. "$(dirname "$0")/lib.sh"
command -v promtool >/dev/null || fail "promtool is not installed (package prometheus, scripts/deps.sh test)"
R=$ROOT/deploy/prometheus
promtool check rules "$R/gpulse-rules.yml" >"$TMP/check.log" 2>&1 || { cat "$TMP/check.log"; fail "promtool check rules"; }
rules=$(sed -n 's/.*SUCCESS: \([0-9]*\) rules found.*/\1/p' "$TMP/check.log")
( cd "$R" && promtool test rules gpulse-rules.test.yml ) >"$TMP/test.log" 2>&1 ||
    { cat "$TMP/test.log"; fail "promtool test rules"; }
note "promtool: $rules rules, unit tests pass"

cat >"$TMP/agree.py" <<'PY'
import re, sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
tests = yaml.safe_load(open(sys.argv[2]))
doc = open(sys.argv[3]).read()
bad = []
alerts = {}
for g in rules["groups"]:
    for r in g["rules"]:
        if "alert" in r:
            alerts[r["alert"]] = r
# Every alert: a case where it fires and one where it must not.
fires, quiet = set(), set()
for t in tests["tests"]:
    for c in t.get("alert_rule_test", []):
        (fires if c.get("exp_alerts") else quiet).add(c["alertname"])
for a in alerts:
    if a not in fires: bad.append(f"{a}: no unit test where it fires")
    if a not in quiet: bad.append(f"{a}: no unit test where it must not fire")
for a in fires | quiet:
    if a not in alerts: bad.append(f"unit test of unknown alert {a}")
# docs/insight.md's detector table: name, threshold, clear, for.
not_expressible = {"budget_exceeded": "job cost needs the server's price table; no metric carries it",
                   "low_goodput": "goodput is the job model's split of the ranks' wall time; no metric carries it",
                   "job_hang": "each rank's allowance is its own recent step time, and the job needs all live ranks past theirs"}
def secs(d):
    m = re.fullmatch(r"(\d+)([smh])", d)
    return int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]
n = 0
for m in re.finditer(r"^\| `(\w+)` \| \w+ \| \w+ \| [^|]* \| ([\d.]+) \| ([\d.]+) \| (\w+) \|$", doc, re.M):
    det, thr, clr, dfor = m.groups()
    n += 1
    mine = [r for r in alerts.values() if r.get("labels", {}).get("detector") == det]
    if not mine:
        if det not in not_expressible: bad.append(f"detector {det}: no rule")
        continue
    for r in mine:
        if secs(r.get("for", "0s")) != secs(dfor):
            bad.append(f"{r['alert']}: for {r.get('for', '0s')}, docs/insight.md says {dfor} for {det}")
        if det == "gpu_hardware_errors":
            continue  # "bad above 1": any count > 0
        for v in {thr, clr}:
            if not re.search(r"(?<![\d.])" + re.escape(v) + r"(?![\d])", r["expr"]):
                bad.append(f"{r['alert']}: {det}'s threshold/clear {v} is not in its expression")
if n < 13: bad.append(f"read only {n} detectors from docs/insight.md's table")
for b in bad: print("  " + b)
print(f"  - {len(alerts)} alerts, each firing and quiet in a unit test; {n} detectors of docs/insight.md matched")
sys.exit(1 if bad else 0)
PY
python3 "$TMP/agree.py" "$R/gpulse-rules.yml" "$R/gpulse-rules.test.yml" "$ROOT/docs/insight.md" ||
    fail "rules and tests or docs disagree (above)"
# The comparison is real: a rule whose `for` or threshold drifts from
# docs/insight.md fails it.
sed 's/^        for: 2m$/        for: 3m/; s/gpulse:gpu_memory_used:ratio > 0.95/gpulse:gpu_memory_used:ratio > 0.9/' \
    "$R/gpulse-rules.yml" >"$TMP/drift.yml"
python3 "$TMP/agree.py" "$TMP/drift.yml" "$R/gpulse-rules.test.yml" "$ROOT/docs/insight.md" >"$TMP/drift.log" 2>&1 &&
    fail "a drifted rule passed the docs comparison"
grep -q "GpulseMemoryNearExhaustion: for 3m, docs/insight.md says 2m" "$TMP/drift.log" &&
    grep -q "threshold/clear 0.95 is not in its expression" "$TMP/drift.log" ||
    { cat "$TMP/drift.log"; fail "the drifted rule's findings"; }
echo "ok: $rules rules checked and unit-tested"
