#!/usr/bin/env bash
# Goodput under gpulse run (issue 18 item 1): a real PyTorch loop (Debian's
# python3-torch, CPU) with a loader, evaluations and checkpoints, run as
# one job in two attempts with the same --job: the first dies after step
# 50 (its last checkpoint at step 40), the second loads that checkpoint and
# runs steps 41..100, so 41..50 are done twice. Each attempt's report, and
# the second's across both, equals what the script measured itself within
# 2 %: start-up, productive step time, data wait, checkpoint, evaluation,
# lost work (the repeated steps) and the goodput share.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || fail "Debian's python3-torch is not installed (scripts/deps.sh test)"
export PYTHONPATH=$ROOT/python
TRAIN=$ROOT/tests/integration/py/train_goodput.py
RUN=("$GPULSE" run --quiet --job goodput-e2e --attempts-dir "$TMP/attempts" --interval 200ms)

rc=0
"${RUN[@]}" --json "$TMP/a1.json" -- $PY "$TRAIN" "$TMP/m1.json" "$TMP/ckpt.pt" 1 50 --exit 1 \
    2>"$TMP/r1.txt" || rc=$?
[ $rc -eq 1 ] || { cat "$TMP/r1.txt"; fail "the first attempt exited $rc, want 1"; }
[ -s "$TMP/attempts/goodput-e2e.json" ] || fail "the first attempt left no attempts file"
"${RUN[@]}" --json "$TMP/a2.json" --html "$TMP/a2.html" -- \
    $PY "$TRAIN" "$TMP/m2.json" "$TMP/ckpt.pt" 41 100 --lost-through 50 2>"$TMP/r2.txt" ||
    { cat "$TMP/r2.txt"; fail "the second attempt failed"; }

python3 - "$TMP" <<'PYEOF' || { cat "$TMP/r2.txt"; fail "goodput disagrees with the script"; }
import json, sys
d = sys.argv[1]
parts = ("startup", "productive", "data_wait", "checkpoint", "evaluation", "lost")
def check(doc, mine, attempts, last_step):
    g = doc["goodput"]
    wall = sum(m["wall"] for m in mine)
    ok = g["attempts"] == attempts and g["last_step"] == last_step
    print(f"  attempts {g['attempts']} (want {attempts}), last step {g['last_step']} (want {last_step})")
    for p in parts:
        want, got = sum(m[p] for m in mine), g["seconds"][p]
        good = abs(got - want) <= 0.02 * max(want, 0.05 * wall)
        ok &= good
        print(f"  {p}: report {got:.4f} s, script {want:.4f} s {'ok' if good else 'DIFFERS'}")
    ratio = sum(m["productive"] for m in mine) / wall
    good = abs(g["ratio"] - ratio) <= 0.02 * ratio
    ok &= good
    print(f"  goodput: report {g['ratio']:.4f}, script {ratio:.4f} {'ok' if good else 'DIFFERS'}")
    good = abs(g["wall_seconds"] - wall) <= 0.02 * wall
    ok &= good
    print(f"  wall: report {g['wall_seconds']:.4f} s, script {wall:.4f} s {'ok' if good else 'DIFFERS'}")
    ok &= abs(sum(g["seconds"].values()) - g["wall_seconds"]) < 1e-6 * g["wall_seconds"]
    return ok
m1, m2 = (json.load(open(f"{d}/m{i}.json")) for i in (1, 2))
a1, a2 = (json.load(open(f"{d}/a{i}.json")) for i in (1, 2))
print("attempt 1:")
ok = check(a1, [m1], 1, 50) and a1["goodput"]["seconds"]["lost"] == 0
print("both attempts (the second's report):")
ok &= check(a2, [m1, m2], 2, 100)
ok &= m2["lost"] > 0.1   # ten steps of 10 ms wait and their compute
sys.exit(0 if ok else 1)
PYEOF
grep -Eq '^  goodput +[0-9.]+% of [0-9.]+ s over 2 attempts \(last step 100\)$' "$TMP/r2.txt" &&
    grep -Eq '^  top badput +(start-up|data wait|checkpoint|evaluation|lost work|idle)$' "$TMP/r2.txt" ||
    fail "the text report has no goodput line: $(grep -i goodput "$TMP/r2.txt")"
grep -Eq '^  lost work +[0-9.]+ m?s \([0-9.]+%\)$' "$TMP/r2.txt" ||
    fail "the text report has no lost work: $(grep -i lost "$TMP/r2.txt")"
grep -q "<h2>Goodput" "$TMP/a2.html" || fail "the HTML report has no goodput section"

# An attempts file someone broke: refused with the reason, the job starts afresh.
echo '{"job": "goodput-e2e", "attempts": "two"}' >"$TMP/attempts/goodput-e2e.json"
"${RUN[@]}" --json "$TMP/a3.json" -- $PY "$TRAIN" "$TMP/m3.json" "$TMP/ckpt.pt" 1 3 2>"$TMP/r3.txt" ||
    fail "a broken attempts file made gpulse run fail"
grep -q "gpulse run: ignoring '$TMP/attempts/goodput-e2e.json': 'attempts' is not a count" "$TMP/r3.txt" ||
    fail "no word about the broken attempts file: $(head -3 "$TMP/r3.txt")"
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["goodput"]; sys.exit(not (g["attempts"]==1 and g["seconds"]["lost"]==0))' "$TMP/a3.json" ||
    fail "after a broken attempts file the job did not start afresh"
note "goodput, its parts and lost work across a restart equal the script's within 2 %"
