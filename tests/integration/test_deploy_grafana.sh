#!/usr/bin/env bash
# test_deploy_grafana.sh - every query of the Grafana dashboards in
# deploy/grafana returns data from Debian's real Prometheus scraping a
# real `gpulse up --simulate` (8 simulated H100s on 2 nodes, their jobs
# stepping), with deploy/prometheus/gpulse-rules.yml loaded so the
# dashboards' recording rules exist too. Template variables are resolved
# through their own label_values() queries, "All" and single values
# (grafana_queries.py). Also: the JSON files are what generate.py writes,
# and every rule of the rules file evaluates without error on real data.
#
# Then the same dashboards, and NVIDIA's dcgm-exporter dashboard's queries
# (tests/data/grafana/dcgm-exporter-dashboard.json), run against gpulse
# server directly as a Prometheus data source (issue 16): gpulse up loads
# the same rules file (rule_files) for the recording rules, and every
# query answers data there too, in Grafana's request shapes.
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh test)"
G=$ROOT/deploy/grafana
DCGM_DASH=$ROOT/tests/data/grafana/dcgm-exporter-dashboard.json
python3 "$G/generate.py" --check || fail "deploy/grafana/*.json are stale"

# A 1 s self-scrape: the Fleet dashboard's server panels rate() its counters.
printf 'server:\n  rule_files: ["%s"]\n  self_scrape_interval: 1s\n' "$ROOT/deploy/prometheus/gpulse-rules.yml" >"$TMP/gpulse.yaml"
SERVER_CMD=up start_server --config "$TMP/gpulse.yaml" --simulate 2x4xH100 --steps-socket "$TMP/steps.sock"
PP=$(free_port)
# honor_labels: the agent's `job` label is the training job (docs/jobs.md).
cat >"$TMP/prom.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 15s}
rule_files: ["$ROOT/deploy/prometheus/gpulse-rules.yml"]
scrape_configs:
  - job_name: gpulse-server
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:$SERVER_PORT"]}]
YML
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
    --web.listen-address="127.0.0.1:$PP" >"$TMP/prom.log" 2>&1 &
PIDS+=($!)
P=http://127.0.0.1:$PP
has() { curl -sf "$P/api/v1/query" --data-urlencode "query=$1" | grep '"result":\[{' >/dev/null; }
wait_until 30 curl -sf "$P/-/ready" || { tail -20 "$TMP/prom.log"; fail "prometheus did not come up"; }
# The simulated jobs load for 9-13 s before they step; the recording
# rules run every 15 s and need two samples of the step counters.
wait_until 90 has 'gpulse:job_rank_step_seconds:robust_z5m' ||
    { tail -5 "$TMP/prom.log"; fail "no step telemetry through the recording rules after 90 s"; }
wait_until 20 has 'rate(gpulse_job_steps_total[20s]) > 0' || fail "the simulated jobs do not step"
note "Prometheus scrapes gpulse up; jobs step; recording rules evaluated"

out=$(python3 "$ROOT/tests/integration/grafana_queries.py" "$P" "$G"/gpulse-*.json) ||
    { echo "$out"; fail "dashboard queries without data (above)"; }
echo "$out" | grep -E '^  (- |  \()'
read -r panels queries combos <<<"$(echo "$out" | tail -1)"

# The check is real: a panel over a series nobody sends fails, by name.
python3 - "$G/gpulse-job.json" "$TMP/broken.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = next(p for p in d["panels"] if p["type"] != "row")
p["title"], p["targets"][0]["expr"] = "Broken panel", 'gpulse_no_such_metric{job=~"$job"}'
json.dump(d, open(sys.argv[2], "w"))
PY
if python3 "$ROOT/tests/integration/grafana_queries.py" "$P" "$TMP/broken.json" >"$TMP/broken.log" 2>&1 ||
    ! grep -q 'FAIL: gpulse / Job (single): Broken panel \[A\]: no data' "$TMP/broken.log"; then
    cat "$TMP/broken.log"; fail "a panel without data was not reported"
fi

