#!/usr/bin/env bash
# The weekly fleet funnel e-mail (docs/api.md "The weekly report") against
# the SMTP server the notify tests use (smtp_server.py: STARTTLS, AUTH).
# A server holds planted series (a job's idle GPU with team and user, a
# busy GPU no job holds, a zombie) written over remote write before this
# minute; restarted with funnel_report_schedule set to this minute, it
# sends the report at once: one message, valid MIME with text and HTML,
# whose figures equal GET /api/v1/fleet/funnel over the same 7 days. A
# third start sends nothing (funnel-report.last), and a schedule that
# does not parse or a receiver that is not email stops the server.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3 # Debian's, with python3-aiosmtpd
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null ||
    fail "openssl could not make a certificate"
SMTP_PORT=$(free_port)
mkdir -p "$TMP/mail"
"$PY" "$ROOT/tests/integration/smtp_server.py" --port "$SMTP_PORT" --dir "$TMP/mail" --user gpulse \
    --password s3cret --cert "$TMP/cert.pem" --key "$TMP/key.pem" >"$TMP/smtp.log" 2>&1 &
PIDS+=($!)
wait_until 10 grep -q ready "$TMP/smtp.log" || { cat "$TMP/smtp.log" >&2; fail "smtp_server did not start"; }

# 1. The planted series, all before this minute (the report's end).
SERVER_DATA=$TMP/data start_server
now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
slot_ms=$(( $(now_ms) / 60000 * 60000 ))
H='Hostname="n1",modelName="NVIDIA H100 80GB HBM3"'
series=()
for i in 0 1 2 3 4; do
    t=$((slot_ms - 50000 + i * 10000))
    series+=("DCGM_FI_PROF_SM_ACTIVE{$H,gpu=\"0\",job=\"tjob\",team=\"vision\",user=\"bob\"}=0.01@$t"
        "DCGM_FI_PROF_SM_ACTIVE{$H,gpu=\"1\"}=0.9@$t"
        "DCGM_FI_PROF_SM_ACTIVE{$H,gpu=\"2\",job=\"busy\"}=0.8@$t"
        "gpulse_gpu_process_memory_bytes{$H,gpu=\"3\",pid=\"4242\",comm=\"python\",job=\"zjob\"}=2e9@$t")
done
series+=("gpulse_job_end_time_seconds{Hostname=\"n1\",job=\"zjob\",pid=\"4241\"}=$((slot_ms / 1000 - 300))@$((slot_ms - 55000))")
out=$(rw write "$SERVER_URL" "${series[@]}")
[ "${out%% *}" = 204 ] || fail "writing the planted series: $out"
stop_server

# 2. Restarted with the report due this minute: sent at start.
sched=$(python3 -c "import time; print(time.strftime('%a %H:%M', time.gmtime($slot_ms / 1000)).lower())")
cat >"$TMP/gpulse.yaml" <<YAML
server:
  funnel_report_receivers: mail
  funnel_report_schedule: "$sched"
notify:
  external_url: http://gpulse.test:9402
  receivers:
    - name: mail
      type: email
      smtp: smtp://127.0.0.1:$SMTP_PORT
      tls: starttls
      ca_file: $TMP/cert.pem
      username: gpulse
      password: s3cret
      from: gpulse@example.com
      to: [finops@example.com, ml-leads@example.com]
    - name: hook
      type: webhook
      url: http://127.0.0.1:9/
YAML
SERVER_DATA=$TMP/data start_server --config "$TMP/gpulse.yaml"
wait_until 30 grep -q 'msg="weekly funnel report sent" receiver=mail slot=[0-9]* status=250' "$SERVER_LOG" ||
    { cat "$SERVER_LOG" "$TMP/smtp.log" >&2; fail "the report was not sent (above)"; }
end_s=$((slot_ms / 1000))
curl -sf "$SERVER_URL/api/v1/fleet/funnel?start=$((end_s - 7 * 86400))&end=$end_s" >"$TMP/funnel" ||
    fail "the funnel over the report's week"
