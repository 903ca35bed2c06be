#!/usr/bin/env bash
# test_check_preflight.sh - `gpulse check` on stand-in nodes (the stand-in
# NVML, tests/data/nvml/preflight.scn): a healthy node passes (exit 0); a
# node with one fault at a time fails exactly that check, with its reason
# and the fault catalog's action (exit 1, text and --json); a hardware XID
# in the kernel log of the last hours fails it, an old one or an
# application's does not; no NVML, bad flags: exit 2; the result is pushed
# to a server with the write token and read back.
. "$(dirname "$0")/lib.sh"
export GPULSE_NVML_LIBRARY=$ROOT/build/fakenvml/full/libnvidia-ml.so.1
BASE=$ROOT/tests/data/nvml/preflight.scn
# check SCENARIO-EXTRA-LINE ARGS...: runs gpulse check, exit code in $rc
check() {
    local extra=$1; shift
    { cat "$BASE"; [ -z "$extra" ] || echo "$extra"; } >"$TMP/node.scn"
    rc=0
    GPULSE_FAKENVML_SCENARIO=$TMP/node.scn "$GPULSE" check --hostname=n1 --kernel-log= "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
}
check "" --gpus 2 --model H100 --driver-version 550.54.15 --cuda-version 12.4
[ $rc = 0 ] || { cat "$TMP/out" "$TMP/err"; fail "a healthy node exited $rc"; }
grep -q '^n1: ready (1 skipped)$' "$TMP/out" || { cat "$TMP/out"; fail "no 'ready' line"; }
note "healthy node: exit 0, ready"

# one fault at a time: "timeline line|check|fault|action|reason"
while IFS='|' read -r line ck fault action reason; do
    check "$line" --json --gpus 2 --model H100 --driver-version 550.54.15
    [ $rc = 1 ] || { cat "$TMP/out" "$TMP/err"; fail "$line: exit $rc, not 1"; }
    python3 - "$TMP/out" "$ck" "$fault" "$action" "$reason" <<'PY' || fail "$line: the JSON above"
import json, sys
d = json.load(open(sys.argv[1]))
_, ck, fault, action, reason = sys.argv[1:]
assert d["node"] == "n1" and d["status"] == "failed" and d["gpus"] == 2, d
assert d["failed"] == 1 and d["action"] == action, d
bad = [c for c in d["checks"] if c["status"] == "failed"]
c = bad[0]
assert c["check"] == ck and c["action"] == action and c.get("fault", "") == fault, c
assert reason in c["reason"], c
assert (c.get("severity") in ("warning", "critical")) == bool(fault), c
assert {x["check"] for x in d["checks"]} >= {"gpus_present", "ecc_uncorrectable", "row_remap", "pcie_link",
    "clocks", "temperature", "power_limit", "driver_version", "recent_xid", "gpu_lost"}, d
PY
    check "$line" --gpus 2 --model H100 --driver-version 550.54.15
    head -1 "$TMP/out" | grep "^FAILED  $ck .*$reason" >/dev/null || { cat "$TMP/out"; fail "$line: text"; }
    note "$ck: $reason -> $action"
done <<'EOF2'
at 0 gpu 1 ecc_dbe_vol 2|ecc_uncorrectable|ecc_uncorrectable|reset_gpu|GPU 1: uncorrectable ECC errors since the last reset (2)
at 0 gpu 0 retired_pending 1|page_retirement_pending|page_retirement_pending|reset_gpu|GPU 0: pages pending retirement
at 0 gpu 1 remap_pending 1|row_remap|row_remap_pending|reset_gpu|GPU 1: a row remap pending
at 0 gpu 1 remap_failure 1|row_remap|row_remap_failure|drain_inspect|GPU 1: a row remap failure
at 0 gpu 0 pcie_width 4|pcie_link|pcie_link_degraded|drain_inspect|GPU 0: PCIe link x4 of x16
at 0 gpu 1 clock_events 0x21|clocks|throttling_persistent|drain_inspect|GPU 1: clocks held down (sw_thermal_slowdown)
at 0 gpu 0 temp 92|temperature||drain_inspect|GPU 0 at 92 °C before its job
at 0 gpu 1 power_limit 300000|power_limit||drain_inspect|GPU 1: power limit 300 W
at 0 gpu 1 lost|gpu_lost|gpu_lost|reboot|GPU 1 fell off the bus
EOF2
check "" --gpus 4
[ $rc = 1 ] && grep -q '^FAILED  gpus_present *2 GPUs present, 4 expected: reboot the node$' "$TMP/out" ||
    { cat "$TMP/out"; fail "a missing GPU"; }
