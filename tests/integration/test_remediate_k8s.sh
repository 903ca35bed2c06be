#!/usr/bin/env bash
# test_remediate_k8s.sh - the requests remediation's @kubernetes-cordon
# sends, checked against Kubernetes' OpenAPI schemas as deploy/ is
# (tests/k8s/validate.mjs). The unit test remediate.kubernetes_cordon
# runs cordon, a 409 retry and an uncordon against the stand-in API
# server (k8s_api_standin.py), which applies each merge patch to its
# Node and writes the result here; every resulting Node must validate as
# a v1 Node, and hold what the patches meant: n1 cordoned then
# uncordoned (its own taint kept, gpulse's gone), node-x cordoned and
# tainted gpulse.io/unhealthy=KIND:NoSchedule.
. "$(dirname "$0")/lib.sh"
command -v node >/dev/null || fail "node is not installed (scripts/deps.sh build)"
if [ ! -f "$ROOT/tests/k8s/node_modules/.package-lock.json" ]; then
    note "tests/k8s/node_modules missing: npm ci (scripts/deps.sh test does this ahead)"
    npm ci --prefix "$ROOT/tests/k8s" --silent --no-audit --no-fund --prefer-offline || fail "npm ci in tests/k8s"
fi
UNIT=${UNIT:-$ROOT/build/asan/unit-tests}
mkdir -p "$TMP/nodes"
GPULSE_K8S_OUT=$TMP/nodes "$UNIT" remediate.kubernetes_cordon >"$TMP/unit.log" 2>&1 ||
    { cat "$TMP/unit.log"; fail "remediate.kubernetes_cordon"; }
[ -f "$TMP/nodes/n1.json" ] && [ -f "$TMP/nodes/node-x.json" ] || { ls "$TMP/nodes"; fail "the stand-in wrote no Nodes"; }
[ ! -f "$TMP/nodes/n2.json" ] || fail "a request with a stale token changed n2"
V() { node "$ROOT/tests/k8s/validate.mjs" "$@"; }
V "$TMP"/nodes/*.json >"$TMP/validate.log" 2>&1 || { cat "$TMP/validate.log"; fail "the patched Nodes do not validate"; }
grep -q '^2 objects, 0 problems$' "$TMP/validate.log" || { cat "$TMP/validate.log"; fail "no summary from validate.mjs"; }
note "the Nodes the patches made validate against the v1 Node schema"

# The validation bites: a mistyped or misspelt field of a patch fails.
python3 - "$TMP/nodes/node-x.json" "$TMP/bad1.json" "$TMP/bad2.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))
a = json.loads(json.dumps(n)); a["spec"]["unschedulable"] = "yes"
json.dump(a, open(sys.argv[2], "w"))
b = json.loads(json.dumps(n)); b["spec"]["taints"][-1]["efect"] = b["spec"]["taints"][-1].pop("effect")
json.dump(b, open(sys.argv[3], "w"))
PY
for b in bad1:unschedulable bad2:efect; do
    if V "$TMP/${b%%:*}.json" >"$TMP/bad.log" 2>&1 || ! grep -q "${b#*:}" "$TMP/bad.log"; then
        cat "$TMP/bad.log"; fail "validate.mjs missed ${b#*:}"
    fi
done

# What the patches meant.
python3 - "$TMP/nodes" <<'PY' || fail "the Nodes do not hold what the patches meant (above)"
import json, sys
d = sys.argv[1]
n1 = json.load(open(d + "/n1.json"))
x = json.load(open(d + "/node-x.json"))
bad = []
if n1["spec"].get("unschedulable") is not False: bad.append("n1 is still cordoned")
if [t["key"] for t in n1["spec"]["taints"]] != ["nvidia.com/gpu"]: bad.append(f"n1 taints {n1['spec']['taints']}")
if x["spec"].get("unschedulable") is not True: bad.append("node-x is not cordoned")
want = {"key": "gpulse.io/unhealthy", "value": "gpu_row_remap_pending", "effect": "NoSchedule"}
if x["spec"]["taints"] != [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}, want]:
    bad.append(f"node-x taints {x['spec']['taints']}")
for b in bad: print(b)
sys.exit(1 if bad else 0)
PY
echo "ok: remediation's Kubernetes patches validate as v1 Nodes and do what they meant"
