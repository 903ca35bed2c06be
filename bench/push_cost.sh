#!/usr/bin/env bash
# bench/push_cost.sh - what pushing costs the agent, and how many bytes a
# tick takes in the on-disk buffer (the basis of buffer_max's default).
#
#   bench/push_cost.sh [SECONDS] [PROCESS_SERIES]   (default 15 s, all)
#
# Setup: the release build, `--simulate 1x8xH100` (8 simulated Hopper GPUs
# with their GPU processes) and --process-series all (every process of
# this machine gets series: the stand-in for a busy node's trainers and
# dataloader workers), 100 ms interval, Debian's victoria-metrics on
# 127.0.0.1 as the target. CPU time is read from /proc/PID/stat.
#   phase 1: no push, nobody scrapes: CPU per tick (the sampling alone);
#   phase 2: --push to VictoriaMetrics, memory queue: CPU per tick; the
#            difference is the push: walk + encode + send;
#   phase 3: the same with --buffer-dir (each tick written and fdatasync'd);
#   phase 4: the target down, --buffer-dir: bytes per tick on disk.
# Prints the per-tick costs, the agent's own encode timing, bytes per
# tick and what one hour at a 1 s interval takes. Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-15}
PS=${2:-all}
command -v victoria-metrics >/dev/null || { echo "needs victoria-metrics (scripts/deps.sh test)"; exit 1; }
make -s -j"$(nproc)" build/rel/gpulse
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    kill "${PIDS[@]}" 2>/dev/null || true
    wait "${PIDS[@]}" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

VP=$(port)
victoria-metrics -httpListenAddr "127.0.0.1:$VP" -storageDataPath "$TMP/vm" >"$TMP/vm.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "127.0.0.1:$VP/health" >/dev/null && break; sleep 0.1; done

# measure ARGS...: sets us (CPU per tick), enc_us (encode of the last tick), series.
measure() {
    AP=$(port)
    build/rel/gpulse agent --listen "127.0.0.1:$AP" --simulate 1x8xH100 --process-series "$PS" \
        --interval 100ms --log-level error "$@" 2>"$TMP/agent.log" &
    APID=$!; PIDS+=($APID)
    for _ in $(seq 50); do curl -sf "127.0.0.1:$AP/healthz" >/dev/null && break; sleep 0.1; done
    sleep 1
    m() { curl -sf "127.0.0.1:$AP/metrics"; }
    val() { m | awk -v n="$1" 'index($0, n) == 1 {print $NF; exit}'; }
    series=$(m | grep -vc '^#')
    local t0 t1 c0 c1
    t0=$(val gpulse_agent_ticks_total); c0=$(cpu_ticks $APID); sleep "$SECS"
    c1=$(cpu_ticks $APID); t1=$(val gpulse_agent_ticks_total)
    ticks=$((${t1%.*} - ${t0%.*}))
    us=$(python3 -c "print(($c1-$c0)/$hz/$ticks*1e6)")
    local enc
    enc=$(val gpulse_push_encode_duration_seconds || true)
    enc_us=$(python3 -c "print(float('${enc:-0}')*1e6)")
    kill $APID; wait $APID 2>/dev/null || true
}

measure
base=$us
measure --push "http://127.0.0.1:$VP/api/v1/write"
mem=$us mem_enc=$enc_us
measure --push "http://127.0.0.1:$VP/api/v1/write" --buffer-dir "$TMP/buf1"
disk=$us
DEAD=$(port)
rm -rf "$TMP/buf2"
AP=$(port)
build/rel/gpulse agent --listen "127.0.0.1:$AP" --simulate 1x8xH100 --process-series "$PS" \
    --interval 100ms --log-level error --push "http://127.0.0.1:$DEAD/api/v1/write" \
    --buffer-dir "$TMP/buf2" 2>"$TMP/agent.log" &
APID=$!; PIDS+=($APID)
sleep "$SECS"
kill $APID; wait $APID 2>/dev/null || true
read -r recs bytes < <(python3 - "$TMP/buf2" <<'PY'
import os, struct, sys
recs = size = 0
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.endswith(".seg"):
            data = open(os.path.join(root, f), "rb").read()
            pos = 0
            while pos + 9 <= len(data):
                n = struct.unpack_from("<I", data, pos)[0]
                if data[pos + 8] != 1 or pos + 9 + n > len(data):
                    break
                recs += 1; size += 9 + n; pos += 9 + n
print(recs, size)
PY
)
python3 - "$base" "$mem" "$disk" "$mem_enc" "$series" "$recs" "$bytes" <<'PY'
import sys
base, mem, disk, enc, series, recs, size = map(float, sys.argv[1:])
per = size / recs
print(f"series per tick                           {series:9.0f}")
print(f"agent tick, no push                       {base:9.0f} us CPU")
print(f"agent tick + push (memory queue)          {mem:9.0f} us CPU   push: {mem-base:.0f} us/tick "
      f"(encode alone {enc:.0f} us)")
print(f"agent tick + push (--buffer-dir)          {disk:9.0f} us CPU   push: {disk-base:.0f} us/tick")
print(f"buffer: {recs:.0f} ticks, {per/1024:.1f} KiB per tick on disk; one hour at 1 s: "
      f"{per*3600/2**20:.0f} MiB; 256 MiB (the default) holds {256*2**20/per/3600:.1f} h")
PY
