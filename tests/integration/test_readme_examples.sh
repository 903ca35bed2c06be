#!/usr/bin/env bash
# The README's simulated-fleet examples are true: the fleet its quick start
# suggests and the fleet its alerts section starts are the same, and the
# job its recommendations example asks about is, in that fleet, the one
# that waits for data (the simulation's ground truth says where each
# planted fault is), so the example answers with a data-wait advice.
source "$(dirname "$0")/lib.sh"
README=$ROOT/README.md
quick=$(sed -n 's/.*add --simulate \([^ )]*\).*/\1/p' "$README" | head -1)
fleet=$(sed -n 's/^build\/rel\/gpulse up --simulate \([^ ]*\) .*/\1/p' "$README" | head -1)
job=$(sed -n "s/.*recommendations?job=\([^' ]*\)'.*/\1/p" "$README" | head -1)
[ -n "$quick" ] && [ -n "$fleet" ] && [ -n "$job" ] || fail "README examples not found (quick '$quick', fleet '$fleet', job '$job')"
[ "$quick" = "$fleet" ] || fail "README: the quick start suggests --simulate $quick, the alerts example starts $fleet"
"$GPULSE" up --simulate "$fleet" --simulate-truth - >"$TMP/truth.json"
python3 - "$TMP/truth.json" "$job" <<'PY' || fail "README: $job is not the data-starved job of --simulate $fleet"
import json, sys
truth, job = json.load(open(sys.argv[1])), sys.argv[2]
assert job in [j["job"] for j in truth["jobs"]], "no such job"
assert [f for f in truth["faults"] if f["kind"] == "starved" and f["job"] == job], truth["faults"]
PY
# And the server answers the example with the advice it promises.
SERVER_CMD=up start_server --simulate "$fleet" --interval 500ms --steps-socket ""
wait_until 60 sh -c "curl -sf '$SERVER_URL/api/v1/recommendations?job=$job' | grep -q '\"kind\":\"data_wait\"'" ||
    fail "README: recommendations?job=$job: $(curl -s "$SERVER_URL/api/v1/recommendations?job=$job")"
stop_server
note "README: --simulate $fleet and recommendations?job=$job agree"
