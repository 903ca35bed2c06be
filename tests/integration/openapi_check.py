#!/usr/bin/python3
"""openapi_check.py - docs/openapi.yaml against itself and a running server.

  openapi_check.py lint SPEC
      The file itself: OpenAPI 3.1 structure (Debian 12 has no OpenAPI
      validator, so the rules that matter are checked here), every $ref
      resolves, every schema is a valid JSON Schema 2020-12 (jsonschema's
      own meta-schema check), path templates and path parameters agree,
      operationIds are unique, tags and security schemes are declared.
  openapi_check.py server SPEC URL
      Calls every GET operation with its example parameters (times around
      now; ids taken from other answers where x-example-from says so) and
      validates the status, content type and body against the schema;
      calls each documented 400 with no parameters and each documented
      404 with an unknown id and validates the error body; checks that no
      documented method answers 405, and that every route the server's
      own route index lists is documented. With GPULSE_READ_TOKEN and
      GPULSE_WRITE_TOKEN (the server's tokens) it sends them, and first
      checks each operation's security: open ones answer without a
      token, the others 401 with the error body.
Exits 1 with one line per problem.
"""
import http.client
import json
import os
import re
import sys
import time
import urllib.parse

import jsonschema
import yaml

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
# docs/dashboard.md's routes: built in parallel on the dashboard branch.
# Until it is merged they answer 404 here; the integrator removes this.

problems = []


def problem(msg):
    problems.append(msg)
    print("  PROBLEM: " + msg)


