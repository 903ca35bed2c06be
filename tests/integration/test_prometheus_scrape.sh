#!/usr/bin/env bash
# Debian's real Prometheus scrapes the agent on 127.0.0.1 and the exact
# values the stand-in NVML scenario set come back through its query API,
# under dcgm-exporter's names and labels.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh test)"
export GPULSE_FAKENVML_SCENARIO=$SCEN/h100x8.scn
GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --interval 200ms

PP=$(free_port)
cat >"$TMP/prom.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: gpulse
    static_configs: [{targets: ["127.0.0.1:$AGENT_PORT"]}]
YML
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
    --web.listen-address="127.0.0.1:$PP" >"$TMP/prom.log" 2>&1 &
PIDS+=($!)
q() { curl -sf "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
wait_until 60 sh -c "curl -sf 'http://127.0.0.1:$PP/api/v1/query?query=count(DCGM_FI_PROF_SM_ACTIVE)' | grep -q '\"8\"'" ||
    { tail -20 "$TMP/prom.log"; fail "Prometheus never saw 8 GPUs with GPM metrics"; }
q 'up{job="gpulse"}' | grep '"1"\]' >/dev/null || fail "target not up"
python3 "$ROOT/tests/integration/compare_values.py" "$SCEN/h100x8.scn" prom "http://127.0.0.1:$PP" ||
    fail "values read back through Prometheus differ from the scenario"
# dcgm-exporter dashboards select by these labels.
q 'DCGM_FI_DEV_GPU_TEMP{gpu="3",modelName="NVIDIA H100 80GB HBM3",device="nvidia3"}' | grep '"Hostname"' >/dev/null ||
    fail "dcgm-exporter labels missing"
note "Prometheus read back the scenario's values"
