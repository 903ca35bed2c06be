#!/usr/bin/env bash
# test_deploy_k8s.sh - deploy/kubernetes, offline: every object validates
# against the Kubernetes API schemas (tests/k8s/validate.mjs: JSON Schema
# generated from Kubernetes' OpenAPI spec and from the Prometheus
# Operator's ServiceMonitor CRD, plus an unknown-field check), a
# misspelt field is caught, the pieces fit together (selectors, ports,
# volumes, the GPU-node settings the agent needs), and the ConfigMap's
# gpulse.yml with the containers' own args runs: the agent (the stand-in
# NVML's 8 GPUs, NODE_NAME as its host label) pushes to the server with the
# tokens, as it would in the cluster.
. "$(dirname "$0")/lib.sh"
K=$ROOT/deploy/kubernetes
command -v node >/dev/null || fail "node is not installed (scripts/deps.sh build)"
if [ ! -f "$ROOT/tests/k8s/node_modules/.package-lock.json" ]; then
    note "tests/k8s/node_modules missing: npm ci (scripts/deps.sh test does this ahead)"
    npm ci --prefix "$ROOT/tests/k8s" --silent --no-audit --no-fund --prefer-offline || fail "npm ci in tests/k8s"
fi
V() { node "$ROOT/tests/k8s/validate.mjs" "$@"; }
V "$K"/*.yaml >"$TMP/validate.log" 2>&1 || { cat "$TMP/validate.log"; fail "manifests do not validate"; }
objects=$(sed -n 's/^\([0-9]*\) objects, 0 problems$/\1/p' "$TMP/validate.log")
[ -n "$objects" ] || { cat "$TMP/validate.log"; fail "no summary from validate.mjs"; }
grep '^checked' "$TMP/validate.log" | sed 's/^/  - /'

# The validation is real: misspelt or mistyped fields fail, by name.
sed 's/runtimeClassName: nvidia/runtimeclassName: nvidia/' "$K/agent-daemonset.yaml" >"$TMP/bad1.yaml"
sed 's/honorLabels: true/honorlabels: true/' "$K/servicemonitor.yaml" >"$TMP/bad2.yaml"
sed 's/containerPort: 9402/containerPort: "9402"/' "$K/server.yaml" >"$TMP/bad3.yaml"
for b in 1:runtimeclassName 2:honorlabels 3:'containerPort must be integer'; do
    if V "$TMP/bad${b%%:*}.yaml" >"$TMP/bad.log" 2>&1 || ! grep -q "${b#*:}" "$TMP/bad.log"; then
        cat "$TMP/bad.log"; fail "validate.mjs missed ${b#*:}"
    fi
done

# How the pieces fit, and what the agent needs on a GPU node.
python3 - "$K" "$TMP/cfg" <<'PY' || fail "manifests do not fit together (above)"
import glob, os, sys, yaml
objs = [d for f in sorted(glob.glob(sys.argv[1] + "/*.yaml")) for d in yaml.safe_load_all(open(f)) if d]
by = {(o["kind"], o["metadata"]["name"]): o for o in objs}
bad = []
def need(cond, msg):
    if not cond: bad.append(msg)
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
ns = {o["metadata"].get("namespace") for o in objs if o["kind"] not in CLUSTER_SCOPED}
need(ns == {"gpulse"}, f"objects outside namespace gpulse: {ns}")
need(all("namespace" not in o["metadata"] for o in objs if o["kind"] in CLUSTER_SCOPED), "a cluster-scoped object names a namespace")
ds, dep = by[("DaemonSet", "gpulse-agent")], by[("Deployment", "gpulse-server")]
for w in (ds, dep):
    sel = w["spec"]["selector"]["matchLabels"]
    lab = w["spec"]["template"]["metadata"]["labels"]
    need(all(lab.get(k) == v for k, v in sel.items()), f"{w['metadata']['name']}: selector does not match its pods")
pod = ds["spec"]["template"]["spec"]
need(pod.get("runtimeClassName") == "nvidia", "agent: runtimeClassName is not nvidia")
need(pod.get("hostPID") is True, "agent: no hostPID (process attribution)")
need(pod.get("nodeSelector", {}).get("nvidia.com/gpu.present") == "true", "agent: not pinned to GPU nodes")
need(any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations", [])), "agent: does not tolerate the GPU taint")
c = pod["containers"][0]
caps = c["securityContext"]["capabilities"]
need(caps.get("drop") == ["ALL"] and sorted(caps.get("add", [])) == ["DAC_READ_SEARCH", "SYS_PTRACE"],
     f"agent: capabilities {caps}, want drop ALL, add SYS_PTRACE and DAC_READ_SEARCH")
need(not c["securityContext"].get("privileged"), "agent: privileged")
need("nvidia.com/gpu" not in str(c.get("resources")), "agent: requests a GPU (it would take one from the jobs)")
dpod = dep["spec"]["template"]["spec"]
# The server runs as the account rbac.yaml binds to the remediation role,
# with its token where the ConfigMap's remediation settings read it.
sa = dpod.get("serviceAccountName")
need(("ServiceAccount", sa) in by, f"server: service account {sa} not defined")
need(dpod.get("automountServiceAccountToken") is True, "server: the service account token is not mounted")
crb = by.get(("ClusterRoleBinding", "gpulse-remediation"), {})
need(crb.get("roleRef", {}).get("kind") == "ClusterRole" and ("ClusterRole", crb["roleRef"]["name"]) in by,
     "ClusterRoleBinding gpulse-remediation: no such ClusterRole")
need({"kind": "ServiceAccount", "name": sa, "namespace": "gpulse"} in crb.get("subjects", []),
     f"ClusterRoleBinding gpulse-remediation does not bind the server's account {sa}")
scfg = yaml.safe_load(by[("ConfigMap", "gpulse-config")]["data"]["gpulse.yml"])["server"]
need(any(e.endswith("=@kubernetes-cordon") for e in scfg.get("remediation", [])), "ConfigMap: no @kubernetes-cordon example")
need(scfg.get("remediation_dry_run") is True, "ConfigMap: remediation is not in shadow mode")
for k, f in (("token_file", "token"), ("ca_file", "ca.crt")):
    need(scfg.get("remediation_kubernetes_" + k) == "/var/run/secrets/kubernetes.io/serviceaccount/" + f,
         f"ConfigMap: remediation_kubernetes_{k} is not the mounted service account's {f}")
claims = [v["persistentVolumeClaim"]["claimName"] for v in dpod["volumes"] if "persistentVolumeClaim" in v]
need(claims and all(("PersistentVolumeClaim", n) in by for n in claims), f"server: claims {claims} not defined")
need(dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate", "server: not one replica with Recreate")
for w in (ds, dep):
    p = w["spec"]["template"]["spec"]
    vols = {v["name"] for v in p["volumes"]}
    for m in p["containers"][0].get("volumeMounts", []):
        need(m["name"] in vols, f"{w['metadata']['name']}: mount {m['name']} has no volume")
    for v in p["volumes"]:
        if "configMap" in v:
            need(("ConfigMap", v["configMap"]["name"]) in by, f"{w['metadata']['name']}: no ConfigMap {v['configMap']['name']}")
# Services select the pods and name their ports; ServiceMonitors select the Services.
pods = {w["metadata"]["name"]: w["spec"]["template"] for w in (ds, dep)}
for s in [o for o in objs if o["kind"] == "Service"]:
    hit = [n for n, t in pods.items() if all(t["metadata"]["labels"].get(k) == v for k, v in s["spec"]["selector"].items())]
    need(len(hit) == 1, f"Service {s['metadata']['name']} selects {hit}")
    if hit:
        names = {p["name"] for p in pods[hit[0]]["spec"]["containers"][0]["ports"]}
        for p in s["spec"]["ports"]:
            need(p["targetPort"] in names, f"Service {s['metadata']['name']}: targetPort {p['targetPort']} not a container port")
for m in [o for o in objs if o["kind"] == "ServiceMonitor"]:
    svcs = [s for s in objs if s["kind"] == "Service" and
            all(s["metadata"]["labels"].get(k) == v for k, v in m["spec"]["selector"]["matchLabels"].items())]
    need(len(svcs) == 1, f"ServiceMonitor {m['metadata']['name']} selects {len(svcs)} Services")
    for e in m["spec"]["endpoints"]:
        need(e.get("honorLabels") is True, f"ServiceMonitor {m['metadata']['name']}: honorLabels is not true")
        need(svcs and e["port"] in {p["name"] for p in svcs[0]["spec"]["ports"]}, f"ServiceMonitor {m['metadata']['name']}: port {e['port']}")
# For the run below: the config and each container's args.
os.makedirs(sys.argv[2], exist_ok=True)
open(sys.argv[2] + "/gpulse.yml", "w").write(by[("ConfigMap", "gpulse-config")]["data"]["gpulse.yml"])
for w in (ds, dep):
    open(sys.argv[2] + "/" + w["metadata"]["name"] + ".args", "w").write("\n".join(w["spec"]["template"]["spec"]["containers"][0]["args"]) + "\n")
for b in bad: print("  " + b)
sys.exit(1 if bad else 0)
PY
note "$objects objects validate; selectors, ports, volumes and the agent's GPU-node settings fit"

# The ConfigMap's gpulse.yml, its in-pod paths moved into $TMP and the
# in-cluster server URL to a local port, run with the containers' args.
# ($TMP/agent stands for the hostPath /var/lib/gpulse-agent, made by
# DirectoryOrCreate.)
SP=$(free_port); AP=$(free_port)
mkdir -p "$TMP/tokens" "$TMP/agent"; printf 'wtok\n' >"$TMP/tokens/write-token"; printf 'rtok\n' >"$TMP/tokens/read-token"
sed -e "s|/etc/gpulse/tokens/|$TMP/tokens/|; s|/var/lib/gpulse-agent/|$TMP/agent/|; s|/run/gpulse/|$TMP/|" \
    -e "s|data_dir: /var/lib/gpulse|data_dir: $TMP/data|; s|http://gpulse-server.gpulse.svc:9402|http://127.0.0.1:$SP|" \
    -e "s|0.0.0.0:9402|127.0.0.1:$SP|; s|0.0.0.0:9401|127.0.0.1:$AP|" "$TMP/cfg/gpulse.yml" >"$TMP/gpulse.yml"
grep -q '0\.0\.0\.0\|/etc/gpulse\|/var/lib/gpulse\b\|svc:' "$TMP/gpulse.yml" && { cat "$TMP/gpulse.yml"; fail "a cluster path was not moved"; }
args() { sed -e "s|^--config=/etc/gpulse/gpulse.yml$|--config=$TMP/gpulse.yml|" -e 's|\$(NODE_NAME)|k8s-gpu-node-1|' "$TMP/cfg/$1.args"; }
mapfile -t sargs < <(args gpulse-server)
mapfile -t aargs < <(args gpulse-agent)
"$GPULSE" "${sargs[@]}" >"$TMP/server.log" 2>&1 & PIDS+=($!)
wait_until 20 curl -sf "http://127.0.0.1:$SP/api/v1/health" || { cat "$TMP/server.log"; fail "server did not start from the ConfigMap"; }
# The stand-in NVML (8 H100s) through the path the NVIDIA runtime gives
# the real one; --simulate would name its own nodes, not $(NODE_NAME).
GPULSE_FAKENVML_SCENARIO=$SCEN/h100x8.scn GPULSE_NVML_LIBRARY=$FAKE_FULL \
    "$GPULSE" "${aargs[@]}" >"$TMP/agent.log" 2>&1 & PIDS+=($!)
wait_until 20 curl -sf "http://127.0.0.1:$AP/healthz" || { cat "$TMP/agent.log"; fail "agent did not start from the ConfigMap"; }
pushed() { curl -sfg -H 'Authorization: Bearer rtok' \
    "http://127.0.0.1:$SP/api/v1/series?match[]=DCGM_FI_DEV_GPU_UTIL{Hostname=\"k8s-gpu-node-1\"}" | grep -o '"gpu":' | wc -l | grep -x 8 >/dev/null; }
wait_until 20 pushed || { tail -5 "$TMP/agent.log"; fail "the agent's samples did not reach the server with the write token"; }
[ -S "$TMP/steps.sock" ] || fail "no step socket where the hostPath puts it"
note "ConfigMap + container args: agent (host label k8s-gpu-node-1 from NODE_NAME) pushes 8 GPUs to the token-guarded server"

# The preflight example (examples/preflight-job.yaml, in the user's
# namespace): it validates, its init container runs gpulse check on the
# pod's own GPUs before the training container, and its args, run here
# against the stand-in NVML, pass 8 healthy H100s and push the result,
# and stop a pod on a node whose GPUs hold their clocks down (h100x8.scn).
V "$K/examples/preflight-job.yaml" >"$TMP/validate.log" 2>&1 || { cat "$TMP/validate.log"; fail "the preflight example does not validate"; }
python3 - "$K/examples/preflight-job.yaml" "$TMP/preflight.args" <<'PY' || fail "the preflight example (above)"
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
pod = job["spec"]["template"]["spec"]
init, train = pod["initContainers"][0], pod["containers"][0]
bad = []
if init["args"][0] != "check": bad.append("the init container does not run gpulse check")
gpus = lambda c: c["resources"]["limits"].get("nvidia.com/gpu")
if gpus(init) != gpus(train) or f"--gpus={gpus(train)}" not in init["args"]:
    bad.append(f"the init container checks other GPUs than the training container's: {init['args']}")
if pod.get("runtimeClassName") != "nvidia": bad.append("runtimeClassName is not nvidia")
if pod.get("restartPolicy") != "Never": bad.append("a failed preflight would restart in place, on the same node")
env = {e["name"]: e for e in init["env"]}
if env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
    bad.append("the result is not named after the node")
for b in bad: print("  " + b)
open(sys.argv[2], "w").write("\n".join(init["args"]) + "\n")
sys.exit(1 if bad else 0)
PY
mapfile -t pargs < <(sed -e 's|\$(NODE_NAME)|k8s-gpu-node-1|' -e "s|http://gpulse-server.gpulse.svc:9402|http://127.0.0.1:$SP|" \
    -e "s|/etc/gpulse/tokens/|$TMP/tokens/|" "$TMP/preflight.args")
python3 - "$ROOT/tests/data/nvml/preflight.scn" >"$TMP/h100x8-healthy.scn" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = text[text.index("\ngpu 0") + 1:text.index("\ngpu 1") + 1]
print("driver 550.54.15")
for i in range(8):
    print(re.sub(r"00000000000\d$", f"00000000000{i}", block.replace("gpu 0", f"gpu {i}").replace("00000000:18", f"00000000:{i + 1}8"), flags=re.M))
PY
rc=0; GPULSE_FAKENVML_SCENARIO=$TMP/h100x8-healthy.scn GPULSE_NVML_LIBRARY=$FAKE_FULL "$GPULSE" "${pargs[@]}" >"$TMP/pf.out" 2>&1 || rc=$?
[ $rc = 0 ] && grep -q '^k8s-gpu-node-1: ready (3 skipped)$' "$TMP/pf.out" || { cat "$TMP/pf.out"; fail "the init container failed 8 healthy GPUs ($rc)"; }
rc=0; GPULSE_FAKENVML_SCENARIO=$SCEN/h100x8.scn GPULSE_NVML_LIBRARY=$FAKE_FULL "$GPULSE" "${pargs[@]}" >"$TMP/pf.out" 2>&1 || rc=$?
[ $rc = 1 ] && grep -q '^FAILED  clocks *GPU 3: clocks held down (sw_power_cap): drain the node' "$TMP/pf.out" ||
    { cat "$TMP/pf.out"; fail "the init container let a node with throttled GPUs through ($rc)"; }
curl -sf -H 'Authorization: Bearer rtok' "http://127.0.0.1:$SP/api/v1/health/preflight?node=k8s-gpu-node-1" | grep '"status":"failed","action":"drain_inspect"' >/dev/null ||
    fail "the init container's result did not reach the server"
note "preflight example: the init container's args pass 8 healthy H100s, stop a throttled node (exit 1) and push the result"
echo "ok: $objects Kubernetes objects validated, fitted and run"
