#!/usr/bin/env bash
# Issue 15 #12: a driver whose nvmlDeviceGetFieldValues does not offer the
# ECC, retired-page and remapped-row field ids (the stand-in NVML's
# `ecc_fields absent`) still gives the agent's /metrics every ECC series,
# read through nvmlDeviceGetTotalEccErrors, nvmlDeviceGetRetiredPages
# (+PendingStatus) and nvmlDeviceGetRemappedRows: the same names and
# values as the same scenario served through field values.
source "$(dirname "$0")/lib.sh"
ECC_RE='^DCGM_FI_DEV_(ECC_|RETIRED_|CORRECTABLE_REMAPPED|UNCORRECTABLE_REMAPPED|ROW_REMAP_FAILURE)'

serve() { # serve SCENARIO OUT: one agent's ECC series, sorted
    export GPULSE_FAKENVML_SCENARIO=$1
    GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --interval 100ms
    sleep 0.3
    metrics >"$2.full"
    check_exposition "$2.full"
    stop_agent
    { grep -E "$ECC_RE" "$2.full" || true; } | sort >"$2"
}

serve "$SCEN/ecc_dedicated.scn" "$TMP/dedicated"
n=$(grep -c 'read through their own NVML calls' "$AGENT_LOG" || true)
[ "$n" = 2 ] || { cat "$AGENT_LOG" >&2; fail "$n log lines about the dedicated calls, want one per GPU (2)"; }
sed 's/^ecc_fields absent$/ecc_fields present/' "$SCEN/ecc_dedicated.scn" >"$TMP/fields.scn"
grep -q '^ecc_fields present$' "$TMP/fields.scn" || fail "could not make the field-values scenario"
serve "$TMP/fields.scn" "$TMP/fields"

n=$(wc -l <"$TMP/dedicated")
[ "$n" = 20 ] || { cat "$TMP/dedicated" >&2; fail "$n ECC series through the dedicated calls, want 20 (10 per GPU)"; }
diff -u "$TMP/fields" "$TMP/dedicated" >&2 || fail "the dedicated calls' series differ from field values'"
python3 "$ROOT/tests/integration/compare_values.py" "$SCEN/ecc_dedicated.scn" expo "$TMP/dedicated.full" ||
    fail "served values differ from the scenario"
val() { awk -v s="$1{" -v u="UUID=\"$2\"" 'index($0, s) == 1 && index($0, u) {print $NF}' "$TMP/dedicated"; }
G0=GPU-ecc00000-0000-4000-8000-000000000000
[ "$(val DCGM_FI_DEV_RETIRED_SBE $G0)" = 3 ] && [ "$(val DCGM_FI_DEV_RETIRED_DBE $G0)" = 1 ] &&
    [ "$(val DCGM_FI_DEV_RETIRED_PENDING $G0)" = 1 ] || fail "retired pages of GPU 0 wrong"
note "20 ECC/retirement/remap series through the dedicated calls, identical to field values'"
echo "ok test_agent_fakenvml_ecc"
