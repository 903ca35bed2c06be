#!/usr/bin/env bash
# The HTTP channels (Slack, webhook payload v4, Alertmanager v2) end to
# end through build/asan/notify-send: against notify_receiver.py, every
# body validates against its format's documented shape and every fault
# mode gives the right outcome (OK; RETRY with Retry-After in seconds and
# as an HTTP date; FAIL on 400; RETRY on a timeout and on a dropped
# connection), with the notification id and the bearer token sent and
# the URL never in the detail; then against Debian's real Alertmanager:
# a firing alert appears in GET /api/v2/alerts with its labels, and is
# gone from the active alerts after its resolution.
source "$(dirname "$0")/lib.sh"
SEND=$ROOT/build/asan/notify-send
[ -x "$SEND" ] || fail "build build/asan/notify-send first (make check-build)"

start_notify_receiver
mode() { curl -sf -X POST -d "$1" "$R/_control" >/dev/null || fail "control $1"; }

# expect WANT_RC WANT_PATTERN ARGS...: runs notify-send, checks exit code and output.
expect() {
    local want_rc=$1 pat=$2 rc=0; shift 2
    OUT=$("$SEND" "$@" 2>&1) || rc=$?
    [ "$rc" = "$want_rc" ] || fail "notify-send $1: exit $rc, wanted $want_rc: $OUT"
    [[ "$OUT" =~ $pat ]] || fail "notify-send $1: '$OUT' does not match '$pat'"
    case "$OUT" in *SECRET*) fail "a secret in the outcome: $OUT" ;; esac
}
last_errors() { tail -1 "$RLOG" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("; ".join(r["errors"]))'; }
requests() { [ -f "$RLOG" ] && wc -l <"$RLOG" || echo 0; }

SLACK="$R/slack/services/T000/B000/SECRETTOKEN"
HOOK="$R/hook/receive?key=SECRETKEY"
AM="$R/am"
for c in "slack $SLACK" "webhook $HOOK" "alertmanager $AM"; do
    set -- $c
    type=$1 url=$2
    mode '{"mode":"ok"}'
    expect 0 '^result=OK status=200 ' "$type" "$url" firing 3000 SECRETBEARER
    [ -z "$(last_errors)" ] || fail "$type firing body does not validate: $(last_errors)"
    expect 0 '^result=OK status=200 ' "$type" "$url" resolved 3000 SECRETBEARER
    [ -z "$(last_errors)" ] || fail "$type resolved body does not validate: $(last_errors)"
    mode '{"mode":"500"}'
    expect 1 '^result=RETRY status=500 retry_after_ms=0 .*detail=HTTP 500: internal error' "$type" "$url"
    mode '{"mode":"429","retry_after":"7"}'
    expect 1 '^result=RETRY status=429 retry_after_ms=7000 .*detail=HTTP 429: slow down' "$type" "$url"
    later=$(python3 -c 'import email.utils,time; print(email.utils.formatdate(time.time()+3600, usegmt=True))')
    mode "{\"mode\":\"429\",\"retry_after\":\"$later\"}"
    expect 1 '^result=RETRY status=429 retry_after_ms=(35[4-9][0-9]|36[0-9][0-9])[0-9]{3} ' "$type" "$url"
    mode '{"mode":"400"}'
    expect 1 '^result=FAIL status=400 .*detail=HTTP 400: invalid_payload' "$type" "$url"
    mode '{"mode":"drop"}'
    expect 1 '^result=RETRY status=0 ' "$type" "$url"
    mode '{"mode":"hang","seconds":20}'
    t0=$SECONDS
    expect 1 '^result=RETRY status=0 .*detail=.*timed out' "$type" "$url" firing 1500
    [ $((SECONDS - t0)) -le 4 ] || fail "$type: the send blocked $((SECONDS - t0)) s past a 1.5 s timeout"
    note "$type: OK, 500, 429 (seconds and date), 400, drop and hang give the right outcomes"
done
mode '{"mode":"ok"}'
# A per-path mode applies to its path only.
mode '{"mode":"500","path":"/hook"}'
expect 1 '^result=RETRY status=500' webhook "$HOOK"
expect 0 '^result=OK' slack "$SLACK"
mode '{"mode":"clear","path":"/hook"}'
expect 0 '^result=OK' webhook "$HOOK"
# Refused connection: nothing listens.
expect 1 '^result=RETRY status=0 .*detail=.*(onnect|refused)' webhook "http://127.0.0.1:$(free_port)/hook/SECRETPATH"
# Every request: headers, and no validation error anywhere.
python3 - "$RLOG" <<'PY' || fail "the recorded requests are wrong (above)"
import json, sys
bad = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    h = {k.lower(): v for k, v in r["headers"].items()}
    errs = list(r["errors"])
    if h.get("content-type") != "application/json": errs.append("content-type " + str(h.get("content-type")))
    if h.get("x-gpulse-notification-id") != "it-notification-1": errs.append("no notification id")
    auth = h.get("authorization")
    if r["path"].startswith("/slack"):
        if auth: errs.append("slack got an Authorization header")
    elif auth not in (None, "Bearer SECRETBEARER"): errs.append("bad authorization " + auth)
    if errs:
        bad += 1
        print(r["path"], errs)
n = sum(1 for _ in open(sys.argv[1]))
print(f"  - {n} requests recorded, all bodies valid, headers right")
sys.exit(1 if bad or n != 27 else 0)  # 3 channels x 8 sends, 3 per-path sends
PY
grep -q '"Bearer SECRETBEARER"' "$RLOG" || fail "the bearer token was not sent"
# The validator itself rejects what breaks the shapes (so "valid" above means something).
for bad in '/hook/x {"version":"3","alerts":[]}' '/slack/x {"text":"t","blocks":[{"type":"header","text":{"type":"mrkdwn","text":"h"}}]}' \
           '/am/api/v2/alerts [{"labels":{"job":"x"},"endsAt":"0001-01-01T00:00:00Z"}]'; do
    curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d "${bad#* }" "$R${bad%% *}"
    [ -n "$(last_errors)" ] || fail "the receiver accepted a malformed body on ${bad%% *}"
done

# ---- the real Alertmanager ---------------------------------------------
command -v prometheus-alertmanager >/dev/null || fail "prometheus-alertmanager is not installed (scripts/deps.sh test)"
APORT=$(free_port)
mkdir -p "$TMP/am"
cat >"$TMP/am/am.yml" <<'YML'
route:
  receiver: blackhole
receivers:
  - name: blackhole
YML
prometheus-alertmanager --config.file="$TMP/am/am.yml" --storage.path="$TMP/am/data" \
    --web.listen-address="127.0.0.1:$APORT" --cluster.listen-address= >"$TMP/am/log" 2>&1 &
PIDS+=($!)
A=http://127.0.0.1:$APORT
wait_until 20 curl -sf "$A/-/ready" || { cat "$TMP/am/log" >&2; fail "alertmanager did not come up"; }
expect 0 '^result=OK status=200 ' alertmanager "$A/"
am_alerts() { curl -sf "$A/api/v2/alerts?active=true&silenced=false&inhibited=false"; }
firing_ok() {
    am_alerts | python3 -c '
import json, sys
al = [a for a in json.load(sys.stdin) if a["labels"].get("alertname") == "GpulseItOomForecast"]
want = {"alertname": "GpulseItOomForecast", "severity": "critical", "job": "bert-1", "rank": "3",
        "node": "node-1", "gpu": "0"}
ok = len(al) == 1 and al[0]["labels"] == want and al[0]["status"]["state"] == "active" \
    and al[0]["annotations"].get("runbook_url") == "https://runbooks.example/oom" \
    and al[0]["generatorURL"].endswith("/api/v1/alerts/4f1c2a9e0b7d3e51")
sys.exit(0 if ok else 1)'
}
wait_until 10 firing_ok || { am_alerts; fail "the firing alert is not in Alertmanager with its labels"; }
note "alertmanager: the firing alert is active with its labels and annotations"
expect 0 '^result=OK status=200 ' alertmanager "$A" resolved
gone() { am_alerts | python3 -c '
import json, sys
sys.exit(0 if not [a for a in json.load(sys.stdin) if a["labels"]["alertname"].startswith("GpulseIt")] else 1)'; }
wait_until 10 gone || { am_alerts; fail "the resolved alert is still active in Alertmanager"; }
note "alertmanager: after the resolution it is gone from the active alerts"
echo "PASS test_notify_channels"
