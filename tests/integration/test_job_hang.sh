#!/usr/bin/env bash
# job_hang on a real hang: 4 ranks of a torch.distributed job (gloo, CPU,
# Debian's python3-torch) under `gpulse up`, where rank 2 stops entering
# the all_reduce after 20 steps and the others wait in it (then sit in
# gloo's timeout handler, alive). With short thresholds (an allowance of
# max(5 x step time, 15s)) job_hang must fire within 60 s of the
# threshold, and name rank 2: the ranks' Flight Recorder dumps (written by
# the workers in PyTorch's documented format, as gloo writes none) are
# read by the agent from flight_recorder_dir and compared.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
    fail "Debian's python3-torch with gloo is not installed (scripts/deps.sh test)"
export PYTHONPATH=$ROOT/python
mkdir -p "$TMP/fr"
SERVER_CMD=up start_server --interval 500ms --eval-interval 1s --eval-step 1s --eval-window 2m \
    --steps-socket "$TMP/steps.sock" --flight-recorder-dir "$TMP/fr" \
    --detector-overrides "job_hang.min_stall=15s,job_hang.step_multiple=5"
pids=()
for r in 0 1 2 3; do
    GPULSE_STEPS_SOCKET=$TMP/steps.sock TORCHELASTIC_RUN_ID=hang-1 WORLD_SIZE=4 RANK=$r LOCAL_RANK=$r \
        $PY "$ROOT/tests/integration/py/hang_worker.py" "$TMP/store" "$TMP/fr" 2 20 \
        >"$TMP/rank$r.out" 2>"$TMP/rank$r.err" &
    pids+=($!)
done
cleanup_workers() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap 'cleanup_workers; cleanup' EXIT
all_dumped() { [ "$(ls "$TMP/fr" | grep -c '^nccl_trace_rank_')" -eq 4 ]; }
wait_until 60 all_dumped || { cat "$TMP"/rank*.err; fail "the workers did not all stop and dump"; }
# the stall began at the last step any rank made
t_stop=$(sed -n 's/.* at \([0-9.]*\)$/\1/p' "$TMP"/rank*.out | sort -n | tail -1)
[ -n "$t_stop" ] || fail "no worker said when it stopped"
note "rank 2 stopped entering the collective; the others waited in it (last step at $t_stop)"
firing() {
    curl -sf "$SERVER_URL/api/v1/alerts?state=firing&kind=job_hang" >"$TMP/alerts.json" &&
        python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["data"])' "$TMP/alerts.json"
}
wait_until 120 firing || { tail -20 "$SERVER_LOG"; fail "job_hang did not fire"; }
python3 - "$TMP/alerts.json" "$t_stop" <<'PY' || fail "job_hang's alert"
import json, sys, time
a = json.load(open(sys.argv[1]))["data"][0]
t_stop = float(sys.argv[2])
print("  summary:", a["summary"])
print("  evidence:", a["evidence"][:400])
threshold = t_stop + 15  # the 15s floor: 5 x 0.2 s steps is less
late = a["firing_since"] - threshold
print(f"  fired {late:.1f} s after the threshold")
ok = a["labels"].get("job") == "hang-1" and a["severity"] == "critical"
ok &= -2 <= late <= 60            # not before the threshold (a grid step of slack), within 60 s
ok &= "no step on 4 live ranks" in a["summary"]
ok &= "Flight Recorder: rank 2 never entered collective 21, where 3 ranks wait" in a["summary"]
ok &= "rank 2 on " in a["evidence"] and "never entered collective 21" in a["evidence"]
ok &= "last step 20" in a["evidence"]  # the client numbers steps from 1
sys.exit(0 if ok else 1)
PY
stop_server
note "job_hang fired in time and named rank 2 from the Flight Recorder dumps"
