#!/usr/bin/env bash
# Events over time through the binary: XIDs counted per code (without
# blocking a tick), the last XID as dcgm-exporter's gauge, and GPU
# processes appearing and leaving (tests/data/nvml/events.scn).
source "$(dirname "$0")/lib.sh"
export GPULSE_FAKENVML_SCENARIO=$SCEN/events.scn
GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --interval 100ms
metrics >"$TMP/m0"
grep -q 'gpulse_gpu_process_memory_bytes{gpu="0",.*pid="6000"' "$TMP/m0" || fail "process 6000 not on GPU 0 at start"
grep -q 'xid_errors_total' "$TMP/m0" && fail "XIDs before any event"
sleep 3.6
metrics >"$TMP/m1"
check_exposition "$TMP/m1"
xid() { awk -v g="gpu=\"$1\"" -v x="xid=\"$2\"" 'index($0, "gpulse_gpu_xid_errors_total{" g) == 1 && index($0, x) {print $NF}' "$TMP/m1"; }
[ "$(xid 0 13)" = 2 ] || fail "GPU 0 XID 13: want 2, got '$(xid 0 13)'"
[ "$(xid 0 31)" = 1 ] || fail "GPU 0 XID 31: want 1, got '$(xid 0 31)'"
[ "$(xid 1 48)" = 1 ] || fail "GPU 1 XID 48: want 1, got '$(xid 1 48)'"
grep -q '^DCGM_FI_DEV_XID_ERRORS{gpu="0",.*} 31$' "$TMP/m1" || fail "last XID of GPU 0 should be 31"
grep -q 'pid="6000"' "$TMP/m1" && fail "process 6000 left GPU 0 at 3 s but is still shown"
grep -q 'gpulse_gpu_process_memory_bytes{gpu="1",.*pid="6100".*} 2147483648$' "$TMP/m1" ||
    fail "process 6100 did not appear on GPU 1"
stop_agent
note "XIDs and process churn ok"
