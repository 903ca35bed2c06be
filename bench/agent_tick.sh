#!/usr/bin/env bash
# bench/agent_tick.sh - what one agent tick costs, next to what one
# node_exporter scrape of the same machine costs, measured in one run.
#
#   bench/agent_tick.sh [SECONDS]     (default 15 s per phase)
#
# Setup: the release build, the stand-in NVML with 8 Hopper GPUs (every
# field: GPM, processes, ECC, events), and at least 500 processes on the
# machine (sleepers are started to reach that). The scenario's GPU
# processes are mapped onto real "trainer" processes, each with 4 child
# "dataloader workers", so the agent follows real process trees. CPU time
# is read from /proc/PID/stat (user + system) before and after.
#   phase 1: the agent ticks every 100 ms, nobody scrapes: CPU per tick.
#   phase 2: /metrics is scraped after every tick: CPU per tick + render.
#   phase 3: the same with --process-series all (every process read and
#            served every tick), for comparison.
#   phase 4: node_exporter (Debian's, default collectors) scraped as often:
#            CPU per scrape.
# Prints the ratios and the agent's peak RSS (VmHWM). Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-15}
scripts/deps.sh test
make -s -j"$(nproc)" build/rel/gpulse fakenvml
TMP=$(mktemp -d)
PIDS=()
trainers=()
cleanup() {
    for p in "${trainers[@]}"; do pkill -P "$p" 2>/dev/null || true; done
    kill "${PIDS[@]}" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

nproc_now=$(ls -d /proc/[0-9]* | wc -l)
need=$((520 - nproc_now))
if [ $need -gt 0 ]; then
    for _ in $(seq $need); do sleep 3600 >/dev/null 2>&1 & PIDS+=($!); done
fi
# 8 trainers with 4 workers each stand for the scenario's GPU processes.
for _ in $(seq 8); do
    bash -c 'for i in 1 2 3 4; do sleep 3600 & done; wait' >/dev/null 2>&1 &
    trainers+=($!); PIDS+=($!)
done
python3 - "$PWD/tests/data/nvml/h100x8.scn" "$TMP/bench.scn" "${trainers[@]}" <<'PY'
import sys
src, dst, pids = sys.argv[1], sys.argv[2], sys.argv[3:]
out, i = [], 0
for line in open(src):
    w = line.split()
    if w[:1] == ["proc"] and i < len(pids):
        w[1] = pids[i]; i += 1
        line = "  " + " ".join(w) + "\n"
    out.append(line)
open(dst, "w").writelines(out)
PY
sleep 0.5
echo "processes on the machine: $(ls -d /proc/[0-9]* | wc -l); GPU process trees: 8 x (1 + 4)"

# measure_agent ARGS...: sets tick_us (sampling only), full_us (tick +
# render of a scrape after every tick), series, rss_kib.
measure_agent() {
    AP=$(port)
    GPULSE_FAKENVML_SCENARIO=$TMP/bench.scn \
    GPULSE_NVML_LIBRARY=$PWD/build/fakenvml/full/libnvidia-ml.so.1 \
        build/rel/gpulse agent --listen 127.0.0.1:$AP --interval 100ms --log-level warn "$@" \
        2>"$TMP/agent.log" &
    APID=$!; PIDS+=($APID)
    for _ in $(seq 50); do curl -sf "127.0.0.1:$AP/healthz" >/dev/null && break; sleep 0.1; done
    sleep 1
    curl -sf "127.0.0.1:$AP/metrics" >"$TMP/m"
    gpus=$(grep -c '^DCGM_FI_DEV_GPU_UTIL{' "$TMP/m" || true)
    series=$(grep -vc '^#' "$TMP/m")
    procs=$(grep -c '^gpulse_process_info{' "$TMP/m" || true)
    ticks() { curl -sf "127.0.0.1:$AP/metrics" | awk '/^gpulse_agent_ticks_total/ {print $2}'; }
    local t0 t1 c0 c1 end n=0
    t0=$(ticks); c0=$(cpu_ticks $APID); sleep "$SECS"; c1=$(cpu_ticks $APID); t1=$(ticks)
    tick_us=$(python3 -c "print(($c1-$c0)/$hz/($t1-$t0)*1e6)")
    t0=$(ticks); c0=$(cpu_ticks $APID); end=$((SECONDS + SECS))
    while [ $SECONDS -lt $end ]; do curl -sf "127.0.0.1:$AP/metrics" >/dev/null; n=$((n + 1)); sleep 0.1; done
    c1=$(cpu_ticks $APID); t1=$(ticks)
    full_us=$(python3 -c "print(($c1-$c0)/$hz/($t1-$t0)*1e6)")
    rss_kib=$(awk '/VmHWM/ {print $2}' /proc/$APID/status)
    kill $APID; wait $APID 2>/dev/null || true
    echo "agent $*: $gpus GPUs, $procs processes with series, $series series per scrape"
}
measure_agent
tick_us_gpu=$tick_us full_us_gpu=$full_us rss_gpu=$rss_kib
measure_agent --process-series all
tick_us_all=$tick_us full_us_all=$full_us rss_all=$rss_kib

NP=$(port)
prometheus-node-exporter --web.listen-address=127.0.0.1:$NP >"$TMP/ne.log" 2>&1 &
NPID=$!; PIDS+=($NPID)
for _ in $(seq 50); do curl -sf "127.0.0.1:$NP/metrics" >/dev/null && break; sleep 0.1; done
ne_series=$(curl -sf "127.0.0.1:$NP/metrics" | grep -vc '^#')
c0=$(cpu_ticks $NPID); end=$((SECONDS + SECS)); m=0
while [ $SECONDS -lt $end ]; do curl -sf "127.0.0.1:$NP/metrics" >/dev/null; m=$((m + 1)); sleep 0.1; done
c1=$(cpu_ticks $NPID)
ne_us=$(python3 -c "print(($c1-$c0)/$hz/$m*1e6)")

python3 - "$tick_us_gpu" "$full_us_gpu" "$tick_us_all" "$full_us_all" "$ne_us" "$ne_series" \
    "$rss_gpu" "$rss_all" <<'PY'
import sys
tg, fg, ta, fa, ne, nes, rg, ra = map(float, sys.argv[1:])
print(f"node_exporter scrape ({nes:.0f} series)       {ne:9.0f} us CPU")
print(f"agent tick, default (GPU trees)          {tg:9.0f} us CPU   ratio {tg/ne:.3f} (goal <= 0.100)")
print(f"agent tick + render, default             {fg:9.0f} us CPU   ratio {fg/ne:.3f}")
print(f"agent tick, --process-series all         {ta:9.0f} us CPU   ratio {ta/ne:.3f}")
print(f"agent tick + render, all                 {fa:9.0f} us CPU   ratio {fa/ne:.3f}")
print(f"agent peak RSS: default {rg/1024:.1f} MiB, all {ra/1024:.1f} MiB (goal < 16)")
PY
