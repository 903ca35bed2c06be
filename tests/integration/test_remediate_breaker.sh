#!/usr/bin/env bash
# test_remediate_breaker.sh - remediation's circuit breaker in the real
# server: `gpulse up --simulate 20x1xH100` with a rule that fires on
# every GPU at once (20 nodes failing together) and `@slurm-drain` live
# against a stand-in scontrol that records its arguments. With the
# defaults (5 nodes or 10 % of the fleet an hour) exactly 2 nodes are
# drained; the 18 others are audited breaker_open, the alert
# remediation_breaker_open fires and /metrics counts it. Then the same in
# shadow mode (the default): 20 decisions, no scontrol call at all.
. "$(dirname "$0")/lib.sh"
printf '#!/bin/sh\necho "$*" >> "%s/scontrol.log"\n' "$TMP" >"$TMP/scontrol"
chmod +x "$TMP/scontrol"
cat >"$TMP/gpulse.yaml" <<'YAML'
rules:
  - name: gpu_warm
    expr: DCGM_FI_DEV_GPU_TEMP
    agg: last
    window: 10s
    op: ">"
    threshold: 0
    for: 1s
    severity: critical
    annotations:
      summary: "GPU {{ $labels.gpu }} of {{ $labels.Hostname }} is warm"
YAML
J() { curl -sf "$SERVER_URL$1"; }
count() { J "/api/v1/audit?limit=1000${1:+&decision=$1}" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))'; }
all_decided() { [ "$(count)" -ge 20 ]; }
run() {
    SERVER_DATA=$TMP/data-$1 SERVER_CMD=up start_server --config "$TMP/gpulse.yaml" --simulate 20x1xH100 \
        --interval 1s --eval-interval 1s --eval-step 1s --eval-window 30s \
        --remediation 'gpu_warm=@slurm-drain' --remediation-scontrol "$TMP/scontrol" \
        --remediation-max-per-kind-per-hour 64 "${@:2}"
    wait_until 90 all_decided || { count; tail -20 "$SERVER_LOG"; fail "$1: fewer than 20 decisions within 90 s"; }
    sleep 2 # a late decision would show
}

run live --no-remediation-dry-run
[ "$(count)" = 20 ] || fail "live: $(count) decisions, want 20"
[ "$(count ran)" = 2 ] || fail "live: $(count ran) drained, want 2 (10 % of 20 nodes)"
[ "$(count breaker_open)" = 18 ] || fail "live: $(count breaker_open) breaker_open, want 18"
[ "$(wc -l <"$TMP/scontrol.log")" = 2 ] || { cat "$TMP/scontrol.log"; fail "scontrol ran other than twice"; }
grep -Eq '^update nodename=sim-node-[0-9]+ state=drain reason=gpulse gpu_warm: GPU 0 of sim-node-[0-9]+ is warm$' "$TMP/scontrol.log" ||
    { cat "$TMP/scontrol.log"; fail "scontrol's arguments"; }
J "/api/v1/audit?decision=breaker_open&limit=1" >"$TMP/row.json"
grep -q 'circuit breaker open: 2 nodes acted on in the last hour, at most 2 (5 nodes or 10% of 20 in the fleet)' "$TMP/row.json" ||
    fail "the breaker_open row does not say why"
wait_until 10 sh -c "curl -sf '$SERVER_URL/api/v1/alerts' | grep -q remediation_breaker_open" ||
    fail "no remediation_breaker_open alert"
M=$(J /metrics)
grep -q '^gpulse_server_remediation_breaker_refused_total 18$' <<<"$M" || fail "breaker_refused_total"
grep -q '^gpulse_server_remediation_breaker_nodes 2$' <<<"$M" || fail "breaker_nodes"
grep -q '^gpulse_server_remediation_breaker_limit 2$' <<<"$M" || fail "breaker_limit"
note "live: 20 nodes failing at once, 2 drained, 18 refused by the breaker, its alert firing"
stop_server

rm -f "$TMP/scontrol.log"
run shadow
[ "$(count dry_run)" = 2 ] && [ "$(count breaker_open)" = 18 ] ||
    fail "shadow: $(count dry_run) dry_run, $(count breaker_open) breaker_open"
[ ! -e "$TMP/scontrol.log" ] || { cat "$TMP/scontrol.log"; fail "shadow mode ran scontrol"; }
note "shadow: the same 20 decisions recorded, scontrol never ran"
stop_server
echo "ok: the circuit breaker holds remediation to its limit; shadow mode acts on nothing"
