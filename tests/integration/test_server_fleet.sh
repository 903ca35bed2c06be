#!/usr/bin/env bash
# `gpulse up --simulate 2x8xH100,1x8xA100`: the agent's normalized series
# are in /metrics (lint-clean, each family once), and GET /api/v1/fleet
# adds up against them: 24 GPUs, 16 H100 and 8 A100, H100-equivalents
# equal to the sum of gpulse_gpu_h100_equivalents, used ones to the sum
# of H100-equivalents x compute ratio (within the drift of one tick),
# and a spend of the table's prices (16 x 3.5 + 8 x 3.0 = 80 USD/h; the
# A100 overridden by gpu_prices to 2.0 in the second half: 72). Then
# /api/v1/cost by node over the last minute prices three nodes, and a
# bad parameter answers 400.
source "$(dirname "$0")/lib.sh"
SERVER_CMD=up start_server --simulate 2x8xH100,1x8xA100 --interval 500ms
wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/fleet' | grep -q '\"gpus\":24,'" ||
    fail "the fleet never showed 24 GPUs: $(curl -s "$SERVER_URL/api/v1/fleet")"
curl -sf "$SERVER_URL/metrics" >"$TMP/m"
check_exposition "$TMP/m"
for f in compute_ratio memory_used_ratio power_ratio clock_ratio effective_tflops h100_equivalents model_known; do
    [ "$(grep -c "^gpulse_gpu_$f{" "$TMP/m")" -eq 24 ] || fail "want 24 gpulse_gpu_$f series"
done
[ "$(grep -c '^gpulse_gpu_peak_tflops{' "$TMP/m")" -eq 48 ] || fail "want bf16 and fp32 peaks of 24 GPUs"
curl -sf "$SERVER_URL/api/v1/fleet" >"$TMP/fleet"
python3 - "$TMP/m" "$TMP/fleet" 80 <<'PY' || fail "the fleet does not add up against /metrics"
import json, re, sys
metrics, fleet, price = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))["data"], float(sys.argv[3])
def series(name):
    out = {}
    for m in re.finditer(r'^%s\{([^}]*)\} (\S+)$' % name, metrics, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        out[(labels["Hostname"], labels["gpu"])] = float(m.group(2))
    return out
h = series("gpulse_gpu_h100_equivalents")
c = series("gpulse_gpu_compute_ratio")
o = fleet["overall"]
assert o["gpus"] == 24 and o["busy"] + o["idle"] + o["unknown_activity"] == 24, o
assert o["unknown_model"] == 0, o
assert abs(o["h100_equivalents"] - sum(h.values())) < 1e-6, (o, sum(h.values()))
used = sum(h[k] * c[k] for k in h)
# /metrics and the store are a tick apart: activity drifts a little
assert abs(o["h100_equivalents_used"] - used) <= 0.25 * 24, (o["h100_equivalents_used"], used)
assert abs(o["cost_per_hour"] - price) < 1e-9, o
assert 0 <= o["wasted_cost_per_hour"] <= o["cost_per_hour"], o
models = {m["model"]: m for m in fleet["models"]}
assert models["H100"]["gpus"] == 16 and models["A100"]["gpus"] == 8, models
assert abs(models["A100"]["h100_equivalents"] - 8 * 312 / 989.4) < 1e-9, models["A100"]
print("  - fleet: %d GPUs, %.2f H100-eq (%.2f used), %.2f USD/h, %.2f wasted" % (
    o["gpus"], o["h100_equivalents"], o["h100_equivalents_used"], o["cost_per_hour"],
    o["wasted_cost_per_hour"]))
PY
# A GPU's held time is its samples x its scrape step: it needs two
# samples in the range (a loaded machine may not have them yet).
cost_ok() {
    curl -sf "$SERVER_URL/api/v1/cost?by=node&start=$(($(date +%s) - 60))" >"$TMP/cost" &&
        python3 - "$TMP/cost" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["data"]
assert d["by"] == "node" and len(d["groups"]) == 3, d
assert all(g["cost"] is not None and g["cost"] > 0 and g["gpus"] == 8 for g in d["groups"]), d
assert abs(sum(g["cost"] for g in d["groups"]) - d["total"]["cost"]) < 1e-9, d
PY
}
wait_until 20 cost_ok || fail "cost by node: $(cat "$TMP/cost")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/cost?by=rack")
[ "$code" = 400 ] || fail "by=rack answered $code, not 400"
note "fleet and cost add up against /metrics"
stop_server

SERVER_CMD=up start_server --simulate 2x8xH100,1x8xA100 --interval 500ms --gpu-prices "A100=2"
wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/fleet' | grep -q '\"gpus\":24,'" ||
    fail "the fleet never showed 24 GPUs"
curl -sf "$SERVER_URL/api/v1/fleet" | grep '"overall":{[^}]*"cost_per_hour":72,' >/dev/null ||
    fail "gpu_prices did not price the A100s at 2: $(curl -s "$SERVER_URL/api/v1/fleet")"
note "gpu_prices overrides the table's price"
stop_server
