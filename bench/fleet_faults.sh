#!/usr/bin/env bash
# fleet_faults.sh - the fleet check of issue 5 (docs/simulate.md): runs
# `gpulse up --simulate SPEC` on 127.0.0.1 with a temporary data dir,
# lets the alert engine watch the simulated fleet and its planted faults,
# and scores GET /api/v1/alerts?state=firing against the simulation's
# ground truth (bench/fleet_truth.py): a table per fault, the false
# alarms, precision and recall; and each job's goodput share and MFU
# (GET /api/v1/jobs/ID) against what the truth's timelines give. Exit 0
# when precision and recall are 1 and every job's figures match, 1 when
# not (or when the server has no alerts API), 2 on a usage error.
#
# It polls every --poll seconds and stops at the first perfect score
# after --min-wait, or at --wait with the score it has then. The
# detectors' `for` durations (10 minutes for idle_gpu_allocated and
# low_goodput: the crash loop, the hang and the starved job fire after
# about 16 minutes) set how long a run takes; pass a faster evaluation to the server after
# `--`, e.g. `-- --eval-interval 5s --eval-step 5s --eval-window 10m`.
#
# Alerts of severity info (gpu_saturated on busy healthy cards) are not
# scored unless --include-info is given (bench/fleet_truth.py).
#
# usage: bench/fleet_faults.sh [--spec SPEC] [--seed N] [--interval D]
#            [--wait S] [--min-wait S] [--poll S] [--bin PATH] [--keep DIR]
#            [--include-info] [-- EXTRA gpulse up ARGS]
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC=8x8xH100,4x8xA100,2x8xMI300X
SEED=1
INTERVAL=1s
WAIT=1200
MIN_WAIT=0
POLL=15
BIN=
KEEP=
INFO=()
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --spec) SPEC=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --interval) INTERVAL=$2; shift 2 ;;
    --wait) WAIT=$2; shift 2 ;;
    --min-wait) MIN_WAIT=$2; shift 2 ;;
    --poll) POLL=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --include-info) INFO=(--include-info); shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "fleet_faults: unknown argument '$1'" >&2; usage ;;
    esac
done
for n in "$SEED" "$WAIT" "$MIN_WAIT" "$POLL"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "fleet_faults: '$n' is not a whole number" >&2; exit 2; }
done
if [ -z "$BIN" ]; then
    make -s -j2 build/rel/gpulse
    BIN=build/rel/gpulse
fi
TMP=$(mktemp -d /tmp/gpulse-fleet-XXXXXX)
PID=
cleanup() {
    if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
    if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp -r "$TMP"/. "$KEEP"/ || true; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
T0=$(date +%s.%N) # the simulation's clock starts at up's first tick, a moment after this
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
"$BIN" up --simulate "$SPEC" --seed "$SEED" --interval "$INTERVAL" --listen "127.0.0.1:$PORT" \
    --data "$TMP/data" --steps-socket "" --simulate-truth "$TMP/truth.json" "$@" >"$TMP/up.log" 2>&1 &
PID=$!
for _ in $(seq 300); do
    curl -sf "$URL/api/v1/health" >/dev/null 2>&1 && break
    kill -0 "$PID" 2>/dev/null || { cat "$TMP/up.log" >&2; echo "fleet_faults: gpulse up exited" >&2; exit 1; }
    sleep 0.1
done
curl -sf "$URL/api/v1/health" >/dev/null || { cat "$TMP/up.log" >&2; echo "fleet_faults: gpulse up did not come up" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/alerts?state=firing")
if [ "$code" != 200 ]; then
    echo "fleet_faults: GET /api/v1/alerts answered $code: this gpulse has no alert engine yet" >&2
    exit 1
fi
echo "fleet: $SPEC seed $SEED on $URL; planted faults:"
python3 -c 'import json,sys; [print("  %-9s %s/%s %s#%s" % (f["kind"], f["node"], f["gpu"], f["job"], f["rank"])) for f in json.load(open(sys.argv[1]))["faults"]]' "$TMP/truth.json"
start=$SECONDS
rc=1
while :; do
    sleep "$POLL"
    kill -0 "$PID" 2>/dev/null || { tail -20 "$TMP/up.log" >&2; echo "fleet_faults: gpulse up died" >&2; exit 1; }
    curl -sf "$URL/api/v1/alerts?state=firing" >"$TMP/alerts.json" || { echo "fleet_faults: alerts query failed" >&2; continue; }
    elapsed=$((SECONDS - start))
    # the job documents, and when they were read on the simulation's clock
    rm -rf "$TMP/jobs" && mkdir -p "$TMP/jobs"
    at=$(python3 -c 'import sys,time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$T0")
    for job in $(python3 -c 'import json,sys; print(" ".join(j["job"] for j in json.load(open(sys.argv[1]))["jobs"]))' "$TMP/truth.json"); do
        awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN { printf "%.1f\n", a - b }' >"$TMP/jobs/$job.at"
        curl -sf "$URL/api/v1/jobs/$job" >"$TMP/jobs/$job.json" || rm -f "$TMP/jobs/$job.json"
    done
    rc=0
    python3 bench/fleet_truth.py "${INFO[@]}" --jobs "$TMP/jobs" --elapsed "$at" "$TMP/truth.json" "$TMP/alerts.json" \
        >"$TMP/score.txt" || rc=$?
    [ $rc -eq 2 ] && { cat "$TMP/score.txt"; echo "fleet_faults: unreadable alerts answer" >&2; exit 1; }
    echo "after ${elapsed}s: $(tail -1 "$TMP/score.txt"); $(grep '^figures:' "$TMP/score.txt" || echo 'figures: none')"
    if { [ $rc -eq 0 ] && [ $elapsed -ge "$MIN_WAIT" ]; } || [ $elapsed -ge "$WAIT" ]; then
        break
    fi
done
echo
cat "$TMP/score.txt"
exit $rc
