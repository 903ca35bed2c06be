#!/usr/bin/env bash
# Alerts end to end with the real server: a custom rule in the config
# file, evaluated every second; remote-written GPU temperatures cross its
# threshold, so the alert is seen pending and then firing in
# GET /api/v1/alerts (its evidence, the rule's PromQL, answers /api/v1/query
# with the same value); a silence (write token only) marks it silenced; a
# restart keeps it firing without a second firing transition; cooled, it
# resolves; another restart keeps the history, and a hot GPU within the
# cool-down fires nothing new.
source "$(dirname "$0")/lib.sh"
cat >"$TMP/gpulse.yaml" <<'EOF'
server:
  write_token: W
  read_token: R
rules:
  - name: gpu_hot
    expr: DCGM_FI_DEV_GPU_TEMP{Hostname="n1"}
    agg: last
    window: 10s
    op: ">"
    threshold: 85
    for: 2s
    cooldown: 1h
    severity: critical
    labels: {team: ml}
    annotations:
      summary: "GPU {{ $labels.gpu }} of {{ $labels.Hostname }} at {{ $value }} C"
      runbook: "check the fans"
EOF
ARGS=(--config "$TMP/gpulse.yaml" --eval-interval 1s --eval-step 1s --eval-window 30s --alert-clear-for 1s)
start_server "${ARGS[@]}"
echo 90 >"$TMP/value"
# The feeder: the value in $TMP/value every 300 ms, for as long as the test runs.
(
    while :; do
        v=$(cat "$TMP/value")
        rw write "$SERVER_URL" --token W \
            "DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",gpu=\"0\",UUID=\"GPU-a\"}=$v@$(date +%s%3N)" >/dev/null 2>&1 || true
        sleep 0.3
    done
) &
PIDS+=($!)
get() { curl -sf -H 'Authorization: Bearer R' "$SERVER_URL$1"; }
has() { get "$1" | grep -- "$2" >/dev/null; }

wait_until 10 has '/api/v1/alerts?state=pending' '"kind":"gpu_hot"' || fail "never pending"
note "pending"
wait_until 10 has '/api/v1/alerts?state=firing' '"kind":"gpu_hot"' || fail "never firing"
get '/api/v1/alerts?state=firing&kind=gpu_hot&severity=critical&node=n1' >"$TMP/firing.json"
ID=$(python3 - "$TMP/firing.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["data"]
assert len(d) == 1, d
a = d[0]
assert a["labels"] == {"node": "n1", "gpu": "0", "UUID": "GPU-a", "team": "ml"}, a["labels"]
assert a["summary"] == "GPU 0 of n1 at 90 C", a["summary"]
assert a["group"] == "node:n1" and a["severity"] == "critical" and a["runbook"] == "check the fans", a
assert a["firing_since"] >= a["started"] + 2 and a["resolved"] is None and a["silenced"] is False, a
print(a["id"])
PY
) || fail "the firing alert is wrong (above)"
note "firing: $ID"
# The rule is PromQL (docs/config.md): its evidence names the expression,
# and the same text answers the instant query with the alert's value.
EXPR=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["data"][0]["evidence"]; print(e.split(" = ")[0])' "$TMP/firing.json")
[ "$EXPR" = 'last_over_time(DCGM_FI_DEV_GPU_TEMP{Hostname="n1"}[10s])' ] || fail "the rule's evidence: $EXPR"
curl -sf -H 'Authorization: Bearer R' --data-urlencode "query=$EXPR" "$SERVER_URL/api/v1/query" >"$TMP/rule-q.json" ||
    fail "/api/v1/query of the rule's expression"
python3 - "$TMP/rule-q.json" <<'PY' || fail "the instant query of the rule's expression (above)"
import json, sys
r = json.load(open(sys.argv[1]))["data"]["result"]
assert len(r) == 1 and r[0]["metric"].get("gpu") == "0" and float(r[0]["value"][1]) == 90, r
PY
note "the rule's expression answers the instant query with its value"

code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer R' -d '{"matchers":{"kind":"gpu_hot"},"duration":"1h"}' "$SERVER_URL/api/v1/silences")
[ "$code" = 401 ] || fail "the read token silenced ($code)"
code=$(curl -s -o "$TMP/bad.json" -w '%{http_code}' -H 'Authorization: Bearer W' -d '{"matchers":{"kind":"gpu_hot"}}' "$SERVER_URL/api/v1/silences")
[ "$code" = 400 ] && grep -q "duration" "$TMP/bad.json" || fail "a silence without an end answered $code"
SIL=$(curl -sf -H 'Authorization: Bearer W' -d '{"matchers":{"kind":"gpu_hot","node":"n1"},"duration":"1h","comment":"fans"}' \
    "$SERVER_URL/api/v1/silences" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"])') ||
    fail "POST /api/v1/silences"
wait_until 5 has '/api/v1/alerts?state=firing' '"silenced":true' || fail "the alert is not marked silenced"
has /api/v1/silences "$SIL" || fail "the silence is not listed"
note "silenced by $SIL"

stop_server
SERVER_DATA_KEEP=$SERVER_DATA
SERVER_DATA=$SERVER_DATA_KEEP start_server "${ARGS[@]}"
sleep 3 # three ticks with the GPU still hot
get "/api/v1/alerts/$ID" >"$TMP/after1.json" || fail "GET /api/v1/alerts/$ID after a restart"
python3 - "$TMP/after1.json" <<'PY' || fail "the restart changed the alert (above)"
import json, sys
a = json.load(open(sys.argv[1]))["data"]
assert a["state"] == "firing" and a["silenced"] is True, a
assert [(t["from"], t["to"]) for t in a["transitions"]] == [(None, "pending"), ("pending", "firing")], a["transitions"]
PY
note "still firing after a restart, no second firing"

echo 20 >"$TMP/value"
wait_until 15 has '/api/v1/alerts?state=resolved' "$ID" || fail "never resolved"
note "resolved"
stop_server
SERVER_DATA=$SERVER_DATA_KEEP start_server "${ARGS[@]}"
echo 95 >"$TMP/value"
sleep 4 # hot again, within the hour of cool-down
get "/api/v1/alerts?state=all" >"$TMP/all.json" || fail "GET /api/v1/alerts?state=all"
get "/api/v1/alerts/$ID" >"$TMP/after2.json" || fail "GET /api/v1/alerts/$ID"
python3 - "$TMP/all.json" "$TMP/after2.json" <<'PY' || fail "history or cool-down wrong (above)"
import json, sys
# the rule's alerts only: the built-in detectors judge the same GPU too
# (at 90 C it is throttled)
L = [x for x in json.load(open(sys.argv[1]))["data"] if x["kind"] == "gpu_hot"]
assert len(L) == 1 and L[0]["state"] == "resolved" and L[0]["resolved"] is not None, L
a = json.load(open(sys.argv[2]))["data"]
assert [t["to"] for t in a["transitions"]] == ["pending", "firing", "resolved"], a["transitions"]
assert [t["silenced"] for t in a["transitions"]] == [False, False, True], a["transitions"]
PY
note "history kept across restarts; no new alert within the cool-down"
curl -sf -X DELETE -H 'Authorization: Bearer W' "$SERVER_URL/api/v1/silences/$SIL" >/dev/null || fail "DELETE the silence"
has /api/v1/silences "$SIL" && fail "a deleted silence is still listed"
stop_server
