#!/usr/bin/env bash
# The dashboard's server side against `gpulse up --simulate 2x8xH100`
# (docs/dashboard.md): / and an asset (gzip decodes to the same bytes,
# 304 on the ETag), the fleet's GPUs, the Server-Sent Events stream read
# with curl -N for a few seconds (every event's data is JSON, ids count
# up, readings change, a rule's alert arrives), an ack that survives a
# restart, and a job's report in its three forms.
source "$(dirname "$0")/lib.sh"
printf 'rules:\n  - name: warm_gpu\n    expr: DCGM_FI_DEV_GPU_TEMP{Hostname="sim-node-1",gpu="3"}\n'\
'    agg: last\n    window: 10s\n    op: ">"\n    threshold: 0\n    for: 1s\n    severity: warning\n' \
    >"$TMP/gpulse.yaml"
UP_ARGS=(--simulate 2x8xH100 --interval 200ms --config "$TMP/gpulse.yaml" --eval-interval 300ms
         --eval-step 1s --eval-window 10s --jobs-scan-interval 500ms)
SERVER_CMD=up start_server "${UP_ARGS[@]}"

# The page and an asset: no token, gzip decoding to the plain bytes, 304.
curl -sf -D "$TMP/h" -o "$TMP/index.html" "$SERVER_URL/" || fail "GET / failed"
grep -qi '^content-type: text/html' "$TMP/h" || fail "/ is not HTML: $(cat "$TMP/h")"
grep -qi "^content-security-policy: default-src 'self'" "$TMP/h" || fail "/ has no CSP"
grep -q '<script src=' "$TMP/index.html" || fail "index.html loads no script"
etag=$(awk 'tolower($1) == "etag:" {print $2}' "$TMP/h" | tr -d '\r')
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$SERVER_URL/")" = 304 ] ||
    fail "no 304 for the ETag $etag"
curl -sf -o "$TMP/u.js" "$SERVER_URL/assets/uPlot.iife.min.js" || fail "no uPlot"
cmp -s "$TMP/u.js" "$ROOT/web/node_modules/uplot/dist/uPlot.iife.min.js" || fail "uPlot differs from npm's"
curl -sf -D "$TMP/hz" -H 'Accept-Encoding: gzip' -o "$TMP/u.js.gz" "$SERVER_URL/assets/uPlot.iife.min.js"
grep -qi '^content-encoding: gzip' "$TMP/hz" || fail "uPlot not gzip'ed"
gunzip -c "$TMP/u.js.gz" | cmp -s - "$TMP/u.js" || fail "gzip'ed uPlot does not decode to the same bytes"
note "/ and /assets: $(stat -c %s "$TMP/u.js") bytes of uPlot, $(stat -c %s "$TMP/u.js.gz") gzip'ed, 304 on ETag"
# (bodies go to files first: grep -q would leave curl a broken pipe under pipefail)
curl -sf -o "$TMP/api" "$SERVER_URL/api" && grep -q '/api/v1/fleet/gpus' "$TMP/api" ||
    fail "/api does not list the routes"

# Every simulated GPU, with readings.
wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/fleet/gpus' | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"data\"][\"gpus\"]) == 16 and all(g[\"temp_c\"] is not None for g in d[\"data\"][\"gpus\"])'" ||
    fail "fleet/gpus never showed 16 GPUs: $(curl -s "$SERVER_URL/api/v1/fleet/gpus" | head -c 600)"

# The stream for 4 s: retry, ids 1.., JSON data, changing readings, the rule's alert.
curl -sN -m 4 "$SERVER_URL/api/v1/stream?interval=500ms&node=sim-node-1" >"$TMP/sse" || true
python3 - "$TMP/sse" <<'PY' || fail "the stream is not as specified (above)"
import json, sys
text = open(sys.argv[1]).read()
assert text.startswith("retry: 2000\n\n"), text[:80]
blocks = [b for b in text[len("retry: 2000\n\n"):].split("\n\n")[:-1] if not b.startswith(":")]
events = []
for b in blocks:
    f = {}
    for line in b.split("\n"):
        k, _, v = line.partition(": ")
        f[k] = f.get(k, "") + v
    events.append((int(f["id"]), f["event"], json.loads(f["data"])))
assert [e[0] for e in events] == list(range(1, len(events) + 1)), [e[0] for e in events]
gpus = [e[2] for e in events if e[1] == "gpus"]
fleet = [e[2] for e in events if e[1] == "fleet"]
alerts = [e[2] for e in events if e[1] == "alert"]
assert 5 <= len(gpus) <= 9 and 5 <= len(fleet) <= 9, (len(gpus), len(fleet))
assert all(len(g["gpus"]) == 8 and {x["node"] for x in g["gpus"]} == {"sim-node-1"} for g in gpus)
assert all(f["overall"]["gpus"] == 16 for f in fleet)
power = [tuple(x["power_w"] for x in g["gpus"]) for g in gpus]
assert len(set(power)) > 1, "the readings never changed"
print("  - stream: %d fleet, %d gpus, %d alert events in 4 s" % (len(fleet), len(gpus), len(alerts)))
PY

