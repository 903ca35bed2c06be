#!/usr/bin/env python3
"""rw.py - a remote-write 1.0 test client, written from the spec alone
(protobuf wire format by hand, snappy block format as literals), so the
server is checked against an encoder that shares no code with it.

  rw.py write URL [--token T] [-H 'Name: value']... SERIES...
        SERIES is  name{label="v",...}=VALUE@MILLIS  (VALUE may be NaN,
        +Inf, -Inf, stale); prints "STATUS BODY" on one line
  rw.py bad URL [--token T]
        the malformed-input battery: each case must get its 4xx
  rw.py huge URL [--chunked]
        streams a 1 GiB body; prints "STATUS SECONDS BYTES_SENT"
  rw.py trickle URL
        sends a body one byte a second; prints "SECONDS" until cut off
"""
import http.client
import re
import socket
import struct
import sys
import time
import urllib.parse

STALE = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def sample(value, ts):
    return varint(1 << 3 | 1) + struct.pack("<d", value) + varint(2 << 3 | 0) + varint(ts)


def series_msg(labels, samples):
    out = b""
    for name, value in labels:
        out += field_bytes(1, field_bytes(1, name.encode()) + field_bytes(2, value.encode()))
    for v, t in samples:
        out += field_bytes(2, sample(v, t))
    return out


def write_request(series):
    """series: [([(name, value), ...], [(value, ts_ms), ...]), ...]"""
    return b"".join(field_bytes(1, series_msg(l, s)) for l, s in series)


def snappy_literal(data, declared=None):
    """Snappy block format using literals only (valid, uncompressed)."""
    out = bytearray(varint(len(data) if declared is None else declared))
    for i in range(0, len(data), 65536):
        chunk = data[i:i + 65536]
        n = len(chunk) - 1
        if n < 60:
            out.append(n << 2)
        else:
            out.append(61 << 2)
            out += struct.pack("<H", n)
        out += chunk
    return bytes(out)


def parse_series(text):
    m = re.fullmatch(r'([A-Za-z_:][A-Za-z0-9_:]*)?(\{.*\})?=([^@]+)@(-?\d+)', text)
    if not m:
        raise SystemExit("bad series %r" % text)
    labels = []
    if m.group(1):
        labels.append(("__name__", m.group(1)))
    if m.group(2):
        for k, v in re.findall(r'([^{},=\s]+)="((?:[^"\\]|\\.)*)"', m.group(2)):
            labels.append((k, v.encode().decode("unicode_escape")))
    labels.sort()
    vs = m.group(3)
    value = STALE if vs == "stale" else float(vs)
    return labels, [(value, int(m.group(4)))]


def post(url, body, headers=None, token=None):
    u = urllib.parse.urlsplit(url)
    h = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
         "X-Prometheus-Remote-Write-Version": "0.1.0", "User-Agent": "rw.py/1"}
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("POST", u.path or "/api/v1/write", body=body, headers=h)
    r = c.getresponse()
    data = r.read().decode(errors="replace").strip()
    hdrs = dict(r.getheaders())
    c.close()
    return r.status, data, hdrs


def cmd_write(args):
    url, token, headers, series = args[0], None, {}, []
    i = 1
    while i < len(args):
        if args[i] == "--token":
            token = args[i + 1]
            i += 2
        elif args[i] == "-H":
            k, v = args[i + 1].split(":", 1)
            headers[k.strip()] = v.strip()
            i += 2
        else:
            series.append(parse_series(args[i]))
            i += 1
    status, body, _ = post(url + "/api/v1/write", snappy_literal(write_request(series)), headers, token)
    print(status, body)