$PY - "$TMP/mail" "$TMP/funnel" "$slot_ms" <<'PY' || fail "the report differs from the API (above)"
import email, email.policy, glob, json, re, sys, time
files = sorted(glob.glob(sys.argv[1] + "/*.eml"))
assert len(files) == 1, files
m = email.message_from_binary_file(open(files[0], "rb"), policy=email.policy.default)
env = json.load(open(files[0][:-4] + ".json"))
assert sorted(env["rcpt_tos"]) == ["finops@example.com", "ml-leads@example.com"], env
text = m.get_body(("plain",)).get_content()
html = m.get_body(("html",)).get_content()
f = json.load(open(sys.argv[2]))["data"]
end = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(int(sys.argv[3]) // 1000))
money = lambda v: "$%.2f" % v
assert m["subject"] == "[gpulse] fleet funnel to %s: %s idle" % (end, money(f["idle_cost"])), m["subject"]
for k in ("total", "allocated", "active", "effective"):
    line = "  %-12s  %-12s  %.2f" % (k, "%.2f" % f["gpus"][k], f["gpu_hours"][k])
    assert line in text, (line, text)
    assert "<td>%s</td><td>%.2f</td>" % (k, f["gpus"][k]) in html, k
for k, label in (("idle_cost", "idle cost"), ("idle_cost_allocated", "allocated but idle"),
                 ("idle_cost_unallocated", "unallocated"), ("cost", "all GPU time")):
    assert "  %-20s  %s" % (label, money(f[k])) in text, (label, text)
for by in ("job", "user", "team"):
    for g in f["idle_cost_by"][by]:
        name = g[by] or "unknown"
        assert re.search(r"^  %s +%s +%.2f +%s$" % (re.escape(name), re.escape(money(g["idle_cost"])),
                         g["idle_gpu_hours"], re.escape(money(g["cost"]))), text, re.M), (by, name, text)
# the planted figures, independently: 5 samples 10 s apart at 3.5 USD/h
assert f["idle_cost_by"]["team"][0]["team"] == "vision", f["idle_cost_by"]["team"]
assert abs(f["idle_cost_unallocated"] - 50 * 3.5 / 3600) < 1e-9, f
assert len(f["zombies"]) == 1 and "Zombie processes: 1 holding 1.86 GiB" in text, text
assert "http://gpulse.test:9402/#/fleet?funnel_end=%d" % (int(sys.argv[3]) // 1000) in text
print("  - report: %s; %d jobs, %d zombie" % (m["subject"], len(f["idle_cost_by"]["job"]), len(f["zombies"])))
PY
stop_server

# 3. Started again: the week was sent; nothing more.
SERVER_DATA=$TMP/data start_server --config "$TMP/gpulse.yaml"
sleep 2
[ "$(ls "$TMP/mail"/*.eml | wc -l)" -eq 1 ] || fail "the report was sent again after a restart"
stop_server
note "sent once at the schedule, figures equal the API's; not again after a restart"

# 4. Configuration errors stop the server with a clear message.
bad() {
    local want=$1; shift
    if "$GPULSE" server --listen "127.0.0.1:$(free_port)" --data "$TMP/bad" --config "$TMP/gpulse.yaml" "$@" \
        >"$TMP/bad.log" 2>&1; then fail "the server started with $*"; fi
    grep -q "$want" "$TMP/bad.log" || fail "want '$want': $(cat "$TMP/bad.log")"
}
bad "funnel_report_schedule: 'someday 8:00' is not DAY HH:MM" --funnel-report-schedule "someday 8:00"
bad "funnel_report_receivers: receiver 'hook' is not of type email" --funnel-report-receivers hook
bad "funnel_report_receivers: no notify receiver named 'nobody'" --funnel-report-receivers "mail, nobody"
note "a bad schedule or receiver stops the server"
