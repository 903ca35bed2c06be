#!/usr/bin/env bash
# Step telemetry end to end: the agent's step socket in a temp dir, a
# Python trainer (python/gpulse, Debian's python3 with torch installed)
# and a C trainer (include/gpulse/steps.h, compiled here) report steps;
# /metrics shows exact totals under each sender's kernel pid, the output
# lints clean, and a second agent on the same socket warns once and goes on.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
SOCK=$TMP/run/gpulse/steps.sock
start_agent --steps-socket "$SOCK" --interval 200ms
[ -S "$SOCK" ] || fail "no socket at $SOCK"
[ "$(stat -c %a "$SOCK")" = 666 ] || fail "socket mode $(stat -c %a "$SOCK"), want 666"
export GPULSE_STEPS_SOCKET=$SOCK

N=300
PYTHONPATH=$ROOT/python "$PY" - "$N" >"$TMP/py.out" <<'PYEOF'
import os, sys, time
import gpulse
n = int(sys.argv[1])
gpulse.meta(target_steps=n, job="py-fallback", rank=2, world=4)
gpulse.model(params=1.3e9, precision="bf16")  # MFU: 6 x 1.3e9 FLOPs per token
for bad in (dict(params=1e9, precision="bf17"), dict(precision="bf16"), dict(flops_per_token=-1)):
    try:
        gpulse.model(**bad)
        sys.exit("gpulse.model(%r) did not refuse" % bad)
    except ValueError:
        pass
for i in range(n):
    with gpulse.step(samples=32, tokens=1000) as s:
        time.sleep(0.0005)
        s.loss = 1.0 / (i + 1)
gpulse.report_step(0.5, samples=32, tokens=1000, wait=0.25)
mem = gpulse.memory()  # torch imports, no CUDA here: nothing reported
gpulse.report_step(0.5, samples=1)  # buffered at the fork: the parent's, not the child's
child = os.fork()
if child == 0:  # a worker reports as itself
    for _ in range(7):
        gpulse.report_step(0.01, samples=1)
    gpulse.flush()
    os._exit(0)
os.waitpid(child, 0)
gpulse.flush()
print(os.getpid(), gpulse.lost(), len(mem), child)
PYEOF
read -r PY_PID PY_LOST PY_MEM PY_CHILD <"$TMP/py.out"
[ "$PY_LOST" = 0 ] || fail "python client dropped $PY_LOST records"
note "python trainer pid $PY_PID reported $((N + 2)) steps, its child $PY_CHILD 7 (memory devices: $PY_MEM)"

cat >"$TMP/trainer.c" <<'CEOF'
#include <gpulse/steps.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
    struct gpulse_steps g;
    if (gpulse_steps_open(&g))
        return 1;
    gpulse_meta(&g, n, NULL, -1, -1);
    if (gpulse_model(&g, GPULSE_UNSET, 4096, GPULSE_UNSET, 1, "fp8") ||
        !gpulse_model(&g, 1e9, GPULSE_UNSET, GPULSE_UNSET, 1, "FP8") ||
        !gpulse_model(&g, GPULSE_UNSET, GPULSE_UNSET, -5, 1, "bf16"))
        return 3;
    for (unsigned i = 1; i <= n; i++) {
        gpulse_step(&g, i, 0.125, 16, 2048, 3.5, GPULSE_UNSET);
        if (i % 50 == 0)
            usleep(2000);
    }
    gpulse_memory(&g, 1, 1000, 2000, 1500);
    gpulse_step(&g, n + 1, 0.125, 16, 2048, 3.5, GPULSE_UNSET); /* buffered at the fork */
    pid_t child = fork();
    if (child == 0) { /* reports as itself, without the parent's buffer */
        for (int i = 0; i < 5; i++)
            gpulse_step(&g, (uint64_t)i + 1, 0.5, 1, GPULSE_UNSET, GPULSE_UNSET, GPULSE_UNSET);
        gpulse_close(&g);
        _exit(0);
    }
    waitpid(child, NULL, 0);
    gpulse_close(&g);
    printf("%d %llu %d\n", (int)getpid(), (unsigned long long)g.lost_total, (int)child);
    return 0;
}
CEOF
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -I"$ROOT/include" -o "$TMP/trainer" "$TMP/trainer.c" -lm ||
    fail "include/gpulse/steps.h does not compile"
NC=5000
"$TMP/trainer" "$NC" >"$TMP/c.out" || fail "C trainer failed"
read -r C_PID C_LOST C_CHILD <"$TMP/c.out"
[ "$C_LOST" = 0 ] || fail "C client dropped $C_LOST records"
note "C trainer pid $C_PID reported $NC steps"

# value PREFIX: the value of the first series line starting with PREFIX.
# The C trainer lives a fraction of a second: when a tick saw it alive it
# has its process group's job, else no job (its series are the same), so
# its lines are found by name and pid whatever comes before (cval NAME).
# The forked children likewise (pval NAME PID): one still alive at a tick
# takes its process group's job, one gone by then has none.
value() { awk -v s="$1" 'index($0, s) == 1 {print $NF; exit}' "$TMP/m"; }
sel() { printf '%s{%s' "$1" "$2"; }
pval() {
    awk -v n="$1{" -v p="Hostname=\"$(hostname)\",pid=\"$2\"}" \
        'index($0, n) == 1 && index($0, p) {print $NF; exit}' "$TMP/m"
}
cval() { pval "$1" "$C_PID"; }
PYL="job=\"py-fallback\",rank=\"2\",Hostname=\"$(hostname)\",pid=\"$PY_PID\"}"
have_all() {
    metrics >"$TMP/m"
    [ "$(value "$(sel gpulse_job_steps_total "$PYL")")" = $((N + 2)) ] &&
        [ "$(pval gpulse_job_steps_total "$PY_CHILD")" = 7 ] &&
        [ "$(cval gpulse_job_steps_total)" = $((NC + 1)) ] &&
        [ "$(pval gpulse_job_steps_total "$C_CHILD")" = 5 ]
}
wait_until 10 have_all || { grep -E '^gpulse_(job|steps)' "$TMP/m" >&2; fail "step totals not shown"; }

