#!/usr/bin/env bash
# docs/migrate-from-dcgm-exporter.md, run: Debian's Prometheus scrapes a
# simulated gpulse agent (H100s, so the GPM DCGM_FI_PROF_* series exist)
# with the page's own scrape configuration (only its targets and interval
# changed), loads the page's alert rules (after `promtool check rules`),
# and then
#   - every query of the page's promql block returns series,
#   - every rule evaluates without error,
#   - the training job's `job` label survives the scrape (honor_labels),
#     as the page promises.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh test)"
PY=/usr/bin/python3 # Debian's, with python3-yaml
PAGE=$ROOT/docs/migrate-from-dcgm-exporter.md

start_agent --simulate 2x2xH100 --interval 1s --steps-socket "$TMP/steps.sock"
PP=$(free_port)
$PY - "$PAGE" "$TMP" "127.0.0.1:$AGENT_PORT" <<'PY' || fail "the page's code blocks could not be read"
import re, sys, yaml
page, tmp, target = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
blocks = re.findall(r"```(\w+)\n(.*?)```", page, re.S)
scrape = [yaml.safe_load(b) for lang, b in blocks if lang == "yaml" and "scrape_configs:" in b]
rules = [b for lang, b in blocks if lang == "yaml" and b.startswith("groups:")]
queries = [b for lang, b in blocks if lang == "promql"]
assert len(scrape) == 1 and len(rules) == 1 and len(queries) == 1, "expected one scrape config, rules and promql block"
cfg = scrape[0]
job = cfg["scrape_configs"][0]
job["static_configs"] = [{"targets": [target]}]  # the page's example hosts, made real
job["scrape_interval"] = "1s"
cfg["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
cfg["rule_files"] = [tmp + "/rules.yml"]
yaml.safe_dump(cfg, open(tmp + "/prom.yml", "w"))
open(tmp + "/rules.yml", "w").write(rules[0])
qs = [l.strip() for l in queries[0].splitlines() if l.strip() and not l.startswith("#")]
open(tmp + "/queries.txt", "w").write("\n".join(qs) + "\n")
print("  - %d queries, %d rules from the page" % (len(qs), rules[0].count("- alert:")))
PY
promtool check rules "$TMP/rules.yml" >"$TMP/promtool.out" 2>&1 || { cat "$TMP/promtool.out" >&2; fail "promtool check rules: the page's rules"; }
note "promtool accepts the page's rules"

prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
    --web.listen-address="127.0.0.1:$PP" >"$TMP/prom.log" 2>&1 &
PIDS+=($!)
P=http://127.0.0.1:$PP
nonempty() {
    curl -sf "$P/api/v1/query" --data-urlencode "query=$1" |
        $PY -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["status"]=="success" and d["data"]["result"] else 1)'
}
wait_until 60 nonempty 'DCGM_FI_PROF_SM_ACTIVE' || { tail -20 "$TMP/prom.log" >&2; fail "Prometheus never saw the agent's GPM series"; }
sleep 5 # a few scrapes, so rate() and increase() over the page's windows have two samples
n=0
while IFS= read -r q; do
    nonempty "$q" || fail "the page's query returns nothing: $q"
    n=$((n + 1))
done <"$TMP/queries.txt"
note "all $n queries of the page return series"

rules_ok() {
    curl -sf "$P/api/v1/rules" | $PY -c '
import json, sys
groups = json.load(sys.stdin)["data"]["groups"]
rules = [r for g in groups for r in g["rules"]]
bad = [r["name"] for r in rules if r.get("health") != "ok"]
sys.exit(0 if rules and not bad else 1)'
}
wait_until 20 rules_ok || { curl -s "$P/api/v1/rules" >&2; fail "the page's rules do not all evaluate cleanly"; }
note "the page's rules evaluate in Prometheus"

nonempty 'DCGM_FI_DEV_GPU_UTIL{job=~"sim-job-.+"}' || fail "the training job label did not survive the scrape"
nonempty 'DCGM_FI_DEV_GPU_UTIL{exported_job!=""}' && fail "honor_labels did not apply: exported_job present"
note "gpulse's job label survives the page's scrape configuration"
stop_agent
echo "PASS"
