#!/usr/bin/env bash
# bench/agent_tick.sh - what one agent tick costs, next to what one
# node_exporter scrape of the same machine costs, measured in one run.
#
#   bench/agent_tick.sh [SECONDS]     (default 15 s per phase)
#
# Setup: the release build, the stand-in NVML with 8 Hopper GPUs (every
# field: GPM, processes, ECC, events), and at least 500 processes on the
# machine (sleepers are started to reach that). CPU time is read from
# /proc/PID/stat (user + system) of each process before and after.
#   phase 1: the agent ticks every 100 ms, nobody scrapes: CPU per tick.
#   phase 2: /metrics is scraped after every tick: CPU per tick + render.
#   phase 3: node_exporter (Debian's, default collectors) scraped as often:
#            CPU per scrape.
# Prints the ratios and the agent's peak RSS (VmHWM). Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-15}
scripts/deps.sh test
make -s -j"$(nproc)" build/rel/gpulse fakenvml
TMP=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$TMP"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

nproc_now=$(ls -d /proc/[0-9]* | wc -l)
need=$((520 - nproc_now))
if [ $need -gt 0 ]; then
    for _ in $(seq $need); do sleep 3600 & PIDS+=($!); done
fi
echo "processes on the machine: $(ls -d /proc/[0-9]* | wc -l)"

AP=$(port)
GPULSE_FAKENVML_SCENARIO=$PWD/tests/data/nvml/h100x8.scn \
GPULSE_NVML_LIBRARY=$PWD/build/fakenvml/full/libnvidia-ml.so.1 \
    build/rel/gpulse agent --listen 127.0.0.1:$AP --interval 100ms --process-series all \
    --log-level warn 2>"$TMP/agent.log" &
APID=$!; PIDS+=($APID)
for _ in $(seq 50); do curl -sf "127.0.0.1:$AP/healthz" >/dev/null && break; sleep 0.1; done
gpus=$(curl -sf "127.0.0.1:$AP/metrics" | grep -c '^DCGM_FI_DEV_GPU_UTIL{' || true)
series=$(curl -sf "127.0.0.1:$AP/metrics" | grep -vc '^#')
echo "agent: $gpus GPUs, $series series per scrape"
ticks() { curl -sf "127.0.0.1:$AP/metrics" | awk '/^gpulse_agent_ticks_total/ {print $2}'; }

# phase 1: ticks only (two scrapes to read the counter)
t0=$(ticks); c0=$(cpu_ticks $APID); sleep "$SECS"; c1=$(cpu_ticks $APID); t1=$(ticks)
tick_us=$(python3 -c "print(($c1-$c0)/$hz/($t1-$t0)*1e6)")

# phase 2: a scrape after every tick (each renders a new frame)
t0=$(ticks); c0=$(cpu_ticks $APID)
end=$((SECONDS + SECS)); n=0
while [ $SECONDS -lt $end ]; do curl -sf "127.0.0.1:$AP/metrics" >/dev/null; n=$((n + 1)); sleep 0.1; done
c1=$(cpu_ticks $APID); t1=$(ticks)
full_us=$(python3 -c "print(($c1-$c0)/$hz/($t1-$t0)*1e6)")
scrape_us=$(python3 -c "print(($c1-$c0)/$hz/$n*1e6)")
rss_kib=$(awk '/VmHWM/ {print $2}' /proc/$APID/status)

NP=$(port)
prometheus-node-exporter --web.listen-address=127.0.0.1:$NP >"$TMP/ne.log" 2>&1 &
NPID=$!; PIDS+=($NPID)
for _ in $(seq 50); do curl -sf "127.0.0.1:$NP/metrics" >/dev/null && break; sleep 0.1; done
ne_series=$(curl -sf "127.0.0.1:$NP/metrics" | grep -vc '^#')
c0=$(cpu_ticks $NPID); end=$((SECONDS + SECS)); m=0
while [ $SECONDS -lt $end ]; do curl -sf "127.0.0.1:$NP/metrics" >/dev/null; m=$((m + 1)); sleep 0.1; done
c1=$(cpu_ticks $NPID)
ne_us=$(python3 -c "print(($c1-$c0)/$hz/$m*1e6)")

python3 - "$tick_us" "$full_us" "$scrape_us" "$ne_us" "$rss_kib" "$ne_series" <<'PY'
import sys
tick, full, scrape, ne, rss, nes = map(float, sys.argv[1:])
print(f"agent tick (sample only)          {tick:10.0f} us CPU")
print(f"agent tick + /metrics render      {full:10.0f} us CPU")
print(f"node_exporter scrape ({nes:.0f} series) {ne:10.0f} us CPU")
print(f"ratio tick/node_exporter          {tick/ne:10.3f}   (goal <= 0.100)")
print(f"ratio tick+render/node_exporter   {full/ne:10.3f}")
print(f"agent peak RSS                    {rss/1024:10.1f} MiB (goal < 16)")
PY
