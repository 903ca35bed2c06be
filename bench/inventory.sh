#!/usr/bin/env bash
# inventory.sh - latency of the inventory routes (/api/v1/gpus,
# /api/v1/nodes, /api/v1/fleet/gpus) for growing simulated fleets, in
# embedded and in `storage: remote` mode (Debian's VictoriaMetrics on
# 127.0.0.1), optionally for a second binary (--before) on the same
# writes: one simulated agent pushes to every server, so both builds
# answer for the same series. After --fill seconds each route is asked
# --n times per server, the servers taking turns (curl's total time:
# median and p95, ms), and the
# answers of the two builds are compared (identical, or the route is
# named; /api/v1/fleet too, which shares fleet/gpus's selection). Then
# each server is restarted on its data and, --settle seconds after it
# answers its health check, asked once per route: the first request after
# a start (ms). Not part of the test suite.
#
# usage: bench/inventory.sh [--specs "SPEC ..."] [--fill S] [--n N] [--settle S] [--bin PATH] [--before PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
SPECS="128x8xH100 256x8xH100 512x8xH100"
FILL=45
N=50
SETTLE=2
BIN=build/rel/gpulse
BEFORE=
while [ $# -gt 0 ]; do
    case $1 in
    --specs) SPECS=$2; shift 2 ;;
    --fill) FILL=$2; shift 2 ;;
    --n) N=$2; shift 2 ;;
    --settle) SETTLE=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --before) BEFORE=$2; shift 2 ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ "$BIN" != build/rel/gpulse ] || make -s build/rel/gpulse