# The rule's alert fires; acknowledge it (write token not needed here: up has none).
wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/alerts?state=firing&kind=warm_gpu' | grep -q '\"id\"'" ||
    fail "the rule's alert never fired"
id=$(curl -sf "$SERVER_URL/api/v1/alerts?state=firing&kind=warm_gpu" |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
# The badges agree with the alerts list (the detectors' alerts too); the
# two reads may straddle a transition, so a few tries.
badges_agree() {
    python3 - "$SERVER_URL" <<'PY'
import json, urllib.request, sys
u = sys.argv[1]
al = json.load(urllib.request.urlopen(u + "/api/v1/alerts?state=active&node=sim-node-1&limit=1000"))["data"]
gp = json.load(urllib.request.urlopen(u + "/api/v1/fleet/gpus?node=sim-node-1"))["data"]["gpus"]
rank = {"info": 0, "warning": 1, "critical": 2}
want = {}
for a in al:
    g = a["labels"].get("gpu")
    if not g:
        continue
    w = want.setdefault(g, {"firing": 0, "pending": 0, "severity": None})
    w[a["state"]] += 1
    if w["severity"] is None or rank[a["severity"]] > rank[w["severity"]]:
        w["severity"] = a["severity"]
got = {x["gpu"]: x["alerts"] for x in gp}
empty = {"firing": 0, "pending": 0, "severity": None}
assert all(got[g] == want.get(g, empty) for g in got), (got, want)
assert got["3"]["firing"] >= 1, got["3"]
PY
}
wait_until 10 badges_agree || { badges_agree; fail "the alert badges disagree with /api/v1/alerts"; }
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"by":7}' "$SERVER_URL/api/v1/alerts/$id/ack")" = 400 ] ||
    fail "a bad ack body was not refused"
curl -sN -m 3 "$SERVER_URL/api/v1/stream?interval=1m" >"$TMP/sse2" &
reader=$!
sleep 1
curl -sf -X POST -d '{"by":"it-test","comment":"on it"}' "$SERVER_URL/api/v1/alerts/$id/ack" >"$TMP/ack" ||
    fail "ack failed"
grep -q '"acknowledged":{"by":"it-test"' "$TMP/ack" || fail "ack answer: $(cat "$TMP/ack")"
wait "$reader" || true
grep -q '"acknowledged":{"by":"it-test"' "$TMP/sse2" || fail "the ack was not streamed: $(head -c 300 "$TMP/sse2")"

# A job's report, in its three forms.
wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/jobs/sim-job-1/report?format=text' | grep -q sim-job-1" ||
    fail "no report of sim-job-1: $(curl -s "$SERVER_URL/api/v1/jobs/sim-job-1/report?format=text" | head -c 300)"
curl -sf -o "$TMP/r.html" "$SERVER_URL/api/v1/jobs/sim-job-1/report" && grep -qi '<html' "$TMP/r.html" ||
    fail "the HTML report is not HTML"
curl -sf "$SERVER_URL/api/v1/jobs/sim-job-1/report?format=json" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["id"] == "sim-job-1" and isinstance(d["advice"], list)' ||
    fail "the JSON report is not the job document"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/jobs/sim-job-1/report?format=pdf")" = 400 ] ||
    fail "format=pdf not refused"
note "job report: html, json, text"

# /metrics counts the streams; the ack survives a restart (an open stream must not hold the stop).
curl -sf "$SERVER_URL/metrics" >"$TMP/m"
check_exposition "$TMP/m"
grep -q '^gpulse_server_streams_opened_total [2-9]' "$TMP/m" || fail "streams not counted"
curl -sN -m 30 "$SERVER_URL/api/v1/stream" >/dev/null &
sleep 1
t0=$(date +%s%N)
stop_server
note "stopped with an open stream in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
SERVER_DATA=$SERVER_DATA SERVER_CMD=up start_server "${UP_ARGS[@]}"
curl -sf -o "$TMP/al" "$SERVER_URL/api/v1/alerts/$id" || fail "no alert $id after a restart"
grep -q '"acknowledged":{"by":"it-test"' "$TMP/al" || fail "the ack did not survive a restart: $(head -c 400 "$TMP/al")"
grep -q '"to":"acknowledged"' "$TMP/al" || fail "no acknowledged transition"
note "ack of $id kept across a restart"
stop_server
