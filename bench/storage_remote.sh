#!/usr/bin/env bash
# storage_remote.sh - storage: embedded vs storage: remote (docs/storage.md),
# side by side, for fleets of growing size, on one machine: for each
# --specs entry (default 8x8xH100 32x8xH100 128x8xH100: 64, 256 and 1,024
# GPUs) a simulated fleet pushes the same ticks (--interval, 15 s) to an
# embedded server, a server on VictoriaMetrics and one on Prometheus
# (Debian's packages, on 127.0.0.1, temporary directories, all started
# fresh for each size); after --fill seconds each route is asked --n
# times per server (median / p90 of curl's total time), then the
# detectors' last evaluation tick, the server's CPU seconds over the fill
# (and per million samples ingested: the ingest cost with everything the
# server does beside it) and its resident memory per GPU are printed. --window-off adds a fourth
# column: VictoriaMetrics without the local window (remote_window: 0s,
# every read from the cluster). Last, the VictoriaMetrics server is
# restarted and the time its window's refill takes is printed. Not part
# of the test suite.
#
# usage: bench/storage_remote.sh [--specs "SPEC ..."] [--interval D] [--fill S] [--n N]
#                                [--window-off] [--bin PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
SPECS="8x8xH100 32x8xH100 128x8xH100"
INTERVAL=15s
FILL=75
N=10
BIN=build/rel/gpulse
OFF=0
while [ $# -gt 0 ]; do
    case $1 in
    --specs) SPECS=$2; shift 2 ;;
    --spec) SPECS=$2; shift 2 ;;
    --interval) INTERVAL=$2; shift 2 ;;
    --fill) FILL=$2; shift 2 ;;
    --n) N=$2; shift 2 ;;
    --window-off) OFF=1; shift ;;
    --bin) BIN=$2; shift 2 ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ "$BIN" != build/rel/gpulse ] || make -s build/rel/gpulse
TMP=$(mktemp -d /tmp/gpulse-bench-XXXXXX)
PIDS=()
stop_all() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    PIDS=()
}
trap 'stop_all; rm -rf "$TMP"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up() { for _ in $(seq 600); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

server() { # NAME ARGS...: sets URL and SPID
    local name=$1 p
    shift
    p=$(port)
    "$BIN" server --listen "127.0.0.1:$p" --data "$TMP/data-$name" --log-level warn \
        --self-scrape-interval 0s "$@" >"$TMP/$name.log" 2>&1 &
    SPID=$!
    PIDS+=($SPID)
    up "http://127.0.0.1:$p/api/v1/health"
    URL="http://127.0.0.1:$p"
}

