#!/usr/bin/env bash
# Notifications end to end through the server: a custom rule fires on
# remote-written GPU temperatures; the router groups the alerts by job and
# the outbox delivers them to a webhook, a Slack endpoint (both the test
# receiver, notify_receiver.py), Debian's real Alertmanager and a real
# SMTP server (aiosmtpd, STARTTLS and AUTH).
#   1. one hot GPU: one firing notification per receiver, then one
#      resolution; Alertmanager shows the alert, then not;
#   2. the webhook down (500) while a second job's GPU heats, the server
#      restarted in the middle, the webhook back: that notification is
#      delivered exactly once (one notification id, one request 2xx);
#   3. a storm: 1,000 GPUs of one job hot within seconds arrive as a
#      handful of grouped messages;
#   4. no configured secret in the logs, the API's answers or /metrics.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
start_notify_receiver
mode() { curl -sf -X POST -d "$1" "$R/_control" >/dev/null || fail "control $1"; }

APORT=$(free_port)
mkdir -p "$TMP/am"
printf 'route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n' >"$TMP/am/am.yml"
prometheus-alertmanager --config.file="$TMP/am/am.yml" --storage.path="$TMP/am/data" \
    --web.listen-address="127.0.0.1:$APORT" --cluster.listen-address= >"$TMP/am/log" 2>&1 &
PIDS+=($!)
A=http://127.0.0.1:$APORT
wait_until 20 curl -sf "$A/-/ready" || { cat "$TMP/am/log" >&2; fail "alertmanager did not come up"; }

# A real SMTP server (Debian's aiosmtpd) with STARTTLS and AUTH.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null ||
    fail "openssl could not make a certificate"
SMTP_PORT=$(free_port)
mkdir -p "$TMP/mail"
$PY "$ROOT/tests/integration/smtp_server.py" --port "$SMTP_PORT" --dir "$TMP/mail" \
    --user gpulse --password SMTPSECRET46 --cert "$TMP/cert.pem" --key "$TMP/key.pem" >"$TMP/smtp.log" 2>&1 &
PIDS+=($!)
wait_until 10 grep -q ready "$TMP/smtp.log" || { cat "$TMP/smtp.log" >&2; fail "smtp_server did not start"; }
export GPULSE_TEST_SMTP_PASSWORD=SMTPSECRET46

echo -n "$R/slack/services/T000/B000/SLACKSECRET42" >"$TMP/slack.url"
export GPULSE_TEST_HOOK_TOKEN=HOOKSECRET43
cat >"$TMP/gpulse.yaml" <<EOF
server:
  write_token: WRITESECRET44
  read_token: READSECRET45
rules:
  - name: gpu_hot
    expr: DCGM_FI_DEV_GPU_TEMP
    agg: last
    window: 10s
    op: ">"
    threshold: 85
    for: 1s
    severity: critical
    annotations:
      summary: "GPU {{ \$labels.gpu }} of {{ \$labels.Hostname }} at {{ \$value }} C"
notify:
  external_url: http://gpulse.test:9402
  retry_max_backoff: 1s
  receivers:
    - name: hooks
      type: webhook
      url: $R/hook/receive
      bearer_token_env: GPULSE_TEST_HOOK_TOKEN
    - name: chat
      type: slack
      url_file: $TMP/slack.url
    - name: am
      type: alertmanager
      url: $A
    - name: mail
      type: email
      smtp: smtp://127.0.0.1:$SMTP_PORT
      tls: starttls
      ca_file: $TMP/cert.pem
      username: gpulse
      password_env: GPULSE_TEST_SMTP_PASSWORD
      from: gpulse@example.com
      to: [oncall@example.com]
      title: "gpulse {status}: {count} on {group}"
  routes:
    - receiver: mail
      match: {severity: critical}
      group_by: [job]
      group_wait: 2s
      group_interval: 2s
      repeat_interval: 1h
      continue: true
    - receiver: hooks
      group_by: [job]
      group_wait: 2s
      group_interval: 2s
      repeat_interval: 1h
      continue: true
    - receiver: chat
      group_by: [job]
      group_wait: 2s
      group_interval: 2s
      repeat_interval: 1h
      continue: true
    - receiver: am
      group_interval: 2s
EOF
ARGS=(--config "$TMP/gpulse.yaml" --eval-interval 1s --eval-step 1s --eval-window 20s --alert-clear-for 1s)
start_server "${ARGS[@]}"
KEEP=$SERVER_DATA

