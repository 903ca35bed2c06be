#!/usr/bin/env bash
# gpulse run --server with a data-starved loop (0.06 s of data wait and
# 0.04 s of compute per step): the end-of-run report and the server's job
# document are built by one job model (src/query/jobmodel.h), so they
# agree on the steps (all of them: the last ones before exit reach the
# server), the data-wait share (within 1 %), the command, rank 0 and a
# world size of 1 for a single-process job. Twice: steps reported whole
# (share about 0.6), and by a client that timed only the compute, whose
# wait the protocol reads as the whole step (share 1 on both sides; it
# was 1 locally and 1.5 on the server).
source "$(dirname "$0")/lib.sh"
export PYTHONPATH=$ROOT/python

start_server --jobs-scan-interval 500ms

compare() { # compare JOB STEPS LOW HIGH [compute-only]
    "$GPULSE" run --quiet --no-report --interval 200ms --steps-socket "$TMP/none.sock" \
        --json "$TMP/$1.json" --server "$SERVER_URL" --job "$1" \
        -- /usr/bin/python3 "$ROOT/tests/integration/py/slow_loader.py" "$2" 0.06 0.04 ${5:-} 2>"$TMP/$1.err" ||
        { cat "$TMP/$1.err"; fail "gpulse run $1 failed"; }
    wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/jobs/$1' | grep -q '\"state\":\"finished\"'" ||
        { curl -s "$SERVER_URL/api/v1/jobs/$1"; tail -20 "$SERVER_LOG"; fail "$1 never showed as finished on the server"; }
    curl -sf "$SERVER_URL/api/v1/jobs/$1" >"$TMP/$1.server.json" || fail "cannot read the document of $1"
    python3 - "$TMP/$1.json" "$TMP/$1.server.json" "$2" "$3" "$4" <<'PYEOF' || fail "$1: the local report and the server's document disagree"
import json, sys
local = json.load(open(sys.argv[1]))
server = json.load(open(sys.argv[2]))["data"]
steps, low, high = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
lt, st = local["totals"], server["totals"]
print(f"  {server['id']}: local: steps {lt['steps']} data wait {lt['data_wait_ratio']:.4f}; "
      f"server: steps {st['steps']} data wait {st['data_wait_ratio']}")
ok = True
def check(what, good):
    global ok
    if not good:
        print(f"  FAIL: {what}")
        ok = False
check(f"steps: local {lt['steps']}, server {st['steps']}, want {steps}",
      lt["steps"] == steps and st["steps"] == steps)
lw, sw = lt["data_wait_ratio"], st["data_wait_ratio"]
check(f"data wait: local {lw}, server {sw}", lw is not None and sw is not None and abs(lw - sw) <= 0.01 * lw)
check(f"data wait {lw} is not in [{low}, {high}]", lw is not None and low <= lw <= high)
check(f"command: local {local['command']!r}, server {server['command']!r}",
      local["command"] == server["command"] and "slow_loader.py" in (server["command"] or ""))
for k in ("gpu_seconds", "cost"):
    check(f"{k}: local {lt[k]}, server {st[k]}", lt[k] == st[k])
for doc, name in ((local, "local"), (server, "server")):
    check(f"{name} ranks {doc['ranks']}, world size {doc.get('world_size')}",
          [r["rank"] for r in doc["ranks"]] == [0] and doc.get("world_size") == 1)
sys.exit(0 if ok else 1)
PYEOF
}

compare slow-loader 150 0.5 0.7
compare compute-only 60 0.95 1 compute-only
stop_server
note "gpulse run's report and the server's document agree on a data-starved job"
