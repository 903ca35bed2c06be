#!/usr/bin/env bash
# Issue 20 item 2: health states end to end. `gpulse up` on the stand-in
# NVML's faults.scn (one fault class per GPU): GET /api/v1/health/nodes
# gives each GPU's state, its reasons with the catalog's action, and the
# node's worst; POST .../healthy needs the write token (401 without or
# with a wrong one), is audited, drops the XIDs and keeps what is still
# wrong (the link at x8, the pending remap, the GPU off the bus come back
# at the next tick); gpulse check's pushed result shows with the node's
# health; the states, reasons and their times survive a restart.
source "$(dirname "$0")/lib.sh"
export GPULSE_FAKENVML_SCENARIO=$SCEN/faults.scn
export GPULSE_NVML_LIBRARY=$FAKE_FULL
cat >"$TMP/gpulse.yaml" <<EOF2
server:
  write_token: wtok
  read_token: rtok
EOF2
# remediation drains the node through a stand-in scontrol, and resumes
# it when the node is marked healthy
printf '#!/bin/sh\necho "$*" >> "%s/scontrol.log"\n' "$TMP" >"$TMP/scontrol"
chmod +x "$TMP/scontrol"
ARGS=(--config "$TMP/gpulse.yaml" --interval 500ms --eval-interval 1s --eval-step 1s --eval-window 10s
    --detector-overrides "pcie_link_degraded.for=0s"
    --remediation 'gpu_hardware_errors=@slurm-drain' --remediation-scontrol "$TMP/scontrol"
    --no-remediation-dry-run --remediation-undo-on-healthy)
SERVER_CMD=up SERVER_DATA=$TMP/data start_server "${ARGS[@]}"
RD=(-H "Authorization: Bearer rtok")
nodes() { curl -sf "${RD[@]}" "$SERVER_URL/api/v1/health/nodes" >"$TMP/nodes.json"; }

