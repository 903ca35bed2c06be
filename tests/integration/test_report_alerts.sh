#!/usr/bin/env bash
# The job report lists the job's active alerts (issue 17 item 2): a real
# server with a rule on the ECC double-bit counter, two jobs remote-written
# to it, one of whose GPUs counts an error. `gpulse report` of that job
# shows the firing alert under "What to change" (text, JSON, HTML) and
# never "nothing"; the calm job says that no alert is active on it. A
# server that cannot answer for alerts still gives the report, with a
# warning and a note that no server gave the alerts. gpulse run --server
# lists the alert in its end-of-run report as well.
source "$(dirname "$0")/lib.sh"
cat >"$TMP/gpulse.yaml" <<'EOF'
rules:
  - name: ecc_uncorrectable
    expr: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
    agg: last
    window: 10s
    op: ">"
    threshold: 0
    for: 1s
    severity: critical
    annotations:
      summary: "GPU {{ $labels.gpu }} of {{ $labels.Hostname }} counts uncorrectable ECC errors"
EOF
start_server --config "$TMP/gpulse.yaml" --eval-interval 1s --eval-step 1s --eval-window 30s \
    --jobs-scan-interval 200ms
# The feeder: both jobs' info and their GPUs' ECC counters every 300 ms.
(
    while :; do
        now=$(date +%s%3N)
        rw write "$SERVER_URL" \
            "gpulse_job_info{job=\"hot-job\",rank=\"0\",Hostname=\"n1\",scheme=\"gpulse_job\"}=1@$now" \
            "gpulse_job_info{job=\"calm-job\",rank=\"0\",Hostname=\"n2\",scheme=\"gpulse_job\"}=1@$now" \
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{job=\"hot-job\",rank=\"0\",Hostname=\"n1\",gpu=\"3\",UUID=\"GPU-h\"}=2@$now" \
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{job=\"calm-job\",rank=\"0\",Hostname=\"n2\",gpu=\"0\",UUID=\"GPU-c\"}=0@$now" \
            >/dev/null 2>&1 || true
        sleep 0.3
    done
) &
PIDS+=($!)
firing() { curl -sf "$SERVER_URL/api/v1/alerts?state=firing&job=hot-job" | grep '"kind":"ecc_uncorrectable"' >/dev/null; }
wait_until 20 firing || { cat "$SERVER_LOG" >&2; fail "the ECC alert never fired"; }
wait_until 20 curl -sf "$SERVER_URL/api/v1/jobs/calm-job" || fail "the jobs were never registered"
note "the ECC alert fires on hot-job"

"$GPULSE" report hot-job --server "$SERVER_URL" >"$TMP/hot.txt" 2>"$TMP/hot.err" ||
    fail "gpulse report hot-job: $(cat "$TMP/hot.err")"
sed -n '/^What to change$/,$p' "$TMP/hot.txt" >"$TMP/hot.what"
grep -q '^  1\. \[alert ecc_uncorrectable, critical, firing\] GPU 3 of n1 counts uncorrectable ECC errors$' \
    "$TMP/hot.what" || fail "the report does not list the alert: $(cat "$TMP/hot.what")"
grep -q 'evidence: ' "$TMP/hot.what" || fail "the alert has no evidence: $(cat "$TMP/hot.what")"
grep -qi 'nothing' "$TMP/hot.txt" && fail "the report says nothing to change while an alert fires: $(cat "$TMP/hot.what")"
[ -s "$TMP/hot.err" ] && fail "unexpected stderr: $(cat "$TMP/hot.err")"
note "text: the alert listed, no 'nothing'"

"$GPULSE" report hot-job --server "$SERVER_URL" --json >"$TMP/hot.json" || fail "--json"
python3 - "$TMP/hot.json" <<'PY' || fail "--json lacks the alert"
import json, sys
d = json.load(open(sys.argv[1]))
a = [x for x in d["alerts"] if x["kind"] == "ecc_uncorrectable"]
assert len(a) == 1 and a[0]["state"] == "firing" and a[0]["labels"]["job"] == "hot-job", d["alerts"]
PY
"$GPULSE" report hot-job --server "$SERVER_URL" --html "$TMP/hot.html" >/dev/null 2>&1 || fail "--html"
grep -q '<span class="kind bad">alert ecc_uncorrectable, critical, firing</span> GPU 3 of n1' "$TMP/hot.html" ||
    fail "the HTML report does not list the alert"
grep -q 'Nothing: ' "$TMP/hot.html" && fail "the HTML report says nothing to change"
note "JSON and HTML carry it too"

"$GPULSE" report calm-job --server "$SERVER_URL" >"$TMP/calm.txt" 2>&1 || fail "gpulse report calm-job"
tr -s ' \n' ' ' <"$TMP/calm.txt" | grep 'no alert is active on this job' >/dev/null || fail "calm-job: $(sed -n '/^What to change$/,$p' "$TMP/calm.txt")"
grep -q 'ecc_uncorrectable' "$TMP/calm.txt" && fail "calm-job shows hot-job's alert"
note "calm-job: no alert is active"

# gpulse run's end-of-run report asks its --server for the job's alerts.
"$GPULSE" run --interval 200ms --server "$SERVER_URL" --job hot-job -- sleep 0.5 >/dev/null 2>"$TMP/run.err" ||
    fail "gpulse run: $(cat "$TMP/run.err")"
grep -q '^  1\. \[alert ecc_uncorrectable, critical, firing\] GPU 3 of n1' "$TMP/run.err" ||
    fail "gpulse run's report does not list the alert: $(sed -n '/^What to change$/,$p' "$TMP/run.err")"
grep -qi 'nothing' "$TMP/run.err" && fail "gpulse run's report says nothing to change"
note "gpulse run --server: its report lists the alert too"

# A server that serves the job but not alerts (report_server.py with
# NO_ALERTS_API): the report still comes, with a warning.
mkdir -p "$TMP/jobs"
# calm-job's document, also as the jobs whose alerts answer is malformed
curl -sf "$SERVER_URL/api/v1/jobs/calm-job" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
for id in ("calm-job", "alerts-garbage", "alerts-object"):
    d["id"] = id
    json.dump(d, open(sys.argv[1] + "/" + id + ".json", "w"))' "$TMP/jobs" || fail "saving calm-job"
NO_ALERTS_API=1 REQLOG_DIR=$TMP python3 "$ROOT/tests/integration/report_server.py" "$TMP/port" "$TMP/jobs" 2>"$TMP/js.log" &
PIDS+=($!)
wait_until 10 test -s "$TMP/port" || fail "report_server.py did not start: $(cat "$TMP/js.log")"
JS_URL=http://127.0.0.1:$(cat "$TMP/port")
"$GPULSE" report calm-job --server "$JS_URL" >"$TMP/old.txt" 2>"$TMP/old.err" ||
    fail "the report failed without alerts: $(cat "$TMP/old.err")"
grep -q "^gpulse report: cannot read the alerts of job 'calm-job' from $JS_URL: HTTP 400" \
    "$TMP/old.err" || fail "no warning: $(cat "$TMP/old.err")"
tr -s ' \n' ' ' <"$TMP/old.txt" | grep "(no server gave the job's alerts)" >/dev/null || fail "no note: $(sed -n '/^What to change$/,$p' "$TMP/old.txt")"
for bad in "alerts-garbage:no {\"status\":\"success\",\"data\":\[...\]} envelope" \
    "alerts-object:no {\"status\":\"success\",\"data\":\[...\]} envelope"; do
    job=${bad%%:*} want=${bad#*:}
    "$GPULSE" report "$job" --server "$JS_URL" >"$TMP/bad.txt" 2>"$TMP/bad.err" ||
        fail "$job: the report failed: $(cat "$TMP/bad.err")"
    grep -q "^gpulse report: cannot read the alerts of job '$job' from $JS_URL: $want\$" "$TMP/bad.err" ||
        fail "$job: $(cat "$TMP/bad.err")"
    tr -s ' \n' ' ' <"$TMP/bad.txt" | grep "(no server gave the job's alerts)" >/dev/null || fail "$job: no note"
done
note "without an alerts API, or a malformed answer: the report, a warning and a note"
stop_server