def walk(node, path=""):
    """Yields (json-pointer, dict) for every dict in node."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from walk(v, path + "/" + str(k).replace("~", "~0").replace("/", "~1"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, "%s/%d" % (path, i))


def pointer(doc, ptr):
    for part in ptr.lstrip("/").split("/") if ptr.strip("/") else []:
        part = part.replace("~1", "/").replace("~0", "~")
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def deref(spec, node):
    while isinstance(node, dict) and "$ref" in node and len(node) == 1:
        node = pointer(spec, node["$ref"][1:])
    return node


def schemas_of(spec):
    """Every schema object of the document, with where it is."""
    for name, s in spec.get("components", {}).get("schemas", {}).items():
        yield "components/schemas/" + name, s
    for p, item in spec["paths"].items():
        for m, op in item.items():
            if m not in METHODS:
                continue
            for prm in op.get("parameters", []):
                prm = deref(spec, prm)
                if "schema" in prm:
                    yield "%s %s parameter %s" % (m, p, prm.get("name")), prm["schema"]
            body = op.get("requestBody", {})
            for ct, media in body.get("content", {}).items():
                yield "%s %s request %s" % (m, p, ct), media.get("schema", {})
            for code, r in op.get("responses", {}).items():
                r = deref(spec, r)
                for ct, media in r.get("content", {}).items():
                    yield "%s %s %s %s" % (m, p, code, ct), media.get("schema", {})


def lint(spec):
    if not re.fullmatch(r"3\.1\.\d+", str(spec.get("openapi", ""))):
        problem("openapi must be 3.1.x, is %r" % spec.get("openapi"))
    info = spec.get("info") or {}
    for k in ("title", "version"):
        if not isinstance(info.get(k), str) or not info.get(k):
            problem("info.%s missing" % k)
    if not isinstance(spec.get("paths"), dict) or not spec["paths"]:
        problem("no paths")
        return
    for ptr, d in walk(spec):
        ref = d.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#/"):
                problem("%s: external $ref %s" % (ptr, ref))
                continue
            try:
                pointer(spec, ref[1:])
            except (KeyError, IndexError, ValueError):
                problem("%s: $ref %s does not resolve" % (ptr, ref))
    schemes = set(spec.get("components", {}).get("securitySchemes", {}))
    tags = {t["name"] for t in spec.get("tags", [])}
    op_ids = set()

    def check_security(where, reqs):
        for req in reqs or []:
            for name in req:
                if name not in schemes:
                    problem("%s: security scheme %s not declared" % (where, name))

    check_security("top level", spec.get("security"))
    for p, item in spec["paths"].items():
        if not p.startswith("/"):
            problem("path %s does not start with /" % p)
        templ = set(re.findall(r"\{([^}/]+)\}", p))
        ops = {m: op for m, op in item.items() if m in METHODS}
        if not ops:
            problem("%s has no operation" % p)
        for m, op in ops.items():
            where = "%s %s" % (m.upper(), p)
            oid = op.get("operationId")
            if not oid or oid in op_ids:
                problem("%s: operationId %r missing or not unique" % (where, oid))
            op_ids.add(oid)
            for t in op.get("tags", []):
                if t not in tags:
                    problem("%s: tag %s not declared" % (where, t))
            check_security(where, op.get("security"))
            params = [deref(spec, x) for x in item.get("parameters", []) + op.get("parameters", [])]
            seen = set()
            for prm in params:
                key = (prm.get("name"), prm.get("in"))
                if key in seen:
                    problem("%s: parameter %s twice" % (where, key))
                seen.add(key)
                if prm.get("in") not in ("query", "header", "path", "cookie"):
                    problem("%s: parameter %s in %r" % (where, prm.get("name"), prm.get("in")))
                if prm.get("in") == "path" and prm.get("required") is not True:
                    problem("%s: path parameter %s must be required" % (where, prm.get("name")))
                if "schema" not in prm and "content" not in prm:
                    problem("%s: parameter %s has no schema" % (where, prm.get("name")))
            declared = {prm["name"] for prm in params if prm.get("in") == "path"}
            if declared != templ:
                problem("%s: path parameters %s, template has %s" % (where, sorted(declared), sorted(templ)))
            if not op.get("summary"):
                problem("%s: no summary" % where)
            resps = op.get("responses")
            if not isinstance(resps, dict) or not resps:
                problem("%s: no responses" % where)
                continue
            if m == "get" and not deref(spec, resps.get("200", {})).get("content"):
                problem("%s: no 200 answer with a content type" % where)
            for code, r in resps.items():
                if not re.fullmatch(r"[1-5]([0-9]{2}|XX)|default", str(code)):
                    problem("%s: response key %r" % (where, code))
                if not deref(spec, r).get("description"):
                    problem("%s %s: response without description" % (where, code))
    for where, s in schemas_of(spec):
        try:
            jsonschema.Draft202012Validator.check_schema(s)
        except jsonschema.exceptions.SchemaError as e:
            problem("%s: not a valid JSON Schema: %s" % (where, e.message))


# ---- against a server --------------------------------------------------------


class Server:
    """The server, with the tokens of GPULSE_READ_TOKEN and
    GPULSE_WRITE_TOKEN sent on reads and writes unless auth=False."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.read_token = os.environ.get("GPULSE_READ_TOKEN")
        self.write_token = os.environ.get("GPULSE_WRITE_TOKEN")

    def request(self, method, path, body=None, headers=None, timeout=30, auth=True):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        headers = dict(headers or {})
        token = self.read_token if method in ("GET", "HEAD") else self.write_token
        if auth and token:
            headers["Authorization"] = "Bearer " + token
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        return r, c


def call(srv, method, path, body=None, headers=None, auth=True):
    r, c = srv.request(method, path, body, headers, auth=auth)
    data = r.read()
    c.close()
    return r.status, (r.getheader("Content-Type") or "").split(";")[0].strip(), data


def effective_security(spec, op):
    return op.get("security", spec.get("security", []))


