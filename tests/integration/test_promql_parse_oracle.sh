#!/usr/bin/env bash
# The PromQL parser agrees with Prometheus 2.42's on every expression of
# tests/data/promql/parse_corpus.txt: which it accepts, the canonical text,
# the result type and the line:col of an error (promql_parse_oracle.py asks
# a real, empty Prometheus through /api/v1/format_query and /api/v1/query);
# and on 3,000 mutants of the corpus (a fixed seed), mostly malformed.
source "$(dirname "$0")/lib.sh"
start_prom_receiver
python3 "$ROOT/tests/integration/promql_parse_oracle.py" "http://127.0.0.1:$PROM_PORT" "$GPULSE" \
    "$ROOT/tests/data/promql/parse_corpus.txt" || fail "gpulse's parser and prometheus's disagree (above)"
echo "ok: promql parser agrees with prometheus 2.42"