check "" --model A100
[ $rc = 1 ] && grep -q "GPU 0 is 'NVIDIA H100 80GB HBM3', 'A100' expected: drain the node" "$TMP/out" ||
    { cat "$TMP/out"; fail "a wrong model"; }
check "" --driver-version 535.104.05
[ $rc = 1 ] && grep -q "driver 550.54.15, the fleet's is 535.104.05" "$TMP/out" || { cat "$TMP/out"; fail "another driver"; }
check "" --cuda-version 12.4
[ $rc = 0 ] && grep -q "^ok      cuda_version *the driver's CUDA is 12.4, as the fleet's" "$TMP/out" || { cat "$TMP/out"; fail "CUDA 12.4"; }
check "cuda 12020" --cuda-version 12.4
[ $rc = 1 ] && grep -q "^FAILED  cuda_version *the driver's CUDA is 12.2, the fleet's is 12.4: drain the node" "$TMP/out" ||
    { cat "$TMP/out"; fail "CUDA 12.2 on a 12.4 fleet"; }
rc=0; GPULSE_NVML_LIBRARY=$ROOT/build/fakenvml/old/libnvidia-ml.so.1 GPULSE_FAKENVML_SCENARIO=$BASE "$GPULSE" check --kernel-log= \
    --cuda-version 12.4 >"$TMP/out" 2>&1 || rc=$?
[ $rc = 0 ] && grep -q "cuda_version *the driver's CUDA is 12.4" "$TMP/out" || { cat "$TMP/out"; fail "CUDA through an old driver's symbol"; }
note "gpus, model, driver, CUDA (new and old symbol): each fails alone"

# XIDs from the kernel log (kmsg's format, times on CLOCK_MONOTONIC)
python3 - "$TMP/kmsg" <<'PY'
import sys, time
now = int(time.monotonic() * 1e6)
with open(sys.argv[1], "w") as f:
    f.write(f"6,1,{now - 49*3600*10**6},-;NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE (old)\n")
    f.write(f"6,2,{now - 60*10**6},-;NVRM: Xid (PCI:0000:18:00): 13, pid=2, Graphics Exception\n")
    f.write(f"6,3,{now - 2*3600*10**6},-;NVRM: Xid (PCI:0000:28:00): 79, pid=3, GPU has fallen off the bus.\n")
    f.write(" SUBSYSTEM=pci\n6,4,5,-;NVRM: Xid (PCI:0000:28:00): garbage\n")
PY
check "" --json --kernel-log="$TMP/kmsg"
[ $rc = 1 ] || { cat "$TMP/out" "$TMP/err"; fail "a recent XID 79: exit $rc"; }
python3 - "$TMP/out" <<'PY' || fail "recent XIDs (JSON above)"
import json, sys
d = json.load(open(sys.argv[1]))
bad = [c for c in d["checks"] if c["status"] == "failed"]
assert len(bad) == 1, bad
c = bad[0]
assert c["check"] == "recent_xid" and c["gpu"] == 1 and c["fault"] == "xid_79" and c["action"] == "reboot", c
assert "GPU has fallen off the bus, 1 in the last 24 h, newest 120 min ago" in c["reason"], c
PY
check "" --kernel-log="$TMP/kmsg" --xid-window=1h
[ $rc = 0 ] && grep -q "recent_xid .*no hardware XID in the last 1 h (1 other XID: the application's, or asking nothing); some kernel log lines were malformed" "$TMP/out" ||
    { cat "$TMP/out"; fail "XID 79 two hours ago failed a 1 h window, or XID 13 counted"; }
