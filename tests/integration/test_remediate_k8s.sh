#!/usr/bin/env bash
# test_remediate_k8s.sh - the requests remediation's @kubernetes-cordon
# sends, checked against Kubernetes' OpenAPI schemas as deploy/ is
# (tests/k8s/validate.mjs). The unit test remediate.kubernetes_cordon
# runs cordon, a 409 retry and an uncordon against the stand-in API
# server (k8s_api_standin.py), which applies each merge patch to its
# Node and writes the result here; every resulting Node must validate as
# a v1 Node, and hold what the patches meant: n1 cordoned then
# uncordoned (its own taint kept, gpulse's gone), node-x cordoned and
# tainted gpulse.io/unhealthy=KIND:NoSchedule. Its requests need exactly
# what deploy/kubernetes/rbac.yaml's ClusterRole grants.
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
# RBAC: the requests the action made (the stand-in records the verb and
# resource the API server authorizes each by) are exactly what
# deploy/kubernetes/rbac.yaml's ClusterRole grants: a request kind
# without a rule would be refused 403 in a cluster, and a rule no request
# uses is privilege the server does not need.
rbac_check() { # ROLE_YAML REQUESTS_JSONL
    python3 - "$1" "$2" <<'PY'
import json, sys, yaml
role = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ClusterRole"]
if [r["metadata"]["name"] for r in role] != ["gpulse-remediation"]:
    sys.exit(f"want one ClusterRole gpulse-remediation, got {[r['metadata']['name'] for r in role]}")
granted, bad = set(), []
for r in role[0]["rules"]:
    if "nonResourceURLs" in r or "resourceNames" in r:
        bad.append(f"rule {r}: nonResourceURLs or resourceNames (remediation asks for neither)")
    for g in r.get("apiGroups", []):
        for res in r.get("resources", []):
            for v in r.get("verbs", []):
                if "*" in (g, res, v):
                    bad.append(f"rule {r}: a wildcard grants more than remediation needs")
                granted.add((g, res, v))
used = set()
for line in open(sys.argv[2]):
    q = json.loads(line)
    i = q.get("rbac")
    if not i:
        bad.append(f"{q['method']} {q['path']}: not a Kubernetes API path")
        continue
    if i["namespace"]:
        bad.append(f"{q['method']} {q['path']}: namespaced, a ClusterRole binding grants it cluster-wide")
    used.add((i["api_group"], i["resource"], i["verb"]))
for g, res, v in sorted(used - granted):
    bad.append(f"request {v} {res} (group {g!r}) has no rule in the ClusterRole")
for g, res, v in sorted(granted - used):
    bad.append(f"the ClusterRole grants {v} {res} (group {g!r}), which no request uses")
if not used:
    bad.append("no requests recorded")
for b in bad: print(b)
print("requests:", ", ".join(f"{v} {res}" for g, res, v in sorted(used)))
sys.exit(1 if bad else 0)
PY
}
ROLE=$ROOT/deploy/kubernetes/rbac.yaml
rbac_check "$ROLE" "$TMP/nodes/requests.jsonl" >"$TMP/rbac.log" 2>&1 || { cat "$TMP/rbac.log"; fail "the requests and the ClusterRole differ"; }
grep -qx 'requests: get nodes, patch nodes' "$TMP/rbac.log" || { cat "$TMP/rbac.log"; fail "unexpected request kinds"; }
note "the requests (get, patch nodes) are exactly what rbac.yaml's ClusterRole grants"

# The check bites: a request kind the code might add (an eviction, a
# node status patch) without a rule, and a rule no request uses.
cp "$TMP/nodes/requests.jsonl" "$TMP/more.jsonl"
python3 - "$ROOT/tests/integration/k8s_api_standin.py" >>"$TMP/more.jsonl" <<'PY'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("standin", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
for method, path in (("POST", "/api/v1/namespaces/ml/pods/p-0/eviction"), ("PATCH", "/api/v1/nodes/n1/status")):
    print(json.dumps({"method": method, "path": path, "rbac": m.request_info(method, path)}))
PY
rbac_check "$ROLE" "$TMP/more.jsonl" >"$TMP/bad.log" 2>&1 && { cat "$TMP/bad.log"; fail "an eviction passed the RBAC check"; }
grep -q "request create pods/eviction" "$TMP/bad.log" && grep -q "request patch nodes/status" "$TMP/bad.log" ||
    { cat "$TMP/bad.log"; fail "the RBAC check did not name the ungranted requests"; }
sed 's/verbs: \[get, patch\]/verbs: [get, list, patch]/' "$ROLE" >"$TMP/wide.yaml"
cmp -s "$ROLE" "$TMP/wide.yaml" && fail "rbac.yaml's verbs line changed; update this test"
rbac_check "$TMP/wide.yaml" "$TMP/nodes/requests.jsonl" >"$TMP/bad.log" 2>&1 && { cat "$TMP/bad.log"; fail "an unused list passed the RBAC check"; }
grep -q "grants list nodes" "$TMP/bad.log" || { cat "$TMP/bad.log"; fail "the RBAC check did not name the unused grant"; }
echo "ok: remediation's Kubernetes patches validate as v1 Nodes, do what they meant, and need exactly rbac.yaml's ClusterRole"
