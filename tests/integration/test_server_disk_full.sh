#!/usr/bin/env bash
# A full disk under a running server (issue 15, findings 6 and 10), on a
# real 48 MiB tmpfs: an agent (with its disk buffer elsewhere) and a
# probe writer push while a filler file takes the rest of the space.
#   1. writes are refused with 503 + Retry-After while the disk is full,
#      health says writes_paused and names the error, /metrics counts it;
#   2. once the filler is removed, writes are accepted again within
#      seconds without a restart (before: refused "until a restart");
#   3. the disk is filled again and the server stopped: the log says what
#      failed (no space left on device), never SQLite's "cannot rollback";
#   4. read back raw from the stopped server's data (bench/storetool):
#      every sample the probe had acknowledged is held exactly once with
#      its value, nothing is held that was not sent, and the agent's tick
#      counter has no gap and no repeat.
# Needs root to mount the tmpfs (skipped, saying so, otherwise); the
# mount is removed on exit whatever happens.
source "$(dirname "$0")/lib.sh"
STORETOOL=$ROOT/build/rel/storetool
[ -x "$STORETOOL" ] || fail "$STORETOOL missing (make check-build builds it)"
MNT=$TMP/mnt
mkdir -p "$MNT"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=48m,mode=0755 gpulse-it "$MNT" 2>/dev/null; then
    echo "SKIP test_server_disk_full: mounting a tmpfs needs root"
    exit 0
fi
# Stop everything, then unmount, then lib.sh's cleanup.
on_exit() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
    umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
    cleanup
}
trap on_exit EXIT

srv_metric() {
    curl -sf "$SERVER_URL/metrics" | awk -v n="$1" 'index($0, n " ") == 1 {print $2; f=1} END {if (!f) print 0}'
}
fill() { dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null || true; }

SERVER_DATA=$MNT/data start_server --checkpoint-interval 2s --log-level debug
start_agent --simulate 1x2xH100 --interval 200ms --push "$SERVER_URL/api/v1/write" --buffer-dir "$TMP/buffer" \
    --push-max-backoff 1s
# The probe: one request every 50 ms of 4 series, value = its sequence
# number; every answer logged as "SEQ T_MS STATUS RETRY_AFTER WALL_S BODY".
python3 - "$SERVER_URL" "$TMP/probe.log" "$TMP/probe.stop" "$ROOT/tests/integration" <<'PY' &
import os, sys, time
sys.path.insert(0, sys.argv[4])
import rw
url, log, stop = sys.argv[1:4]
last, seq = 0, 0
with open(log, "w", buffering=1) as f:
    while not os.path.exists(stop):
        t = max(int(time.time() * 1000), last + 1)
        last = t
        series = [([("__name__", "disk_probe"), ("k", str(k))], [(float(seq), t)]) for k in range(4)]
        try:
            st, body, h = rw.post(url + "/api/v1/write", rw.snappy_literal(rw.write_request(series)))
        except OSError as e:  # a refused connection is not an answer
            st, body, h = 0, str(e), {}
        f.write("%d %d %d %s %.3f %s\n" % (seq, t, st, h.get("Retry-After", "-"), time.time(),
                                           body.replace("\n", " ")[:200]))
        seq += 1
        time.sleep(0.05)
PY
PROBE_PID=$!
PIDS+=("$PROBE_PID")
wait_until 10 grep -q ' 204 ' "$TMP/probe.log" || fail "the probe's writes are not accepted"
sleep 1

# 1. Full.
fill
note "tmpfs full: $(df -h "$MNT" | awk 'NR==2 {print $3 " used of " $2}')"
wait_until 15 sh -c "curl -s $SERVER_URL/api/v1/health | grep -q writes_paused" ||
    { tail -5 "$TMP/probe.log"; tail -20 "$SERVER_LOG"; fail "the server did not pause writes on a full disk"; }
health=$(curl -s -D "$TMP/health.hdr" "$SERVER_URL/api/v1/health")
grep -q '^HTTP/1.1 503' "$TMP/health.hdr" || fail "health is not 503 while writes are paused"
case $health in *'"write_error":"cannot '*'no space left on device"'*) ;;
*) fail "health does not name the write error: $health" ;; esac
wait_until 10 grep -q ' 503 5 ' "$TMP/probe.log" || fail "no 503 with Retry-After: 5 while full"
grep ' 503 ' "$TMP/probe.log" | grep -v 'no space left on device' >/dev/null &&
    fail "a 503 does not name the cause: $(grep ' 503 ' "$TMP/probe.log" | grep -v 'no space' | head -1)"
[ "$(srv_metric gpulse_server_store_writes_paused)" = 1 ] || fail "writes_paused is not 1"
[ "$(srv_metric gpulse_server_store_write_errors_total)" -ge 1 ] || fail "the write error is not counted"
sleep 3 # stays paused while full
curl -s "$SERVER_URL/api/v1/health" | grep writes_paused >/dev/null || fail "writes resumed while the disk was still full"
note "full: $(grep -c ' 503 ' "$TMP/probe.log") probe requests answered 503 Retry-After 5 so far"

