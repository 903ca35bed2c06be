#!/usr/bin/env bash
# gpulse run reporting to a server, both ways DESIGN.md gives, then
# `gpulse report JOB` reading the job back:
#   1. no node agent: gpulse run pushes its own samples to `gpulse server`;
#   2. a node agent (`gpulse up` with its step socket): the command's step
#      clients send to both sockets, the agent attributes the command by
#      GPULSE_RUN_ID and reports the job; gpulse run pushes nothing.
# Either way the server's registry lists the job, finished with its exit
# status and its steps, and `gpulse report` renders it.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
export PYTHONPATH=$ROOT/python
W=$ROOT/tests/integration/py/rank_worker.py

check_job() { # check_job JOB WANT_EXIT MIN_STEPS
    wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/jobs/$1' | grep -q '\"state\":\"$( [ "$2" -eq 0 ] && echo finished || echo failed)\"'" ||
        { curl -s "$SERVER_URL/api/v1/jobs/$1"; cat "$SERVER_LOG" | tail -20; fail "job $1 never showed as ended on the server"; }
    python3 - "$SERVER_URL" "$1" "$2" "$3" <<'PYEOF' || fail "job $1 on the server is wrong"
import json, sys, urllib.request
url, job, want_exit, min_steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = json.load(urllib.request.urlopen(f"{url}/api/v1/jobs/{job}"))["data"]
jobs = json.load(urllib.request.urlopen(f"{url}/api/v1/jobs"))["data"]
t = d["totals"]
print(f"  {job}: state {d['state']} exit {d['exit_status']} steps {t['steps']} "
      f"cpu {t['host_cpu_seconds']} rss {t['host_rss_peak_bytes']}")
assert any(j["id"] == job for j in jobs), jobs
assert d["scheme"] == "gpulse_run", d["scheme"]
assert d["exit_status"] == want_exit, d["exit_status"]
assert t["steps"] is not None and t["steps"] >= min_steps, t["steps"]
assert t["host_rss_peak_bytes"] and t["host_rss_peak_bytes"] > 0
PYEOF
    "$GPULSE" report "$1" --server "$SERVER_URL" >"$TMP/report-$1.txt" 2>&1 ||
        { cat "$TMP/report-$1.txt"; fail "gpulse report $1 failed"; }
    grep -q "$1" "$TMP/report-$1.txt" || fail "the report does not name $1"
}

# 1. gpulse server alone: gpulse run pushes.
start_server --jobs-scan-interval 500ms
"$GPULSE" run --quiet --no-report --interval 200ms --steps-socket "$TMP/none.sock" \
    --server "$SERVER_URL" --job pushed-1 -- $PY "$W" 2 2>"$TMP/run1.err" ||
    { cat "$TMP/run1.err"; fail "gpulse run (push) failed"; }
check_job pushed-1 0 50
rc=0
"$GPULSE" run --quiet --no-report --interval 200ms --steps-socket "$TMP/none.sock" \
    --server "$SERVER_URL" --job pushed-2 -- sh -c "$PY $W 1; exit 3" 2>"$TMP/run2.err" || rc=$?
[ $rc -eq 3 ] || { cat "$TMP/run2.err"; fail "gpulse run exited $rc, want 3"; }
check_job pushed-2 3 20
stop_server

# 2. gpulse up (a node agent with a step socket): the agent reports the job.
SERVER_CMD=up start_server --jobs-scan-interval 500ms --interval 200ms --steps-socket "$TMP/agent.sock"
wait_until 10 test -S "$TMP/agent.sock" || fail "gpulse up did not open its step socket"
"$GPULSE" run --quiet --no-report --interval 200ms --steps-socket "$TMP/agent.sock" \
    --server "$SERVER_URL" --job via-agent -- $PY "$W" 2 2>"$TMP/run3.err" ||
    { cat "$TMP/run3.err"; fail "gpulse run (agent) failed"; }
check_job via-agent 0 50
stop_server
note "pushed by gpulse run, and reported by a node agent; gpulse report reads both"