# check WANT: the node's GPUs have the states and reasons of WANT (a
# python dict literal gpu -> (state, [fault:action, ...])), the node the
# worst state and the strongest reason's action
check() {
    nodes || return 1
    python3 - "$TMP/nodes.json" "$1" "$2" "${3:-}" <<'PY'
import ast, json, sys
doc = json.load(open(sys.argv[1]))
want, node_action, quiet = ast.literal_eval(sys.argv[2]), sys.argv[3], sys.argv[4]
nodes = doc["data"]
bad = []
if len(nodes) != 1:
    print("  want 1 node, got %d" % len(nodes)); sys.exit(1)
n = nodes[0]
gpus = {g["gpu"]: g for g in n["gpus"]}
for gpu, (state, faults) in want.items():
    g = gpus.get(gpu)
    got = sorted("%s:%s" % (r["fault"], r["action"]) for r in n["reasons"] if r["gpu"] == gpu)
    if not g or g["state"] != state or got != sorted(faults):
        bad.append("GPU %s: %s %s, want %s %s" % (gpu, g and g["state"], got, state, sorted(faults)))
worst = max((w[0] for w in want.values()), key=["healthy", "degraded", "unhealthy"].index)
if n["state"] != worst or n["action"] != node_action:
    bad.append("node %s action %s, want %s %s" % (n["state"], n["action"], worst, node_action))
for r in n["reasons"]:
    if not r["explanation"] or not r["since"] or r["state"] not in ("degraded", "unhealthy"):
        bad.append("reason %s lacks its explanation, since or state" % r["fault"])
if bad and not quiet:
    print("\n".join("  " + b for b in bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}
ALL="{'0': ('degraded', ['xid_13:restart_app']),
      '1': ('degraded', ['pcie_link_degraded:drain_inspect']),
      '2': ('degraded', ['row_remap_pending:reset_gpu']),
      '3': ('unhealthy', ['xid_48:reset_gpu']),
      '4': ('unhealthy', ['xid_64:drain_inspect']),
      '5': ('unhealthy', ['xid_79:reboot', 'gpu_lost:reboot'])}"
wait_until 60 check "$ALL" drain_inspect quiet || { check "$ALL" drain_inspect || true; tail -20 "$SERVER_LOG" >&2; fail "health states of the fault scenario"; }
NODE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"][0]["node"])' "$TMP/nodes.json")
note "each GPU's state and reasons follow the catalog: XID 13 degraded, XIDs 48/64/79 unhealthy; node $NODE unhealthy (drain_inspect)"

one=$(curl -sf "${RD[@]}" "$SERVER_URL/api/v1/health/nodes/$NODE")
python3 -c 'import json,sys; d=json.loads(sys.argv[1])["data"]; sys.exit(d["node"] != sys.argv[2] or d["state"] != "unhealthy")' "$one" "$NODE" ||
    fail "GET /api/v1/health/nodes/$NODE: $one"
code=$(curl -s -o /dev/null -w '%{http_code}' "${RD[@]}" "$SERVER_URL/api/v1/health/nodes/no-such-node")
[ "$code" = 404 ] || fail "an unknown node answers $code, want 404"
note "one node by name; an unknown one is a 404"
# the health module's own metrics count the same states
hm() { curl -sf "${RD[@]}" "$SERVER_URL/metrics" | grep '^gpulse_health_' | sort | tr '\n' ' '; }
want=$(python3 - "$TMP/nodes.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))["data"][0]
g = [x["state"] for x in n["gpus"]]
out = ["gpulse_health_gpus{state=\"%s\"} %d" % (s, g.count(s)) for s in ("degraded", "healthy", "unhealthy")]
out += ["gpulse_health_nodes{state=\"%s\"} %d" % (s, s == n["state"]) for s in ("degraded", "healthy", "unhealthy")]
out.append("gpulse_health_preflight_failed_nodes 0")
print(" ".join(sorted(out)) + " ")
PY
)
[ "$(hm)" = "$want" ] || fail "/metrics' health counts: got '$(hm)', want '$want'"
note "/metrics: $(hm)"

# marking healthy: the write token, nothing else
URL=$SERVER_URL/api/v1/health/nodes/$NODE/healthy
BODY='{"by":"alice","comment":"replaced GPU 4, reseated GPU 1"}'
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d "$BODY" "$URL")
[ "$code" = 401 ] || fail "mark-healthy without a token answers $code, want 401"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer rtok" -d "$BODY" "$URL")
[ "$code" = 401 ] || fail "mark-healthy with the read token answers $code, want 401"
code=$(curl -s -o /dev/null -w '%{http_code}' -X GET -H "Authorization: Bearer wtok" "$URL")
[ "$code" = 405 ] || fail "GET on mark-healthy answers $code, want 405"
check "$ALL" drain_inspect || fail "a refused mark changed the states"
note "mark-healthy without the write token (none, the read token) is 401 and changes nothing"
out=$(curl -sf -X POST -H "Authorization: Bearer wtok" -d "$BODY" "$URL") || fail "mark-healthy with the write token"
python3 -c 'import json,sys; d=json.loads(sys.argv[1])["data"]; sys.exit(d["state"] != "healthy" or len(d["reasons"]) > 0)' "$out" ||
    fail "the marked node is not healthy in the answer: $out"
# the faults still there come back at the next tick; the XIDs do not
STILL="{'0': ('healthy', []), '1': ('degraded', ['pcie_link_degraded:drain_inspect']),
        '2': ('degraded', ['row_remap_pending:reset_gpu']), '3': ('healthy', []), '4': ('healthy', []),
        '5': ('unhealthy', ['gpu_lost:reboot'])}"
wait_until 20 check "$STILL" reboot quiet || { check "$STILL" reboot || true; fail "the states after the mark"; }
note "marked healthy with the write token: the XIDs are gone, the link, the pending remap and the lost GPU come back"
audit=$(curl -sf "${RD[@]}" "$SERVER_URL/api/v1/audit?kind=mark_healthy")
python3 - "$audit" "$NODE" <<'PY' || fail "no audit row of the mark: $audit"
import json, sys
rows = json.loads(sys.argv[1])["data"]
ok = [r for r in rows if r["node"] == sys.argv[2] and r["decision"] == "marked_healthy"
      and r["detail"].startswith("marked healthy by alice: replaced GPU 4, reseated GPU 1; was unhealthy (")
      and "GPU 4 xid_64" in r["detail"] and r["at"] > 0]
