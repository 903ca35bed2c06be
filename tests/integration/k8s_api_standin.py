#!/usr/bin/env python3
"""k8s_api_standin.py - a minimal Kubernetes API server for remediation
tests: GET and PATCH /api/v1/nodes/NAME on 127.0.0.1, nothing else.

It holds a few Nodes (each with a taint of its own, so a patch that drops
other taints shows), records every request as a JSON line (method, path,
content type, authorization, body, and the verb and resource RBAC
authorizes it by) and answers as the API server does
where the tests need it: 401 without the bearer token, 404 for an
unknown node, 415 for a PATCH that is not a JSON merge patch, 409 when
metadata.resourceVersion is stale (and once, on purpose, for the node
named by --conflict-once), 422 for a patch whose fields or types the
Node schema (Kubernetes' OpenAPI: ObjectMeta, NodeSpec, Taint) does not
have. A patch is applied as RFC 7386 merge and the resulting Node is
written to --out/NAME.json, for tests/k8s/validate.mjs.

usage: k8s_api_standin.py PORT_FILE LOG_FILE --nodes a,b [--token T]
       [--conflict-once NAME] [--out DIR]
"""
import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# The fields of Kubernetes' OpenAPI (io.k8s.api.core.v1.NodeSpec, Taint;
# ObjectMeta's resourceVersion) a node patch may carry, with their types.
NODE_SPEC = {"configSource": dict, "externalID": str, "podCIDR": str, "podCIDRs": list,
             "providerID": str, "taints": list, "unschedulable": bool}
TAINT = {"key": str, "value": str, "effect": str, "timeAdded": str}
EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


def schema_problem(patch):
    if not isinstance(patch, dict):
        return "the patch is not an object"
    for k in patch:
        if k not in ("metadata", "spec"):
            return f"unknown field {k!r} in a node patch"
    meta = patch.get("metadata", {})
    if not isinstance(meta, dict) or any(k != "resourceVersion" for k in meta):
        return "metadata: only resourceVersion is expected"
    if "resourceVersion" in meta and not isinstance(meta["resourceVersion"], str):
        return "metadata.resourceVersion must be a string"
    spec = patch.get("spec", {})
    if not isinstance(spec, dict):
        return "spec must be an object"
    for k, v in spec.items():
        if k not in NODE_SPEC:
            return f"unknown field spec.{k}"
        if v is not None and not isinstance(v, NODE_SPEC[k]):
            return f"spec.{k} has the wrong type"
    for i, t in enumerate(spec.get("taints") or []):
        if not isinstance(t, dict):
            return f"spec.taints[{i}] is not an object"
        for k, v in t.items():
            if k not in TAINT or not isinstance(v, TAINT[k]):
                return f"spec.taints[{i}].{k} is unknown or of the wrong type"
        if "key" not in t or "effect" not in t:
            return f"spec.taints[{i}] needs key and effect"
        if t["effect"] not in EFFECTS:
            return f"spec.taints[{i}].effect {t['effect']!r} is not NoSchedule, PreferNoSchedule or NoExecute"
    return None


def request_info(method, path):
    """The RBAC attributes the API server authorizes a request by (its
    RequestInfoResolver): verb, API group, resource (with /subresource),
    namespace; None for a path outside /api and /apis."""
    path, _, query = path.partition("?")
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, parts = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, parts = parts[1], parts[3:]
    else:
        return None
    ns = ""
    if len(parts) >= 3 and parts[0] == "namespaces":
        ns, parts = parts[1], parts[2:]
    if not parts:
        return None
    named = len(parts) >= 2
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)
    if method in ("GET", "HEAD"):
        verb = "watch" if "watch=true" in query.split("&") else ("get" if named else "list")
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    resource = parts[0] + ("/" + parts[2] if len(parts) >= 3 else "")
    return {"verb": verb or method.lower(), "api_group": group, "resource": resource, "namespace": ns}


def merge(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port_file")
    ap.add_argument("log_file")
    ap.add_argument("--nodes", default="")
    ap.add_argument("--token", default="")
    ap.add_argument("--conflict-once", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    lock = threading.Lock()
    nodes = {}
    for n in filter(None, a.nodes.split(",")):
        nodes[n] = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": n, "resourceVersion": "41", "labels": {"kubernetes.io/hostname": n}},
                    "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}
    conflict = {a.conflict_once} if a.conflict_once else set()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def status(self, code, reason, msg):
            self.answer(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                               "message": msg, "reason": reason, "code": code})

        def handle_one(self, method):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n).decode() if n else ""
            with lock:
                with open(a.log_file, "a") as f:
                    f.write(json.dumps({"method": method, "path": self.path,
                                        "content_type": self.headers.get("Content-Type", ""),
                                        "authorization": self.headers.get("Authorization", ""),
                                        "body": body, "rbac": request_info(method, self.path)}) + "\n")
                if a.token and self.headers.get("Authorization") != "Bearer " + a.token:
                    return self.status(401, "Unauthorized", "Unauthorized")
                prefix = "/api/v1/nodes/"
                if not self.path.startswith(prefix) or "/" in self.path[len(prefix):]:
                    return self.status(404, "NotFound", "the server could not find the requested resource")
                name = self.path[len(prefix):]
                node = nodes.get(name)
                if node is None:
                    return self.status(404, "NotFound", f'nodes "{name}" not found')
                if method == "GET":
                    return self.answer(200, node)
                if method != "PATCH":
                    return self.status(405, "MethodNotAllowed", f"{method} is not supported here")
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self.status(415, "UnsupportedMediaType", "the body of the request was in an unknown format")
                try:
                    patch = json.loads(body)
                except ValueError as e:
                    return self.status(400, "BadRequest", f"error decoding patch: {e}")
                why = schema_problem(patch)
                if why:
                    return self.status(422, "Invalid", why)
                rv = patch.get("metadata", {}).get("resourceVersion")
                if name in conflict or (rv is not None and rv != node["metadata"]["resourceVersion"]):
                    conflict.discard(name)
                    node["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
                    return self.status(409, "Conflict", "the object has been modified; please apply your "
                                       "changes to the latest version and try again")
                new = merge(node, patch)
                new["metadata"]["resourceVersion"] = str(int(node["metadata"]["resourceVersion"]) + 1)
                nodes[name] = new
                if a.out:
                    with open(os.path.join(a.out, name + ".json"), "w") as f:
                        json.dump(new, f, indent=1)
                return self.answer(200, new)

        def do_GET(self):
            self.handle_one("GET")

        def do_PATCH(self):
            self.handle_one("PATCH")

        # anything else is recorded (and refused): the RBAC check of
        # test_remediate_k8s.sh must see a request kind the code adds
        def do_POST(self):
            self.handle_one("POST")

        def do_PUT(self):
            self.handle_one("PUT")

        def do_DELETE(self):
            self.handle_one("DELETE")

    parent = os.getppid()

    def orphaned():
        # a test that failed before stopping it must not leave it running
        while os.getppid() == parent:
            threading.Event().wait(0.5)
        os._exit(0)

    threading.Thread(target=orphaned, daemon=True).start()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
