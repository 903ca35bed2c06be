#!/usr/bin/env bash
# test_notify_email.sh - the email channel end to end against a real SMTP
# server on 127.0.0.1 (smtp_server.py, Debian's python3-aiosmtpd) with
# STARTTLS and AUTH: the received message parses as MIME (Python's email
# package, policy=default) with both parts, the right headers and
# envelope; a wrong password is FAIL 535 without the password in the
# output; a 451 and a server that is down are RETRY; a 550 recipient is
# FAIL; a server that does not offer STARTTLS gets nothing in clear.
# Needs build/asan/libgpulse.a (make -s build/asan/libgpulse.a).
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3 # Debian's, with python3-aiosmtpd
LIB=$ROOT/build/asan/libgpulse.a
[ -f "$LIB" ] || fail "build $LIB first"

# The driver, built as the Makefile builds the ASan binaries.
PKGS="libmicrohttpd jansson yaml-0.1 snappy sqlite3 libcurl gnutls"
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined \
    -fno-omit-frame-pointer -fno-sanitize-recover=undefined -I"$ROOT/src" $(pkg-config --cflags $PKGS) \
    -o "$TMP/email_send" "$ROOT/tests/integration/email_send.c" "$LIB" $(pkg-config --libs $PKGS) \
    -ldl -lm -pthread || fail "email_send did not build"

# A throwaway certificate for 127.0.0.1.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null ||
    fail "openssl could not make a certificate"
USER_=gpulse
PASS="s3cret-Pa55+w/rd"
FROM=gpulse@example.com
TO=oncall@example.com,ml-team@example.com

# start_smtp DIR ARGS...: sets SMTP_PORT, SMTP_PID.
start_smtp() {
    local dir=$1; shift
    mkdir -p "$dir"
    SMTP_PORT=$(free_port)
    "$PY" "$ROOT/tests/integration/smtp_server.py" --port "$SMTP_PORT" --dir "$dir" \
        --user "$USER_" --password "$PASS" "$@" >"$dir.log" 2>&1 &
    SMTP_PID=$!
    PIDS+=("$SMTP_PID")
    wait_until 10 grep -q ready "$dir.log" || { cat "$dir.log" >&2; fail "smtp_server did not start"; }
}
stop_smtp() { kill "$SMTP_PID"; wait "$SMTP_PID" 2>/dev/null || true; }

# send OUTFILE ARGS...: runs the driver; its exit code in SEND_RC.
send() {
    local out=$1; shift
    SEND_RC=0
    "$TMP/email_send" "$@" >"$out" 2>&1 || SEND_RC=$?
    cat "$out" | sed 's/^/      /'
}

no_password_in() { ! grep -qF -- "$PASS" "$1" && ! grep -qF -- "s3cret-Pa55%2Bw%2Frd" "$1"; }

# 1. STARTTLS + AUTH: delivered, and the message is right.
start_smtp "$TMP/ok" --cert "$TMP/cert.pem" --key "$TMP/key.pem"
SUBJECT='[gpulse] {status}: Überlauf ✓ 日本語 {count} alerts for {group}'
send "$TMP/ok.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO" \
    --ca "$TMP/cert.pem" --subject "$SUBJECT"
[ "$SEND_RC" -eq 0 ] || fail "send over STARTTLS did not succeed"
grep -q "^result=OK status=250 rc=0 " "$TMP/ok.out" || fail "no OK 250 outcome"
no_password_in "$TMP/ok.out" || fail "the password is in the output"
[ -f "$TMP/ok/1.json" ] || fail "the server saved no message"
"$PY" - "$TMP/ok/1.eml" "$TMP/ok/1.json" <<'EOF' || fail "the received message is not right"
import email, email.utils, json, re, sys
from email import policy
raw = open(sys.argv[1], "rb").read()
env = json.load(open(sys.argv[2]))
assert env["tls"] is True, env
assert env["login"] == "gpulse", env
assert env["mail_from"] == "gpulse@example.com", env
assert env["rcpt_tos"] == ["oncall@example.com", "ml-team@example.com"], env
assert b"\n" not in raw.replace(b"\r\n", b""), "a bare LF"
assert all(len(l) <= 76 for l in raw.split(b"\r\n")), "a line over 76"
m = email.message_from_bytes(raw, policy=policy.default)
assert m.defects == [], m.defects
want = "[gpulse] FIRING: Überlauf ✓ 日本語 2 alerts for job bert-1"
assert str(m["Subject"]) == want, repr(str(m["Subject"]))
assert "=?UTF-8?" in raw.decode("ascii").split("\r\n\r\n")[0], "the subject is not encoded"
d = email.utils.parsedate_to_datetime(str(m["Date"]))
assert d.utcoffset().total_seconds() == 0, d
import datetime
assert abs((datetime.datetime.now(datetime.timezone.utc) - d).total_seconds()) < 120, d
mid = str(m["Message-ID"])
assert re.fullmatch(r"<[0-9a-f]{32}@[A-Za-z0-9.-]+>", mid), mid
assert str(m["From"]) == "gpulse@example.com"
assert [a.addr_spec for a in m["To"].addresses] == ["oncall@example.com", "ml-team@example.com"]
assert m["MIME-Version"] == "1.0"
assert m.get_content_type() == "multipart/alternative"
parts = list(m.iter_parts())
assert [p.get_content_type() for p in parts] == ["text/plain", "text/html"], parts
for p in parts:
    assert p["Content-Transfer-Encoding"] == "quoted-printable"
    assert p.get_content_charset() == "utf-8"
    for d_ in p.defects:
        raise AssertionError(d_)