check() { # check SERIES WANT
    local got
    got=$(value "$1")
    [ "$got" = "$2" ] || fail "$1 is '$got', want $2"
}
ccheck() { # ccheck NAME WANT: the C trainer's series
    local got
    got=$(cval "$1")
    [ "$got" = "$2" ] || fail "the C trainer's $1 is '$got', want $2"
}
check "$(sel gpulse_job_samples_total "$PYL")" $((32 * (N + 1) + 1))
check "$(sel gpulse_job_tokens_total "$PYL")" $((1000 * (N + 1)))
# 0.25 given, plus what the client measured: the gaps between the `with`
# blocks and gpulse.memory()'s import of torch before the last step
# (test_client_data_wait.sh checks the measuring)
awk '{ exit !($1 >= 0.25) }' <<<"$(value "$(sel gpulse_job_data_wait_seconds_total "$PYL")")" ||
    fail "python's data wait is '$(value "$(sel gpulse_job_data_wait_seconds_total "$PYL")")', want 0.25 plus the gaps"
check "$(sel gpulse_job_target_steps "$PYL")" "$N"
check "$(sel gpulse_job_step "$PYL")" $((N + 2))
check "$(sel gpulse_job_step_records_lost_total "$PYL")" 0
awk -v want="$(awk -v n="$N" 'BEGIN {printf "%.15f", 1 / n}')" '{ if ($1 - want > 1e-9 || want - $1 > 1e-9) exit 1 }' \
    <<<"$(value "$(sel gpulse_job_loss "$PYL")")" || fail "python's last loss is not 1/$N"
ccheck gpulse_job_samples_total $((16 * (NC + 1)))
ccheck gpulse_job_tokens_total $((2048 * (NC + 1)))
ccheck gpulse_job_step_seconds_total "$(awk -v n=$NC 'BEGIN {print (n + 1) / 8}')"
ccheck gpulse_job_step $((NC + 1))
ccheck gpulse_job_loss 3.5
ccheck gpulse_job_step_records_lost_total 0
got=$(awk -v n="gpulse_job_allocator_bytes{" -v p="Hostname=\"$(hostname)\",pid=\"$C_PID\",device=\"1\",kind=\"reserved\"}" \
    'index($0, n) == 1 && index($0, p) {print $NF; exit}' "$TMP/m")
[ "$got" = 2000 ] || fail "the C trainer's reserved bytes on device 1 are '$got', want 2000"
# its steps of 0.125 s come back to back, faster than they say: a measured wait of 0
ccheck gpulse_job_data_wait_seconds_total 0
check gpulse_steps_malformed_total 0
recs=$(value gpulse_steps_records_total)
[ "$recs" = $((N + 4 + 7 + NC + 4 + 5)) ] || fail "gpulse_steps_records_total $recs, want $((N + 4 + 7 + NC + 4 + 5))"
# the model records (MFU): what each declared, resolved per token or sample
check "gpulse_job_model_flops{${PYL%\}},per=\"token\",precision=\"bf16\"}" 7800000000
got=$(awk -v n="gpulse_job_model_flops{" -v p="pid=\"$C_PID\",per=\"sample\",precision=\"fp8\"}" \
    'index($0, n) == 1 && index($0, p) {print $NF; exit}' "$TMP/m")
[ "$got" = 4096 ] || fail "the C trainer's model FLOPs per sample are '$got', want 4096"
grep -q '^gpulse_source_up{source="steps"} 1' "$TMP/m" || fail "steps source not up"
check_exposition "$TMP/m"
note "totals exact, exposition clean"

# A second agent on the same socket: one warning, serves without steps.
FIRST_PID=$AGENT_PID FIRST_LOG=$AGENT_LOG FIRST_PORT=$AGENT_PORT
start_agent --steps-socket "$SOCK" --interval 200ms
n=$(grep -c 'step socket unavailable' "$AGENT_LOG" || true)
[ "$n" = 1 ] || { cat "$AGENT_LOG"; fail "want one warning from the second agent, got $n"; }
grep -q 'in use by another running agent' "$AGENT_LOG" || fail "the warning does not say why"
metrics >"$TMP/m2" # to a file: grep -q in a pipe under pipefail can cut curl off (SIGPIPE)
grep -q '^gpulse_source_up{source="steps"} 0' "$TMP/m2" || fail "second agent: steps should be down"
stop_agent
[ -S "$SOCK" ] || fail "the second agent removed the first one's socket"
AGENT_PID=$FIRST_PID AGENT_LOG=$FIRST_LOG AGENT_PORT=$FIRST_PORT
stop_agent
[ -e "$SOCK" ] && fail "socket left behind after a clean stop"
note "second agent warned once; socket removed at stop"