# Every rule in the rules file evaluated on these series without error
# (the health group runs every 30 s: wait until each rule has run once).
evaluated() { curl -sf "$P/api/v1/rules" >"$TMP/rules.json" && ! grep -q '"health":"unknown"' "$TMP/rules.json"; }
wait_until 45 evaluated || note "some rules not evaluated after 45 s"
python3 - "$TMP/rules.json" <<'PY' || fail "rules failed to evaluate (above)"
import json, sys
d = json.load(open(sys.argv[1]))["data"]["groups"]
n, bad = 0, []
for g in d:
    for r in g["rules"]:
        n += 1
        if r.get("health") not in ("ok",):
            bad.append(f"{r['name']}: {r.get('health')} {r.get('lastError', '')}")
for b in bad: print("  " + b)
print(f"  - {n} rules evaluated by Prometheus, all healthy" if not bad else "")
sys.exit(1 if bad or n == 0 else 0)
PY
out=$(python3 "$ROOT/tests/integration/grafana_queries.py" "$P" "$DCGM_DASH") ||
    { echo "$out"; fail "dcgm-exporter dashboard queries without data from Prometheus (above)"; }
note "Prometheus: NVIDIA's dcgm-exporter dashboard: $(echo "$out" | tail -1 | awk '{print $2}') queries with data (8 panels, All and single values)"

# gpulse server directly: its recording rules need two evaluations of the
# step counters, as in Prometheus.
S=$SERVER_URL
gp_has() { curl -sf "$S/api/v1/query" --data-urlencode "query=$1" | grep '"result":\[{' >/dev/null; }
wait_until 60 gp_has 'gpulse:job_rank_step_seconds:robust_z5m' ||
    { tail -5 "$SERVER_LOG"; fail "gpulse server: no step telemetry through the recording rules after 60 s"; }
# The Fleet dashboard's server panels read gpulse_server_* families, which
# the server keeps in its own store (self-scrape, job="gpulse-server"):
# every query answers data, none allowed to be empty.
out=$(python3 "$ROOT/tests/integration/grafana_queries.py" "$S" "$G"/gpulse-*.json 2>"$TMP/gp.err") ||
    { echo "$out"; cat "$TMP/gp.err"; fail "gpulse server: dashboard queries without data (above)"; }
echo "$out" | grep -E '^  - '
read -r gp_panels gp_queries gp_combos <<<"$(echo "$out" | tail -1)"
[ "$gp_queries" = "$queries" ] || fail "gpulse server answered $gp_queries dashboard queries, Prometheus $queries"
# The agents push to gpulse server without Prometheus's scrape label
# `instance`: the dashboard's instance variable is empty there, and its
# queries match on instance=~"" as Grafana then sends them.
out=$(python3 "$ROOT/tests/integration/grafana_queries.py" --empty-vars "$S" "$DCGM_DASH" 2>"$TMP/dcgm.err") ||
    { echo "$out"; cat "$TMP/dcgm.err"; fail "gpulse server: dcgm-exporter dashboard queries without data (above)"; }
grep -v '^note: .*variable instance has no values' "$TMP/dcgm.err" && fail "gpulse server: unexpected notes on the dcgm-exporter dashboard (above)"
gpu_vals=$(curl -sf "$S/api/v1/label/gpu/values" --data-urlencode 'match[]=DCGM_FI_DEV_GPU_TEMP' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
[ "$gpu_vals" -ge 4 ] || fail "gpulse server: the dcgm-exporter dashboard's gpu variable has $gpu_vals values"
gp_self=$(curl -sf "$S/api/v1/query" --data-urlencode 'query=count(up{job="gpulse-server"} == 1)' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
[ "$gp_self" = 1 ] || fail "gpulse server: its self-scrape's up{job=\"gpulse-server\"} is not 1"
note "gpulse server: $gp_queries deploy/grafana queries with data, the server panels from its self-scrape; NVIDIA's dcgm-exporter dashboard's $(echo "$out" | tail -1 | awk '{print $2}') queries return data (8 panels; gpu variable: $gpu_vals values)"
echo "ok: $panels panels, $queries queries with data ($combos variable combinations tried), on Prometheus and on gpulse server"
