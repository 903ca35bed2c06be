#!/usr/bin/env bash
# Bad input against a running server: malformed snappy and protobuf,
# absurd lengths, 100k labels, invalid label names, out-of-order and
# conflicting samples, wrong encodings; a 1 GiB body (Content-Length:
# 413 before it is read; chunked: cut off as it passes max_body, never
# buffered whole); a client trickling a byte a second (cut off at
# read_timeout while others are served). Afterwards the server still
# answers health and still ingests.
source "$(dirname "$0")/lib.sh"
start_server --read-timeout 3s
rss() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }

rw bad "$SERVER_URL" || fail "a malformed request did not get its 4xx (above)"
note "malformed requests answered 400/413/415 with a reason"

rss0=$(rss)
read -r status secs sent < <(rw huge "$SERVER_URL")
note "1 GiB with Content-Length: $status after ${secs}s, $sent bytes sent"
[ "$status" = 413 ] || fail "1 GiB body with Content-Length got '$status', want 413"
awk -v s="$secs" 'BEGIN {exit !(s < 2)}' || fail "413 took ${secs}s"
read -r status secs sent < <(rw huge "$SERVER_URL" --chunked)
note "1 GiB chunked: $status after ${secs}s, $sent bytes sent"
[ "$status" = cut ] || [ "$status" = 413 ] || fail "1 GiB chunked body got '$status', want it cut off"
[ "$sent" -lt $((256 << 20)) ] || fail "the server read $sent bytes of a chunked body over a 16 MiB limit"
# curl streaming from /dev/zero, both ways. `-T -` sends chunked, so
# curl's own Transfer-Encoding is dropped for the Content-Length run;
# with both (curl's default) the framing is ambiguous: 400 (issue 15).
code=$(head -c 1G /dev/zero | timeout 20 curl -s -o /dev/null -w '%{http_code}' -X POST -T - \
    -H 'Transfer-Encoding:' -H 'Content-Length: 1073741824' -H 'Content-Encoding: snappy' \
    "$SERVER_URL/api/v1/write" || true)
[ "$code" = 413 ] || fail "curl's 1 GiB body got '$code', want 413"
code=$(head -c 1G /dev/zero | timeout 20 curl -s -o /dev/null -w '%{http_code}' -X POST -T - \
    -H 'Content-Length: 1073741824' -H 'Content-Encoding: snappy' "$SERVER_URL/api/v1/write" || true)
[ "$code" = 400 ] || fail "curl's 1 GiB body with Content-Length and chunked got '$code', want 400"
start=$SECONDS
head -c 1G /dev/zero | timeout 20 curl -s -o /dev/null -X POST -T - -H 'Transfer-Encoding: chunked' \
    -H 'Content-Encoding: snappy' "$SERVER_URL/api/v1/write" && fail "a 1 GiB chunked body was taken"
[ $((SECONDS - start)) -lt 10 ] || fail "cutting off a 1 GiB chunked body took $((SECONDS - start)) s"
rss1=$(rss)
note "server RSS ${rss0} kB -> ${rss1} kB"
# ASan keeps freed memory in quarantine; still nothing near 1 GiB.
[ $((rss1 - rss0)) -lt $((300 * 1024)) ] || fail "RSS grew by $(((rss1 - rss0) / 1024)) MiB"

# A byte a second: cut off at read_timeout (3 s here), and meanwhile
# other clients are served.
rw trickle "$SERVER_URL" >"$TMP/trickle" &
tpid=$!
sleep 1
curl -sf "$SERVER_URL/api/v1/health" >/dev/null || fail "health not served during a trickling client"
out=$(rw write "$SERVER_URL" "during_trickle{a=\"b\"}=1@$(date +%s%3N)")
[ "${out%% *}" = 204 ] || fail "write during a trickling client: $out"
wait "$tpid"
secs=$(cat "$TMP/trickle")
note "trickling client cut off after ${secs}s"
awk -v s="$secs" 'BEGIN {exit !(s >= 2.5 && s < 10)}' || fail "trickling client held for ${secs}s"

curl -sf "$SERVER_URL/api/v1/health" | grep -c '"status":"ok"' >/dev/null || fail "health not ok afterwards"
out=$(rw write "$SERVER_URL" "after_bad_input{a=\"b\"}=42@$(date +%s%3N)")
[ "${out%% *}" = 204 ] || fail "write after the bad input: $out"
m=$(curl -sf "$SERVER_URL/metrics")
echo "$m" | grep -c '^gpulse_server_samples_rejected_total{reason="out_of_order"} [1-9]' >/dev/null ||
    fail "out-of-order rejects not counted"
echo "$m" | grep -c '^gpulse_server_write_requests_refused_total{reason="too_large"} [1-9]' >/dev/null ||
    fail "413s not counted"
echo "$m" | grep -c '^gpulse_server_http_requests_total{handler="write",code="0"} [1-9]' >/dev/null ||
    fail "cut-off requests not counted"
grep -q 'too slow: connection closed' "$SERVER_LOG" || fail "the trickling client was not logged"
stop_server
