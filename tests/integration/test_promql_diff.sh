#!/usr/bin/env bash
# test_promql_diff.sh - gpulse server's PromQL answers equal Prometheus's
# (issue 16, "How it is shown to work"). Debian's Prometheus 2.42 (the
# oracle, --web.enable-remote-write-receiver) and gpulse server get the
# same remote-written data (promql_diff.py: gauges, counters with resets,
# stale markers, series that stop, a gap longer than the lookback,
# classic histograms, label sets for one-to-one, many-to-one and
# many-to-many matching, NaN and ±Inf), then every expression of
# tests/data/promql/diff_corpus.txt runs on both as instant queries at
# six times and as range queries over three start/end/step grids, and
# the answers are compared: series, timestamps, values within 1e-9
# relative, order where Prometheus defines it, errors and their types.
# Functions 2.42 lacks are checked against hand-computed values.
#
# The harness proves itself first: a second Prometheus fed the same data
# gives 0 differences, and the same with one sample more gives some.
. "$(dirname "$0")/lib.sh"
DIFF="python3 $ROOT/tests/integration/promql_diff.py"
CORPUS=$ROOT/tests/data/promql/diff_corpus.txt

start_prom_receiver ref; REF=http://127.0.0.1:$PROM_PORT
start_prom_receiver twin; TWIN=http://127.0.0.1:$PROM_PORT
start_server --self-scrape-interval 0s # both stores hold exactly the corpus
# T0: a whole minute, 75 minutes ago: the data's hour ends 15 minutes ago,
# within Prometheus's head (it refuses samples an hour older than its newest).
T0=$(python3 -c 'import time; print((int(time.time() * 1000) - 75 * 60000) // 60000 * 60000)')
out=$($DIFF write --t0 "$T0" "$REF" "$TWIN" "$SERVER_URL") || fail "the data set was not written: $out"
note "$out"

# 1. The harness: Prometheus against Prometheus.
$DIFF compare --t0 "$T0" --corpus "$CORPUS" --self "$REF" "$TWIN" >"$TMP/self.txt" ||
    { cat "$TMP/self.txt"; fail "two Prometheus servers with the same data differ: the harness is wrong"; }
line=$(tail -1 "$TMP/self.txt")
note "Prometheus vs Prometheus: $line"
# ... answering mostly data, not only empty vectors and errors.
python3 - "$line" <<'PY' || fail "the corpus answers too little data: $line"
import re, sys
m = re.search(r"(\d+) comparisons.* (\d+) with data, (\d+) empty, (\d+) errors", sys.argv[1])
cmp, data, empty, err = map(int, m.groups())
sys.exit(0 if cmp >= 2000 and data >= 0.6 * cmp and err >= 200 else 1)
PY
$DIFF write --t0 "$T0" --mutate "$TWIN" >/dev/null
if $DIFF compare --t0 "$T0" --corpus "$CORPUS" --self "$REF" "$TWIN" >"$TMP/mutated.txt" ||
    ! grep -q 'diff_gauge{instance="c",job="node"}' "$TMP/mutated.txt"; then
    tail -5 "$TMP/mutated.txt"; fail "one extra sample on one side went unnoticed"
fi
note "one extra sample: $(tail -1 "$TMP/mutated.txt" | cut -d'(' -f1)"

# 2. gpulse server against Prometheus: the corpus, then random expressions
# (promql_gen.py, a fixed seed: the same ones every run; GP_PROMQL_GEN=N
# asks for N instead of 300, GP_PROMQL_SEED for another seed).
rc=0
$DIFF compare --t0 "$T0" --corpus "$CORPUS" "$REF" "$SERVER_URL" >"$TMP/gpulse.txt" || rc=$?
grep -E '^(DIFF|EXCEPTED|NOW EQUAL)|^    ' "$TMP/gpulse.txt" | head -150 || true
note "gpulse vs Prometheus: $(tail -1 "$TMP/gpulse.txt")"
python3 "$ROOT/tests/integration/promql_gen.py" "${GP_PROMQL_SEED:-16}" "${GP_PROMQL_GEN:-300}" >"$TMP/generated.txt"
$DIFF compare --t0 "$T0" --corpus "$TMP/generated.txt" "$REF" "$SERVER_URL" >"$TMP/generated.out" || rc=$?
grep -E '^DIFF|^    ' "$TMP/generated.out" | head -60 || true
note "generated expressions: $(tail -1 "$TMP/generated.out")"
[ $rc -eq 0 ] || fail "gpulse server's answers differ from Prometheus 2.42's (above)"
stop_server
echo "ok: $(tail -1 "$TMP/gpulse.txt" | cut -d'(' -f1)and $(tail -1 "$TMP/generated.out" | cut -d' ' -f1) generated expressions"
