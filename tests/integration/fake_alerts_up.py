#!/usr/bin/env python3
"""fake_alerts_up.py - stands in for `gpulse up` in test_fleet_truth.sh.

Takes `up ARGS...` as bench/fleet_faults.sh passes them, writes the real
ground truth (it runs `$GPULSE agent --simulate SPEC --seed N
--simulate-truth -`) to the --simulate-truth file, and serves
/api/v1/health and /api/v1/alerts on --listen: one firing alert of each
fault's first expected kind, less the kinds named in $FAKE_DROP
(comma-separated), plus a false straggler alert when $FAKE_FALSE is set;
and /api/v1/jobs/ID with the goodput and MFU the truth gives at the time
the bench wrote down for that request (its jobs/ID.at beside the truth
file), the goodput 0.1 off for the job named in $FAKE_OFF.
"""
import http.server
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
spec = importlib.util.spec_from_file_location("fleet_truth", os.path.join(ROOT, "bench", "fleet_truth.py"))
ft = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ft)

args = sys.argv[2:]
opt = {args[i][2:]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
truth = subprocess.run([os.environ["GPULSE"], "agent", "--simulate", opt["simulate"], "--seed", opt["seed"],
                        "--simulate-truth", "-"], check=True, capture_output=True, text=True).stdout
open(opt["simulate-truth"], "w").write(truth)
drop = set(filter(None, os.environ.get("FAKE_DROP", "").split(",")))
alerts = []
for f in json.loads(truth)["faults"]:
    kind = f["expect"][0]
    if kind not in drop:
        labels = {"job": f["job"]} if f.get("scope") == "job" else \
            {"node": f["node"], "gpu": f["gpu"], "job": f["job"], "rank": f["rank"]}
        alerts.append({"kind": kind, "state": "firing", "labels": labels,
                       "summary": "%s of %s: %s" % (kind, f["job"], f.get("says", ""))})
if os.environ.get("FAKE_FALSE"):
    alerts.append({"kind": "straggler", "state": "firing", "labels": {"node": "sim-node-0", "job": "nope", "rank": "0"}})


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/api/v1/health":
            body = {"status": "success", "data": {}}
        elif self.path == "/api/v1/alerts?state=firing":
            body = {"status": "success", "data": alerts}
        elif self.path.startswith("/api/v1/jobs/"):
            job = self.path[len("/api/v1/jobs/"):]
            t = json.loads(truth)
            j = [x for x in t["jobs"] if x["job"] == job]
            at = os.path.join(os.path.dirname(opt["simulate-truth"]), "jobs", job + ".at")
            if not j or not os.path.exists(at):
                self.send_error(404)
                return
            g, m = ft.expected_figures(t, j[0], float(open(at).read()))
            if g is not None and job == os.environ.get("FAKE_OFF"):
                g += 0.1
            body = {"status": "success", "data": {"id": job, "goodput": {"ratio": g}, "totals": {"mfu": m}}}
        else:
            self.send_error(404)
            return
        b = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def log_message(self, *a):
        pass


host, port = opt["listen"].rsplit(":", 1)
http.server.HTTPServer((host, int(port)), H).serve_forever()
