#!/usr/bin/python3
"""A stand-in for the server's job endpoint, for test_report_cmd.sh.

usage: report_server.py PORTFILE DIR [TOKEN]

Serves GET /api/v1/jobs/<id>?series=1 on 127.0.0.1 (a free port, written
to PORTFILE): the document DIR/<file>.json whose "id" is <id>, in the
{"status":"success","data":...} envelope. Job "garbage" answers a body
that is not JSON; "noenvelope" a JSON body without the envelope. Any
other id: 404 with an error envelope. With TOKEN, a request without
"Bearer TOKEN" gets 401. GET /api/v1/alerts answers no alerts (an empty
list), unless NO_ALERTS_API is set: then it is an unexpected request, as
on a server without that route; for job "alerts-garbage" a body that is
not JSON, for "alerts-object" an envelope whose data is not a list. Each request's path is appended to
$REQLOG_DIR/requests.log.
"""
import json, os, sys, urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

portfile, root = sys.argv[1], sys.argv[2]
token = sys.argv[3] if len(sys.argv) > 3 else None
docs = {}
for name in os.listdir(root):
    if name.endswith(".json"):
        with open(os.path.join(root, name), encoding="utf-8") as f:
            d = json.load(f)
        docs[d["id"]] = d


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with open(os.path.join(os.environ.get("REQLOG_DIR", "/tmp"), "requests.log"), "a") as f:
            f.write(self.path + "\n")
        if token and self.headers.get("Authorization") != "Bearer " + token:
            return self.send(401, json.dumps({"status": "error", "errorType": "unauthorized",
                                              "error": "missing or wrong bearer token"}))
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/api/v1/alerts":
            job = urllib.parse.parse_qs(u.query).get("job", [""])[0]
            if job == "alerts-garbage":
                return self.send(200, "<html>no alerts here", "text/html")
            if job == "alerts-object":
                return self.send(200, json.dumps({"status": "success", "data": {"alerts": []}}))
            if not os.environ.get("NO_ALERTS_API"):
                return self.send(200, json.dumps({"status": "success", "data": []}))
        prefix = "/api/v1/jobs/"
        if not u.path.startswith(prefix) or urllib.parse.parse_qs(u.query).get("series") != ["1"]:
            return self.send(400, json.dumps({"status": "error", "errorType": "bad_data",
                                              "error": "unexpected request " + self.path}))
        job = urllib.parse.unquote(u.path[len(prefix):])
        if job == "garbage":
            return self.send(200, "<html>this is not json", "text/html")
        if job == "noenvelope":
            return self.send(200, json.dumps({"id": "noenvelope"}))
        if job not in docs:
            return self.send(404, json.dumps({"status": "error", "errorType": "not_found",
                                              "error": "no job '%s'" % job}))
        self.send(200, json.dumps({"status": "success", "data": docs[job]}))


srv = HTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