check "" --kernel-log=/nonexistent
[ $rc = 0 ] && grep -q "^skipped recent_xid *cannot read the kernel log /nonexistent: No such file" "$TMP/out" ||
    { cat "$TMP/out"; fail "an unreadable kernel log"; }
note "kernel log: XID 79 2 h ago fails (reboot); 1 h window, XID 13, 49 h old XID 48 pass; unreadable: skipped"

# could not check: exit 2 with a message
rc=0; GPULSE_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$GPULSE" check >"$TMP/out" 2>"$TMP/err" || rc=$?
[ $rc = 2 ] && grep -q 'gpulse check: cannot read the GPUs: no NVIDIA driver or GPU found' "$TMP/err" ||
    { cat "$TMP/err"; fail "no NVML: exit $rc"; }
check "" --gpus=x
[ $rc = 2 ] && grep -q "gpulse check: " "$TMP/err" || { cat "$TMP/err"; fail "a bad flag: exit $rc"; }
check "" --max-temperature=500
[ $rc = 2 ] && grep -q "max_temperature must be at most 150" "$TMP/err" || { cat "$TMP/err"; fail "bad max-temperature"; }
check "" --push
[ $rc = 2 ] && grep -q "push needs a server" "$TMP/err" || { cat "$TMP/err"; fail "--push without a server"; }
check "" --cuda-version=12
[ $rc = 2 ] && grep -q "cuda_version '12' must be MAJOR.MINOR" "$TMP/err" || { cat "$TMP/err"; fail "bad cuda-version"; }
note "no NVML, bad flags: exit 2 with a message"
# the push: with the write token, read back per node; a wrong token and a
# malformed document are refused; the exit status stays the checks'
printf 'w-secret\n' >"$TMP/write-token"
printf 'r-secret\n' >"$TMP/read-token"
printf 'wrong\n' >"$TMP/wrong-token"
start_server --write-token-file "$TMP/write-token" --read-token-file "$TMP/read-token"
api() { curl -sfg -H "Authorization: Bearer r-secret" "$SERVER_URL$1"; }
[ "$(api /api/v1/health/preflight)" = '{"status":"success","data":[]}' ] || fail "no preflight yet: $(api /api/v1/health/preflight)"
check "at 0 gpu 1 remap_pending 1" --server="$SERVER_URL" --push --write-token-file="$TMP/write-token" \
    --read-token-file="$TMP/read-token"
[ $rc = 1 ] && [ ! -s "$TMP/err" ] || { cat "$TMP/out" "$TMP/err"; fail "push of a failed check: exit $rc"; }
grep -q "skipped driver_version .*no fleet driver version known" "$TMP/out" || { cat "$TMP/out"; fail "an empty fleet gave a driver"; }
api /api/v1/health/preflight | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
assert len(d) == 1 and d[0]["node"] == "n1" and d[0]["status"] == "failed" and d[0]["action"] == "reset_gpu", d
assert d[0]["received"] > 1.7e9, d
bad = [c for c in d[0]["checks"] if c["status"] == "failed"]
assert bad == [{"check": "row_remap", "status": "failed", "gpu": 1, "uuid": "GPU-pf000000-0000-4000-8000-000000000001",
    "reason": "GPU 1: a row remap pending", "action": "reset_gpu", "fault": "row_remap_pending", "severity": "warning"}], bad
' || fail "the pushed result as read back"
check "" --hostname=n2 --server="$SERVER_URL" --push --write-token-file="$TMP/write-token"
[ $rc = 0 ] || { cat "$TMP/err"; fail "push of a passing check: exit $rc"; }
[ "$(api '/api/v1/health/preflight' | python3 -c 'import json,sys; print(" ".join(x["node"]+":"+x["status"] for x in json.load(sys.stdin)["data"]))')" = "n1:failed n2:ok" ] ||
    fail "two nodes' results: $(api /api/v1/health/preflight)"
