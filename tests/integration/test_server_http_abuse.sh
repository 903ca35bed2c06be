#!/usr/bin/env bash
# HTTP abuse against the real server (issue 15, findings 8, 9, 11): 600
# slow connections from one address (127.0.0.1) while a remote-write
# pusher on another (127.0.0.2) keeps writing, and every write succeeds;
# the two request-smuggling framings, each hiding a second write, refused
# with the connection closed and the hidden write never stored; early
# answers (413 over max_body, 401 without the token) read by clients that
# write their whole body first. The counters and log lines of each.
source "$(dirname "$0")/lib.sh"
TOKEN=abuse-token-0123456789
start_server --write-token "$TOKEN"
abuse() { python3 "$ROOT/tests/integration/http_abuse.py" "$@"; }

out=$(abuse slow "$SERVER_PORT" 600 8 "$TOKEN")
note "600 slow connections from 127.0.0.1, pusher on 127.0.0.2: $out"
held=$(sed -n 's/.*held=\([0-9]*\).*/\1/p' <<<"$out")
writes=$(sed -n 's/.* writes=\([0-9]*\).*/\1/p' <<<"$out")
ok=$(sed -n 's/.*writes_ok=\([0-9]*\).*/\1/p' <<<"$out")
[ "$writes" -ge 20 ] || fail "the pusher made only $writes writes"
[ "$ok" = "$writes" ] || fail "writes from another address failed while one address held slow connections: $out"
[ "$held" -le 64 ] || fail "one address held $held connections, over max_connections_per_address (64)"
m=$(curl -sf "$SERVER_URL/metrics")
refused=$(awk '/^gpulse_server_http_connections_refused_total\{reason="max_per_address"\}/ {print $2}' <<<"$m")
[ "${refused:-0}" -ge $((600 - 64)) ] || fail "per-address refusals counted: '$refused', want >= 536"
grep -q 'msg="connection refused: too many open" reason=max_per_address client=127.0.0.1' "$SERVER_LOG" ||
    fail "the refused connections were not logged"
[ "$(grep -c 'connection refused: too many open' "$SERVER_LOG")" -lt 30 ] ||
    fail "refused connections flood the log"

out=$(abuse smuggle "$SERVER_PORT" "$TOKEN" abuse_smuggled)
note "smuggling framings: $out"
[ "$out" = "cl_te=HTTP/1.1_400_Bad_Request cl_te_closed=1 cl_twice=HTTP/1.1_400_Bad_Request cl_twice_closed=1" ] ||
    fail "framing not refused with one 400 and the connection closed: $out"
series=$(curl -sf "$SERVER_URL/api/v1/series?match[]=abuse_smuggled")
[ "$series" = '{"status":"success","data":[]}' ] || fail "a hidden write was stored: $series"
m=$(curl -sf "$SERVER_URL/metrics")
for r in content_length_and_transfer_encoding content_length_repeated; do
    grep -q "^gpulse_server_http_framing_refused_total{reason=\"$r\"} 1$" <<<"$m" || fail "$r not counted once"
    grep -q "request refused for its framing: connection closed\" reason=$r status=400" "$SERVER_LOG" ||
        fail "$r not logged"
done

out=$(abuse early "$SERVER_PORT" "$TOKEN")
note "bodies written whole before reading: $out"
[ "$out" = "too_large=413 no_token=401" ] || fail "an early answer did not reach its client: $out"
m=$(curl -sf "$SERVER_URL/metrics")
drained=$(awk '/^gpulse_server_http_lingering_closes_total\{outcome="drained"\}/ {print $2}' <<<"$m")
[ "${drained:-0}" -ge 2 ] || fail "lingering closes counted: '$drained'"

out=$(rw write "$SERVER_URL" --token "$TOKEN" "after_abuse{a=\"b\"}=1@$(date +%s%3N)")
[ "${out%% *}" = 204 ] || fail "write after the abuse: $out"
stop_server
