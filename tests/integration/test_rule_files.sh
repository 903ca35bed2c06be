#!/usr/bin/env bash
# test_rule_files.sh - Prometheus rule files inside gpulse server
# (docs/config.md "Prometheus rule files", /api/v1/rules):
#   1. a rule file promtool refuses stops the server (exit 2) naming file
#      and line;
#   2. deploy/prometheus/gpulse-rules.yml, unchanged, runs in a server fed
#      by a simulated agent with planted faults, while Debian's Prometheus
#      2.42 gets the same samples (the agent pushes to both) and runs the
#      same file: every rule is
#      healthy, recorded series and ALERTS are stored, the ECC fault's
#      alerts fire in gpulse's alerts API with the text Prometheus
#      renders, and the two hold the same active alerts;
#   3. vmalert (Debian's) evaluates the same file against gpulse server's
#      /api/v1/query with no rule errors.
. "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh test)"
RULES=$ROOT/deploy/prometheus/gpulse-rules.yml
# what the file holds, counted from its text: every check below wants all
N_ALERTS=$(grep -cE '^\s*- alert:' "$RULES")
N_RECORDS=$(grep -cE '^\s*- record:' "$RULES")
export N_RULES=$((N_ALERTS + N_RECORDS))
PY=/usr/bin/python3

# 1. A bad rule file is a config error naming file and line.
printf 'groups:\n  - name: g\n    rules:\n      - record: ok\n        expr: up\n      - alert: Bad\n        expr: sum(up\n' \
    >"$TMP/bad.yml"
rc=0
"$GPULSE" server --listen 127.0.0.1:0 --data "$TMP/bad-data" --rule-file "$TMP/bad.yml" >"$TMP/bad.log" 2>&1 || rc=$?
[ $rc -eq 2 ] || { cat "$TMP/bad.log"; fail "a bad rule file: exit $rc, not 2"; }
grep -q "bad.yml:7: group \"g\", rule 2, \"Bad\": could not parse expression: " "$TMP/bad.log" ||
    { cat "$TMP/bad.log"; fail "the error does not name the file, line and rule"; }
note "a bad rule file stops the server: $(head -c 150 "$TMP/bad.log")"

# 2. The project's rules in gpulse and in Prometheus, fed the same samples:
# the simulated agent pushes to both (Prometheus as a remote-write
# receiver, started first so that it misses nothing either).
cat >"$TMP/gpulse.yaml" <<EOF
server:
  eval_interval: 5s
  rule_files: [$RULES]
EOF
start_server --config "$TMP/gpulse.yaml"
PROM_PORT=$(free_port)
cat >"$TMP/prom.yml" <<EOF
global: {evaluation_interval: 15s}
rule_files: [$RULES]
scrape_configs: []
EOF
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/prom-tsdb" \
    --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver >"$TMP/prom.log" 2>&1 &
PIDS+=($!)
PROM=http://127.0.0.1:$PROM_PORT
wait_until 30 curl -sf "$PROM/-/ready" || { tail -20 "$TMP/prom.log" >&2; fail "prometheus did not come up"; }
start_agent --simulate 2x4xH100 --simulate-faults ecc=sim-node-0/1,idle=sim-node-1/2,throttled=sim-node-1/0 \
    --interval 1s --push "$SERVER_URL/api/v1/write" --push "$PROM/api/v1/write"

cat >"$TMP/cmp.py" <<'PY'
import json, os, sys, urllib.request
def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)
KEY = ("alertname", "Hostname", "gpu", "rank", "pid", "xid", "source")
def key(labels):
    return tuple(labels.get(k, "") for k in KEY)
def active(rules_answer):
    out = {}
    for g in rules_answer["data"]["groups"]:
        for r in g["rules"]:
            for a in r.get("alerts", []):
                out[key(a["labels"])] = a
    return out
