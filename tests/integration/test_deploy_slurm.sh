#!/usr/bin/env bash
# test_deploy_slurm.sh - the Slurm prolog and epilog of deploy/slurm run
# as slurmd runs them (a clean environment holding only the SLURM_* values
# slurmd sets, the wrappers gpulse-prolog and gpulse-epilog) against a real
# `gpulse server` with read and write tokens; their effect is read back
# through the API: the job in the registry (GET /api/v1/jobs/ID) from the
# prolog on, with its nodes and owner; finished, failed or killed after the
# epilog. Malformed environments, a wrong token and an unreachable server
# give a clear message and exit 0 (a failing Prolog drains the node and
# requeues the job; tracking must not do that).
. "$(dirname "$0")/lib.sh"
S=$ROOT/deploy/slurm
printf 'w-secret\n' >"$TMP/write-token"
printf 'r-secret\n' >"$TMP/read-token"
start_server --write-token-file "$TMP/write-token" --read-token-file "$TMP/read-token" --jobs-scan-interval 1s
printf 'GPULSE_SERVER_URL=%s\nGPULSE_WRITE_TOKEN_FILE=%s\nGPULSE_TIMEOUT=3\n' "$SERVER_URL" "$TMP/write-token" >"$TMP/slurm.env"
api() { curl -sfg -H "Authorization: Bearer r-secret" "$SERVER_URL$1"; }

