#!/usr/bin/env bash
# storage_pushdown.sh - what a read older than the local window costs in
# storage: remote (docs/storage.md "Old reads: aggregates, not raw
# samples"): --hours of --gpus GPUs (4 families a GPU, one sample every
# --every seconds) imported into VictoriaMetrics (Debian's) ending 30 min
# ago, then range queries of gpulse's form over them, as the dashboard's
# history and a job's charts ask: per-GPU avg at a 1 m step (rollups),
# the fleet's max at 5 m, and every series at 2 m; each --n times (median
# of curl's total time), with the bytes of JSON the server read from the
# cluster for it (gpulse_storage_remote_answer_bytes_total; n/a on a build
# without it) and the raw samples among them
# (gpulse_storage_remote_samples_read_total). --base BIN
# runs the same queries on a second build (e.g. one before the pushdown,
# which moves the raw samples) on the same cluster, side by side. --job
# instead imports one job of --gpus GPUs over the --hours ending a minute
# ago (tests/integration/longjob_feed.py: 5 DCGM families a GPU and the
# ranks' own series) and asks for its document, without and with
# series=1 (the report's). --funnel imports a fleet's activity over the
# --hours ending a minute ago (tests/integration/funnel_feed.py: jobs of
# 3 GPUs starting and ending apart, GPUs no job holds, their processes)
# and asks for the fleet funnel from 1-minute rollups (resolution=1m,
# what ranges over 6 h and the weekly report read); --cost the same
# fleet's /api/v1/cost by job (read raw: a median gap is no aggregate).
# Not part of the test suite.
#
# usage: bench/storage_pushdown.sh [--job|--funnel|--cost] [--gpus N] [--hours H] [--every S] [--n N] [--bin PATH] [--base PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
GPUS=64
HOURS=6
EVERY=5
N=5
BIN=build/rel/gpulse
BASE=
JOB=0
FLEET=
while [ $# -gt 0 ]; do
    case $1 in
    --job) JOB=1; shift ;;
    --funnel | --cost) JOB=1; FLEET=${1#--}; shift ;;
    --gpus) GPUS=$2; shift 2 ;;
    --hours) HOURS=$2; shift 2 ;;
    --every) EVERY=$2; shift 2 ;;
    --n) N=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    *) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
