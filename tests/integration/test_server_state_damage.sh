#!/usr/bin/env bash
# A damaged state.db (state/state.h) does not stop the server: it starts,
# ingests and answers queries, runs its jobs scanner and detectors on an
# empty in-memory state, says so in the log, in /api/v1/health
# ("degraded", with the damage) and on /metrics, leaves the file as it
# was, and exits cleanly. Before this, the server exited 1 at start.
source "$(dirname "$0")/lib.sh"

SERVER_DATA=$TMP/data
mkdir -p "$SERVER_DATA"
head -c 65536 /dev/urandom >"$SERVER_DATA/state.db"
sum=$(sha256sum <"$SERVER_DATA/state.db")
start_server
grep -q 'level=error module=state msg="state.db is damaged; running on an empty in-memory state until it is repaired"' \
    "$SERVER_LOG" || { cat "$SERVER_LOG"; fail "no damage log line"; }
grep -q 'repair="stop the server, gpulse repair --data ' "$SERVER_LOG" || fail "the log does not name the repair"
note "log: $(grep -o 'msg="state.db is damaged.*' "$SERVER_LOG" | cut -c1-160)..."

# Ingestion and queries of samples go on.
t=$(date +%s%3N)
out=$(rw write "$SERVER_URL" "damage_probe{n=\"1\"}=1@$((t - 2000))" "damage_probe{n=\"1\"}=2@$((t - 1000))")
[ "${out%% *}" = 204 ] || fail "write on a damaged state.db: $out"
curl -sf "$SERVER_URL/api/v1/query_range?match=damage_probe&start=$(((t - 10000) / 1000))&end=$(((t + 1000) / 1000))&step=1" \
    >"$TMP/q.json" || fail "query failed"
python3 - "$TMP/q.json" <<'PY' || fail "query answer: $(cat "$TMP/q.json")"
import json, sys
d = json.load(open(sys.argv[1]))
vals = [v for s in d["data"]["result"] for v in s.get("values", [])]
assert len(vals) >= 2, vals
PY
note "samples written and read back"

# The routes that live on state.db answer from the in-memory state.
for r in jobs alerts notifications audit silences; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/$r")
    [ "$code" = 200 ] || fail "/api/v1/$r answered $code"
done
note "jobs, alerts, notifications, audit, silences answer 200"

health=$(curl -s -w ' %{http_code}' "$SERVER_URL/api/v1/health")
python3 - "$health" <<'PY' || fail "health: $health"
import json, sys
body, code = sys.argv[1].rsplit(" ", 1)
d = json.loads(body)["data"]
assert code == "200", code
assert d["status"] == "degraded", d
dm = d["damage"][0]
assert dm["file"] == "state.db" and "not a database" in dm["detail"] and "gpulse repair" in dm["repair"], dm
PY
note "health: degraded, names state.db and the repair"
curl -sf "$SERVER_URL/metrics" | grep -x 'gpulse_server_state_damaged 1' >/dev/null || fail "metrics lack gpulse_server_state_damaged 1"
stop_server
[ "$(sha256sum <"$SERVER_DATA/state.db")" = "$sum" ] || fail "the damaged state.db was written to"
note "damaged file untouched; clean exit"

# A sound data directory reports no damage.
SERVER_DATA=$TMP/sound
start_server
curl -s "$SERVER_URL/api/v1/health" | grep '"status":"ok"' >/dev/null || fail "sound health not ok"
curl -sf "$SERVER_URL/metrics" | grep -x 'gpulse_server_state_damaged 0' >/dev/null || fail "sound: damaged gauge not 0"
stop_server
echo "ok"