[ "$(api '/api/v1/health/preflight?node=n2' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')" = 1 ] ||
    fail "?node=n2"
# the fleet's driver from the server's GPUs: two other nodes on 535.104.05
# and one on 550.54.15 (this node's own GPUs never count)
now=$(($(date +%s) * 1000))
rw write "$SERVER_URL" --token w-secret \
    "DCGM_FI_DEV_GPU_TEMP{Hostname=\"a\",gpu=\"0\",DCGM_FI_DRIVER_VERSION=\"535.104.05\"}=30@$now" \
    "DCGM_FI_DEV_GPU_TEMP{Hostname=\"a\",gpu=\"1\",DCGM_FI_DRIVER_VERSION=\"535.104.05\"}=30@$now" \
    "DCGM_FI_DEV_GPU_TEMP{Hostname=\"b\",gpu=\"0\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"}=30@$now" \
    "DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",gpu=\"0\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"}=30@$now" \
    "DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",gpu=\"1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"}=30@$now" >"$TMP/rw.out"
grep -q '^204' "$TMP/rw.out" || fail "remote write of the fleet's GPUs: $(cat "$TMP/rw.out")"
check "" --server="$SERVER_URL" --read-token-file="$TMP/read-token"
[ $rc = 1 ] && grep -q "^FAILED  driver_version .*driver 550.54.15, the fleet's is 535.104.05 (the server's GPUs)" "$TMP/out" ||
    { cat "$TMP/out" "$TMP/err"; fail "the fleet's driver from the server: exit $rc"; }
check "" --server="$SERVER_URL" --read-token-file="$TMP/wrong-token"
[ $rc = 0 ] && grep -q "the fleet's driver is unknown: server .* answered 401" "$TMP/err" ||
    { cat "$TMP/out" "$TMP/err"; fail "a wrong read token: exit $rc"; }
note "the fleet's driver: the server's most common one of the other nodes (535.104.05) fails a 550.54.15 node"
check "" --server="$SERVER_URL" --push --write-token-file="$TMP/wrong-token"
[ $rc = 0 ] && grep -q "gpulse check: the result was not pushed: gpulse server .* answered 401" "$TMP/err" ||
    { cat "$TMP/err"; fail "a wrong write token: exit $rc"; }
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer r-secret" -d '{}' "$SERVER_URL/api/v1/health/preflight")
[ "$code" = 401 ] || fail "the read token pushed a preflight result ($code)"
post() { curl -s -X POST -H "Authorization: Bearer w-secret" --data-binary "$1" "$SERVER_URL/api/v1/health/preflight"; }
for b in '[]|the body must be a JSON object' '{"node":"x"|not JSON' \
    '{"node":"","time":1,"status":"ok","action":"none","checks":[]}|node must be' \
    '{"node":"x","time":1,"status":"fine","action":"none","checks":[]}|status must be ok or failed' \
    '{"node":"x","time":1,"status":"ok","action":"pray","checks":[]}|action must be one of' \
    '{"node":"x","time":1,"status":"ok","action":"none","checks":[{"check":"a"}]}|checks\[0\] needs check' \
    '{"node":"x","time":1,"status":"ok","action":"none","checks":[],"extra":1}|unknown field' \
    '{"node":"x","status":"ok","action":"none","checks":[]}|time must be a number'; do
    post "${b%%|*}" | grep "preflight result: .*${b#*|}" >/dev/null || fail "malformed result '${b%%|*}': $(post "${b%%|*}")"
done
[ "$(api /api/v1/health/preflight | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')" = 2 ] ||
    fail "a malformed result was stored"
stop_server
note "push: stored per node with the write token, read back (?node=); wrong token and 8 malformed documents refused"
echo "ok: gpulse check passes a healthy node, fails each of 12 faults alone with its action, reads XIDs from the kernel log"