text, html = parts[0].get_content(), parts[1].get_content()
for s in ["FIRING  critical  oom_forecast", "Mémoire épuisée dans 10 min — rank 0",
          "job=bert-1 rank=0 node=n1 gpu=3", "free 1.2 GiB, falling 300 MiB/min",
          "https://runbooks.example/oom", "http://gpulse.example:9402/jobs/bert-1",
          "FIRING  warning  straggler", "rank 5 is 40% slower <than> the median"]:
    assert s in text, s
assert "rank 5 is 40% slower &lt;than&gt; the median" in html
assert "<than>" not in html
assert 'href="http://gpulse.example:9402/jobs/bert-1"' in html
assert "Mémoire épuisée" in html
EOF
note "delivered over STARTTLS with AUTH: MIME, headers and envelope right"

# 2. A wrong password: FAIL with 535, the password nowhere.
send "$TMP/badpw.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "wrong-$PASS" "$FROM" "$TO" \
    --ca "$TMP/cert.pem"
[ "$SEND_RC" -eq 1 ] || fail "a wrong password was taken"
grep -q "^result=FAIL status=535 " "$TMP/badpw.out" || fail "a wrong password is not FAIL 535"
no_password_in "$TMP/badpw.out" || fail "the password is in the output"
[ ! -f "$TMP/ok/2.json" ] || fail "a message was saved after a failed AUTH"
note "wrong password: FAIL 535, no password in the output"

# 3. The certificate does not verify without its CA: refused, nothing sent.
send "$TMP/nocert.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO"
grep -q "^result=FAIL status=0 .*certificate" "$TMP/nocert.out" || fail "an unverified certificate was accepted"
[ ! -f "$TMP/ok/2.json" ] || fail "a message was saved with an unverified certificate"
# ... unless insecure_skip_verify is set.
send "$TMP/insecure.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO" --insecure
grep -q "^result=OK status=250 " "$TMP/insecure.out" || fail "insecure_skip_verify did not send"
[ -f "$TMP/ok/2.json" ] || fail "no message with insecure_skip_verify"
note "certificate verified; insecure_skip_verify only when set"
stop_smtp

# 4. The server down: RETRY.
send "$TMP/down.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO" \
    --ca "$TMP/cert.pem"
grep -q "^result=RETRY status=0 " "$TMP/down.out" || fail "a server that is down is not RETRY"
note "server down: RETRY"

# 5. 451 on DATA: RETRY with the code; AUTH always rejected: FAIL 535; 550 recipient: FAIL.
start_smtp "$TMP/temp" --cert "$TMP/cert.pem" --key "$TMP/key.pem" --mode tempfail
send "$TMP/temp.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO" --ca "$TMP/cert.pem"
grep -q "^result=RETRY status=451 " "$TMP/temp.out" || fail "451 is not RETRY 451"
stop_smtp
start_smtp "$TMP/rauth" --cert "$TMP/cert.pem" --key "$TMP/key.pem" --mode reject-auth
send "$TMP/rauth.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO" --ca "$TMP/cert.pem"
grep -q "^result=FAIL status=535 " "$TMP/rauth.out" || fail "a rejected AUTH is not FAIL 535"
no_password_in "$TMP/rauth.out" || fail "the password is in the output"
stop_smtp
start_smtp "$TMP/rcpt" --cert "$TMP/cert.pem" --key "$TMP/key.pem" --mode reject-rcpt
send "$TMP/rcpt.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO" --ca "$TMP/cert.pem"
grep -q "^result=FAIL status=550 " "$TMP/rcpt.out" || fail "a rejected recipient is not FAIL 550"
stop_smtp
for d in temp rauth rcpt; do
    [ -z "$(ls "$TMP/$d")" ] || fail "the $d server saved a message"
done
note "451: RETRY; AUTH rejected: FAIL 535; recipient rejected: FAIL 550"

# 6. No STARTTLS offered while it is required: refused, nothing sent in clear.
start_smtp "$TMP/clear"
send "$TMP/clear.out" "smtp://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO"
[ "$SEND_RC" -eq 1 ] || fail "sent without STARTTLS"
grep -q "^result=FAIL status=0 .*STARTTLS" "$TMP/clear.out" || fail "no STARTTLS refusal"
[ -z "$(ls "$TMP/clear")" ] || fail "a message went in clear"
# tls: none sends in clear only because it is configured so.
send "$TMP/none.out" "smtp://127.0.0.1:$SMTP_PORT" none "$USER_" "$PASS" "$FROM" "$TO"
grep -q "^result=OK status=250 " "$TMP/none.out" || fail "tls none did not send"
"$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["tls"] is False' "$TMP/clear/1.json" ||
    fail "tls none: the envelope is wrong"
stop_smtp
# A URL that contradicts tls is a configuration error, not a send.
send "$TMP/mismatch.out" "smtps://127.0.0.1:$SMTP_PORT" starttls "$USER_" "$PASS" "$FROM" "$TO"
grep -q "^result=FAIL status=0 rc=-6 " "$TMP/mismatch.out" || fail "smtps:// with tls starttls was not refused"
note "STARTTLS required and not offered: refused; none only when configured"

echo "PASS test_notify_email"
