#!/usr/bin/env python3
"""notify_receiver.py - a local HTTP receiver for the notification tests.

Listens on 127.0.0.1 only. Every request (method, path, headers, body)
is appended to a JSONL file, with the validation errors of its body
against the documented shape chosen by the path:
  /slack/...  Slack incoming webhook: text + Block Kit blocks, limits;
  /hook/...   Alertmanager webhook payload, version "4";
  /am/api/v2/alerts  Alertmanager API v2: a list of postable alerts.
Fault modes, switchable at run time (global, or for one path prefix):
  POST /_control {"mode": "ok|500|429|400|hang|drop", "retry_after": "N or HTTP date",
                  "path": "/slack"}   (no "path": global; mode "clear" drops a per-path mode)
Usage: notify_receiver.py PORT LOGFILE
"""
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RFC3339_ZERO = "0001-01-01T00:00:00Z"
LOCK = threading.Lock()
MODES = {"": {"mode": "ok"}}


def is_str_map(v):
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())


def is_time(v):
    if not isinstance(v, str):
        return False
    if v == RFC3339_ZERO:
        return True
    try:
        time.strptime(v[:19], "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return False
    return v.endswith("Z") or v[19:20] in "+-."


def text_obj(t, errs, where, limit, types):
    if not isinstance(t, dict) or t.get("type") not in types or not isinstance(t.get("text"), str):
        errs.append(f"{where}: not a text object of type {types}")
        return
    if not t["text"]:
        errs.append(f"{where}: empty text")
    if len(t["text"]) > limit:
        errs.append(f"{where}: text of {len(t['text'])} characters, limit {limit}")


def check_slack(doc):
    errs = []
    if not isinstance(doc, dict):
        return ["slack: not an object"]
    if not isinstance(doc.get("text"), str) or not doc["text"]:
        errs.append("slack: no text fallback")
    blocks = doc.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        return errs + ["slack: no blocks"]
    if len(blocks) > 50:
        errs.append(f"slack: {len(blocks)} blocks, limit 50")
    for i, b in enumerate(blocks):
        w = f"slack: blocks[{i}]"
        t = b.get("type") if isinstance(b, dict) else None
        if t == "header":
            text_obj(b.get("text"), errs, w, 150, ("plain_text",))
        elif t == "section":
            text_obj(b.get("text"), errs, w, 3000, ("plain_text", "mrkdwn"))
        elif t == "context":
            el = b.get("elements")
            if not isinstance(el, list) or not 1 <= len(el) <= 10:
                errs.append(f"{w}: context needs 1 to 10 elements")
            else:
                for k, e in enumerate(el):
                    text_obj(e, errs, f"{w}.elements[{k}]", 3000, ("plain_text", "mrkdwn"))
        elif t == "actions":
            el = b.get("elements")
            if not isinstance(el, list) or not el:
                errs.append(f"{w}: actions needs elements")
        elif t == "divider":
            pass
        else:
            errs.append(f"{w}: unknown block type {t!r}")
    if blocks and (not isinstance(blocks[0], dict) or blocks[0].get("type") != "header"):
        errs.append("slack: the first block is not a header")
    return errs


def check_am_labels(a, w, errs):
    if not is_str_map(a.get("labels")) or not a["labels"].get("alertname"):
        errs.append(f"{w}: labels must be a string map with alertname")
    elif any(v == "" for v in a["labels"].values()):
        errs.append(f"{w}: an empty label value")
    if "annotations" in a and not is_str_map(a["annotations"]):
        errs.append(f"{w}: annotations must be a string map")


def check_webhook(doc):
    errs = []
    if not isinstance(doc, dict):
        return ["webhook: not an object"]
    want = {"version": str, "groupKey": str, "truncatedAlerts": int, "status": str, "receiver": str,
            "groupLabels": dict, "commonLabels": dict, "commonAnnotations": dict, "externalURL": str,
            "alerts": list}
    for k, t in want.items():
        if not isinstance(doc.get(k), t) or (t is int and isinstance(doc.get(k), bool)):
            errs.append(f"webhook: {k} missing or not {t.__name__}")
    if errs:
        return errs
    if doc["version"] != "4":
        errs.append("webhook: version is not \"4\"")
    if doc["status"] not in ("firing", "resolved"):
        errs.append("webhook: bad status")
    for k in ("groupLabels", "commonLabels", "commonAnnotations"):
        if not is_str_map(doc[k]):
            errs.append(f"webhook: {k} is not a string map")
    for i, a in enumerate(doc["alerts"]):
        w = f"webhook: alerts[{i}]"
        if not isinstance(a, dict):
            errs.append(f"{w}: not an object")
            continue
        for k in ("status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"):
            if k not in a:
                errs.append(f"{w}: no {k}")
        if a.get("status") not in ("firing", "resolved"):
            errs.append(f"{w}: bad status")
        check_am_labels(a, w, errs)
        for k in ("startsAt", "endsAt"):
            if not is_time(a.get(k)):
                errs.append(f"{w}: {k} is not RFC 3339")
        if a.get("status") == "firing" and a.get("endsAt") != RFC3339_ZERO:
            errs.append(f"{w}: a firing alert's endsAt is not the zero time")
        if a.get("status") == "resolved" and a.get("endsAt") == RFC3339_ZERO:
            errs.append(f"{w}: a resolved alert has no endsAt")
    return errs


def check_am(doc):
    if not isinstance(doc, list) or not doc:
        return ["alertmanager: not a non-empty list"]
    errs = []
    for i, a in enumerate(doc):
        w = f"alertmanager: [{i}]"
        if not isinstance(a, dict):
            errs.append(f"{w}: not an object")
            continue
        extra = set(a) - {"labels", "annotations", "startsAt", "endsAt", "generatorURL"}
        if extra:
            errs.append(f"{w}: unknown fields {sorted(extra)}")
        check_am_labels(a, w, errs)
        for k in ("startsAt", "endsAt"):
            if k in a and (not is_time(a[k]) or a[k] == RFC3339_ZERO):
                errs.append(f"{w}: {k} is not an RFC 3339 time")
    return errs


def validate(path, body):
    try:
        doc = json.loads(body)
    except ValueError as e:
        return [f"not JSON: {e}"]
    if path.startswith("/slack"):
        return check_slack(doc)
    if path.startswith("/hook"):
        return check_webhook(doc)
    if path.startswith("/am"):
        if path.rstrip("/") != "/am/api/v2/alerts":
            return [f"alertmanager: wrong path {path}"]
        return check_am(doc)
    return [f"no shape for path {path}"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(200, b"ok\n")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path == "/_control":
            c = json.loads(body)
            with LOCK:
                if c.get("mode") == "clear":
                    MODES.pop(c.get("path", ""), None)
                else:
                    MODES[c.get("path", "")] = c
            self.answer(200, b"ok\n")
            return
        text = body.decode("utf-8", "replace")
        rec = {"time": time.time(), "method": "POST", "path": self.path,
               "headers": {k: v for k, v in self.headers.items()}, "body": text,
               "errors": validate(self.path, body)}
        with LOCK:
            best = max((p for p in MODES if self.path.startswith(p)), key=len)
            mode = dict(MODES[best])
            rec["mode"] = mode["mode"]
            with open(LOGFILE, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
        m = mode["mode"]
        if m == "500":
            self.answer(500, b"internal error (injected)\n")
        elif m == "429":
            self.answer(429, b"slow down\n", [("Retry-After", str(mode.get("retry_after", "7")))])
        elif m == "400":
            self.answer(400, b"invalid_payload\n")
        elif m == "hang":
            time.sleep(float(mode.get("seconds", 30)))
            self.close_connection = True
        elif m == "drop":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif self.path.startswith("/am"):
            self.answer(200, b"", [("Content-Type", "application/json")])
        else:
            self.answer(200, b"ok")


if __name__ == "__main__":
    port, LOGFILE = int(sys.argv[1]), sys.argv[2]
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.serve_forever()