. bench/lib.sh
stop_size() { # the servers, the agent and VictoriaMetrics of one size
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
up() { wait_http "$1" 60 || exit 1; }

URLS=() NAMES=() CMDS=() SPIDS=()
server() { # NAME BIN ARGS...: started (again, on its port and data, when known)
    local name=$1 bin=$2 p i
    shift 2
    p=$(port)
    for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" != "$name" ] || p=${URLS[$i]##*:}; done
    "$bin" server --listen "127.0.0.1:$p" --data "$TMP/data-$name" --log-level warn \
        --self-scrape-interval 0s "$@" >>"$TMP/$name.log" 2>&1 &
    PIDS+=($!)
    up "http://127.0.0.1:$p/api/v1/health"
    for i in "${!NAMES[@]}"; do
        [ "${NAMES[$i]}" != "$name" ] || { SPIDS[$i]=$!; return 0; }
    done
    URLS+=("http://127.0.0.1:$p") NAMES+=("$name") SPIDS+=($!)
    CMDS+=("$(printf '%q ' "$name" "$bin" "$@")")
}

# ms of one request to URL
once() { curl -s -o /dev/null -w '%{time_total}\n' "$1" | awk '{printf "%7.1f", $1 * 1000}'; }

# ms of N requests to route $1 on every server, taking turns (a tick's
# ingest then slows each server's requests alike): "median / p95" each
timings() {
    local i k
    for k in "${!URLS[@]}"; do : >"$TMP/t$k"; done
    for i in $(seq "$N"); do
        for k in "${!URLS[@]}"; do
            curl -s -o /dev/null -w '%{time_total}\n' "${URLS[$k]}$1" >>"$TMP/t$k"
        done
    done
    for k in "${!URLS[@]}"; do
        sort -g "$TMP/t$k" | awk -v n="$N" '{a[NR] = $1 * 1000}
            END {printf " %7.1f / %7.1f", a[int((n + 1) / 2)], a[int(n * 0.95 + 0.999)]}'
    done
}

# The answers of server i and j to route r, equal after 3 tries (ticks
# land between two requests); fleet/gpus's "time" is the request's. Else
# the first GPU or node that differs is printed.
same() {
    local a b
    for _ in 1 2 3; do
        a=$(curl -sf "${URLS[$1]}$3" | sed 's/^{"status":"success","data":{"time":[^,]*,/{/')
        b=$(curl -sf "${URLS[$2]}$3" | sed 's/^{"status":"success","data":{"time":[^,]*,/{/')
        [ "$a" = "$b" ] && [ -n "$a" ] && return 0
        sleep 1
    done
    python3 - "$a" "$b" <<'PY' || true
import json, sys
def rows(t):
    d = json.loads(t)["data"]
    return d["gpus"] if isinstance(d, dict) and "gpus" in d else d
try:
    a, b = rows(sys.argv[1]), rows(sys.argv[2])
    if not isinstance(a, list) or len(a) != len(b):
        print("  %s entries against %s" % (len(a), len(b)))
    else:
        x = next(i for i in range(len(a)) if a[i] != b[i])
        print("  first difference:", {k: (a[x][k], b[x].get(k)) for k in a[x] if a[x][k] != b[x].get(k)},
              a[x].get("node"), a[x].get("gpu"))
except Exception as e:
    print("  (not compared: %s)" % e)
PY
    return 1
}

run_size() { # SPEC
    local spec=$1 VM
    rm -rf "$TMP"/vm "$TMP"/data-*
    URLS=() NAMES=() CMDS=() SPIDS=()
    VM=$(port)
    # Both remote servers write the same series: the cluster keeps one
    # sample per timestamp, or a restarted server's window refill reads
    # duplicate times, fails, and its reads all go to the cluster.
    victoria-metrics -httpListenAddr "127.0.0.1:$VM" -storageDataPath "$TMP/vm" -loggerLevel ERROR \
        -search.latencyOffset 0s -dedup.minScrapeInterval 1ms >"$TMP/vm.log" 2>&1 &
    PIDS+=($!)
    up "http://127.0.0.1:$VM/health"
    local rem=(--storage remote --remote-write-url "http://127.0.0.1:$VM/api/v1/write"
        --remote-query-url "http://127.0.0.1:$VM")
    server embedded "$BIN"
    server remote "$BIN" "${rem[@]}"
    if [ -n "$BEFORE" ]; then
        server embedded-before "$BEFORE"
        server remote-before "$BEFORE" "${rem[@]}"
    fi
    local push=() AP
    for u in "${URLS[@]}"; do push+=(--push "$u/api/v1/write"); done
    AP=$(port)
    "$BIN" agent --listen "127.0.0.1:$AP" --simulate "$spec" --interval 15s "${push[@]}" \
        >"$TMP/agent.log" 2>&1 &
    PIDS+=($!)
    up "http://127.0.0.1:$AP/healthz"
    echo "filling for ${FILL}s: $spec into ${NAMES[*]}" >&2
    sleep "$FILL"
    local gpus series
    gpus=$(curl -sf "${URLS[0]}/api/v1/gpus" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
    series=$(curl -sf "${URLS[0]}/api/v1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["series"])')
    echo
    printf '%s: %s GPUs, %s series; %s requests per route and server; ms, median / p95\n' \
        "$spec" "$gpus" "$series" "$N"
    local hdr r row
    hdr=$(printf '%-20s' route)
    for nm in "${NAMES[@]}"; do hdr+=$(printf ' %17s' "$nm"); done
    echo "$hdr"
    for r in /api/v1/gpus /api/v1/nodes /api/v1/fleet/gpus; do
        row=$(printf '%-20s' "$r")
        row+=$(timings "$r")
        echo "$row"
    done
    if [ -n "$BEFORE" ]; then
        for r in /api/v1/gpus /api/v1/nodes /api/v1/fleet/gpus /api/v1/fleet; do
            same 0 2 "$r" || echo "DIFFERENT: embedded $r"
            same 1 3 "$r" || echo "DIFFERENT: remote $r"
        done
        echo "(answers compared with --before's: embedded and remote)"
    fi
    local i row2
    for i in "${!NAMES[@]}"; do
        kill "${SPIDS[$i]}"
        wait "${SPIDS[$i]}" 2>/dev/null || true
        eval "server ${CMDS[$i]}"
    done
    sleep "$SETTLE"
    echo "first request after a restart, ${SETTLE}s after the health check answered (ms):"
    for r in /api/v1/gpus /api/v1/fleet/gpus; do
        row2=$(printf '%-20s' "$r")
        for u in "${URLS[@]}"; do row2+=$(printf ' %17s' "$(once "$u$r")"); done
        echo "$row2"
    done
    stop_size
}

for spec in $SPECS; do run_size "$spec"; done
