#!/usr/bin/env bash
# gp-timeout: 240
# Several servers on one cluster (docs/storage.md "Several servers on one
# cluster"): two `gpulse server`s in storage: remote, named a and b, on one
# VictoriaMetrics (Debian's), each with its local window; one job, span-1,
# whose rank 0 (node n1) writes through a and ranks 1-3 (node n2) through
# b (span_feed.py), b's part reaching the cluster 3 s before a's (the
# start-up race: b must not judge the job on its 3 ranks meanwhile, as
# world_size says 4). Checks: each server's inventory holds only its own
# node; the job document from either server shows all 4 ranks and GPUs;
# the straggler (rank 2) fires exactly once, on a (its name sorts first:
# it leads the job and reads b's ranks of it), never on b (which follows,
# though its own 3 ranks would be enough to judge); the per-GPU alert of
# n2's full GPU fires on b only, though a reads n2's series for the job.
# MULTI_NAMES=0 runs the same servers without names (each sees only its
# own window): the test must then fail.
source "$(dirname "$0")/lib.sh"
start_vm_now -search.disableCache
ARGS=(--storage remote --remote-write-url "$VM_URL" --remote-query-url "http://127.0.0.1:$VM_PORT"
    --eval-interval 1s --eval-step 1s --eval-window 60s --self-scrape-interval 0s --jobs-scan-interval 1s
    --detector-overrides "straggler.for=0s,memory_near_exhaustion.for=0s")
name() { [ "${MULTI_NAMES:-1}" = 0 ] || echo "--remote-server-name $1"; }
# shellcheck disable=SC2046
start_server "${ARGS[@]}" $(name a)
A=$SERVER_URL A_PID=$SERVER_PID A_LOG=$SERVER_LOG
# shellcheck disable=SC2034 # start_server reads it: b gets a data directory of its own
SERVER_DATA=$TMP/data-b
# shellcheck disable=SC2046
start_server "${ARGS[@]}" $(name b)
B=$SERVER_URL
python3 "$ROOT/tests/integration/span_feed.py" "$A" "$B" 150 >"$TMP/feed.log" 2>&1 &
FEED=$!
PIDS+=("$FEED")

gpus_of() { curl -sf "$1/api/v1/gpus" | python3 -c 'import json,sys; print(" ".join(sorted(g["node"] + "/" + g["gpu"] for g in json.load(sys.stdin)["data"])))'; }
both_fed() { [ "$(gpus_of "$A")" = "n1/0" ] && [ "$(gpus_of "$B")" = "n2/0 n2/1 n2/2" ]; }
wait_until 60 both_fed || { cat "$TMP/feed.log"; fail "inventories: a '$(gpus_of "$A")', b '$(gpus_of "$B")'"; }
note "each server's inventory holds its own node: a n1 (1 GPU), b n2 (3 GPUs)"

ranks_of() { curl -sf "$1/api/v1/jobs/span-1" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
print(" ".join(str(r["rank"]) for r in d["ranks"]), "|", " ".join(sorted(g["node"] + "/" + g["gpu"] for g in d["gpus"])))'; }
whole() { [ "$(ranks_of "$1")" = "0 1 2 3 | n1/0 n2/0 n2/1 n2/2" ]; }
wait_until 60 whole "$A" || fail "the job document from a: '$(ranks_of "$A")'"
wait_until 30 whole "$B" || fail "the job document from b: '$(ranks_of "$B")'"
note "the job document from either server shows all 4 ranks and GPUs"

summary() { # URL KIND: "node/gpu/job/state" of each alert of that kind, in any state
    curl -sf "$1/api/v1/alerts?kind=$2&state=all" | python3 -c '
import json, sys
print(" ".join(sorted("%s/%s/%s/%s" % (a["labels"].get("node", ""), a["labels"].get("gpu", ""),
                                        a["labels"].get("job", ""), a["state"]) for a in json.load(sys.stdin)["data"])))'; }
strag_a() { summary "$A" straggler | grep "n2/1/span-1/firing" >/dev/null; }
wait_until 60 strag_a || { tail -5 "$A_LOG"; fail "straggler did not fire on a: '$(summary "$A" straggler)'"; }
full_b() { summary "$B" memory_near_exhaustion | grep "n2/2/span-1/firing" >/dev/null; }
wait_until 30 full_b || fail "memory_near_exhaustion did not fire on b: '$(summary "$B" memory_near_exhaustion)'"
sleep 5 # more ticks on both: nothing else may appear
[ "$(summary "$A" straggler)" = "n2/1/span-1/firing" ] || fail "a's straggler alerts: '$(summary "$A" straggler)'"
[ -z "$(summary "$B" straggler)" ] || fail "b raised the job-level straggler too: '$(summary "$B" straggler)'"
[ -z "$(summary "$A" memory_near_exhaustion)" ] ||
    fail "a raised an alert of b's GPU: '$(summary "$A" memory_near_exhaustion)'"
[ "$(summary "$B" memory_near_exhaustion)" = "n2/2/span-1/firing" ] ||
    fail "b's memory alerts: '$(summary "$B" memory_near_exhaustion)'"
note "straggler (rank 2 on n2) fired once, on a; n2's full GPU fired once, on b"
kill "$FEED" 2>/dev/null || true
stop_server # b; then a: both exit cleanly (the ASan build checks for leaks)
SERVER_PID=$A_PID SERVER_LOG=$A_LOG
stop_server
