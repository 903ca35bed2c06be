#!/usr/bin/env bash
# Issue 15 finding 3: a second local user cannot forge another user's job
# on the step socket (docs/steps.md "Who may report for a job"). Real
# users, real kernel credentials: the job's trainer runs as uid 4001 with
# GPULSE_JOB=secretjob; `nobody` sends `meta job=secretjob` and steps, and
# a second `nobody` process claims the job through its own environment.
# Only the job's own records count (its uid's, with or without the
# environment); the forged ones are counted by reason and each forger is
# logged once. Needs root (setpriv switches users).
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to run senders as other users"; exit 0; }
PY=/usr/bin/python3
chmod 0711 "$TMP" # the other users reach the socket below it
SOCK=$TMP/run/gpulse/steps.sock
start_agent --steps-socket "$SOCK" --interval 200ms
[ "$(stat -c %a "$SOCK")" = 666 ] || fail "socket mode $(stat -c %a "$SOCK"), want 666 (the default)"
export GPULSE_STEPS_SOCKET=$SOCK PYTHONPATH=$ROOT/python
as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }

# The job's owner: lives until the test ends, so its process names the job.
setpriv --reuid=4001 --regid=4001 --clear-groups env GPULSE_JOB=secretjob "$PY" -c '
import os, sys, time, gpulse
gpulse.meta(target_steps=50)
for i in range(20):
    gpulse.report_step(0.1, n=i + 1)
gpulse.flush()
print(os.getpid(), flush=True)
time.sleep(120)' >"$TMP/owner.out" &
PIDS+=($!)
wait_until 10 test -s "$TMP/owner.out" || fail "the job's trainer did not start"
OWNER_PID=$(cat "$TMP/owner.out")

forge() { # forge ENV... : as nobody, the finding's records
    as 65534 env "$@" "$PY" -c '
import gpulse, sys, time
n = 100 if len(sys.argv) < 2 else int(sys.argv[1])
if n == 100:
    gpulse.meta(job="secretjob", rank=0, target_steps=100000)
for i in range(n):
    gpulse.report_step(5, n=100000 + i)
gpulse.flush()
time.sleep(0.5) # alive while its records are judged, as a forger that keeps going
sys.exit(gpulse.lost())' "$N_FORGE"
}
N_FORGE=100 forge GPULSE_X=1 || fail "the meta forger could not send"
sleep 1.2 # one refusal line a second: the second forger gets its own
N_FORGE=10 forge GPULSE_JOB=secretjob || fail "the environment forger could not send"
# The owner's uid without the environment, naming the job: counts.
as 4001 "$PY" -c '
import gpulse
gpulse.meta(job="secretjob")
for i in range(5):
    gpulse.report_step(0.1)
gpulse.flush()' || fail "the owner's second process could not send"

total() { # total NAME: sum over the secretjob series
    awk -v n="$1{" 'index($0, n) == 1 && index($0, "job=\"secretjob\"") {s += $NF} END {print s + 0}' "$TMP/m"
}
ready() {
    metrics >"$TMP/m"
    [ "$(agent_metric gpulse_steps_records_total)" = 27 ] &&
        [ "$(agent_metric 'gpulse_steps_refused_total{reason="uid_mismatch"}')" = 111 ]
}
wait_until 10 ready || { grep -E '^gpulse_(job|steps)' "$TMP/m" >&2; fail "records not all accounted"; }
metrics >"$TMP/m"
[ "$(total gpulse_job_steps_total)" = 25 ] ||
    { grep secretjob "$TMP/m" >&2; fail "secretjob has $(total gpulse_job_steps_total) steps, want the owner's 25"; }
grep -q "^gpulse_job_target_steps{job=\"secretjob\".*pid=\"$OWNER_PID\"} 50$" "$TMP/m" ||
    { grep secretjob "$TMP/m" >&2; fail "the owner's target is not 50"; }
grep '^gpulse_job_target_steps' "$TMP/m" | grep 100000 >/dev/null && fail "the forged target shows"
[ "$(agent_metric 'gpulse_steps_refused_total{reason="job_claimed"}')" = 0 ] || fail "job_claimed counted"
n=$(grep -c 'step records refused' "$AGENT_LOG" || true)
[ "$n" = 2 ] || { cat "$AGENT_LOG" >&2; fail "$n refusal lines, want one per forger (2)"; }
grep 'step records refused' "$AGENT_LOG" | grep -v 'uid=65534 job="secretjob" reason=uid_mismatch owner_uid=4001' &&
    fail "a refusal line does not name the forger, the job and its owner"
check_exposition "$TMP/m"
note "111 forged records refused (uid_mismatch), the owner's 25 steps and target 50 kept, 2 log lines"

# steps_socket_mode/group: 0660 and a group keep other users out entirely.
stop_agent
start_agent --steps-socket "$SOCK" --steps-socket-mode 0660 --steps-socket-group 4001 --interval 200ms
[ "$(stat -c '%a %g' "$SOCK")" = "660 4001" ] || fail "socket is $(stat -c '%a %g' "$SOCK"), want 660 4001"
N_FORGE=10 forge GPULSE_X=1 2>/dev/null && fail "nobody could send to a 0660 socket of another group"
note "steps_socket_mode 0660 with steps_socket_group 4001: nobody's send is refused by the kernel"
stop_agent
echo "ok test_agent_steps_trust"
