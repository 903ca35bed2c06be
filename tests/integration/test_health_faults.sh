#!/usr/bin/env bash
# Issue 20 items 1: the fault catalog end to end. `gpulse up` on the
# stand-in NVML's faults.scn (one fault class per GPU) reads the PCIe
# link and the pending row remap (dcgm-exporter's names), and its
# alerts name the catalog's action and carry its explanation as the
# runbook: XID 48 and a pending remap -> reset the GPU, XID 64 -> drain
# and inspect, XID 79 and the GPU off the bus -> reboot, a link at x8 of
# x16 -> pcie_link_degraded; an application's XID 13 raises nothing.
source "$(dirname "$0")/lib.sh"
export GPULSE_FAKENVML_SCENARIO=$SCEN/faults.scn
export GPULSE_NVML_LIBRARY=$FAKE_FULL
# the notifications carry the same texts: a webhook and a Slack receiver
start_notify_receiver
cat >"$TMP/gpulse.yaml" <<EOF
notify:
  retry_max_backoff: 1s
  receivers:
    - name: hooks
      type: webhook
      url: $R/hook/receive
    - name: chat
      type: slack
      url: $R/slack/services/T0/B0/X
  routes:
    - receiver: hooks
      match: {kind: gpu_hardware_errors}
      group_by: [gpu]
      group_wait: 1s
      group_interval: 1s
      repeat_interval: 1h
      continue: true
    - receiver: chat
      match: {kind: gpu_hardware_errors}
      group_by: [gpu]
      group_wait: 1s
      group_interval: 1s
      repeat_interval: 1h
EOF
SERVER_CMD=up start_server --config "$TMP/gpulse.yaml" --interval 500ms --eval-interval 1s --eval-step 1s \
    --eval-window 2m --detector-overrides "pcie_link_degraded.for=0s"

q() { curl -sf "$SERVER_URL/api/v1/query" --data-urlencode "query=$1"; }
val() { q "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r)==1 else "n=%d" % len(r))'; }
G=GPU-fa000000-0000-4000-8000-00000000000
wait_until 20 test "$(val "DCGM_FI_DEV_PCIE_LINK_WIDTH{UUID=\"${G}1\"}")" = 8 ||
    { tail -20 "$SERVER_LOG"; fail "no PCIe link width stored for GPU 1"; }
[ "$(val "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH{UUID=\"${G}1\"}")" = 16 ] &&
    [ "$(val "DCGM_FI_DEV_PCIE_LINK_GEN{UUID=\"${G}1\"}")" = 5 ] &&
    [ "$(val "DCGM_FI_DEV_PCIE_MAX_LINK_GEN{UUID=\"${G}1\"}")" = 5 ] ||
    fail "PCIe link series of GPU 1 wrong"
wait_until 20 test "$(val "DCGM_FI_DEV_ROW_REMAP_PENDING{UUID=\"${G}2\"}")" = 1 ||
    fail "the pending row remap of GPU 2 was not stored"
note "the agent reads the PCIe link and the pending row remap (dcgm-exporter names)"

alerts() { # alerts KIND N: waits for N firing alerts of KIND, into $TMP/KIND.json
    got() {
        curl -sf "$SERVER_URL/api/v1/alerts?state=firing&kind=$1" >"$TMP/$1.json" &&
            python3 -c 'import json,sys; sys.exit(len(json.load(open(sys.argv[1]))["data"]) != int(sys.argv[2]))' \
                "$TMP/$1.json" "$2"
    }
    wait_until 60 got "$1" "$2" || { cat "$TMP/$1.json" >&2; tail -20 "$SERVER_LOG" >&2; fail "want $2 firing $1 alerts"; }
}
check_alerts() { # the texts follow the newest tick: GPU 5 is off the bus half a second after its XID
    alerts gpu_hardware_errors 4
    alerts pcie_link_degraded 1
    python3 - "$TMP/gpu_hardware_errors.json" "$TMP/pcie_link_degraded.json" "$@" <<'PY'
import json, sys
hw = {a["labels"]["gpu"]: a for a in json.load(open(sys.argv[1]))["data"]}
pcie = json.load(open(sys.argv[2]))["data"]
want = {
    "2": ("a row remap pending: reset the GPU", "Reset the GPU (a row remap pending). "),
    "3": ("XID 48 double-bit ECC error (1 XID error): reset the GPU",
          "Reset the GPU (XID 48, double-bit ECC error). "),
    "4": ("XID 64 row remap or page retirement failure (1 XID error): drain the node and inspect the hardware",
          "Drain the node and inspect the hardware (XID 64, "),
    "5": ("fallen off the bus, XID 79 GPU has fallen off the bus (1 XID error): reboot the node",
          "Reboot the node ("),
}
bad = 0
if sorted(hw) != sorted(want):
    print("  hardware alerts on GPUs %s, want %s" % (sorted(hw), sorted(want)), file=sys.stderr); bad += 1
for gpu, (summary, runbook) in want.items():
    a = hw.get(gpu)
    if not a: continue
    if len(sys.argv) < 4: print("  GPU %s: %s | %s..." % (gpu, a["summary"], a["runbook"][:60]))
    if summary not in a["summary"]: print("    summary lacks %r" % summary, file=sys.stderr); bad += 1
    if not a["runbook"].startswith(runbook): print("    runbook does not start %r" % runbook, file=sys.stderr); bad += 1
    if a["severity"] != "critical": bad += 1
p = pcie[0]
if len(sys.argv) < 4: print("  GPU %s: %s" % (p["labels"]["gpu"], p["summary"]))
if p["labels"]["gpu"] != "1" or "(x8 of x16, gen 5 of 5): drain the node and inspect the hardware" not in p["summary"]:
    bad += 1
if not p["runbook"].startswith("Drain the node and inspect the hardware (the PCIe link below its maximum). "):
    bad += 1
sys.exit(1 if bad else 0)
PY
}
wait_until 30 check_alerts quiet || check_alerts || fail "the alerts' actions and texts"
note "each fault class's alert names its catalog action and carries its explanation; XID 13 raised none"
delivered() {
    python3 - "$RLOG" <<'PY'
import json, sys
hook = slack = False
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("errors"):
        print("  invalid payload on %s: %s" % (r["path"], r["errors"])); sys.exit(2)
    body = r.get("body") or ""
    if r["path"].startswith("/hook/"):
        for a in json.loads(body).get("alerts", []):
            if a["labels"].get("gpu") == "5" and a["annotations"].get("runbook_url", "").startswith(
                    "Reboot the node (") and \
                    a["annotations"]["summary"].endswith(": reboot the node"):
                hook = True
    elif r["path"].startswith("/slack/") and "drain the node and inspect the hardware" in body \
            and "Drain the node and inspect the hardware (XID 64, " in body:
        slack = True
sys.exit(0 if hook and slack else 1)
PY
}
wait_until 30 delivered || { tail -c 3000 "$RLOG" >&2; fail "the notifications lack the catalog's action or runbook"; }
note "the webhook and Slack notifications carry the action and the catalog's explanation"
stop_server
echo "ok test_health_faults"