def cmd_bad(args):
    url = args[0] + "/api/v1/write"
    token = args[2] if len(args) > 2 and args[1] == "--token" else None
    now = int(time.time() * 1000)
    good = write_request([([("__name__", "rw_bad_input_probe"), ("case", "good")], [(1.0, now)])])
    failures = 0

    def expect(name, body, want_status, want_text=None, headers=None):
        nonlocal failures
        status, text, _ = post(url, body, headers, token)
        ok = status == want_status and (want_text is None or want_text.lower() in text.lower())
        print("%s %-28s %d %s" % ("ok  " if ok else "FAIL", name, status, text[:150]))
        if not ok:
            failures += 1

    expect("valid", snappy_literal(good), 204)
    whole = snappy_literal(good)
    expect("truncated_snappy", whole[:len(whole) // 2], 400, "snappy")
    expect("not_snappy", good, 400)
    expect("empty_body", b"", 400, "empty")
    expect("invalid_protobuf", snappy_literal(b"\x0a\x05\x0a\x03\xff\xff"), 400)
    expect("wire_type_7", snappy_literal(b"\x0f\x00"), 400)
    expect("absurd_varint_length", snappy_literal(b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x7f"), 400)
    expect("overlong_varint", snappy_literal(b"\x0a" + b"\xff" * 11), 400)
    expect("absurd_declared_length", varint(0xFFFFFFFF) + b"\x00", 413, "decompressed")
    labels = sorted([("__name__", "many")] + [("l%06d" % i, "v") for i in range(100000)])
    expect("100k_labels", snappy_literal(write_request([(labels, [(1.0, now)])])), 400, "labels")
    for bad_name in ["1abc", "a-b", "a b", "é"]:
        body = write_request([([("__name__", "x"), (bad_name, "v")], [(1.0, now)])])
        expect("label_name_%r" % bad_name, snappy_literal(body), 400)
    body = write_request([([("__name__", "x"), ("a", "1"), ("a", "2")], [(1.0, now)])])
    expect("duplicate_label_name", snappy_literal(body), 400)
    raw = field_bytes(1, field_bytes(1, field_bytes(1, b"__name__") + field_bytes(2, b"x")) +
                      field_bytes(1, field_bytes(1, b"a") + field_bytes(2, b"\xff\xfe")) +
                      field_bytes(2, sample(1.0, now)))
    expect("value_not_utf8", snappy_literal(raw), 400, "utf-8")
    body = write_request([([], [(1.0, now)])])
    expect("series_without_labels", snappy_literal(body), 400)
    # Out of order: the good samples of the request are stored, the old one counted.
    body = write_request([([("__name__", "rw_bad_input_probe"), ("case", "good")],
                           [(2.0, now - 60000)]),
                          ([("__name__", "rw_bad_input_probe"), ("case", "other")], [(3.0, now)])])
    expect("out_of_order", snappy_literal(body), 400, "out of order")
    expect("same_batch_again_is_dup", snappy_literal(good), 204)
    body = write_request([([("__name__", "rw_bad_input_probe"), ("case", "good")], [(9.0, now)])])
    expect("conflicting_value", snappy_literal(body), 400, "different value")
    expect("gzip_encoding", snappy_literal(good), 415, "snappy", {"Content-Encoding": "gzip"})
    expect("rw2_content_type", snappy_literal(good), 415, "1.0",
           {"Content-Type": "application/x-protobuf;proto=io.prometheus.write.v2.Request"})
    expect("json_content_type", snappy_literal(good), 415, None, {"Content-Type": "application/json"})
    expect("no_headers_at_all", snappy_literal(write_request(
        [([("__name__", "rw_bad_input_probe"), ("case", "bare")], [(1.0, now)])])), 204, None,
        {"Content-Encoding": None, "Content-Type": None, "X-Prometheus-Remote-Write-Version": None})
    return 1 if failures else 0


def cmd_huge(args):
    """1 GiB of zeros: with Content-Length (413 expected before it is read)
    or chunked (the connection is cut as the body passes the limit)."""
    u = urllib.parse.urlsplit(args[0])
    chunked = "--chunked" in args
    s = socket.create_connection((u.hostname, u.port))
    s.settimeout(20)
    head = "POST /api/v1/write HTTP/1.1\r\nHost: x\r\nContent-Encoding: snappy\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\n" if chunked else "Content-Length: %d\r\n\r\n" % (1 << 30)
    t0 = time.time()
    s.sendall(head.encode())
    block = b"\0" * 65536
    if chunked:
        block = b"10000\r\n" + block + b"\r\n"
    sent = 0
    resp = b""
    while sent < (1 << 30):
        try:
            s.sendall(block)
            sent += len(block)
        except OSError:
            break
        # An answer may be waiting (413): read it without blocking.
        s.setblocking(False)
        try:
            got = s.recv(4096)
            if got == b"":
                break
            resp += got
        except BlockingIOError:
            pass
        except OSError:
            break
        finally:
            s.setblocking(True)
            s.settimeout(20)
        if resp:
            break
    try:
        while True:
            got = s.recv(4096)
            if not got:
                break
            resp += got
    except OSError:
        pass
    status = resp.split(b" ", 2)[1].decode() if resp.startswith(b"HTTP/1.1 ") else "cut"
    print(status, "%.2f" % (time.time() - t0), sent)


def cmd_trickle(args):
    u = urllib.parse.urlsplit(args[0])
    s = socket.create_connection((u.hostname, u.port))
    s.settimeout(1)
    s.sendall(b"POST /api/v1/write HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
    t0 = time.time()
    while time.time() - t0 < 120:
        try:
            s.sendall(b"x")
        except OSError:
            break
        try:
            if s.recv(1) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    print("%.1f" % (time.time() - t0))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    cmd = {"write": cmd_write, "bad": cmd_bad, "huge": cmd_huge, "trickle": cmd_trickle}[sys.argv[1]]
    sys.exit(cmd(sys.argv[2:]) or 0)