sys.exit(0 if len(ok) == 1 else 1)
PY
note "the mark is audited: who, when, why and what the node was"
resumed() { grep -q "^update nodename=$NODE state=resume" "$TMP/scontrol.log"; }
wait_until 15 resumed || { cat "$TMP/scontrol.log" >&2; fail "the node gpulse drained was not resumed on the mark"; }
grep -q "^update nodename=$NODE state=drain" "$TMP/scontrol.log" || fail "the node was not drained first"
note "remediation drained the node, and resumed it when it was marked healthy"

# gpulse check's pushed result shows with the node's health (the stand-in
# node fails it: the pending remap, the link at x8, the lost GPU)
echo rtok >"$TMP/rtok"; echo wtok >"$TMP/wtok"
rc=0
"$GPULSE" check --server "$SERVER_URL" --read-token-file "$TMP/rtok" --write-token-file "$TMP/wtok" \
    --push --kernel-log "" --hostname "$NODE" >"$TMP/check.out" 2>&1 || rc=$?
[ $rc = 1 ] || { cat "$TMP/check.out" >&2; fail "gpulse check on the faulty node exited $rc, want 1"; }
pf() {
    curl -sf "${RD[@]}" "$SERVER_URL/api/v1/health/nodes/$NODE" | python3 -c '
import json, sys
p = json.load(sys.stdin)["data"]["preflight"]
sys.exit(0 if p and p["ok"] is False and p["at"] > 0 and " failed: " in p["summary"] else 1)'
}
wait_until 10 pf || fail "the pushed preflight is not with the node's health: $(curl -s "${RD[@]}" "$SERVER_URL/api/v1/health/nodes/$NODE")"
note "gpulse check --push: its failed result shows with the node's health ($(curl -s "${RD[@]}" "$SERVER_URL/api/v1/health/nodes/$NODE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["preflight"]["summary"])'))"

hm | grep 'gpulse_health_preflight_failed_nodes 1 ' >/dev/null || fail "/metrics does not count the failed preflight: $(hm)"

# a restart keeps states, reasons and their times, and the preflight result as sent
cp "$TMP/nodes.json" "$TMP/before.json"
curl -sf "${RD[@]}" "$SERVER_URL/api/v1/health/preflight" >"$TMP/pf-before.json" || fail "GET /api/v1/health/preflight"
stop_server
SERVER_CMD=up SERVER_DATA=$TMP/data start_server "${ARGS[@]}"
nodes || fail "GET /api/v1/health/nodes after the restart"
python3 - "$TMP/before.json" "$TMP/nodes.json" <<'PY' || fail "the states changed across the restart"
import json, sys
def key(path):
    n = json.load(open(path))["data"][0]
    return (n["node"], n["state"], n["since"],
            sorted((r["gpu"], r["fault"], r["since"]) for r in n["reasons"]),
            sorted((g["gpu"], g["state"], g["since"]) for g in n["gpus"]))
a, b = key(sys.argv[1]), key(sys.argv[2])
if a != b:
    print("  before %s\n  after  %s" % (a, b), file=sys.stderr)
sys.exit(0 if a == b else 1)
PY
curl -sf "${RD[@]}" "$SERVER_URL/api/v1/health/preflight" >"$TMP/pf-after.json" || fail "GET /api/v1/health/preflight after the restart"
python3 - "$TMP/pf-before.json" "$TMP/pf-after.json" "$NODE" <<'PY' || fail "the preflight result changed across the restart: $(cat "$TMP/pf-before.json") -> $(cat "$TMP/pf-after.json")"
import json, sys
a, b = (json.load(open(p))["data"] for p in sys.argv[1:3])
sys.exit(0 if a == b and len(a) == 1 and a[0]["node"] == sys.argv[3] and a[0]["status"] == "failed" and a[0]["checks"] else 1)
PY
note "after a restart: GET /api/v1/health/preflight gives the same result, received at the same time"
sleep 3 # ticks on the restarted server count no XID again (the counters' values were kept)
wait_until 10 check "$STILL" reboot || fail "the states after the restart's first ticks"
note "after a restart: the same states, reasons and times; old XIDs are not counted again"
stop_server
echo "ok test_health_states"
