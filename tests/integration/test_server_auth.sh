#!/usr/bin/env bash
# Bearer tokens: with both configured the server serves the configured
# (non-loopback) address; writes need the write token, reads the read
# token, 401 with WWW-Authenticate: Bearer otherwise; health stays open.
# Without a token for every route, a non-loopback listen falls back to
# 127.0.0.1 with a warning that says why.
source "$(dirname "$0")/lib.sh"
printf 'w-Secret_1\n' >"$TMP/write.token"
now() { date +%s%3N; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# Both tokens (one from a file): the wildcard address is kept.
PORT=$(free_port)
SERVER_PORT=$PORT
"$GPULSE" server --listen "0.0.0.0:$PORT" --data "$TMP/d1" --write-token-file "$TMP/write.token" \
    --read-token r-Secret_2 >"$TMP/s1.log" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
SERVER_LOG=$TMP/s1.log
U=http://127.0.0.1:$PORT
wait_until 30 curl -sf "$U/api/v1/health" || { cat "$TMP/s1.log"; fail "server did not come up"; }
grep -q 'msg="listening" listen=0.0.0.0:' "$TMP/s1.log" || { cat "$TMP/s1.log"; fail "not listening on 0.0.0.0"; }
grep -q 'loopback only' "$TMP/s1.log" && fail "fell back to loopback although both tokens are set"
# 0.0.0.0 is no address to browse to: the url names this host, and loopback.
grep -q "msg=\"dashboard ready: open the url in a browser\" url=http://$(hostname):$PORT/ local=http://127.0.0.1:$PORT/\$" \
    "$TMP/s1.log" || { cat "$TMP/s1.log"; fail "start log lacks a usable dashboard url for 0.0.0.0"; }

out=$(rw write "$U" "auth_probe{a=\"1\"}=1@$(now)")
[ "${out%% *}" = 401 ] || fail "write without a token: $out"
out=$(rw write "$U" --token wrong "auth_probe{a=\"1\"}=1@$(now)")
[ "${out%% *}" = 401 ] || fail "write with a wrong token: $out"
out=$(rw write "$U" --token r-Secret_2 "auth_probe{a=\"1\"}=1@$(now)")
[ "${out%% *}" = 401 ] || fail "write with the read token: $out"
out=$(rw write "$U" --token w-Secret_1 "auth_probe{a=\"1\"}=1@$(now)")
[ "${out%% *}" = 204 ] || fail "write with the write token: $out"
curl -s -D "$TMP/h" -o "$TMP/b" "$U/api/v1/labels"
grep -q '"errorType":"unauthorized"' "$TMP/b" || fail "401 body: $(cat "$TMP/b")"
grep -qi '^WWW-Authenticate: Bearer' "$TMP/h" || fail "401 without WWW-Authenticate: Bearer"
head -1 "$TMP/h" | grep -c ' 401' >/dev/null || fail "read without a token was not 401"
[ "$(code -H 'Authorization: Bearer w-Secret_1' "$U/api/v1/labels")" = 401 ] || fail "read with the write token"
[ "$(code -H 'Authorization: Bearer r-Secret_2' "$U/api/v1/labels")" = 200 ] || fail "read with the read token"
[ "$(code -H 'Authorization: Bearer r-Secret_2' "$U/api/v1/series?match[]=auth_probe")" = 200 ] ||
    fail "series with the read token"
[ "$(code "$U/metrics")" = 401 ] || fail "/metrics without a token"
[ "$(code -H 'Authorization: bearer r-Secret_2' "$U/metrics")" = 200 ] || fail "/metrics with the read token"
[ "$(code "$U/api/v1/health")" = 200 ] || fail "health must stay open"
curl -sf -H 'Authorization: Bearer r-Secret_2' "$U/metrics" |
    grep -c '^gpulse_server_write_requests_refused_total{reason="unauthorized"} 3' >/dev/null ||
    fail "unauthorized writes not counted"
note "tokens enforced per route; health open"
stop_server

# Only a write token: a wildcard listen falls back to loopback, with a warning.
PORT=$(free_port)
"$GPULSE" server --listen "0.0.0.0:$PORT" --data "$TMP/d2" --write-token x >"$TMP/s2.log" 2>&1 &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
SERVER_LOG=$TMP/s2.log
wait_until 30 curl -sf "http://127.0.0.1:$PORT/api/v1/health" || { cat "$TMP/s2.log"; fail "no server"; }
grep -q 'level=warn .*loopback only.*configured=0.0.0.0:'"$PORT"' listen=127.0.0.1:'"$PORT"'.*read_token not set' \
    "$TMP/s2.log" || { cat "$TMP/s2.log"; fail "no loopback fallback warning"; }
ss -ltn | grep -c "127.0.0.1:$PORT " >/dev/null || fail "not bound to 127.0.0.1:$PORT"
ss -ltn | grep -c "0.0.0.0:$PORT " >/dev/null && fail "bound to 0.0.0.0 without a read token"
note "$(grep -o 'msg="serving on loopback.*' "$TMP/s2.log")"
stop_server

# Loopback without tokens: no warning, everything open.
start_server
grep -q 'loopback only' "$SERVER_LOG" && fail "warned on a loopback address"
out=$(rw write "$SERVER_URL" "auth_probe{a=\"1\"}=1@$(now)")
[ "${out%% *}" = 204 ] || fail "open write on loopback: $out"
stop_server
