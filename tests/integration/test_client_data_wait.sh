#!/usr/bin/env bash
# The clients measure the wait for data themselves (issue 17 item 2): a
# loop that sleeps W before each step (its loader) and C inside it, with
# no wait= given, reaches the agent with a data wait of about W per step
# (the first step has no previous end, so no wait) and steps of about
# W + C. Python's `with gpulse.step()`, the Lightning and Hugging Face
# callbacks (driven through stand-in framework modules, as neither is
# installed here) and the C header each run one such loop; a wait= the
# caller gives is sent as given. The Hugging Face callback also declares
# its model for MFU (model=, tokens_per_sample=): the model record and
# the steps' tokens reach the agent.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
SOCK=$TMP/steps.sock
start_agent --steps-socket "$SOCK" --interval 200ms
export GPULSE_STEPS_SOCKET=$SOCK
N=20 W=0.03 C=0.01

# Each trainer prints its pid; its series are found by pid.
PYTHONPATH=$ROOT/python "$PY" - "$N" "$W" "$C" >"$TMP/py.out" <<'PYEOF'
import os, sys, time, types
n, w, c = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
import gpulse

def child(body):
    pid = os.fork()
    if pid == 0:
        gpulse._client._after_fork()
        body()
        gpulse.flush()
        os._exit(0)
    os.waitpid(pid, 0)
    print(pid)

def plain():
    for i in range(n):
        time.sleep(w)                      # the loader
        with gpulse.step(samples=1) as s:
            time.sleep(c)
            s.loss = 1.0 / (i + 1)

def told():                                # wait= given: sent as given
    for i in range(n):
        time.sleep(w)
        gpulse.report_step(c, wait=0.001)

# Stand-ins with the hooks the callbacks use.
class Callback:
    pass
pl = types.ModuleType("lightning.pytorch"); pl.Callback = Callback
light = types.ModuleType("lightning"); light.pytorch = pl
tf = types.ModuleType("transformers"); tf.TrainerCallback = Callback
sys.modules.update({"lightning": light, "lightning.pytorch": pl, "transformers": tf})
from gpulse.callbacks import GpulseLightningCallback, GpulseTrainerCallback

def lightning():
    cb = GpulseLightningCallback(memory_every=0)
    tr = types.SimpleNamespace(max_steps=n, global_step=0)
    cb.on_train_start(tr, None)
    for i in range(n):
        time.sleep(w)
        cb.on_train_batch_start(tr, None, [[0]], i)
        time.sleep(c)
        tr.global_step = i + 1
        cb.on_train_batch_end(tr, None, {"loss": 0.5}, [[0]], i)

def hf():
    cb = GpulseTrainerCallback(memory_every=0, model={"params": 1000, "precision": "fp16"},
                               tokens_per_sample=128)
    args = types.SimpleNamespace(per_device_train_batch_size=1, gradient_accumulation_steps=1)
    st = types.SimpleNamespace(max_steps=n, global_step=0)
    cb.on_train_begin(args, st, None)
    for i in range(n):
        time.sleep(w)
        cb.on_step_begin(args, st, None)
        time.sleep(c)
        st.global_step = i + 1
        cb.on_step_end(args, st, None)

for body in (plain, told, lightning, hf):
    child(body)
PYEOF
read -r -d '' P_PLAIN P_TOLD P_LIGHT P_HF <"$TMP/py.out" || true
[ -n "$P_HF" ] || fail "python trainers did not run: $(cat "$TMP/py.out")"

