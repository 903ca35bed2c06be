#!/usr/bin/env bash
# docs/metrics.md's reference against what gpulse really exposes:
#   1. `gpulse metrics-reference` (this binary) is exactly the page's
#      generated section;
#   2. every family on the /metrics of a busy `gpulse up` (simulated GPUs,
#      jobs and steps, the local push target, the step socket, a custom
#      rule firing, a notification delivered) is in the reference with
#      the same type and HELP text, and the sections such a server shows
#      whole (GPU readings, host, server, detectors, notifications) have
#      no documented family it never showed.
source "$(dirname "$0")/lib.sh"
PAGE=$ROOT/docs/metrics.md

"$GPULSE" metrics-reference >"$TMP/ref.md" || fail "gpulse metrics-reference failed"
python3 - "$PAGE" "$TMP/ref.md" <<'PY' || fail "docs/metrics.md differs from gpulse metrics-reference: run scripts/docs.sh"
import sys
page, ref = open(sys.argv[1]).read(), open(sys.argv[2]).read()
b = page.index("<!-- BEGIN metrics-reference")
b = page.index("\n", b) + 1
e = page.index("<!-- END metrics-reference -->")
sys.exit(0 if page[b:e] == ref else 1)
PY
note "the page's reference is what the binary generates"

RPORT=$(free_port)
python3 "$ROOT/tests/integration/notify_receiver.py" "$RPORT" "$TMP/requests.jsonl" >"$TMP/receiver.out" 2>&1 &
PIDS+=($!)
wait_until 10 curl -sf "http://127.0.0.1:$RPORT/health" || fail "the receiver did not come up"
cat >"$TMP/gpulse.yaml" <<YAML
rules:
  - {name: gpu_warm, expr: DCGM_FI_DEV_GPU_TEMP, agg: last, window: 10s, op: ">", threshold: 0, for: 1s}
notify:
  receivers:
    - {name: hooks, type: webhook, url: "http://127.0.0.1:$RPORT/hook/receive"}
  routes:
    - {receiver: hooks, group_wait: 1s}
YAML
SERVER_CMD=up start_server --config "$TMP/gpulse.yaml" --simulate 2x2xH100 --interval 1s \
    --eval-interval 1s --eval-step 1s --eval-window 30s --steps-socket "$TMP/steps.sock"
delivered() { curl -sf "$SERVER_URL/metrics" | grep '^gpulse_server_notifications_total{.*result="done"} [1-9]' >/dev/null; }
wait_until 30 delivered || fail "no notification delivered within 30 s"
# low_goodput's input: a simulated job's goodput once it has stepped
judged() { curl -sf "$SERVER_URL/metrics" | grep '^gpulse_job_goodput_ratio{job="sim-job-0"} 0\.[0-9]' >/dev/null; }
wait_until 60 judged || fail "no gpulse_job_goodput_ratio for sim-job-0 within 60 s"
curl -sf "$SERVER_URL/metrics" >"$TMP/metrics.txt" || fail "GET /metrics"

python3 - "$TMP/ref.md" "$TMP/metrics.txt" <<'PY' || fail "/metrics and docs/metrics.md disagree"
import re, sys
ref, text = open(sys.argv[1]).read(), open(sys.argv[2]).read()
doc = {}  # name -> (type, help, section)
section = None
for line in ref.splitlines():
    if line.startswith("### "):
        section = line[4:]
    m = re.match(r"\| `([^`]+)` \| (\w+) \|(.*)\|\s*$", line)
    if m:
        cells = [c.strip() for c in m.group(3).split(" | ")]
        doc[m.group(1)] = (m.group(2), cells[-1].replace("\\|", "|"), section)
helps, types = {}, {}
for line in text.splitlines():
    m = re.match(r"# (HELP|TYPE) (\S+) (.*)$", line)
    if m:
        (helps if m.group(1) == "HELP" else types)[m.group(2)] = m.group(3)
bad = 0
for name in types:
    if name not in doc:
        print("  /metrics has %s, docs/metrics.md does not" % name)
        bad += 1
    elif doc[name][:2] != (types[name], helps.get(name)):
        print("  %s: /metrics says %s %r, the docs %s %r" % (name, types[name], helps.get(name), *doc[name][:2]))
        bad += 1
# The sections a busy `gpulse up` shows whole. Optional: what an H100 SXM
# does not have (page retirement: it remaps rows; a fan) and host files
# this machine may lack.
whole = {"GPU readings", "Host", "The server", "The server's detectors and alerts", "The server's notifications"}
optional = {"DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_RETIRED_PENDING",
            "gpulse_gpu_fan_speed_ratio", "gpulse_host_hugepages",
            "gpulse_host_pressure_stall_seconds_total", "gpulse_host_load_average"}
missing = sorted(n for n, (t, h, s) in doc.items() if s in whole and n not in types and n not in optional)
for n in missing:
    print("  documented in '%s' but not on /metrics: %s" % (doc[n][2], n))
print("  %d families on /metrics, each documented alike; %d documented" % (len(types), len(doc)))
sys.exit(1 if bad or missing else 0)
PY
note "every family on /metrics is in the reference with its type and help"
stop_server
echo "PASS"