# slurm RC_FILE SCRIPT VAR=VALUE...: runs a wrapper the way slurmd does:
# env -i, SLURM_* only, plus where the settings are. Prints stderr.
slurm() {
    local script=$1; shift
    local rc=0
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin GPULSE_SLURM_ENV="$TMP/slurm.env" "$@" \
        "$S/$script" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [ $rc -eq 0 ] || { cat "$TMP/err"; fail "$script exited $rc with $*"; }
    [ ! -s "$TMP/out" ] || { cat "$TMP/out"; fail "$script wrote to stdout"; }
}
job_env() {  # what slurmd's Prolog/Epilog see for job $1 on node $2
    echo SLURM_JOB_ID="$1" SLURM_JOB_USER=alice SLURM_JOB_UID=1001 SLURM_JOB_GID=1001 \
        SLURM_JOB_PARTITION=gpu SLURM_JOB_ACCOUNT=ml SLURM_CLUSTER_NAME=c1 \
        SLURM_JOB_NODELIST="gpu[01-02]" SLURM_NODELIST="gpu[01-02]" SLURMD_NODENAME="$2" \
        SLURM_JOB_GPUS=0,1 SLURM_SCRIPT_CONTEXT="$3" SLURM_CONF=/etc/slurm/slurm.conf
}
# shellcheck disable=SC2046
{
slurm gpulse-prolog $(job_env 4242 gpu01 prolog_slurmd)
[ ! -s "$TMP/err" ] || { cat "$TMP/err"; fail "the prolog complained about a good job"; }
slurm gpulse-prolog $(job_env 4242 gpu02 prolog_slurmd)
slurm gpulse-prolog $(job_env 4243 gpu01 prolog_slurmd)
slurm gpulse-prolog $(job_env 4244 gpu01 prolog_slurmd)
}
state() { api "/api/v1/jobs/$1" | python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; print(d["state"], d.get("scheme"), ",".join(d["nodes"]), d.get("exit_status"))'; }
wait_until 10 sh -c "curl -sf -H 'Authorization: Bearer r-secret' '$SERVER_URL/api/v1/jobs/4242' | grep -q gpu02" ||
    { api /api/v1/jobs; fail "the prolog did not put job 4242 in the registry"; }
[ "$(state 4242)" = "running slurm gpu01,gpu02 None" ] || fail "job 4242 after the prologs: $(state 4242)"
api '/api/v1/series?match[]=gpulse_slurm_job_info{job="4242"}' | grep '"user":"alice"' >/dev/null ||
    fail "the owner of job 4242 is not stored"
api '/api/v1/series?match[]=gpulse_slurm_job_info{job="4242"}' | grep '"gpus":"0,1"' >/dev/null ||
    fail "the GPUs of job 4242 are not stored"
note "prolog: jobs registered from their allocation on (4242 on gpu01 and gpu02, user alice)"

# Epilogs: no exit code (slurmd's Epilog is not told it), 1:0, and a signal.
# shellcheck disable=SC2046
{
slurm gpulse-epilog $(job_env 4242 gpu01 epilog_slurmd)
slurm gpulse-epilog $(job_env 4242 gpu02 epilog_slurmd)
slurm gpulse-epilog $(job_env 4243 gpu01 epilog_slurmd) SLURM_JOB_EXIT_CODE2=1:0
slurm gpulse-epilog $(job_env 4244 gpu01 epilog_slurmd) SLURM_JOB_EXIT_CODE=9
}
wait_until 10 sh -c "curl -sf -H 'Authorization: Bearer r-secret' '$SERVER_URL/api/v1/jobs/4244' | grep -q killed" ||
    { api /api/v1/jobs; fail "the epilog did not end job 4244"; }
[ "$(state 4242)" = "finished slurm gpu01,gpu02 None" ] || fail "job 4242 after the epilogs: $(state 4242)"
[ "$(state 4243)" = "failed slurm gpu01 1" ] || fail "job 4243 (exit 1) after its epilog: $(state 4243)"
[ "$(state 4244)" = "killed slurm gpu01 137" ] || fail "job 4244 (SIGKILL) after its epilog: $(state 4244)"
[ "$(api '/api/v1/jobs?state=running' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')" = 0 ] ||
    fail "jobs still running after their epilogs"
note "epilog: 4242 finished, 4243 failed (exit 1), 4244 killed (137)"

# Bad input: a message that says what is wrong, exit 0, nothing stored.
before=$(api '/api/v1/series?match[]={__name__=~"gpulse_.*job.*"}' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
bad() {  # bad EXPECTED-MESSAGE SCRIPT VAR=VALUE...
    local want=$1; shift
    slurm "$@"
    grep -q "$want" "$TMP/err" || { cat "$TMP/err"; fail "no clear message ('$want') for $*"; }
}
bad 'SLURM_JOB_ID is missing' gpulse-prolog SLURMD_NODENAME=gpu01
bad "SLURM_JOB_ID is missing or not a job id ('12; reboot')" gpulse-prolog 'SLURM_JOB_ID=12; reboot' SLURMD_NODENAME=gpu01
bad "SLURM_JOB_ID is missing or not a job id ('')" gpulse-epilog SLURM_JOB_ID= SLURMD_NODENAME=gpu01
bad "SLURM_JOB_UID 'root' is not a number" gpulse-prolog SLURM_JOB_ID=5000 SLURM_JOB_UID=root SLURMD_NODENAME=gpu01
bad "SLURM_JOB_EXIT_CODE2 'x:y' is not EXIT:SIGNAL" gpulse-epilog SLURM_JOB_ID=5001 SLURM_JOB_EXIT_CODE2=x:y SLURMD_NODENAME=gpu01
after=$(api '/api/v1/series?match[]={__name__=~"gpulse_.*job.*"}' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
[ "$before" = "$after" ] || fail "malformed environments stored series ($before -> $after)"
printf 'wrong\n' >"$TMP/wrong-token"
bad 'answered 401' gpulse-prolog SLURM_JOB_ID=5002 SLURMD_NODENAME=gpu01 GPULSE_WRITE_TOKEN_FILE="$TMP/wrong-token"
t0=$SECONDS
bad 'cannot reach gpulse server http://127.0.0.1:[0-9]*: .*Connection refused' gpulse-prolog SLURM_JOB_ID=5003 SLURMD_NODENAME=gpu01 \
    GPULSE_SERVER_URL="http://127.0.0.1:$(free_port)"
[ $((SECONDS - t0)) -le 4 ] || fail "an unreachable server held the prolog $((SECONDS - t0)) s"
bad "cannot read GPULSE_WRITE_TOKEN_FILE: .*'/nonexistent'" gpulse-epilog SLURM_JOB_ID=5004 SLURMD_NODENAME=gpu01 GPULSE_WRITE_TOKEN_FILE=/nonexistent
bad 'usage: gpulse-slurm-job prolog|epilog' gpulse-slurm-job
api /api/v1/jobs/5002 >/dev/null 2>&1 && fail "job 5002 registered with a wrong token"
note "malformed env, wrong token, server down, no token file, usage: a message each, exit 0"

# The preflight prolog (gpulse-preflight) runs gpulse check against the
# stand-in NVML: a healthy node passes, a faulty one exits 1 (slurmd drains
# it) with the failed check and its action, and the result reaches the
# server; a node that cannot be checked is let through with a message.
PF_SCN=$ROOT/tests/data/nvml/preflight.scn
preflight() {  # preflight WANT-RC SCENARIO VAR=VALUE...
    local want=$1 scn=$2; shift 2
    local rc=0
    # shellcheck disable=SC2046
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin GPULSE_SLURM_ENV="$TMP/slurm.env" GPULSE_BIN="$GPULSE" \
        GPULSE_NVML_LIBRARY="$ROOT/build/fakenvml/full/libnvidia-ml.so.1" GPULSE_FAKENVML_SCENARIO="$scn" \
        ASAN_OPTIONS="${ASAN_OPTIONS:-}" $(job_env 4300 "$1" prolog_slurmd) "${@:2}" \
        "$S/gpulse-preflight" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [ $rc -eq "$want" ] || { cat "$TMP/out" "$TMP/err"; fail "gpulse-preflight exited $rc, not $want"; }
    [ ! -s "$TMP/out" ] || { cat "$TMP/out"; fail "gpulse-preflight wrote to stdout"; }
}
printf 'GPULSE_READ_TOKEN_FILE=%s\nGPULSE_CHECK_CONFIG=%s\n' "$TMP/read-token" "$TMP/check.yml" >>"$TMP/slurm.env"
printf 'check:\n  gpus: 2\n  model: H100\n  kernel_log: ""\n' >"$TMP/check.yml"
preflight 0 "$PF_SCN" gpu01
[ ! -s "$TMP/err" ] || { cat "$TMP/err"; fail "the preflight complained about a healthy node"; }
{ cat "$PF_SCN"; echo "at 0 gpu 1 ecc_dbe_vol 3"; } >"$TMP/faulty.scn"
preflight 1 "$TMP/faulty.scn" gpu02
grep -q "^gpulse preflight failed on gpu02 before job 4300:" "$TMP/err" &&
    grep -q "^FAILED  ecc_uncorrectable *GPU 1: uncorrectable ECC errors since the last reset (3): reset the GPU$" "$TMP/err" &&
    ! grep -q "^ok " "$TMP/err" || { cat "$TMP/err"; fail "the failed preflight's message"; }
[ "$(api /api/v1/health/preflight | python3 -c 'import json,sys; print(" ".join(x["node"]+":"+x["status"]+":"+x["action"] for x in json.load(sys.stdin)["data"]))')" = \
    "gpu01:ok:none gpu02:failed:reset_gpu" ] || fail "the preflights on the server: $(api /api/v1/health/preflight)"
preflight 0 "$PF_SCN" gpu01 GPULSE_NVML_LIBRARY=/nonexistent.so
grep -q "gpulse preflight could not check gpu01 (gpulse check exit 2), job let through" "$TMP/err" ||
    { cat "$TMP/err"; fail "no NVML: no message"; }
note "preflight: healthy gpu01 passes, gpu02 with ECC errors exits 1 (drained) saying reset the GPU; both on the server"
stop_server
echo "ok: slurm prolog/epilog register and end 3 jobs on 2 nodes; 9 failure cases exit 0 with a message; the preflight drains a faulty node"