cat >"$TMP/trainer.c" <<'CEOF'
#include <gpulse/steps.h>
#include <stdio.h>
#include <stdlib.h>
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}
int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int n = atoi(argv[1]);
    double w = atof(argv[2]), c = atof(argv[3]);
    struct gpulse_steps g;
    if (gpulse_steps_open(&g))
        return 1;
    for (int i = 1; i <= n; i++) {
        sleep_s(w); /* the loader */
        double t0 = now_s();
        sleep_s(c);
        gpulse_step(&g, (uint64_t)i, now_s() - t0, 1, GPULSE_UNSET, 2.0, GPULSE_UNSET);
    }
    gpulse_close(&g);
    printf("%d\n", (int)getpid());
    return 0;
}
CEOF
cc -std=c11 -Wall -Wextra -Werror -O2 -I"$ROOT/include" -o "$TMP/trainer" "$TMP/trainer.c" -lm ||
    fail "include/gpulse/steps.h does not compile"
P_C=$("$TMP/trainer" "$N" "$W" "$C") || fail "C trainer failed"

# pval NAME PID: the value of NAME's series for that pid.
pval() {
    awk -v n="$1{" -v p="pid=\"$2\"}" 'index($0, n) == 1 && index($0, p) {print $NF; exit}' "$TMP/m"
}
have_all() {
    metrics >"$TMP/m"
    for p in $P_PLAIN $P_TOLD $P_LIGHT $P_HF $P_C; do
        [ "$(pval gpulse_job_steps_total "$p")" = "$N" ] || return 1
    done
}
wait_until 10 have_all || { grep -E '^gpulse_job_(steps|data_wait)' "$TMP/m" >&2; fail "step totals not shown"; }

# Measured: (N-1) waits of at least W each (sleep never wakes early), at
# most twice that on a loaded machine; steps of W + C the same way.
measured() { # measured WHO PID
    local wt st
    wt=$(pval gpulse_job_data_wait_seconds_total "$2")
    st=$(pval gpulse_job_step_seconds_total "$2")
    [ -n "$wt" ] || fail "$1: no data wait reported (want about $(awk -v n="$N" -v w="$W" 'BEGIN {print (n - 1) * w}') s)"
    awk -v got="$wt" -v n="$N" -v w="$W" 'BEGIN { want = (n - 1) * w; exit !(got >= want * 0.99 && got <= want * 2) }' ||
        fail "$1: data wait $wt s, want $(awk -v n="$N" -v w="$W" 'BEGIN {print (n - 1) * w}') s (up to twice that)"
    awk -v got="$st" -v n="$N" -v w="$W" -v c="$C" 'BEGIN { want = (n - 1) * (w + c) + c; exit !(got >= want * 0.99 && got <= want * 2) }' ||
        fail "$1: step seconds $st, want about $(awk -v n="$N" -v w="$W" -v c="$C" 'BEGIN {print (n - 1) * (w + c) + c}')"
    note "$1: data wait $wt s of $st s of steps"
}
measured "python with gpulse.step()" "$P_PLAIN"
measured "lightning callback" "$P_LIGHT"
measured "hugging face callback" "$P_HF"
measured "C gpulse_step()" "$P_C"
wt=$(pval gpulse_job_data_wait_seconds_total "$P_TOLD")
awk -v got="$wt" -v n="$N" 'BEGIN { exit !(got > n * 0.001 - 1e-9 && got < n * 0.001 + 1e-9) }' ||
    fail "python with wait=0.001: data wait '$wt', want $(awk -v n="$N" 'BEGIN {print n * 0.001}') as given"
note "wait= given is sent as given ($wt s)"
got=$(awk -v p="pid=\"$P_HF\",per=\"token\",precision=\"fp16\"}" \
    'index($0, "gpulse_job_model_flops{") == 1 && index($0, p) {print $NF; exit}' "$TMP/m")
[ "$got" = 6000 ] || fail "the Hugging Face callback's model FLOPs per token are '$got', want 6 x 1000"
[ "$(pval gpulse_job_tokens_total "$P_HF")" = $((N * 128)) ] ||
    fail "the Hugging Face callback's tokens are '$(pval gpulse_job_tokens_total "$P_HF")', want $((N * 128))"
note "the Hugging Face callback declared its model (6000 FLOPs per token) and reported $((N * 128)) tokens"
stop_agent
