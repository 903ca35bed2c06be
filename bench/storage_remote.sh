#!/usr/bin/env bash
# storage_remote.sh - API latency of storage: embedded vs storage: remote
# (docs/storage.md), measured in one run on one machine: a simulated fleet
# (--spec, default 4x8xH100) pushes the same ticks to an embedded server,
# a server on VictoriaMetrics and one on Prometheus (Debian's packages,
# on 127.0.0.1, temporary directories); after --fill seconds each route
# is asked --n times per server and the median and 90th percentile of
# curl's total time are printed. Not part of the test suite.
#
# usage: bench/storage_remote.sh [--spec SPEC] [--fill S] [--n N] [--bin PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC=4x8xH100
FILL=60
N=20
BIN=build/rel/gpulse
while [ $# -gt 0 ]; do
    case $1 in
    --spec) SPEC=$2; shift 2 ;;
    --fill) FILL=$2; shift 2 ;;
    --n) N=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ "$BIN" != build/rel/gpulse ] || make -s build/rel/gpulse
TMP=$(mktemp -d /tmp/gpulse-bench-XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$TMP"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up() { for _ in $(seq 300); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

VM=$(port) PR=$(port)
victoria-metrics -httpListenAddr "127.0.0.1:$VM" -storageDataPath "$TMP/vm" -loggerLevel ERROR \
    -search.latencyOffset 0s >"$TMP/vm.log" 2>&1 &
PIDS+=($!)
printf 'global: {scrape_interval: 1m}\nscrape_configs: []\n' >"$TMP/prom.yml"
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/prom" \
    --web.listen-address="127.0.0.1:$PR" --web.enable-remote-write-receiver >"$TMP/prom.log" 2>&1 &
PIDS+=($!)
up "http://127.0.0.1:$VM/health"
up "http://127.0.0.1:$PR/-/ready"
server() { # NAME ARGS...: sets URL
    local name=$1 p
    shift
    p=$(port)
    "$BIN" server --listen "127.0.0.1:$p" --data "$TMP/data-$name" --log-level warn "$@" >"$TMP/$name.log" 2>&1 &
    PIDS+=($!)
    up "http://127.0.0.1:$p/api/v1/health"
    URL="http://127.0.0.1:$p"
}
server embedded
EMB=$URL
server vm --storage remote --remote-write-url "http://127.0.0.1:$VM/api/v1/write" \
    --remote-query-url "http://127.0.0.1:$VM"
VMS=$URL
server prom --storage remote --remote-write-url "http://127.0.0.1:$PR/api/v1/write" \
    --remote-query-url "http://127.0.0.1:$PR"
PRS=$URL
AP=$(port)
"$BIN" agent --listen "127.0.0.1:$AP" --simulate "$SPEC" --interval 1s \
    --push "$EMB/api/v1/write" --push "$VMS/api/v1/write" --push "$PRS/api/v1/write" >"$TMP/agent.log" 2>&1 &
PIDS+=($!)
up "http://127.0.0.1:$AP/healthz"
echo "filling for ${FILL}s: $SPEC, 1 s ticks, into embedded, VictoriaMetrics and Prometheus" >&2
sleep "$FILL"
series=$(curl -sf "$EMB/api/v1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["series"])')
NOW=$(date +%s)
ROUTES=(/api/v1/gpus /api/v1/nodes /api/v1/fleet/gpus
    "/api/v1/query_range?match=DCGM_FI_DEV_GPU_UTIL&start=$((NOW - 300))&end=$NOW&step=15s"
    /api/v1/labels)
printf '%s series; %s requests per route and server; seconds, median / p90\n' "$series" "$N"
printf '%-48s %20s %20s %20s\n' route embedded victoria-metrics prometheus
for r in "${ROUTES[@]}"; do
    row=$(printf '%-48s' "${r:0:48}")
    for u in "$EMB" "$VMS" "$PRS"; do
        ts=$(for _ in $(seq "$N"); do curl -s -o /dev/null -w '%{time_total}\n' "$u$r"; done | sort -g)
        med=$(echo "$ts" | awk -v n="$N" 'NR == int((n + 1) / 2)')
        p90=$(echo "$ts" | awk -v n="$N" 'NR == int(n * 0.9 + 0.999)')
        row+=$(printf ' %9.4f / %8.4f' "$med" "$p90")
    done
    echo "$row"
done
# The cluster's own share: the one request /api/v1/gpus makes of it (the
# newest 2 minutes of every GPU series), asked directly.
Q='query={__name__=~"DCGM_FI_.*|gpulse_gpu_.*"}[120000ms]'
row=$(printf '%-48s %20s' "(cluster alone: the gpus selection)" "-")
for c in "http://127.0.0.1:$VM" "http://127.0.0.1:$PR"; do
    ts=$(for _ in $(seq "$N"); do curl -s -o /dev/null -w '%{time_total} %{size_download}\n' \
        --data-urlencode "$Q" --data-urlencode "time=$(date +%s)" "$c/api/v1/query"; done | sort -g)
    med=$(echo "$ts" | awk -v n="$N" 'NR == int((n + 1) / 2) {print $1}')
    p90=$(echo "$ts" | awk -v n="$N" 'NR == int(n * 0.9 + 0.999) {print $1}')
    bytes=$(echo "$ts" | awk 'NR == 1 {print $2}')
    row+=$(printf ' %9.4f / %8.4f' "$med" "$p90")
done
echo "$row  ($bytes bytes of JSON)"
# The detectors: one evaluation tick (default 15 s interval, 15 m window,
# which covers all the data here), as each server reports it.
row=$(printf '%-48s' "(detectors: last evaluation tick, view / total)")
for u in "$EMB" "$VMS" "$PRS"; do
    m=$(curl -sf "$u/metrics")
    v=$(echo "$m" | awk -F' ' '/^gpulse_server_eval_last_seconds\{part="view"\}/ {print $2}')
    t=$(echo "$m" | awk -F' ' '/^gpulse_server_eval_last_seconds\{part="total"\}/ {print $2}')
    row+=$(printf ' %9.4f / %8.4f' "${v:-0}" "${t:-0}")
done
echo "$row"