run_size() { # SPEC
    local spec=$1 VM PR u r
    rm -rf "$TMP"/vm "$TMP"/prom "$TMP"/data-*
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
    local urls=() spids=() names=(embedded victoria-metrics prometheus)
    server embedded
    urls+=("$URL") spids+=("$SPID")
    server vm --storage remote --remote-write-url "http://127.0.0.1:$VM/api/v1/write" \
        --remote-query-url "http://127.0.0.1:$VM"
    urls+=("$URL") spids+=("$SPID")
    server prom --storage remote --remote-write-url "http://127.0.0.1:$PR/api/v1/write" \
        --remote-query-url "http://127.0.0.1:$PR"
    urls+=("$URL") spids+=("$SPID")
    if [ "$OFF" = 1 ]; then
        server vmoff --storage remote --remote-write-url "http://127.0.0.1:$VM/api/v1/write" \
            --remote-query-url "http://127.0.0.1:$VM" --remote-window 0s
        urls+=("$URL") spids+=("$SPID") names+=("vm, no window")
    fi
    local push=() cpu0=()
    for u in "${urls[@]}"; do push+=(--push "$u/api/v1/write"); done
    for p in "${spids[@]}"; do cpu0+=("$(cpu_s "$p")"); done
    local AP
    AP=$(port)
    "$BIN" agent --listen "127.0.0.1:$AP" --simulate "$spec" --interval "$INTERVAL" "${push[@]}" \
        >"$TMP/agent.log" 2>&1 &
    PIDS+=($!)
    up "http://127.0.0.1:$AP/healthz"
    echo "filling for ${FILL}s: $spec, $INTERVAL ticks, into ${names[*]}" >&2
    sleep "$FILL"
    local cpu1=() ing=()
    for p in "${spids[@]}"; do cpu1+=("$(cpu_s "$p")"); done
    for u in "${urls[@]}"; do
        ing+=("$(curl -sf "$u/metrics" | awk '/^gpulse_server_samples_ingested_total / {print $2}')")
    done
    local gpus series NOW
    gpus=$(curl -sf "${urls[0]}/api/v1/gpus" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
    series=$(curl -sf "${urls[0]}/api/v1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["series"])')
    NOW=$(date +%s)
    local ROUTES=(/api/v1/gpus /api/v1/nodes /api/v1/fleet/gpus
        "/api/v1/query_range?match=DCGM_FI_DEV_GPU_UTIL&start=$((NOW - 300))&end=$NOW&step=15s"
        /api/v1/labels)
    echo
    printf '%s: %s GPUs, %s series; %s requests per route and server; seconds, median / p90\n' \
        "$spec" "$gpus" "$series" "$N"
    local hdr
    hdr=$(printf '%-48s' route)
    for nm in "${names[@]}"; do hdr+=$(printf ' %20s' "$nm"); done
    echo "$hdr"
    for r in "${ROUTES[@]}"; do
        row=$(printf '%-48s' "${r:0:48}")
        for u in "${urls[@]}"; do
            ts=$(for _ in $(seq "$N"); do curl -s -o /dev/null -w '%{time_total}\n' "$u$r"; done | sort -g)
            med=$(echo "$ts" | awk -v n="$N" 'NR == int((n + 1) / 2)')
            p90=$(echo "$ts" | awk -v n="$N" 'NR == int(n * 0.9 + 0.999)')
            row+=$(printf ' %9.4f / %8.4f' "$med" "$p90")
        done
        echo "$row"
    done
    # The detectors: the last evaluation tick (15 s interval, 15 m window),
    # as each server reports it.
    row=$(printf '%-48s' "(detector tick: view / total)")
    for u in "${urls[@]}"; do
        m=$(curl -sf "$u/metrics")
        v=$(echo "$m" | awk '/^gpulse_server_eval_last_seconds\{part="view"\}/ {print $2}')
        t=$(echo "$m" | awk '/^gpulse_server_eval_last_seconds\{part="total"\}/ {print $2}')
        row+=$(printf ' %9.4f / %8.4f' "${v:-0}" "${t:-0}")
    done
    echo "$row"
    row=$(printf '%-48s' "(server CPU s over the fill / MiB RSS per GPU)")
    local i=0
    for p in "${spids[@]}"; do
        c=$(awk -v a="${cpu1[$i]}" -v b="${cpu0[$i]}" 'BEGIN {print a - b}')
        row+=$(printf ' %9.2f / %8.3f' "$c" "$(awk -v k="$(rss_kb "$p")" -v g="$gpus" 'BEGIN {print k / 1024 / (g ? g : 1)}')")
        i=$((i + 1))
    done
    echo "$row"
    row=$(printf '%-48s' "(samples ingested / server CPU s per M samples)")
    i=0
    for p in "${spids[@]}"; do
        n=${ing[$i]}
        c=$(awk -v a="${cpu1[$i]}" -v b="${cpu0[$i]}" 'BEGIN {print a - b}')
        row+=$(printf ' %9.0f / %8.2f' "${n:-0}" "$(awk -v c="$c" -v n="${n:-0}" 'BEGIN {print n ? c * 1e6 / n : 0}')")
        i=$((i + 1))
    done
    echo "$row"
    # A restart of the VictoriaMetrics server: the window is refilled from
    # the cluster before it takes writes again (docs/storage.md).
    kill "${spids[1]}"
    wait "${spids[1]}" 2>/dev/null || true
    local t0 t1
    t0=$(date +%s%N)
    server vm2 --storage remote --remote-write-url "http://127.0.0.1:$VM/api/v1/write" \
        --remote-query-url "http://127.0.0.1:$VM" --data "$TMP/data-vm" --log-level info
    # The last line of the refill (progress lines come before it).
    until grep -q 'remote window refilled\|remote window refill failed' "$TMP/vm2.log"; do sleep 0.1; done
    t1=$(date +%s%N)
    echo "(restart of the VictoriaMetrics server) $(grep -o 'remote window refill\(ed\| failed\).*' "$TMP/vm2.log" | head -1);" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) / 1e9}') s from start to refilled"
    stop_all
}

for spec in $SPECS; do run_size "$spec"; done
