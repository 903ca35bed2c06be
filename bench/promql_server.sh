#!/usr/bin/env bash
# promql_server.sh - what one PromQL range query costs gpulse server, for
# two builds alternated on the same data: the server's CPU per query
# (utime + stime from /proc/PID/stat over QUERIES queries) and curl's
# median time_total, ROUNDS rounds of each build, one server at a time on
# the same data directory (the head, as ingested). bench/promql.sh puts
# the same query beside VictoriaMetrics and Prometheus; this one isolates
# a change's effect on a shared machine, where the CPU per query is the
# steadier figure. Also checks that both builds answer byte for byte the
# same. With --blocks, the data is instead the compacted copy that
# bench/promql.sh times as "gpulse blocks" (bench/storetool load: the
# same samples moved into the last complete 2-hour window, in blocks),
# and the query's hour ends where they do. Not part of the tests.
#
# usage: bench/promql_server.sh [--before BIN] [--bin BIN] [--nodes N] [--minutes M]
#                               [--queries Q] [--rounds R] [--query PROMQL] [--blocks]
#   defaults: build/rel/gpulse alone, 64 nodes (512 GPUs, bench/fleetgen
#   -F 20), 66 minutes ending now, 200 queries, 3 rounds,
#   avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL) over the last hour at 15 s,
#   on the head.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/rel/gpulse BEFORE= NODES=64 MINUTES=66 QUERIES=200 ROUNDS=3 BLOCKS=0
QUERY='avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)'
while [ $# -gt 0 ]; do
    case $1 in
    --bin) BIN=$2; shift 2 ;;
    --before) BEFORE=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --minutes) MINUTES=$2; shift 2 ;;
    --queries) QUERIES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --query) QUERY=$2; shift 2 ;;
    --blocks) BLOCKS=1; shift ;;
    *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ "$MINUTES" -ge 61 ] || { echo "bench: --minutes must be at least 61 (the query's hour and its lookback)" >&2; exit 2; }
make -s -j2 build/rel/gpulse bench-tools
CONNECTIONS=8
source bench/lib.sh # TMP, PIDS, start_gpulse, ingest, cpu_ticks

END=$(date +%s) FAMILIES=20
GROUP=$(( (NODES + 7) / 8 ))
TS=$(( (1536 + GROUP * 8 * FAMILIES - 1) / (GROUP * 8 * FAMILIES) ))
build/rel/fleetgen -F "$FAMILIES" -n "$NODES" -m "$MINUTES" -e "${END}000" -G "$GROUP" -T "$TS" \
    -o "$TMP/fleet.rw" 2>"$TMP/gen.log"
cat "$TMP/gen.log"
if [ "$BLOCKS" = 1 ]; then
    CEND=$(( END / 7200 * 7200 )) # as bench/promql.sh's compacted copy
    echo "compacted copy (storetool load): $(build/rel/storetool load "$TMP/data" "$TMP/fleet.rw" $(( (END - CEND) * 1000 )))"
    END=$CEND
else
    start_gpulse "$TMP/data" "$BIN"
    ingest GP "http://127.0.0.1:$GP/api/v1/write" "$GPID"
    stop "$GPID"
fi
rm -f "$TMP/fleet.rw"

# one BIN NAME: a server on the data, QUERIES queries after 3 warm-ups;
# prints its line and keeps the last answer in $TMP/NAME.json.
one() {
    start_gpulse "$TMP/data" "$1"
    local url="http://127.0.0.1:$GP/api/v1/query_range" c0 c1
    local q=(--data-urlencode "query=$QUERY" -d start=$((END - 3600)) -d end="$END" -d step=15)
    for _ in 1 2 3; do curl -sf -G -o "$TMP/$2.json" "$url" "${q[@]}"; done
    c0=$(cpu_ticks "$GPID")
    for _ in $(seq "$QUERIES"); do
        curl -sf -G -o /dev/null -w '%{time_total}\n' "$url" "${q[@]}"
    done >"$TMP/times"
    c1=$(cpu_ticks "$GPID")
    stop "$GPID"
    printf '  %-8s server CPU %6.2f ms/query, curl median %6.2f ms\n' "$2" \
        "$(python3 -c "print(($c1 - $c0) / $hz * 1000 / $QUERIES)")" "$(median_ms <"$TMP/times")"
}
echo "$NODES nodes x 8 GPUs, $MINUTES min at 1 s, $([ "$BLOCKS" = 1 ] && echo blocks || echo head); $QUERIES queries a round: $QUERY"
for r in $(seq "$ROUNDS"); do
    echo "round $r (load average $(cut -d' ' -f1 /proc/loadavg))"
    [ -z "$BEFORE" ] || one "$BEFORE" before
    one "$BIN" this
done
if [ -n "$BEFORE" ]; then
    cmp -s "$TMP/before.json" "$TMP/this.json" && echo "answers: byte for byte the same" ||
        { echo "answers differ" >&2; exit 1; }
fi
