#!/usr/bin/env python3
"""http_abuse.py - abusive HTTP clients against `gpulse server` (issue 15,
findings 8, 9 and 11), each printing one "key=value ..." line:

  http_abuse.py slow PORT N SECONDS TOKEN
        N slow connections from 127.0.0.1, each trickling its request
        headers a byte a second, while a remote-write pusher on 127.0.0.2
        writes every 0.25 s for SECONDS; prints how many slow connections
        the server kept open and refused, and the pusher's results
  http_abuse.py smuggle PORT TOKEN SERIES
        the two framing cases, each hiding a second remote write of SERIES
        after a request whose length is ambiguous; prints every status
        line received on each connection
  http_abuse.py early PORT TOKEN
        bodies written whole before reading, as Python's http.client does:
        20 MiB (over max_body: 413) and 8 MiB without the token (401);
        prints the status each client read, or the error it got instead
"""
import http.client
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rw import snappy_literal, write_request  # noqa: E402

HEAD = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
        "X-Prometheus-Remote-Write-Version": "0.1.0"}


def body(name, value):
    now = int(time.time() * 1000)
    return snappy_literal(write_request([([("__name__", name), ("src", "abuse")], [(value, now)])]))


def push(port, token, source, name, value):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        h = dict(HEAD, Authorization="Bearer " + token)
        c.request("POST", "/api/v1/write", body=body(name, value), headers=h)
        r = c.getresponse()
        r.read()
        return r.status
    except OSError as e:
        return type(e).__name__
    finally:
        c.close()


def cmd_slow(port, n, seconds, token):
    port, n, seconds = int(port), int(n), float(seconds)
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(b"POST /api/v1/write HTTP/1.1\r\n")
            s.setblocking(False)
            socks.append(s)
        except OSError:
            s.close()
    pending = b"Host: slow\r\nX-Slow: " + b"a" * 1000
    results, sent = [], 0
    t0 = time.time()
    next_byte = t0
    i = 0
    while time.time() - t0 < seconds:
        if time.time() >= next_byte and sent < len(pending):
            for s in socks:
                try:
                    s.send(pending[sent:sent + 1])
                except OSError:
                    pass
            sent += 1
            next_byte += 1
        results.append(push(port, token, "127.0.0.2", "abuse_pusher", float(i)))
        i += 1
        time.sleep(0.25)
    held = 0
    for s in socks:  # still open: no EOF, no reset
        try:
            held += 0 if s.recv(1) == b"" else 1
        except BlockingIOError:
            held += 1
        except OSError:
            pass
        s.close()
    ok = sum(1 for r in results if r == 204)
    bad = sorted(set(str(r) for r in results if r != 204))
    print("held=%d refused=%d writes=%d writes_ok=%d failures=%s" %
          (held, n - held, len(results), ok, ",".join(bad) or "none"))


def exchange(port, raw):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(5)
    s.sendall(raw)
    out = b""
    try:
        while True:
            got = s.recv(65536)
            if not got:
                break
            out += got
    except OSError as e:
        out += b" <" + type(e).__name__.encode() + b">"
    s.close()
    # every status line, also one glued to the end of a body before it
    lines = [l.decode(errors="replace") for l in re.findall(rb"HTTP/1\.1 \d{3}[^\r\n]*", out)]
    closed = b"Connection: close" in out
    return "|".join(x.replace(" ", "_") for x in lines) or "none", closed


def cmd_smuggle(port, token, series):
    port = int(port)
    b = body(series, 1.0)
    hidden = ("POST /api/v1/write HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
              "Content-Encoding: snappy\r\nContent-Length: %d\r\n\r\n" % (token, len(b))).encode() + b
    auth = ("Authorization: Bearer %s\r\n" % token).encode()
    # Content-Length and Transfer-Encoding: chunked reading ends at "0";
    # a proxy going by Content-Length would send the hidden write as body.
    te = b"0\r\n\r\n" + hidden
    r1 = exchange(port, b"POST /api/v1/write HTTP/1.1\r\nHost: x\r\n" + auth +
                  b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n" % len(te) + te)
    # Two Content-Lengths: 0 to one reader, the hidden write's length to another.
    r2 = exchange(port, b"POST /api/v1/write HTTP/1.1\r\nHost: x\r\n" + auth +
                  b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % len(hidden) + hidden)
    print("cl_te=%s cl_te_closed=%d cl_twice=%s cl_twice_closed=%d" % (r1[0], r1[1], r2[0], r2[1]))


def early(port, n, headers):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("POST", "/api/v1/write", body=b"\0" * n, headers=dict(HEAD, **headers))
        r = c.getresponse()
        r.read()
        return str(r.status)
    except OSError as e:
        return type(e).__name__
    finally:
        c.close()


def cmd_early(port, token):
    port = int(port)
    big = early(port, 20 << 20, {"Authorization": "Bearer " + token})
    noauth = early(port, 8 << 20, {})
    print("too_large=%s no_token=%s" % (big, noauth))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    {"slow": cmd_slow, "smuggle": cmd_smuggle, "early": cmd_early}[sys.argv[1]](*sys.argv[2:])
