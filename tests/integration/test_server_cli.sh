#!/usr/bin/env bash
# The `gpulse server` and `gpulse up` command lines: --help, exit status
# 2 with a one-line message for usage and config errors, 1 for runtime
# failures (port taken, data directory unusable), SIGTERM -> exit 0, and
# the start log: address, data dir, what was recovered after a restart.
source "$(dirname "$0")/lib.sh"
for cmd in server up; do
    "$GPULSE" $cmd --help >"$TMP/help" || fail "$cmd --help failed"
    grep -q -- '--data' "$TMP/help" && grep -q -- '--listen' "$TMP/help" || fail "$cmd --help lacks flags"
    rc=0; "$GPULSE" $cmd --bogus 2>"$TMP/err" || rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "$cmd --bogus: exit $rc, $(cat "$TMP/err")"
    grep -q "unknown flag '--bogus'" "$TMP/err" || fail "$cmd --bogus: $(cat "$TMP/err")"
    printf 'server:\n  max_body: huge\n' >"$TMP/bad.yaml"
    rc=0; "$GPULSE" $cmd --config "$TMP/bad.yaml" 2>"$TMP/err" || rc=$?
    [ $rc -eq 2 ] && grep -q "line 2" "$TMP/err" || fail "$cmd bad config: exit $rc, $(cat "$TMP/err")"
    rc=0; "$GPULSE" $cmd --max-inflight-bytes 1MiB 2>"$TMP/err" || rc=$?
    [ $rc -eq 2 ] && grep -q "max_inflight_bytes" "$TMP/err" || fail "$cmd cross-check: $(cat "$TMP/err")"
done
grep -q -- '--simulate' "$TMP/help" && grep -q -- '--interval' "$TMP/help" || fail "up --help lacks agent flags"
[ "$(grep -c -- '^  --listen ' "$TMP/help")" -eq 1 ] || fail "up --help shows --listen twice"
note "--help, usage and config errors (exit 2)"

start_server
grep -q "msg=\"listening\" listen=127.0.0.1:$SERVER_PORT .* data=$SERVER_DATA" "$SERVER_LOG" ||
    { cat "$SERVER_LOG"; fail "start log lacks address or data dir"; }
grep -q 'msg="store open" .*series=0 replayed_samples=0 recovery_s=' "$SERVER_LOG" ||
    { cat "$SERVER_LOG"; fail "start log lacks what was recovered"; }
# One line gives the dashboard's URL, with the port bound, and it answers.
url=$(sed -n 's/.*msg="dashboard ready: open the url in a browser" url=\([^ ]*\)$/\1/p' "$SERVER_LOG")
[ "$url" = "http://127.0.0.1:$SERVER_PORT/" ] || { cat "$SERVER_LOG"; fail "start log lacks the dashboard's url"; }
curl -sf "$url" | grep -i '<html' >/dev/null || fail "the logged url $url serves no page"
# The port is taken: a second server exits 1 with a message.
rc=0; "$GPULSE" server --listen "127.0.0.1:$SERVER_PORT" --data "$TMP/other" 2>"$TMP/err" || rc=$?
[ $rc -eq 1 ] && grep -q "cannot listen" "$TMP/err" || fail "port taken: exit $rc, $(cat "$TMP/err")"
t=$(date +%s%3N)
for i in 1 2 3; do
    out=$(rw write "$SERVER_URL" "cli_probe{n=\"$i\"}=$i@$t" "cli_probe{n=\"$i\"}=$((i * 10))@$((t + 1000))")
    [ "${out%% *}" = 204 ] || fail "write: $out"
done
stop_server
grep -q 'msg="shutting down" signal=15' "$SERVER_LOG" || fail "no shutdown log"
# Restart on the same data: the log says what came back.
start_server
grep -q 'msg="store open" .*series=3 ' "$SERVER_LOG" || { cat "$SERVER_LOG"; fail "restart did not recover 3 series"; }
note "$(grep -o 'msg="store open".*' "$SERVER_LOG")"
stop_server
# A data directory that is a file: exit 1.
touch "$TMP/afile"
rc=0; "$GPULSE" server --listen "127.0.0.1:$(free_port)" --data "$TMP/afile" 2>"$TMP/err" || rc=$?
[ $rc -eq 1 ] || fail "data dir is a file: exit $rc, $(cat "$TMP/err")"
note "runtime failures exit 1: $(cat "$TMP/err")"
