#!/usr/bin/env bash
# gpulse run's command line: --help from the key table, one-line usage
# errors with exit 2, and the live status line: redrawn in place on a
# terminal (run under script(1)), a plain line at --status-interval when
# stderr is a file, none with --quiet.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
export PYTHONPATH=$ROOT/python
W=$ROOT/tests/integration/py/rank_worker.py

"$GPULSE" run --help >"$TMP/help" || fail "--help should exit 0"
for flag in server job html json quiet report status-interval gpu-hour-price interval steps-socket; do
    grep -q -- "--$flag" "$TMP/help" || fail "--help does not mention --$flag"
done
"$GPULSE" help | grep '^  run ' >/dev/null || fail "gpulse help does not list run"

expect_usage() { # expect_usage PATTERN ARGS...
    local pat=$1; shift
    local rc=0
    "$GPULSE" run "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [ $rc -eq 2 ] || fail "'run $*' exited $rc, want 2"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || { cat "$TMP/err"; fail "'run $*' should print one line"; }
    grep -q -- "$pat" "$TMP/err" || { cat "$TMP/err"; fail "'run $*': message lacks '$pat'"; }
}
expect_usage "no command" 
expect_usage "no command" --quiet --
expect_usage "unexpected argument 'true' (the command goes after '--'" true
expect_usage "unknown flag '--bogus'" --bogus -- true
expect_usage "gpu_hour_price 'cheap'" --gpu-hour-price cheap -- true
expect_usage "job 'a b'" --job "a b" -- true
expect_usage "status_interval must be" --status-interval 10ms -- true
expect_usage "must start with http" --server ftp://x -- true
expect_usage "interval must be between" --interval 10ms -- true

# On a terminal: redrawn in place (\r ... erase to end of line), then cleared.
script -q -e -c "$GPULSE run --no-report --interval 200ms --steps-socket '' -- $PY $W 1.5" "$TMP/tty" >/dev/null ||
    fail "gpulse run under script failed"
tr '\r' '\n' <"$TMP/tty" | grep -E '^\[gpulse\] run-[0-9T]+-[0-9]+ 0:00:0[0-9] \| step [0-9]+ \([0-9.]+/s\) \| no GPU \| RSS [0-9]+ MiB.\[K' >/dev/null ||
    { cat -v "$TMP/tty"; fail "no status line redrawn on the terminal"; }
# Not a terminal: the job line at start, then a line per --status-interval.
"$GPULSE" run --no-report --interval 200ms --status-interval 1s --job cli-1 -- $PY "$W" 2.5 2>"$TMP/plain"
grep -q '^\[gpulse\] job cli-1: ' "$TMP/plain" || { cat "$TMP/plain"; fail "no job line"; }
n=$(grep -c '^\[gpulse\] cli-1 0:00:0[0-9] | step ' "$TMP/plain" || true)
[ "$n" -ge 1 ] && [ "$n" -le 3 ] || { cat "$TMP/plain"; fail "want 1-3 status lines at 1s over 2.5s, got $n"; }
grep -q $'\r' "$TMP/plain" && fail "carriage returns in a file"
"$GPULSE" run --quiet --no-report -- $PY "$W" 0.5 2>"$TMP/quiet"
[ -s "$TMP/quiet" ] && { cat "$TMP/quiet"; fail "--quiet --no-report printed something"; }
note "help, usage errors, status line on a terminal, in a file, and off"
