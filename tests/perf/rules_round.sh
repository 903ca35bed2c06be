#!/usr/bin/env bash
# tests/perf/rules_round.sh - the CPU of one evaluation round of
# deploy/prometheus/gpulse-rules.yml's 39 expressions (instant queries
# over HTTP, as bench/promql.sh's rules figure), on one gpulse build
# alone, at the issue's size in under a minute: bench/fleetgen's 20
# dcgm families for NODES x 8 GPUs, MINUTES (default 20: the rules reach
# back 15 minutes) of 1 s samples, ingested into the head, or with
# BLOCKS=1 loaded compacted into a block (bench/storetool load). Prints
# the CPU ms of a round (/proc/PID/stat over 10 rounds) three times, then
# the medians of sum by (Hostname) (rate(...[5m])) and avg by (Hostname)
# (...) over the data (1 h at 15 s, or what there is). With PERF=FILE,
# records 10 more rounds with perf record -g into FILE.
#
#   tests/perf/rules_round.sh [BIN [NODES]]   (default build/rel/gpulse, 64 nodes)
#
# Not part of the tests (numbers, not checks). Compare builds by running
# each in turn, alternating, at least twice: the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/rel/gpulse} NODES=${2:-64}
CONNECTIONS=4 RUNS=5
make -s -j2 bench-tools
source bench/lib.sh # TMP, PIDS and the cleanup trap
END=$(date +%s) MINUTES=${MINUTES:-20}
GROUP=$(( (NODES + 7) / 8 )); TS=$(( (1536 + GROUP * 8 * 20 - 1) / (GROUP * 8 * 20) ))
build/rel/fleetgen -F 20 -n "$NODES" -m "$MINUTES" -e "${END}000" -G "$GROUP" -T "$TS" \
    -o "$TMP/fleet.rw" 2>/dev/null
mkdir -p "$TMP/rules"
python3 - "$TMP/rules" <<'PY'
import sys, yaml
doc = yaml.safe_load(open("deploy/prometheus/gpulse-rules.yml"))
n = 0
for g in doc["groups"]:
    for r in g["rules"]:
        n += 1
        open(f"{sys.argv[1]}/{n:02d}.promql", "w").write(r["expr"].strip() + "\n")
PY
if [ "${BLOCKS:-0}" = 1 ]; then # the last complete 2-hour window, as bench/promql.sh
    CEND=$(( END / 7200 * 7200 ))
    build/rel/storetool load "$TMP/g" "$TMP/fleet.rw" $(( (END - CEND) * 1000 )) >/dev/null
    END=$CEND
fi
GP=$(port)
"$BIN" server --data "$TMP/g" --listen "127.0.0.1:$GP" --log-level warn >>"$TMP/gpulse.log" 2>&1 &
GPID=$!; PIDS+=($GPID)
wait_http "http://127.0.0.1:$GP/api/v1/health" 120
[ "${BLOCKS:-0}" = 1 ] || ingest GP "http://127.0.0.1:$GP/api/v1/write" $GPID >/dev/null
round() {
    for f in "$TMP"/rules/*.promql; do
        curl -s -G -o /dev/null "http://127.0.0.1:$GP/api/v1/query" --data-urlencode "query@$f" -d time=$END
    done
}
round # warm-up
for _ in 1 2 3; do
    c0=$(cpu_ticks $GPID)
    for _ in $(seq 10); do round; done
    c1=$(cpu_ticks $GPID)
    echo "rules round CPU ms: $(python3 -c "print(($c1 - $c0) / $hz * 1000 / 10)")"
done
r=(-d start=$((END - 3600)) -d end=$END -d step=15)
latency RATE "http://127.0.0.1:$GP" /api/v1/query_range "$NODES" \
    --data-urlencode "query=sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))" "${r[@]}"
latency AVG "http://127.0.0.1:$GP" /api/v1/query_range "$NODES" \
    --data-urlencode "query=avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)" "${r[@]}"
echo "range queries, median ms: rate $RATE, avg $AVG"
if [ -n "${PERF:-}" ]; then
    perf record -g -o "$PERF" -p $GPID 2>/dev/null &
    PP=$!
    sleep 0.5
    for _ in $(seq 10); do round; done
    kill -INT $PP
    wait $PP || true
fi