def check_auth(spec, srv):
    """With tokens configured: an operation whose security is only {}
    answers without a token; every other answers 401 (Error body,
    WWW-Authenticate: Bearer) without one."""
    n = 0
    for p, item in spec["paths"].items():
        for m, op in item.items():
            if m not in METHODS:
                continue
            path = re.sub(r"\{[^}]+\}", "0000000000000000", p)
            data = b"" if m in ("post", "put") else None
            r, c = srv.request(m.upper(), path, data, timeout=10, auth=False)
            st, www = r.status, r.getheader("WWW-Authenticate") or ""
            ct = (r.getheader("Content-Type") or "").split(";")[0].strip()
            body = r.read(1 << 16) if st != 200 else b""  # a 200 may be an endless stream
            c.close()
            where = "%s %s" % (m.upper(), p)
            open_op = effective_security(spec, op) == [{}]
            if open_op and st == 401:
                problem("%s: documented open, answers 401 without a token" % where)
            elif not open_op:
                if st != 401:
                    problem("%s: documented to need a token, answers %d without one" % (where, st))
                    continue
                if not www.startswith("Bearer"):
                    problem("%s: 401 without WWW-Authenticate: Bearer" % where)
                doc401 = deref(spec, op["responses"].get("401", {})).get("content", {})
                if ct not in doc401:
                    problem("%s: 401 as %s, documented %s" % (where, ct, sorted(doc401)))
                elif ct == "application/json":
                    validate_json(spec, where + " (401)", doc401[ct].get("schema", {}), body)
                elif not body.strip():
                    problem("%s: 401 with an empty body" % where)
            n += 1
    print("  ok  %d operations answer without a token as their security says" % n)


def example_of(spec, srv, prm):
    """The value to send for a parameter, or None to leave it out."""
    src = prm.get("x-example-from")
    if src:
        st, ct, body = call(srv, "GET", src["path"])
        if st != 200:
            return None
        try:
            if "pointer" in src:
                return str(pointer(json.loads(body), src["pointer"]))
            m = re.search(src["pattern"], body.decode("utf-8", "replace"))
            return m.group(1) if m else None
        except (KeyError, IndexError, ValueError):
            return None
    schema = prm.get("schema", {})
    if schema.get("$ref", "").endswith("/TimeParam"):
        now = time.time()
        return "%.3f" % (now - 3600 if prm["name"] in ("start", "since") else now)
    return prm.get("example")


def build_path(spec, srv, p, op, with_query=True):
    params = [deref(spec, x) for x in op.get("parameters", [])]
    path = p
    query = []
    for prm in params:
        if prm["in"] == "path":
            v = example_of(spec, srv, prm)
            if v is None:
                return None
            path = path.replace("{%s}" % prm["name"], urllib.parse.quote(str(v), safe=""))
        elif prm["in"] == "query" and with_query:
            v = example_of(spec, srv, prm)
            if v is None:
                if prm.get("required"):
                    problem("GET %s: required parameter %s has no example" % (p, prm["name"]))
                continue
            for one in v if isinstance(v, list) else [v]:
                query.append((prm["name"], str(one)))
    return path + ("?" + urllib.parse.urlencode(query) if query else "")


def validator(spec, schema):
    resolver = jsonschema.RefResolver.from_schema(spec)
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


