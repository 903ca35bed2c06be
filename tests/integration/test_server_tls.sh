#!/usr/bin/env bash
# TLS with a throwaway certificate (CN and SAN 127.0.0.1): the API,
# remote write and /metrics over HTTPS, verified against the certificate;
# plain HTTP to the TLS port gets no answer; a mismatched key stops the
# server with exit status 2 and a message naming the problem. Then
# Debian's Prometheus remote-writes to the server over HTTPS.
source "$(dirname "$0")/lib.sh"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 ||
    fail "openssl could not make a certificate"
SERVER_SCHEME=https SERVER_CURL="--cacert $TMP/cert.pem" \
    start_server --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem"
grep -q 'tls=on' "$SERVER_LOG" || fail "start log does not say tls=on"
grep -q "msg=\"dashboard ready: open the url in a browser\" url=https://127.0.0.1:$SERVER_PORT/\$" "$SERVER_LOG" ||
    { cat "$SERVER_LOG"; fail "start log lacks the dashboard's https url"; }
curl -sf --cacert "$TMP/cert.pem" "$SERVER_URL/api/v1/health" | grep -c '"ok"' >/dev/null || fail "health over TLS"
curl -sf --cacert "$TMP/cert.pem" "$SERVER_URL/metrics" | grep -c gpulse_server_series >/dev/null || fail "/metrics over TLS"
python3 - "$SERVER_PORT" "$TMP/cert.pem" "$ROOT/tests/integration" <<'PY' || fail "remote write over TLS"
import http.client, ssl, sys, time
sys.path.insert(0, sys.argv[3])
import rw
ctx = ssl.create_default_context(cafile=sys.argv[2])
body = rw.snappy_literal(rw.write_request([([("__name__", "tls_probe"), ("a", "b")], [(1.5, int(time.time() * 1000))])]))
c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[1]), context=ctx, timeout=10)
c.request("POST", "/api/v1/write", body=body, headers={"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"})
r = c.getresponse()
print("  - remote write over TLS:", r.status)
sys.exit(0 if r.status == 204 else 1)
PY
curl -s --max-time 5 "http://127.0.0.1:$SERVER_PORT/api/v1/health" | grep -c '"ok"' >/dev/null && fail "plain HTTP answered on the TLS port"
curl -s --max-time 5 "$SERVER_URL/api/v1/health" >/dev/null && fail "an unverified certificate was accepted"

# Debian's Prometheus, remote-writing over HTTPS with the certificate as CA.
if command -v prometheus >/dev/null; then
    PP=$(free_port)
    cat >"$TMP/prom.yml" <<YML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: self
    static_configs: [{targets: ["127.0.0.1:$PP"]}]
remote_write:
  - url: $SERVER_URL/api/v1/write
    tls_config: {ca_file: $TMP/cert.pem}
    queue_config: {batch_send_deadline: 1s}
YML
    prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
        --web.listen-address="127.0.0.1:$PP" >"$TMP/prom.log" 2>&1 &
    prom=$!
    PIDS+=($prom)
    wait_until 60 sh -c "curl -sf --cacert $TMP/cert.pem $SERVER_URL/metrics |
        grep -qE '^gpulse_server_samples_ingested_total [0-9]{3,}'" ||
        { tail -20 "$TMP/prom.log"; fail "Prometheus's remote write over TLS never arrived"; }
    note "Prometheus remote-wrote over TLS"
    # Stop Prometheus while its receiver is still up: otherwise it spends
    # its one-minute flush deadline retrying a server that is gone.
    kill "$prom"; wait "$prom" 2>/dev/null || true
fi
stop_server

# A key that does not match the certificate: exit 2, a message, no listener.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout "$TMP/other.pem" -out "$TMP/other-cert.pem" \
    -subj /CN=x >/dev/null 2>&1
rc=0
"$GPULSE" server --listen "127.0.0.1:$(free_port)" --data "$TMP/d2" --tls-cert "$TMP/cert.pem" \
    --tls-key "$TMP/other.pem" 2>"$TMP/err" || rc=$?
[ $rc -eq 2 ] || fail "mismatched key: exit $rc, want 2"
grep -q 'TLS certificate or key rejected' "$TMP/err" || { cat "$TMP/err"; fail "no clear TLS message"; }
note "$(cat "$TMP/err")"
rc=0
"$GPULSE" server --listen "127.0.0.1:$(free_port)" --data "$TMP/d2" --tls-cert "$TMP/cert.pem" 2>"$TMP/err" || rc=$?
[ $rc -eq 2 ] || fail "cert without key: exit $rc"
grep -q 'tls_cert and tls_key' "$TMP/err" || fail "cert without key: $(cat "$TMP/err")"
