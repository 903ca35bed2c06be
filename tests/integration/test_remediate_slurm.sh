#!/usr/bin/env bash
# test_remediate_slurm.sh - deploy/slurm/remediation.yml.example, the
# Slurm drain example, as an operator would switch it on: its server:
# keys load as they are, and with shadow mode off and scontrol a stand-in
# that records its arguments, `gpulse up --simulate` with an ECC fault
# planted on sim-node-1 (docs/simulate.md) drains that node, and only
# it, with the argv Slurm's `scontrol update` takes; the audit log has
# the drain with its reason.
. "$(dirname "$0")/lib.sh"
EX=$ROOT/deploy/slurm/remediation.yml.example
# one line per call: each argument in brackets, so quoting shows
printf '#!/bin/sh\nfor a; do printf "[%%s]" "$a"; done >>"%s/scontrol.log"\necho >>"%s/scontrol.log"\n' \
    "$TMP" "$TMP" >"$TMP/scontrol"
chmod +x "$TMP/scontrol"
python3 - "$EX" <<'PY' || fail "the example is not what it says (above)"
import sys, yaml
s = yaml.safe_load(open(sys.argv[1]))["server"]
bad = []
if s.get("remediation_dry_run") is not True: bad.append("the example does not start in shadow mode")
if "gpu_hardware_errors=@slurm-drain" not in s.get("remediation", []): bad.append("no @slurm-drain for gpu_hardware_errors")
for b in bad: print("  " + b)
sys.exit(1 if bad else 0)
PY
sed -e "s|^  remediation_scontrol: .*|  remediation_scontrol: $TMP/scontrol|" \
    -e 's|^  remediation_dry_run: true$|  remediation_dry_run: false|' "$EX" >"$TMP/gpulse.yml"
[ "$(diff "$EX" "$TMP/gpulse.yml" | grep -c '^>')" = 2 ] || fail "the example's scontrol or dry-run line changed; update this test"

drained() { [ -s "$TMP/scontrol.log" ]; }
SERVER_CMD=up start_server --config "$TMP/gpulse.yml" --simulate 4x2xH100 --simulate-faults ecc=sim-node-1/1 \
    --interval 1s --eval-interval 1s --eval-step 1s --eval-window 30s
wait_until 150 drained || { tail -20 "$SERVER_LOG"; fail "nothing was drained within 150 s"; }
sleep 3 # a second, wrong drain would show
[ "$(wc -l <"$TMP/scontrol.log")" = 1 ] || { cat "$TMP/scontrol.log"; fail "scontrol ran other than once"; }
grep -Eq '^\[update\]\[nodename=sim-node-1\]\[state=drain\]\[reason=gpulse gpu_hardware_errors: GPU 1 on sim-node-1[^]]*\]$' \
    "$TMP/scontrol.log" || { cat "$TMP/scontrol.log"; fail "scontrol's arguments"; }
curl -sf "$SERVER_URL/api/v1/audit?decision=ran" >"$TMP/audit.json" || fail "GET /api/v1/audit"
python3 - "$TMP/audit.json" <<'PY' || fail "the audit log (above)"
import json, sys
rows = json.load(open(sys.argv[1]))["data"]
ok = [r for r in rows if r.get("action") == "slurm_drain" and r.get("node") == "sim-node-1"
      and r.get("kind") == "gpu_hardware_errors" and r.get("reason")]
if len(ok) != 1 or len(rows) != 1:
    print(json.dumps(rows, indent=1)); sys.exit(1)
PY
note "the example, shadow mode off: the ECC fault's node drained once through scontrol, audited"
stop_server
echo "ok: deploy/slurm's drain example loads and drains the faulty node"
