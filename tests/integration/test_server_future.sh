#!/usr/bin/env bash
# One wrong clock must not stop a fleet's ingestion (issue 15, finding 1).
# Two agents push current samples to the server while a remote-write
# client sends samples dated far ahead: node-a simulates two nodes of two
# GPUs, node-b reads eight from the stand-in NVML (two simulating agents
# would both call their nodes sim-node-0), both on this host's /proc; their
# host and agent series are kept apart by the host label (issue 17):
#   A. the server runs without the bound (--max-future 0s, as older
#      versions did): a sample 16 days ahead is stored (204), and no
#      current sample is rejected afterwards, since the store's "now" is
#      the server's clock, not the newest sample (before: every current
#      sample became "older than the raw retention" within a second);
#   B. restarted on the same data with the default bound: the store that
#      holds the 16-day sample ingests normally; a sample 3 hours ahead
#      gets 400 naming its series, its time and the server's clock, one
#      5 minutes ahead is stored, and still no current sample is rejected.
# The server's rejection counters and the agents' dropped counters judge.
source "$(dirname "$0")/lib.sh"

now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
srv_metric() { # srv_metric 'NAME{labels}' -> value (0 when absent)
    curl -sf "$SERVER_URL/metrics" | awk -v n="$1" 'index($0, n " ") == 1 {print $2; f=1} END {if (!f) print 0}'
}
ingested() { srv_metric gpulse_server_samples_ingested_total; }
# Waits until the server has ingested more than $1 samples.
wait_ingest_past() {
    wait_until 20 sh -c "[ \"\$(curl -sf $SERVER_URL/metrics | awk '/^gpulse_server_samples_ingested_total / {print \$2}')\" -gt $1 ]"
}
check_no_current_rejected() {
    local r
    for r in too_old out_of_order duplicate_timestamp; do
        [ "$(srv_metric "gpulse_server_samples_rejected_total{reason=\"$r\"}")" = 0 ] ||
            { grep -i reject "$SERVER_LOG" | tail -5 >&2; fail "$1: current samples were rejected as $r"; }
    done
    for a in "$AGENT1_PORT" "$AGENT2_PORT"; do
        curl -sf "http://127.0.0.1:$a/metrics" | grep '^gpulse_push_samples_dropped_total{.*reason="rejected"' |
            awk '$2 != 0 {exit 1}' || fail "$1: an agent had samples rejected"
    done
}

SERVER_DATA=$TMP/data start_server --max-future 0s --log-level debug
PORT=$SERVER_PORT
start_agent --simulate 1x2xH100,1x2xA100 --hostname node-a --interval 200ms \
    --push "$SERVER_URL/api/v1/write" --push-max-backoff 1s
AGENT1_PORT=$AGENT_PORT AGENT1_PID=$AGENT_PID AGENT1_LOG=$AGENT_LOG
GPULSE_FAKENVML_SCENARIO=$SCEN/h100x8.scn GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --hostname node-b \
    --interval 200ms --push "$SERVER_URL/api/v1/write" --push-max-backoff 1s
AGENT2_PORT=$AGENT_PORT
wait_ingest_past 0 || fail "A: nothing ingested from the agents"

# A. no bound: the far-future sample is stored and must not move "now".
far=$(( $(now_ms) + 16 * 86400000 ))
out=$(rw write "$SERVER_URL" "gpulse_skewed_clock{node=\"skewed\"}=1@$far")
[ "${out%% *}" = 204 ] || fail "A: the 16-day-ahead sample without a bound: $out"
before=$(ingested)
sleep 4 # several maintenance ticks (compaction ran on the newest sample before)
wait_ingest_past "$before" || fail "A: ingestion stopped after the far-future sample"
check_no_current_rejected A
note "A: 16 days ahead stored without the bound; $(( $(ingested) - before )) current samples ingested after it, none rejected"

# B. the default bound, on the store that holds the far-future sample.
stop_server
"$GPULSE" server --listen "127.0.0.1:$PORT" --data "$TMP/data" >>"$SERVER_LOG" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
wait_until 30 curl -sf "$SERVER_URL/api/v1/health" || { cat "$SERVER_LOG" >&2; fail "B: server did not come back"; }
wait_ingest_past 0 || fail "B: nothing ingested after the restart"
t=$(( $(now_ms) + 3 * 3600000 ))
out=$(rw write "$SERVER_URL" "gpulse_skewed_clock{node=\"skewed\"}=2@$t" \
    "gpulse_skewed_clock{node=\"near\"}=3@$(( $(now_ms) + 300000 ))")
note "B: the answer: $out"
[ "${out%% *}" = 400 ] || fail "B: a sample 3 h ahead was not refused: $out"
case $out in
*'rejected 1 of 2 samples: 1 too far in the future'*'{__name__="gpulse_skewed_clock",node="skewed"}'*"ahead of the server's clock"*'max_future is 600 s'*'the other samples were stored'*) ;;
*) fail "B: the 400 does not name the series, its time and the clock: $out" ;;
esac
iso=$(python3 -c "import datetime,sys; print(datetime.datetime.fromtimestamp($t/1000, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S'))")
case $out in *"$iso"*) ;; *) fail "B: the 400 does not give the sample's time $iso: $out" ;; esac
[ "$(srv_metric 'gpulse_server_samples_rejected_total{reason="too_far_in_future"}')" = 1 ] ||
    fail "B: too_far_in_future not counted once"
before=$(ingested)
sleep 4
wait_ingest_past "$before" || fail "B: ingestion stopped"
check_no_current_rejected B
# The 5-minutes-ahead sample and the 16-day one are stored and read back.
q=$(curl -sf -G "$SERVER_URL/api/v1/series" --data-urlencode 'match[]=gpulse_skewed_clock' \
    --data-urlencode "start=$(( $(now_ms) / 1000 - 60 ))" --data-urlencode "end=$(( far / 1000 + 60 ))")
case $q in *'"node":"near"'*'"node":"skewed"'* | *'"node":"skewed"'*'"node":"near"'*) ;;
*) fail "B: the stored future samples are not there: $q" ;; esac
note "B: 3 h ahead refused with 400 naming it; $(( $(ingested) - before )) current samples ingested after it, none rejected"
stop_agent
AGENT_PID=$AGENT1_PID AGENT_LOG=$AGENT1_LOG stop_agent
stop_server
echo "PASS test_server_future"
