#!/usr/bin/env bash
# Debian's real Prometheus scrapes a simulated agent (1 node x 2 H100,
# every second) and remote-writes everything to the gpulse server. The
# same series read back through gpulse's /api/v1/query_range equal what
# Prometheus's own /api/v1/query_range returns for the same times: label
# sets, timestamps and values, bit for bit (and `avg by` within rounding).
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh test)"
start_server
start_agent --simulate 1x2xH100 --interval 1s
PP=$(free_port)
cat >"$TMP/prom.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: gpulse-agent
    static_configs: [{targets: ["127.0.0.1:$AGENT_PORT"]}]
remote_write:
  - url: $SERVER_URL/api/v1/write
    queue_config: {batch_send_deadline: 1s, max_backoff: 1s}
YML
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
    --web.listen-address="127.0.0.1:$PP" >"$TMP/prom.log" 2>&1 &
prom=$!
PIDS+=($prom)
PROM=http://127.0.0.1:$PP
wait_until 60 sh -c "curl -sf '$SERVER_URL/api/v1/series?match[]=DCGM_FI_DEV_GPU_UTIL' | grep -q sim-node-0" ||
    { tail -20 "$TMP/prom.log"; cat "$SERVER_LOG"; fail "no remote-written series reached gpulse"; }
sleep 14
END=$(($(date +%s) - 3))
START=$((END - 10))
# Remote write is in order per series: once every series has a sample
# after END in gpulse, everything up to END has arrived.
count() { curl -sf "$1" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))'; }
for sel in 'DCGM_FI_DEV_GPU_UTIL' 'gpulse_host_cpu_seconds_total' 'up'; do
    want=$(count "$PROM/api/v1/series?match[]=$sel&start=$START&end=$END")
    wait_until 30 sh -c "[ \"\$(curl -sf '$SERVER_URL/api/v1/series?match[]=$sel&start=$((END + 1))' |
        python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"data\"]))')\" -ge $want ]" ||
        fail "gpulse never caught up to $END for $sel"
done
cmp() { python3 "$ROOT/tests/integration/compare_range.py" "$PROM" "$SERVER_URL" "$START" "$END" "$@"; }
rc=0
cmp 0.1 'DCGM_FI_DEV_GPU_UTIL' || rc=1
cmp 0.1 'DCGM_FI_DEV_FB_USED{gpu="1"}' || rc=1
cmp 0.25 'DCGM_FI_DEV_POWER_USAGE' || rc=1
cmp 0.5 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION' || rc=1
cmp 0.1 'DCGM_FI_PROF_SM_ACTIVE{Hostname="sim-node-0",gpu=~"0|1"}' || rc=1
cmp 0.5 'gpulse_host_cpu_seconds_total{mode!="idle"}' || rc=1
# The scrape's up and scrape_samples_scraped; the server's store also
# holds its own self-scrape's (job="gpulse-server"), which Prometheus
# does not have.
cmp 0.5 'up{job="gpulse-agent"}' || rc=1
cmp 0.5 'scrape_samples_scraped{job="gpulse-agent"}' || rc=1
cmp 0.1 'DCGM_FI_DEV_GPU_TEMP' avg Hostname || rc=1
cmp 0.1 'DCGM_FI_DEV_POWER_USAGE' sum Hostname,modelName || rc=1
[ $rc -eq 0 ] || fail "gpulse and Prometheus disagree (above)"
grep 'level=warn module=write' "$SERVER_LOG" && fail "writes refused with 5xx (above)"
curl -sf "$SERVER_URL/metrics" >"$TMP/m"
grep -E '^gpulse_server_samples_rejected_total\{.*\} [1-9]' "$TMP/m" &&
    fail "samples of Prometheus's remote write were rejected (above)"
grep -E '^gpulse_server_http_requests_total\{handler="write",code="[^2]' "$TMP/m" &&
    fail "Prometheus's remote write got errors (above)"
note "Prometheus and gpulse agree on every point"
# Prometheus first: with its receiver gone it would retry for a minute.
kill "$prom"; wait "$prom" 2>/dev/null || true
stop_agent
stop_server
