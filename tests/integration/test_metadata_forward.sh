#!/usr/bin/env bash
# A gpulse server in storage: remote forwards the families' metadata to
# its cluster (docs/storage.md "Metadata"): a remote writer sends series
# with TYPE/HELP/UNIT to it, and the cluster (a second gpulse server,
# embedded) answers /api/v1/metadata for those families as the first
# does, within seconds (a new family is sent within a second, everything
# again every minute). Debian's Prometheus 2.42 as the cluster takes the
# metadata-only requests without an error (its remote-write receiver
# ignores metadata: storage/remote/write_handler.go reads timeseries
# only), and the samples still arrive.
source "$(dirname "$0")/lib.sh"
start_server
CLUSTER=$SERVER_URL
unset SERVER_DATA
start_server --storage remote --remote-write-url "$CLUSTER/api/v1/write" --remote-query-url "$CLUSTER"
REM=$SERVER_URL REM_PID=$SERVER_PID REM_LOG=$SERVER_LOG
start_prom_receiver
unset SERVER_DATA
start_server --storage remote --remote-write-url "$PROM_URL" --remote-query-url "http://127.0.0.1:$PROM_PORT"
REM2=$SERVER_URL

# send URL: a remote-write request with two series and their metadata,
# encoded here (protobuf by hand, snappy as literals only).
cat >"$TMP/send.py" <<'PY'
import struct, sys, time, urllib.request
def varint(n):
    out = b""
    while True:
        b = n & 0x7f; n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n: return out
def field(num, data): return varint(num << 3 | 2) + varint(len(data)) + data
def label(n, v): return field(1, field(1, n.encode()) + field(2, v.encode()))
now = int(time.time() * 1000)
def series(name, v):
    sample = b"\x09" + struct.pack("<d", v) + b"\x10" + varint(now)
    return field(1, label("__name__", name) + label("job", "app") + field(2, sample))
def meta(t, name, help, unit):
    return field(3, b"\x08" + varint(t) + field(2, name.encode()) + field(4, help.encode()) +
                 (field(5, unit.encode()) if unit else b""))
pb = (series("app_queue_bytes", 1024) + series("app_requests_total", 5) +
      meta(2, "app_queue_bytes", 'Bytes waiting, "quoted" and \\ escaped, café.', "bytes") +
      meta(1, "app_requests", "Requests served.", ""))
body = varint(len(pb))
for i in range(0, len(pb), 60):
    chunk = pb[i:i + 60]
    body += bytes([(len(chunk) - 1) << 2]) + chunk
req = urllib.request.Request(sys.argv[1] + "/api/v1/write", data=body, method="POST",
                             headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
                                      "X-Prometheus-Remote-Write-Version": "0.1.0"})
urllib.request.urlopen(req).read()
PY
python3 "$TMP/send.py" "$REM" || fail "the remote write to the storage: remote server failed"
python3 "$TMP/send.py" "$REM2" || fail "the remote write to the second storage: remote server failed"

# same FAMILY: the cluster's answer equals the forwarding server's (which
# keeps what remote write carried, test_metadata_prometheus.sh).
same() {
    local a b
    a=$(curl -sf "$REM/api/v1/metadata?metric=$1") && b=$(curl -sf "$CLUSTER/api/v1/metadata?metric=$1") &&
        [ "$a" = "$b" ] && [ "$a" != '{"status":"success","data":{}}' ]
}
for f in app_queue_bytes app_requests; do
    wait_until 15 same "$f" || {
        tail -5 "$REM_LOG"
        fail "$f: the cluster's metadata never equalled the forwarding server's: $(curl -sf "$CLUSTER/api/v1/metadata?metric=$f")"
    }
done
curl -sf "$CLUSTER/api/v1/metadata?metric=app_queue_bytes" | python3 -c '
import json, sys
e = json.load(sys.stdin)["data"]["app_queue_bytes"][0]
want = {"type": "gauge", "help": "Bytes waiting, \"quoted\" and \\ escaped, café.", "unit": "bytes"}
sys.exit(0 if e == want else "cluster has %r, want %r" % (e, want))' || fail "the forwarded metadata is not what was written"
curl -sf "$CLUSTER/api/v1/query" --data-urlencode 'query=app_queue_bytes' | grep '"1024"' >/dev/null ||
    fail "the samples did not reach the cluster"
# The forwarding server's requests (samples and metadata) were all taken.
curl -sf "$CLUSTER/metrics" | grep -E '^gpulse_server_http_requests_total\{handler="write",code="[^2]' &&
    fail "the forwarding server's writes to the cluster got errors (above)"
note "metadata forwarded to a gpulse cluster: the remote writer's families' type, help and unit"

# Prometheus 2.42 takes the metadata requests (2xx, nothing dropped) and
# has the samples; its /api/v1/metadata lists only what it scraped itself.
wait_until 15 sh -c "curl -sf 'http://127.0.0.1:$PROM_PORT/api/v1/query?query=app_queue_bytes' | grep 1024 >/dev/null" ||
    fail "the samples did not reach Prometheus"
sleep 2
SERVER_URL=$REM2
dropped=$(curl -sf "$REM2/metrics" | awk '/^gpulse_push_samples_dropped_total/ && $NF != 0' | head -3)
[ -z "$dropped" ] || fail "the second server dropped requests to Prometheus: $dropped"
grep -i 'metadata not forwarded' "$SERVER_LOG" && fail "the second server could not forward metadata (above)"
note "Prometheus 2.42 as the cluster takes the metadata requests without an error"
stop_server
SERVER_PID=$REM_PID SERVER_LOG=$REM_LOG
stop_server
