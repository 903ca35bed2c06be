#!/usr/bin/env bash
# Two ranks of one job, torchrun-style (TORCHELASTIC_RUN_ID, RANK,
# LOCAL_RANK, WORLD_SIZE in the environment): under `gpulse run` they are
# one job with ranks 0 and 1; under a node agent alone, the agent names
# the job after the run id and labels each rank's series.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
export PYTHONPATH=$ROOT/python
W=$ROOT/tests/integration/py/rank_worker.py
two_ranks='TORCHELASTIC_RUN_ID=tr1 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 '$PY' '$W' 3 &
           TORCHELASTIC_RUN_ID=tr1 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 '$PY' '$W' 3 & wait'

# Under gpulse run: GPULSE_RUN_ID names the job, RANK the ranks.
"$GPULSE" run --quiet --no-report --interval 200ms --job two-ranks --json "$TMP/doc.json" \
    -- sh -c "$two_ranks" 2>"$TMP/run.err" || { cat "$TMP/run.err"; fail "gpulse run failed"; }
python3 - "$TMP/doc.json" <<'PYEOF' || fail "the job document does not hold ranks 0 and 1"
import json, sys
d = json.load(open(sys.argv[1]))
ranks = sorted(r["rank"] for r in d["ranks"] if r["rank"] is not None)
print("  ranks:", ranks, "world size:", d.get("world_size"), "steps:", d["totals"]["steps"])
sys.exit(0 if ranks == [0, 1] and d["world_size"] == 2 and d["totals"]["steps"] > 100 else 1)
PYEOF

# Under a node agent: the job is the torchelastic run id.
start_agent --interval 200ms --steps-socket "$TMP/steps.sock"
GPULSE_STEPS_SOCKET=$TMP/steps.sock sh -c "$two_ranks" &
workers=$!
sleep 2 # mid-run: both ranks alive and reporting
metrics >"$TMP/m"
wait $workers
for r in 0 1; do
    grep -qE "^gpulse_job_steps_total\{[^}]*job=\"tr1\",rank=\"$r\"" "$TMP/m" ||
        { grep gpulse_job_ "$TMP/m" >&2; fail "no step series for job tr1 rank $r"; }
done
check_exposition "$TMP/m"
stop_agent
note "ranks 0 and 1 of one job, under gpulse run and under the agent"