[ "$BIN" != build/rel/gpulse ] || make -s build/rel/gpulse
TMP=$(mktemp -d /tmp/gpulse-bench-XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up() { for _ in $(seq 600); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "no answer from $1" >&2; exit 1; }

VP=$(port)
VM=http://127.0.0.1:$VP
victoria-metrics -httpListenAddr "127.0.0.1:$VP" -storageDataPath "$TMP/vm" -loggerLevel ERROR \
    -search.latencyOffset 0s >"$TMP/vm.log" 2>&1 &
PIDS+=($!)
up "$VM/health"
END=$(($(date +%s) / 60 * 60 - 1800))
START=$((END - HOURS * 3600))
if [ -n "$FLEET" ]; then
    END=$(($(date +%s) / 60 * 60 - 60))
    START=$((END - HOURS * 3600))
    NS=$(python3 tests/integration/funnel_feed.py "$END" "$HOURS" "$GPUS" "$EVERY" "$VM")
    echo "imported $NS activity samples: $GPUS GPUs (and their processes), every $EVERY s, $HOURS h ending a minute ago"
    seen() {
        curl -sf "$VM/internal/force_flush" >/dev/null || true
        [ "$(curl -sf "$VM/api/v1/query" -d "time=$((END + 1))" --data-urlencode \
            "query=sum(count_over_time({__name__=~\"DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_GPU_UTIL\"}[$((HOURS + 1))h]))" |
            python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')" = "$NS" ]
    }
    if [ "$FLEET" = funnel ]; then
        QUERIES=("funnel, 1m rollups|/api/v1/fleet/funnel?start=$START&end=$END&resolution=1m")
    else
        QUERIES=("cost by job (raw)|/api/v1/cost?start=$START&end=$END")
    fi
elif [ "$JOB" = 1 ]; then
    END=$(($(date +%s) / 60 * 60 - 60))
    NS=$(python3 tests/integration/longjob_feed.py "$END" "$HOURS" "$GPUS" "$EVERY" 8 "$VM")
    echo "imported $NS samples: one job of $GPUS GPUs, every $EVERY s, $HOURS h ending a minute ago"
    seen() {
        curl -sf "$VM/internal/force_flush" >/dev/null || true
        [ "$(curl -sf "$VM/api/v1/query" --data-urlencode 'query=sum(count_over_time({job="long-1"}[1d]))' \
            -d "time=$((END + 1))" |
            python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')" = "$NS" ]
    }
    QUERIES=("job document|/api/v1/jobs/long-1" "series=1 (report)|/api/v1/jobs/long-1?series=1")
else
python3 - "$VM" "$START" "$END" "$GPUS" "$EVERY" <<'EOF'
import sys, urllib.request
vm, start, end, gpus, every = sys.argv[1], *map(int, sys.argv[2:])
fams = ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"]
n = 0
for g in range(gpus):
    lines = []
    host, gpu = "node-%d" % (g // 8), g % 8
    for t in range(start - 600, end, every):
        k = (t // every + g) % 97
        vals = (40 + k * 0.1, 350 + k * 1.5, k % 101, 20000 + k * 64)
        for f, v in zip(fams, vals):
            lines.append('%s{Hostname="%s",gpu="%d"} %s %d' % (f, host, gpu, round(v, 3), t * 1000))
    n += len(lines)
    urllib.request.urlopen(vm + "/api/v1/import/prometheus", data="\n".join(lines).encode()).read()
print("imported %d samples: %d GPUs x 4 families, every %d s, %d h ending 30 min ago" % (n, gpus, every, (end - start) // 3600))
EOF
seen() {
    [ "$(curl -sf "$VM/api/v1/query" --data-urlencode 'query=count(last_over_time(DCGM_FI_DEV_GPU_TEMP[7h]))' |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')" = "$GPUS" ]
}
QUERIES=(
    "per-GPU avg, 1m|DCGM_FI_DEV_GPU_TEMP|agg=avg&by=Hostname,gpu&step=60"
    "fleet max, 5m|DCGM_FI_DEV_POWER_USAGE|agg=max&step=300"
    "every series, 2m|{Hostname=~\"node-.*\"}|step=120"
)
fi
for _ in $(seq 100); do seen && break; sleep 0.3; done
counter() { curl -sf "$1/metrics" | awk -v n="$2" '$1 == n {print $2}'; }
run() { # NAME BIN
    local p url
    p=$(port)
    url=http://127.0.0.1:$p
    "$2" server --listen "127.0.0.1:$p" --data "$TMP/data-$1" --log-level warn --self-scrape-interval 0s \
        --storage remote --remote-write-url "$VM/api/v1/write" --remote-query-url "$VM" >"$TMP/$1.log" 2>&1 &
    PIDS+=($!)
    up "$url/api/v1/health"
    [ "$JOB" = 0 ] || [ -n "$FLEET" ] || up "$url/api/v1/jobs/long-1"
    for q in "${QUERIES[@]}"; do
        local label=${q%%|*} rest=${q#*|} times=() b0 b1 s0 s1
        local match=${rest%%|*} args=${rest#*|}
        b0=$(counter "$url" gpulse_storage_remote_answer_bytes_total)
        s0=$(counter "$url" gpulse_storage_remote_samples_read_total)
        for _ in $(seq "$N"); do
            if [ "$JOB" = 1 ]; then
                times+=("$(curl -s -o "$TMP/answer.json" -w '%{time_total}' "$url$rest")")
                continue
            fi
            times+=("$(curl -s -o "$TMP/answer.json" -w '%{time_total}' -G "$url/api/v1/query_range" \
                --data-urlencode "match=$match" -d "start=$START&end=$END&$args")")
        done
        b1=$(counter "$url" gpulse_storage_remote_answer_bytes_total)
        s1=$(counter "$url" gpulse_storage_remote_samples_read_total)
        grep '"status":"success"' "$TMP/answer.json" >/dev/null || { head -c 300 "$TMP/answer.json"; exit 1; }
        printf '%-5s %-17s %8.1f ms  %11s JSON bytes  %9s raw samples read, per query\n' "$1" "$label" \
            "$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)] * 1000}')" \
            "$(python3 -c "print(int((${b1:-0} - ${b0:-0}) / $N) if '$b1' else 'n/a')")" \
            "$(python3 -c "print(int((${s1:-0} - ${s0:-0}) / $N))")"
    done
}
run new "$BIN"
[ -z "$BASE" ] || run base "$BASE"
