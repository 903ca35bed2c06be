#!/usr/bin/env bash
# gpulse's regexes (RE2 translated to POSIX, src/lib/re2posix.c) match the
# values Prometheus 2.42's Go regexp matches: re2_oracle.py runs 600
# random RE2 patterns (a fixed seed) over 24 values each through
# label_replace on both servers, and compares which values match; gpulse
# may refuse a pattern only for a reason docs/api.md gives.
source "$(dirname "$0")/lib.sh"
start_prom_receiver
start_server
out=$(python3 "$ROOT/tests/integration/re2_oracle.py" "http://127.0.0.1:$PROM_PORT" "$SERVER_URL") ||
    { echo "$out" >&2; fail "gpulse's regexes and prometheus's disagree (above)"; }
note "${out##*$'\n'}"
stop_server
echo "ok: regexes match as prometheus 2.42's"
