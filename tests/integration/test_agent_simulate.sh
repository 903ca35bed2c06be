#!/usr/bin/env bash
# `gpulse agent --simulate`: a mixed fleet served with simulated="true",
# every GPU once, lint-clean, deterministic for a seed, values moving.
source "$(dirname "$0")/lib.sh"
start_agent --simulate 2x8xH100,1x4xMI300X --interval 100ms --seed 7
sleep 0.5
metrics >"$TMP/m1"
check_exposition "$TMP/m1"
n=$(grep -c '^DCGM_FI_DEV_GPU_UTIL{' "$TMP/m1")
[ "$n" -eq 20 ] || fail "want 20 GPUs, got $n"
[ "$(grep '^DCGM_FI_DEV_GPU_UTIL{' "$TMP/m1" | grep -c 'simulated="true"')" -eq 20 ] || fail "a simulated series lacks simulated=\"true\""
for node in sim-node-0 sim-node-1 sim-node-2; do
    grep -q "Hostname=\"$node\"" "$TMP/m1" || fail "node $node missing"
done
# GPM-only fields on the Hopper nodes, not on the AMD one
[ "$(grep '^DCGM_FI_PROF_SM_ACTIVE{' "$TMP/m1" | grep -c 'vendor="amd"' || true)" -eq 0 ] || fail "PROF_* on an AMD GPU"
[ "$(grep -c '^DCGM_FI_PROF_SM_ACTIVE{' "$TMP/m1")" -eq 16 ] || fail "want PROF_SM_ACTIVE on 16 H100s"
grep -q 'reason="hw_thermal_slowdown"} 1' "$TMP/m1" || fail "no throttled straggler in the fleet"
sleep 1
metrics >"$TMP/m2"
e1=$(awk '/^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"/ {print $NF; exit}' "$TMP/m1")
e2=$(awk '/^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"/ {print $NF; exit}' "$TMP/m2")
python3 -c "import sys; sys.exit(0 if float('$e2') > float('$e1') else 1)" || fail "energy counter did not grow ($e1 -> $e2)"
uuid=$(grep -m1 -o 'UUID="GPU-[^"]*"' "$TMP/m1")
stop_agent
# Same seed, same identities.
start_agent --simulate 2x8xH100,1x4xMI300X --interval 100ms --seed 7
metrics >"$TMP/m3"; grep -q "$uuid" "$TMP/m3" || fail "seed 7 gave other UUIDs on a second run"
stop_agent
# dcgm-exporter's newer label spelling, by config switch.
start_agent --simulate 1x2xA100 --hostname-label hostname
metrics >"$TMP/m4"
grep -q '^DCGM_FI_DEV_GPU_UTIL{.*,hostname="sim-node-0",' "$TMP/m4" || fail "hostname_label: hostname not applied"
grep -q 'Hostname=' "$TMP/m4" && fail "Hostname label still present"
stop_agent
note "simulated fleet ok"