mode, gp, prom = sys.argv[1], sys.argv[2], sys.argv[3]
mine = get(gp + "/api/v1/rules")
theirs = get(prom + "/api/v1/rules")
if mode == "health":
    # every rule evaluated, none failed
    rules = [r for g in mine["data"]["groups"] for r in g["rules"]]
    bad = [f'{r["name"]}: {r["health"]} {r.get("lastError", "")}' for r in rules if r["health"] != "ok"]
    print(f"{len(mine['data']['groups'])} groups, {len(rules)} rules, {len(rules) - len(bad)} healthy")
    for b in bad: print("  " + b)
    # as many rules as Prometheus loaded from the same file
    want = sum(len(g["rules"]) for g in theirs["data"]["groups"])
    if len(rules) != want: print(f"  prometheus has {want} rules")
    sys.exit(0 if len(rules) == want == int(os.environ["N_RULES"]) and not bad else 1)
if mode == "fired":
    # the ECC fault's alerts firing in both, with the same rendered text
    want = {"GpulseGPUHardwareErrors", "GpulseGPUXidError"}
    m = {k: a for k, a in active(mine).items() if k[0] in want and a["state"] == "firing"}
    t = {k: a for k, a in active(theirs).items() if k[0] in want and a["state"] == "firing"}
    if {k[0] for k in m} != want or set(m) != set(t):
        print(f"gpulse {sorted(m)} prometheus {sorted(t)}")
        sys.exit(1)
    for k in m:
        if m[k]["annotations"] != t[k]["annotations"] or m[k]["labels"].get("severity") != "critical":
            print(f"{k}: gpulse {m[k]['annotations']} prometheus {t[k]['annotations']}")
            sys.exit(2)
    print("; ".join(sorted(a["annotations"]["summary"] for a in m.values())))
    sys.exit(0)
if mode == "same":
    # the same active alerts (pending or firing) in both
    m, t = set(active(mine)), set(active(theirs))
    print(f"gpulse {len(m)} active alerts, prometheus {len(t)}, "
          f"only gpulse {sorted(m - t)[:5]}, only prometheus {sorted(t - m)[:5]}")
    sys.exit(0 if m == t and m else 1)
PY
wait_until 180 $PY "$TMP/cmp.py" fired "$SERVER_URL" "$PROM" ||
    { $PY "$TMP/cmp.py" fired "$SERVER_URL" "$PROM"; tail -5 "$SERVER_LOG"; fail "the ECC fault's alerts did not fire alike in gpulse and Prometheus"; }
note "fired in both, same text: $($PY "$TMP/cmp.py" fired "$SERVER_URL" "$PROM")"
$PY "$TMP/cmp.py" health "$SERVER_URL" "$PROM" >"$TMP/health.out" ||
    { cat "$TMP/health.out"; fail "rules not healthy in gpulse"; }
note "$(head -1 "$TMP/health.out")"
# Group phases differ by up to an interval: the sets agree within a minute.
wait_until 60 $PY "$TMP/cmp.py" same "$SERVER_URL" "$PROM" ||
    { $PY "$TMP/cmp.py" same "$SERVER_URL" "$PROM"; fail "gpulse and Prometheus hold different alerts"; }