# The feeder: every GPU named in $TMP/hot at 90 C, the others in $TMP/gpus at 40, every 300 ms,
# to the server whose URL is in $TMP/url (the restart in 2. moves it to another port). One awk
# builds the batch: a grep per GPU took seconds for the storm's 1,000 GPUs.
: >"$TMP/hot"
printf 'job-a 0\n' >"$TMP/gpus"
echo "$SERVER_URL" >"$TMP/url"
(
    while :; do
        mapfile -t args < <(awk -v now="$(date +%s%3N)" '
            FILENAME == ARGV[1] { hot[$0] = 1; next }
            { printf "DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",gpu=\"%s\",job=\"%s\"}=%d@%s\n", $2, $1, ($0 in hot) ? 90 : 40, now }
        ' "$TMP/hot" "$TMP/gpus")
        [ ${#args[@]} -gt 0 ] && rw write "$(cat "$TMP/url")" --token WRITESECRET44 "${args[@]}" >/dev/null 2>&1 || true
        sleep 0.3
    done
) &
PIDS+=($!)
get() { curl -sf -H 'Authorization: Bearer READSECRET45' "$SERVER_URL$1"; }
reqs() { # reqs PATH_PREFIX STATUS: requests to a path whose body status is STATUS
    python3 - "$RLOG" "$1" "$2" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]) if __import__("os").path.exists(sys.argv[1]) else []:
    r = json.loads(line)
    if r["path"].startswith(sys.argv[2]) and r.get("mode", "ok") == "ok":
        b = json.loads(r["body"]) if r["body"] else {}
        st = b.get("status") if isinstance(b, dict) else None
        if sys.argv[3] in ("any", st) or (sys.argv[3] == "slack" and isinstance(b, dict)):
            n += 1
print(n)
PY
}

# 1. One hot GPU: firing once per receiver, then resolved once.
printf 'job-a 0\n' >"$TMP/hot"
wait_until 20 sh -c "[ \"\$(curl -sf -H 'Authorization: Bearer READSECRET45' '$SERVER_URL/api/v1/notifications?state=done' | grep -o '\"receiver\":\"hooks\"' | wc -l)\" -ge 1 ]" ||
    fail "no notification delivered to the webhook: $(get '/api/v1/notifications?state=all')"
wait_until 20 sh -c "curl -sf '$A/api/v2/alerts?active=true' | grep -q '\"alertname\":\"gpu_hot\"'" ||
    fail "the alert never reached Alertmanager"
sleep 3
[ "$(reqs /hook firing)" = 1 ] || fail "want 1 firing webhook message, got $(reqs /hook firing)"
[ "$(reqs /slack slack)" = 1 ] || fail "want 1 Slack message, got $(reqs /slack slack)"
: >"$TMP/hot"
wait_until 20 sh -c "[ \"\$(python3 - '$RLOG' <<'PY'
import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)['path'].startswith('/hook') and '\"resolved\"' in json.loads(l)['body']))
PY
)\" -ge 1 ]" || fail "no resolution reached the webhook"
wait_until 20 sh -c "! curl -sf '$A/api/v2/alerts?active=true' | grep -q '\"alertname\":\"gpu_hot\"'" ||
    fail "the alert is still active in Alertmanager after its resolution"
python3 - "$RLOG" <<'PY' || fail "validation errors in the delivered bodies (above)"
import json, sys
bad = [r for r in map(json.loads, open(sys.argv[1])) if r["errors"]]
for r in bad: print(r["path"], r["errors"])
sys.exit(1 if bad else 0)
PY
wait_until 20 sh -c "ls '$TMP/mail' | grep -c '\.eml$' | grep -qv '^[01]$'" ||
    fail "want a firing and a resolved email, got $(ls "$TMP/mail")"
$PY - "$TMP/mail" <<'PY' || fail "the emails are wrong (above)"
import email, email.policy, glob, json, sys
subjects = []
for f in sorted(glob.glob(sys.argv[1] + "/*.eml")):
    m = email.message_from_binary_file(open(f, "rb"), policy=email.policy.default)
    assert not m.defects, (f, m.defects)
    assert m["Date"] and m["Message-ID"] and m["From"] == "gpulse@example.com", f
    parts = {p.get_content_type(): p.get_content() for p in m.walk() if not p.is_multipart()}
    assert set(parts) == {"text/plain", "text/html"}, parts.keys()
    assert "gpu_hot" in parts["text/plain"] and "GPU 0 of n1" in parts["text/plain"], parts["text/plain"]
    env = json.load(open(f[:-4] + ".json"))
    assert env["rcpt_tos"] == ["oncall@example.com"], env
    subjects.append(str(m["Subject"]))