# 2. Room again.
freed=$(python3 -c 'import time; print(time.time())')
rm -f "$MNT/filler"
wait_until 30 sh -c "awk -v f=$freed '\$3 == 204 && \$5 > f {ok=1} END {exit !ok}' $TMP/probe.log" ||
    { tail -5 "$TMP/probe.log"; tail -20 "$SERVER_LOG"; fail "writes were not accepted again after space returned"; }
back=$(awk -v f="$freed" '$3 == 204 && $5 > f {print $5 - f; exit}' "$TMP/probe.log")
python3 -c "import sys; sys.exit(0 if $back < 5 else 1)" || fail "writes took $back s to resume (over 5 s)"
curl -sf "$SERVER_URL/api/v1/health" | grep '"status":"ok"' >/dev/null || fail "health is not ok after the resume"
[ "$(srv_metric gpulse_server_store_write_resumes_total)" -ge 1 ] || fail "the resume is not counted"
[ "$(srv_metric gpulse_server_store_writes_paused)" = 0 ] || fail "writes_paused is not 0 after the resume"
grep -q 'msg="writes resumed after a write error"' "$SERVER_LOG" || fail "the resume is not logged"
note "space freed: the first write accepted $back s later, without a restart"
sleep 3
touch "$TMP/probe.stop"
wait "$PROBE_PID" || true
wait_until 30 sh -c "[ \"\$(curl -sf http://127.0.0.1:$AGENT_PORT/metrics | awk 'index(\$0, \"gpulse_push_queue_bytes{\") == 1 {print \$2}')\" = 0 ]" ||
    { tail -20 "$AGENT_LOG"; fail "the agent did not catch up after the resume"; }
sleep 1
last=$(agent_metric gpulse_agent_ticks_total)
stop_agent

# 3. Full at shutdown: the log says so.
fill
stop_server
grep -q 'cannot rollback' "$SERVER_LOG" && fail "the log says 'cannot rollback' at shutdown"
grep -E 'level=(error|warn) .*(checkpoint failed|writes paused|closing with writes paused).*no space left on device' \
    "$SERVER_LOG" >/dev/null || { tail -5 "$SERVER_LOG"; fail "the shutdown on a full disk does not say what failed"; }
note "shutdown while full: $(grep -E 'checkpoint failed|closing with writes paused' "$SERVER_LOG" | tail -1 | sed 's/^.*msg=//')"
rm -f "$MNT/filler"

# 4. Everything acknowledged is there, once.
"$STORETOOL" dump "$MNT/data" disk_probe >"$TMP/probe.txt" || fail "storetool dump failed"
"$STORETOOL" dump "$MNT/data" gpulse_agent_ticks_total >"$TMP/ticks.txt" || fail "storetool dump failed"
python3 - "$TMP/probe.log" "$TMP/probe.txt" "$TMP/ticks.txt" "$last" <<'PY' || fail "acknowledged samples are missing or repeated"
import sys
def series(path):
    out = []
    for line in open(path):
        if line.startswith("series "):
            out.append([])
        else:
            t, v = line.split()
            out[-1].append((int(t), float(v)))
    return out
sent, acked = {}, set()
for line in open(sys.argv[1]):
    p = line.split(" ", 5)
    seq, t, st = int(p[0]), int(p[1]), int(p[2])
    sent[t] = float(seq)
    if st == 204:
        acked.add(t)
probe = series(sys.argv[2])
bad = []
if len(probe) != 4:
    bad.append("want 4 probe series, got %d" % len(probe))
for s in probe:
    ts = [t for t, _ in s]
    if len(set(ts)) != len(ts):
        bad.append("a probe sample is held twice")
    held = dict(s)
    bad += ["acknowledged t=%d missing" % t for t in sorted(acked - held.keys())][:5]
    bad += ["t=%d held but never sent" % t for t in held if t not in sent][:5]
    bad += ["t=%d value %g, sent %g" % (t, v, sent[t]) for t, v in held.items() if t in sent and v != sent[t]][:5]
ticks = series(sys.argv[3])
if len(ticks) != 1:
    bad.append("want one ticks series, got %d" % len(ticks))
else:
    c = ticks[0]
    bad += ["tick %d: value %g" % (i, v) for i, (t, v) in enumerate(c, 1) if v != i][:5]
    if len(c) < int(float(sys.argv[4])):
        bad.append("ticks: %d held, the agent made %s" % (len(c), sys.argv[4]))
if bad:
    sys.exit("\n".join(bad))
print("  - %d probe requests acknowledged (%d refused), every acknowledged sample held once; %d agent ticks, no gap"
      % (len(acked), len(sent) - len(acked), len(ticks[0])))
PY
echo "PASS test_server_disk_full"
