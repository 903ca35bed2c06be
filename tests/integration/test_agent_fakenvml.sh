#!/usr/bin/env bash
# The agent binary loads the stand-in libnvidia-ml.so.1 through its normal
# dlopen path (GPULSE_NVML_LIBRARY) and serves exactly the scenario's
# values with dcgm-exporter's names; an old driver's library, a lost card
# and failing calls degrade to absent readings, never a crash.
source "$(dirname "$0")/lib.sh"

# 8 Hopper GPUs, every field, GPM.
export GPULSE_FAKENVML_SCENARIO=$SCEN/h100x8.scn
t0=$(date +%s%N)
GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --interval 100ms
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
note "agent answered /healthz ${ms} ms after exec (ASan build)"
[ $ms -lt 1000 ] || fail "startup took ${ms} ms, want well under a second"
sleep 0.4  # GPM needs two samples
metrics >"$TMP/h100"
check_exposition "$TMP/h100"
python3 "$ROOT/tests/integration/compare_values.py" "$SCEN/h100x8.scn" expo "$TMP/h100" ||
    fail "served values differ from the scenario"
[ "$(grep -c '^DCGM_FI_DEV_GPU_UTIL{' "$TMP/h100")" -eq 8 ] || fail "want 8 GPUs"
grep -q '^gpulse_source_up{source="nvml"} 1' "$TMP/h100" || fail "nvml source not up"
grep -q 'DCGM_FI_DRIVER_VERSION="550.54.15"' "$TMP/h100" || fail "driver version label"
curl -sf "http://127.0.0.1:$AGENT_PORT/api/v1/snapshot" >"$TMP/snap.json"
python3 - "$TMP/snap.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["gpus"]) == 8, len(d["gpus"])
g = d["gpus"][0]
assert g["model"] == "NVIDIA H100 80GB HBM3", g["model"]
assert g["metrics"]["DCGM_FI_DEV_GPU_UTIL"] == 10, g["metrics"]
assert d["sources"]["nvml"]["active"] is True
PY
stop_agent

# The old driver: no _v2/_v3/GPM symbols. Fallbacks, no PROF_* series.
export GPULSE_FAKENVML_SCENARIO=$SCEN/old_driver.scn
GPULSE_NVML_LIBRARY=$FAKE_OLD start_agent --interval 100ms
sleep 0.4
metrics >"$TMP/old"
check_exposition "$TMP/old"
grep -q '^DCGM_FI_DEV_FB_USED{' "$TMP/old" || fail "old driver: no memory (v1 fallback)"
grep -q '^DCGM_FI_PROF_' "$TMP/old" && fail "old driver: PROF_* series without GPM"
stop_agent

# A card lost mid-run: reported once, the others go on.
export GPULSE_FAKENVML_SCENARIO=$SCEN/lost.scn
GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --interval 100ms
wait_until 10 sh -c "curl -sf http://127.0.0.1:$AGENT_PORT/metrics | grep -q '^gpulse_gpu_lost{.*} 1'" ||
    fail "lost GPU never reported"
metrics >"$TMP/lost"
check_exposition "$TMP/lost"
ngpu=$(grep -c '^gpulse_gpu_lost{' "$TMP/lost")
nlive=$(grep -c '^DCGM_FI_DEV_GPU_TEMP{' "$TMP/lost")
[ "$nlive" -eq $((ngpu - 1)) ] || fail "want $((ngpu - 1)) live GPUs after the loss, got $nlive"
sleep 0.5
[ "$(grep -c 'GPU is lost' "$AGENT_LOG")" -eq 1 ] || { cat "$AGENT_LOG"; fail "want one 'GPU is lost' log line"; }
stop_agent
note "stand-in NVML ok"