print("  email subjects:", subjects)
assert subjects == ["gpulse FIRING: 1 on job job-a", "gpulse RESOLVED: 1 on job job-a"], subjects
PY
note "firing and resolved once per receiver; Alertmanager showed it, then not; the emails are valid MIME"

# 2. The webhook down, a restart in the middle, the webhook back: exactly once.
mode '{"mode":"500","path":"/hook"}'
printf 'job-a 0\njob-b 1\n' >"$TMP/gpus"
printf 'job-b 1\n' >"$TMP/hot"
wait_until 20 sh -c "curl -sf -H 'Authorization: Bearer READSECRET45' '$SERVER_URL/api/v1/notifications?state=queued' | grep -q '\"receiver\":\"hooks\"'" ||
    fail "no queued webhook notification while the webhook fails: $(get '/api/v1/notifications?state=all')"
stop_server
SERVER_DATA=$KEEP start_server "${ARGS[@]}"
echo "$SERVER_URL" >"$TMP/url"
sleep 2
mode '{"mode":"clear","path":"/hook"}'
wait_until 30 sh -c "! curl -sf -H 'Authorization: Bearer READSECRET45' '$SERVER_URL/api/v1/notifications?state=queued' | grep -q '\"receiver\":\"hooks\"'" ||
    fail "the queued webhook notification was never delivered"
sleep 3
python3 - "$RLOG" <<'PY' || fail "job-b's firing notification not delivered exactly once"
import json, sys
ok = {}
for r in map(json.loads, open(sys.argv[1])):
    if not r["path"].startswith("/hook") or r.get("mode", "ok") != "ok":
        continue
    b = json.loads(r["body"])
    if b["status"] == "firing" and b["groupLabels"].get("job") == "job-b":
        nid = r["headers"].get("X-Gpulse-Notification-Id") or r["headers"].get("x-gpulse-notification-id")
        ok[nid] = ok.get(nid, 0) + 1
print("  delivered job-b firing notifications:", ok)
sys.exit(0 if len(ok) == 1 and list(ok.values()) == [1] else 1)
PY
note "webhook down, server restarted, webhook back: delivered exactly once"

# 3. A storm: 1,000 GPUs of one job, hot together.
python3 -c 'print("\n".join("storm %d" % i for i in range(1000)))' >"$TMP/storm"
cat "$TMP/storm" >>"$TMP/gpus"
cp "$TMP/storm" "$TMP/hot"
sleep 12
n=$(python3 - "$RLOG" <<'PY'
import json, sys
n = 0
for r in map(json.loads, open(sys.argv[1])):
    if r["path"].startswith("/hook") and r.get("mode", "ok") == "ok":
        if json.loads(r["body"])["groupLabels"].get("job") == "storm":
            n += 1
print(n)
PY
)
[ "$n" -ge 1 ] && [ "$n" -le 5 ] || fail "1,000 alerts of one job arrived as $n webhook messages, want 1-5"
note "a storm of 1,000 alerts of one job: $n grouped webhook messages"

# 4. No secret anywhere a person or a scraper can read.
for p in '/api/v1/notifications?state=all' '/api/v1/alerts?state=all' /metrics; do
    get "$p" >>"$TMP/answers" || fail "GET $p"
done
for s in SLACKSECRET42 HOOKSECRET43 WRITESECRET44 READSECRET45 SMTPSECRET46; do
    grep -l "$s" "$SERVER_LOG" "$TMP/answers" 2>/dev/null && fail "secret $s found (above)"
done
"$GPULSE" notify test hooks --config "$TMP/gpulse.yaml" >"$TMP/nt.out" 2>&1 || { cat "$TMP/nt.out"; fail "gpulse notify test hooks"; }
grep -q "HOOKSECRET43" "$TMP/nt.out" && fail "gpulse notify test printed the token"
stop_server
note "no secret in logs, API answers, /metrics or notify test"
