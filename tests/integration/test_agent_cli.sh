#!/usr/bin/env bash
# The command line: --help from the key table, exit 2 with a one-line
# message for usage and config errors, config file + flag precedence.
source "$(dirname "$0")/lib.sh"

"$GPULSE" agent --help >"$TMP/help" || fail "--help should exit 0"
for flag in config listen interval simulate seed nvml-library gpm proc-root sysfs-root hostname \
            hostname-label process-series log-level; do
    grep -q -- "--$flag" "$TMP/help" || fail "--help does not mention --$flag"
done
"$GPULSE" version | grep '^gpulse [0-9]' >/dev/null || fail "version"

expect_usage() { # expect_usage PATTERN ARGS...
    local pat=$1; shift
    local rc=0
    "$GPULSE" "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [ $rc -eq 2 ] || fail "'$*' exited $rc, want 2"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err"; fail "'$*' should print one line"; }
    grep -q -- "$pat" "$TMP/err" || { cat "$TMP/err"; fail "'$*': message lacks '$pat'"; }
}
expect_usage "unknown command 'nope'" nope
expect_usage "unknown flag '--bogus'" agent --bogus
expect_usage "interval must be between" agent --interval 10ms
expect_usage "invalid duration" agent --interval fast
expect_usage "needs a value" agent --listen
expect_usage "bad port" agent --listen 127.0.0.1:99999
expect_usage "process_series must be" agent --process-series some
expect_usage "cannot open config" agent --config /nonexistent.yaml

printf 'agent:\n  interval: 2s\n  intervl: 1s\n' >"$TMP/typo.yaml"
expect_usage "line 3: unknown key 'agent.intervl'" agent --config "$TMP/typo.yaml"
printf 'agent:\n  gpm: maybe\n' >"$TMP/bad.yaml"
expect_usage "line 2: 'gpm': expected true or false" agent --config "$TMP/bad.yaml"
printf 'agent: [1, 2\n' >"$TMP/broken.yaml"
expect_usage "config '$TMP/broken.yaml': line" agent --config "$TMP/broken.yaml"

# File sets 250ms; the flag wins over the file wherever it stands.
printf '# other roles have their own sections\nserver:\n  data: /x\nagent:\n  interval: 250ms\n  log_level: warn\n' >"$TMP/ok.yaml"
start_agent --interval 200ms --config "$TMP/ok.yaml" --gpm=false
curl -sf "http://127.0.0.1:$AGENT_PORT/api/v1/snapshot" >/dev/null
grep -q 'level=info' "$AGENT_LOG" && fail "log_level: warn from the file was not applied"
stop_agent
note "cli ok"
