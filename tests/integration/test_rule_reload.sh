#!/usr/bin/env bash
# test_rule_reload.sh - SIGHUP reloads rule_files as Prometheus does
# (docs/config.md "Prometheus rule files"):
#   1. a rule that keeps its name keeps its state across the reload (a
#      pending alert keeps its activeAt), a new rule runs, a removed
#      recording rule's series ends (stale), the reload is counted;
#   2. a file that no longer parses is refused: the server keeps running
#      the rules it had, logs why and counts the failure.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
R=$TMP/rules.yml
cat >"$R" <<'EOF2'
groups:
  - name: g
    rules:
      - record: one_plus
        expr: vector(1)
      - alert: AlwaysOn
        expr: vector(1) > 0
        for: 1h
EOF2
start_server --rule-file "$R" --eval-interval 1s

rules() { curl -sf "$SERVER_URL/api/v1/rules"; }
# alert_field NAME FIELD: FIELD of the rule NAME's first alert
alert_field() {
    rules | $PY -c '
import json, sys
for g in json.load(sys.stdin)["data"]["groups"]:
    for r in g["rules"]:
        if r["name"] == sys.argv[1] and r.get("alerts"):
            print(r["alerts"][0][sys.argv[2]]); sys.exit(0)
sys.exit(1)' "$1" "$2"
}
value() {
    curl -sf "$SERVER_URL/api/v1/query" --data-urlencode "query=$1" | $PY -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "none")'
}
metric() { curl -sf "$SERVER_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# (wait_until runs a command again and again: these compare afresh each time)
value_is() { [ "$(value "$1")" = "$2" ]; }
metric_is() { [ "$(metric "$1")" = "$2" ]; }

wait_until 20 alert_field AlwaysOn state >/dev/null || fail "AlwaysOn never became pending: $(rules)"
wait_until 10 value_is one_plus 1 || fail "one_plus was not recorded"
active=$(alert_field AlwaysOn activeAt)
[ "$(metric gpulse_server_rules_last_reload_successful)" = 1 ] || fail "last reload not 1 at start"

# 1. Rename nothing, change an expression, drop one_plus, add a group.
cat >"$R" <<'EOF2'
groups:
  - name: g
    rules:
      - alert: AlwaysOn
        expr: vector(2) > 0
        for: 1h
  - name: h
    rules:
      - record: added
        expr: vector(3)
EOF2
kill -HUP "$SERVER_PID"
wait_until 10 value_is added 3 || { cat "$SERVER_LOG"; fail "the new rule did not run after SIGHUP"; }
[ "$(alert_field AlwaysOn activeAt)" = "$active" ] || fail "AlwaysOn lost its state: activeAt $(alert_field AlwaysOn activeAt), was $active"
[ "$(alert_field AlwaysOn state)" = pending ] || fail "AlwaysOn is not pending"
[ "$(value one_plus)" = none ] || fail "one_plus still answers after its rule went: $(value one_plus)"
[ "$(metric 'gpulse_server_rule_reloads_total{result="success"}')" = 1 ] || fail "success not counted"
metric 'gpulse_rule_group_rules{rule_group="'"$R"';h"}' | grep -x 1 >/dev/null || fail "no rule_group metric for h"
grep -q 'msg="rule_files reloaded"' "$SERVER_LOG" || fail "the reload is not logged"
note "SIGHUP: AlwaysOn kept activeAt $active, 'added' = 3, one_plus ended"

# 2. A broken file: refused, the running rules stay.
printf 'groups:\n  - name: g\n    rules:\n      - record: x\n        expr: sum(\n' >"$R"
kill -HUP "$SERVER_PID"
wait_until 10 metric_is 'gpulse_server_rule_reloads_total{result="failure"}' 1 ||
    fail "the failed reload is not counted"
[ "$(metric gpulse_server_rules_last_reload_successful)" = 0 ] || fail "last reload still 1"
grep -q 'reload failed; the rules already loaded stay.*rules.yml:5' "$SERVER_LOG" ||
    { cat "$SERVER_LOG"; fail "the failure is not logged with file and line"; }
sleep 2
[ "$(value added)" = 3 ] && [ "$(alert_field AlwaysOn activeAt)" = "$active" ] ||
    fail "the old rules stopped after a failed reload"
stop_server
echo "ok: SIGHUP reloads rule_files, keeps the state of kept rules and refuses a broken file"