def validate_json(spec, where, schema, body):
    try:
        doc = json.loads(body)
    except ValueError as e:
        problem("%s: body is not JSON: %s" % (where, e))
        return None
    errs = sorted(validator(spec, schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errs[:5]:
        problem("%s: %s at /%s" % (where, e.message[:300], "/".join(map(str, e.absolute_path))))
    return doc


def check_stream(spec, srv, p, url, resp_spec):
    """Reads the first fleet and gpus events and validates their data."""
    r, c = srv.request("GET", url, timeout=15)
    ct = (r.getheader("Content-Type") or "").split(";")[0].strip()
    if r.status != 200 or ct != "text/event-stream":
        problem("GET %s: %d %s, expected 200 text/event-stream" % (url, r.status, ct))
        c.close()
        return
    want = {"fleet": "#/components/schemas/Fleet", "gpus": "#/components/schemas/FleetGpus"}
    event, deadline = None, time.time() + 15
    while want and time.time() < deadline:
        line = r.fp.readline().decode("utf-8", "replace").rstrip("\n")
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:") and event in want:
            validate_json(spec, "GET %s event %s" % (p, event), {"$ref": want.pop(event)}, line[5:].strip())
    c.close()
    if want:
        problem("GET %s: no %s event within 15 s" % (p, ", ".join(want)))
    else:
        print("  ok  GET %s (fleet and gpus events)" % p)


def check_server(spec, url):
    srv = Server(url)
    if srv.read_token and srv.write_token:
        check_auth(spec, srv)
    checked = 0
    for p, item in spec["paths"].items():
        for m, op in item.items():
            if m not in METHODS:
                continue
            if m != "get":
                # Not called with a body here, but the route must know the method.
                path = build_path(spec, srv, p, op, with_query=False) or p.replace("{id}", "x")
                st, _, _ = call(srv, m.upper(), path, b"" if m == "post" else None)
                if st == 405:
                    problem("%s %s: 405, the server does not take the documented method" % (m.upper(), p))
                continue
            path = build_path(spec, srv, p, op)
            if path is None:
                problem("GET %s: no example value for a path parameter" % p)
                continue
            ok = op["responses"].get("200")
            content = deref(spec, ok).get("content", {}) if ok else {}
            if "text/event-stream" in content:
                check_stream(spec, srv, p, path, content)
                checked += 1
                continue
            st, ct, body = call(srv, "GET", path)
            where = "GET %s" % path
            if st != 200:
                problem("%s: status %d (%s)" % (where, st, body[:200]))
                continue
            if ct not in content:
                problem("%s: content type %s, documented %s" % (where, ct, sorted(content)))
                continue
            schema = content[ct].get("schema", {})
            if ct == "application/json":
                doc = validate_json(spec, where, schema, body)
                if doc is not None and isinstance(doc.get("data"), list) and not doc["data"] \
                        and p not in ("/api/v1/silences", "/api/v1/query_exemplars"):
                    problem("%s: empty list; the test's server should give it something to show" % where)
            elif not body:
                problem("%s: empty body" % where)
            checked += 1
            print("  ok  %s" % where)
            # The documented errors, with their bodies.
            if "400" in op["responses"] and any(deref(spec, x).get("required") and deref(spec, x)["in"] == "query"
                                                for x in op.get("parameters", [])):
                bare = build_path(spec, srv, p, op, with_query=False)
                st, ct, body = call(srv, "GET", bare)
                if st != 400:
                    problem("GET %s without parameters: %d, expected 400" % (bare, st))
                else:
                    validate_json(spec, "GET %s (400)" % bare, {"$ref": "#/components/schemas/Error"}, body)
            if "404" in op["responses"] and "{id}" in p:
                bad = p.replace("{id}", "0000000000000000")
                st, ct, body = call(srv, "GET", bad)
                if st != 404:
                    problem("GET %s: %d, expected 404" % (bad, st))
                else:
                    validate_json(spec, "GET %s (404)" % bad, {"$ref": "#/components/schemas/Error"}, body)
    # Every route the server lists in its index is documented.
    index = None
    for where in ("/api", "/"):
        st, ct, body = call(srv, "GET", where)
        if st == 200 and ct == "text/plain":
            index = body.decode()
            break
    if index is None:
        problem("the server's route index (GET /api, or / before the dashboard) is not text")
    else:
        documented = {re.sub(r"\{[^}]+\}", "ID", p): p for p in spec["paths"]}
        listed = set()
        for line in index.splitlines():
            m = re.match(r"\s*((?:GET|POST|DELETE|PUT|HEAD)(?:,\s*\w+)*)\s+(.*)$", line)
            if not m:
                continue
            for frag in re.findall(r"(/[A-Za-z0-9_/{}.-]*)", m.group(2)):
                listed.add(frag.replace("NAME", "ID"))
        for path in sorted(listed):
            if path not in documented and path.replace("/ID", "/{name}") not in spec["paths"]:
                problem("the server lists %s, which docs/openapi.yaml lacks" % path)
        print("  ok  the server's route index (%d paths) is documented" % len(listed))
    print("openapi_check: %d operations checked, %d problems" % (checked, len(problems)))


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("lint", "server"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[2]) as f:
        spec = yaml.safe_load(f)
    lint(spec)
    if sys.argv[1] == "server" and not problems:
        check_server(spec, sys.argv[3])
    elif sys.argv[1] == "lint":
        print("openapi_check: %d paths, %d problems" % (len(spec.get("paths", {})), len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
