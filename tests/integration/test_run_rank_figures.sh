#!/usr/bin/env bash
# Per-rank MFU and straggler scores under `gpulse run`: a real 4-rank
# torch.distributed job (gloo, CPU; tests/integration/py/train_ranks.py),
# started the way torchrun starts its workers (Debian's torchrun 1.13 fails
# on Python 3.11 before it starts any) where rank 2 slows to half speed after 40 % of its time.
# Each rank holds one of the stand-in NVML's four H100s (a process of the
# job with that rank in its environment). From the ranks' own step
# timings and declared FLOPs, by hand:
#   MFU of rank r     6·N·tokens_r / job stepping span / 989.4e12
#   step mean         the rank's step seconds / steps
#   relative          the fastest rank's mean / this rank's
#   individual        the lowest mean of the rank's steps in one sampling
#                     interval (by step end, from the run's start) / its mean
# The report's figures (JSON) equal them within 2 %; the text and HTML
# reports show the ranks table.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch.distributed' 2>/dev/null || fail "Debian's python3-torch is not installed (scripts/deps.sh test)"
[ -f "$FAKE_FULL" ] || fail "no stand-in NVML at $FAKE_FULL (make fakenvml)"
export PYTHONPATH=$ROOT/python
JOB=ranks-e2e
SLOW=2
INTERVAL=0.2

HOLDERS=()
for r in 0 1 2 3; do
    env GPULSE_RUN_ID=$JOB RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 sleep 120 &
    HOLDERS+=($!)
done
trap 'kill "${HOLDERS[@]}" 2>/dev/null; cleanup' EXIT
{
    for r in 0 1 2 3; do
        cat <<SCN
gpu $r
  name "NVIDIA H100 80GB HBM3"
  uuid GPU-0f0f0000-0000-4000-8000-00000000000$r
  bus 00000000:1$r:00.0
  minor $r
  mem_total 85520809984
  mem_used 8589934592
  util_gpu 90
  proc ${HOLDERS[$r]} 8589934592 90 40
SCN
    done
} >"$TMP/h100x4.scn"

mkdir -p "$TMP/self"
launch="export MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) WORLD_SIZE=4;"
for r in 0 1 2 3; do
    launch+=" RANK=$r LOCAL_RANK=$r $PY $ROOT/tests/integration/py/train_ranks.py $TMP/self $SLOW 4 &"
done
launch+=" wait"
GPULSE_FAKENVML_SCENARIO=$TMP/h100x4.scn "$GPULSE" run --quiet --job $JOB --interval 200ms \
    --nvml-library "$FAKE_FULL" --json "$TMP/doc.json" --html "$TMP/report.html" \
    -- sh -c "$launch" >"$TMP/report.txt" 2>&1 ||
    { cat "$TMP/report.txt"; fail "gpulse run exited non-zero"; }

python3 - "$TMP/doc.json" "$TMP/self" $SLOW $INTERVAL <<'PYEOF' || { cat "$TMP/report.txt"; fail "the per-rank figures disagree with the hand computation"; }
import json, math, sys
doc, self_dir, slow, interval = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
me = {r: json.load(open(f"{self_dir}/rank_{r}.json")) for r in range(4)}
start = min(s[0] - s[1] for m in me.values() for s in m["steps"][:1])
end = max(m["steps"][-1][0] for m in me.values())
span = end - start
hand = {}
for r, m in me.items():
    secs = sum(d for _, d in m["steps"])
    n = len(m["steps"])
    win = {}
    for t, d in m["steps"]:
        k = math.floor((t - doc["start"]) / interval)
        win.setdefault(k, [0, 0.0])
        win[k][0] += 1
        win[k][1] += d
    hand[r] = {"mean": secs / n, "best": min(s / c for c, s in win.values()),
               "mfu": 6 * m["params"] * m["tokens_per_step"] * n / span / 989.4e12}
fastest = min(h["mean"] for h in hand.values())
ranks = {x["rank"]: x for x in doc["ranks"] if x["rank"] is not None}
ok = sorted(ranks) == [0, 1, 2, 3]
print(f"  ranks {sorted(ranks)}; span by hand {span:.3f} s, report {doc['totals']['stepping_seconds']:.3f} s")
def near(got, want, what, r):
    good = got is not None and abs(got - want) <= 0.02 * abs(want)
    print(f"  rank {r} {what}: report {got} hand {want:.6g} {'ok' if good else 'DIFFERS'}")
    return good
for r in range(4):
    x, h = ranks.get(r, {}), hand[r]
    ok &= near(x.get("step_seconds_mean"), h["mean"], "step mean", r)
    ok &= near(x.get("straggler_relative"), fastest / h["mean"], "relative", r)
    ok &= near(x.get("straggler_individual"), h["best"] / h["mean"], "individual", r)
    ok &= near(x.get("mfu"), h["mfu"], "MFU", r)
    ok &= x.get("mfu_reason") is None
# the straggler is the one rank well behind the others, and it slowed down
rel = {r: ranks[r]["straggler_relative"] for r in ranks}
ok &= min(rel, key=rel.get) == slow and rel[slow] < 0.8 and all(rel[r] > 0.9 for r in rel if r != slow)
ok &= ranks[slow]["straggler_individual"] < 0.8
ok &= ranks[slow]["mfu"] < 0.8 * min(ranks[r]["mfu"] for r in ranks if r != slow)
sys.exit(0 if ok else 1)
PYEOF

# The text and HTML reports: a row per rank with its scores and MFU.
grep -Eq '^  RANK +NODE +STEP MEAN +STEP BEST +RELATIVE +INDIVIDUAL +MFU$' "$TMP/report.txt" ||
    { cat "$TMP/report.txt"; fail "the text report has no ranks table"; }
for r in 0 1 2 3; do
    grep -Eq "^  $r +[^ ]+ +[0-9.]+ ms +[0-9.]+ ms +[01]\.[0-9]{2} +[01]\.[0-9]{2} +[0-9.e-]+%$" "$TMP/report.txt" ||
        { cat "$TMP/report.txt"; fail "the text report has no row for rank $r"; }
done
sed -n '/^Ranks/,/^$/p' "$TMP/report.txt"
grep -q '>RELATIVE</th>' "$TMP/report.html" || fail "the HTML report has no ranks table"
[ "$(grep -c '<tr><td>[0-3]</td>' "$TMP/report.html")" = 4 ] || fail "the HTML report does not list the 4 ranks"
note "4 gloo ranks: every rank's MFU and straggler scores equal the hand computation within 2 %"