note "same alerts: $($PY "$TMP/cmp.py" same "$SERVER_URL" "$PROM")"
# The alerts are the alerts API's, and the recorded series are stored.
curl -sf "$SERVER_URL/api/v1/alerts?kind=GpulseGPUHardwareErrors&state=firing" >"$TMP/alerts.json"
$PY - "$TMP/alerts.json" <<'PY' || fail "GpulseGPUHardwareErrors is not firing in /api/v1/alerts"
import json, sys
d = json.load(open(sys.argv[1]))["data"]
a = [x for x in d if x["labels"].get("node") == "sim-node-0" and x["labels"].get("gpu") == "1"]
assert a and a[0]["severity"] == "critical" and "uncorrectable memory errors" in a[0]["summary"], d
PY
for sel in 'gpulse:gpu_memory_used:ratio' 'gpulse:fleet_gpus:count' 'ALERTS{alertname="GpulseGPUHardwareErrors",alertstate="firing"}'; do
    n=$(curl -sfG "$SERVER_URL/api/v1/series" --data-urlencode "match[]=$sel" | $PY -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')
    [ "$n" -gt 0 ] || fail "no series $sel in the store"
done
note "recorded series and ALERTS are in the store; the alert is in /api/v1/alerts"
curl -sf "$SERVER_URL/api/v1/rules?type=record" | $PY -c '
import json, sys
g = json.load(sys.stdin)["data"]["groups"]
assert all(r["type"] == "recording" for x in g for r in x["rules"]) and sum(len(x["rules"]) for x in g) == '"$N_RECORDS"', g' ||
    fail "/api/v1/rules?type=record"
code=$(curl -s -o "$TMP/bad-type.json" -w '%{http_code}' "$SERVER_URL/api/v1/rules?type=alerts")
[ "$code" = 400 ] && grep -q '"errorType":"bad_data"' "$TMP/bad-type.json" || fail "type=alerts: $code $(cat "$TMP/bad-type.json")"
# Grafana's Prometheus data source asks under its own prefix too.
curl -sf "$SERVER_URL/prometheus/api/v1/rules?type=alert" | $PY -c '
import json, sys
g = json.load(sys.stdin)["data"]["groups"]
assert sum(len(x["rules"]) for x in g) == '"$N_ALERTS"', g' || fail "/prometheus/api/v1/rules?type=alert"

# 3. vmalert over gpulse server's PromQL routes: no rule errors.
if command -v vmalert >/dev/null; then
    VPORT=$(free_port) RPORT=$(free_port)
    # an Alertmanager stand-in takes vmalert's notifications
    $PY "$ROOT/tests/integration/notify_receiver.py" "$RPORT" "$TMP/am.jsonl" >"$TMP/receiver.out" 2>&1 &
    PIDS+=($!)
    wait_until 10 curl -sf "http://127.0.0.1:$RPORT/health" || fail "the receiver did not come up"
    # (its recorded series go to the stand-in too: gpulse records its own)
    vmalert -rule="$RULES" -datasource.url="$SERVER_URL" -notifier.url="http://127.0.0.1:$RPORT/am" \
        -remoteWrite.url="http://127.0.0.1:$RPORT/rw" \
        -evaluationInterval=5s \
        -httpListenAddr="127.0.0.1:$VPORT" -loggerLevel=ERROR >"$TMP/vmalert.log" 2>&1 &
    PIDS+=($!)
    wait_until 30 curl -sf "http://127.0.0.1:$VPORT/api/v1/rules" || { tail "$TMP/vmalert.log"; fail "vmalert did not come up"; }
    cat >"$TMP/vmcheck.py" <<'PY'
import json, os, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/api/v1/rules", timeout=10) as r:
    rules = [x for g in json.load(r)["data"]["groups"] for x in g["rules"]]
done = [x for x in rules if not x.get("lastEvaluation", "0001").startswith("0001")]
bad = [f"{x['name']}: {x['lastError']}" for x in rules if x.get("lastError")]
print(f"{len(rules)} rules, {len(done)} evaluated, {len(bad)} with errors")
for b in bad[:5]: print("  " + b)
n = int(os.environ["N_RULES"])
sys.exit(0 if len(rules) == n and len(done) == n and not bad else 1)
PY
    vm_ok() { $PY "$TMP/vmcheck.py" "http://127.0.0.1:$VPORT"; }
    wait_until 45 vm_ok || { vm_ok || true; fail "vmalert: rule errors against gpulse server"; }
    note "vmalert: $(vm_ok | head -1)"
else
    fail "vmalert is not installed (scripts/deps.sh test)"
fi
stop_agent
stop_server
echo "ok: deploy/prometheus/gpulse-rules.yml runs in gpulse server as in Prometheus; vmalert finds no errors"
