#!/usr/bin/env bash
# The crash test: a writer pushes remote write at full rate while the
# server is killed with SIGKILL at random moments, five times, and
# restarted on the same data directory each time. Afterwards every sample
# the server acknowledged (answered 2xx) is present exactly once with its
# exact value: read back through the HTTP API (query_range at a step equal
# to the sample interval, so each point is one sample), and then, with the
# server stopped, read raw through the store API (bench/storetool verify),
# which also sees duplicates and samples nobody sent.
#
# Writer: bench/rwload -r over 4 connections (each owning whole nodes, so
# every series arrives in time order); it retries on connection errors,
# 5xx and 429, and logs the index of every acknowledged body; it stops
# starting new bodies after WRITE_SECONDS. Data: bench/fleetgen, 24 nodes
# x 1 GPU x 12 gauges, one body per node and second (12 samples: many
# small requests, so the kills land mid-stream), timestamps on whole
# seconds over the 55 minutes that end now (the store compacts a 2-hour
# window an hour after its end; data younger than 55 minutes stays at
# least 5 minutes clear of that, so no sample is refused as too old).
source "$(dirname "$0")/lib.sh"
BIN=$ROOT/build/rel
for t in fleetgen rwload storetool; do
    [ -x "$BIN/$t" ] || fail "$BIN/$t missing (make check-build builds it)"
done
"$BIN/fleetgen" -n 24 -g 1 -m 55 -G 1 -T 1 -j 0 -s 7 -o "$TMP/fleet.rw" 2>"$TMP/gen.log" || fail "fleetgen failed"

DATA=$TMP/data
# No self-scrape: its samples (job="gpulse-server", due 15 s after a
# start) are in the store but in no body, and verify counts them foreign.
printf 'server:\n  self_scrape_interval: 0s\n' >"$TMP/gpulse.yaml"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
# start_server: on the same port and data directory; a restart right
# after a SIGKILL may find the port still held for a moment: try again.
start_server() {
    local try
    for try in 1 2 3 4 5 6 7 8 9 10; do
        "$GPULSE" server --config "$TMP/gpulse.yaml" --data "$DATA" --listen "127.0.0.1:$PORT" --log-level warn >>"$TMP/server.log" 2>&1 &
        SPID=$!
        PIDS+=("$SPID")
        sleep 0.2
        kill -0 "$SPID" 2>/dev/null && return 0
        wait "$SPID" 2>/dev/null || true
    done
    tail -20 "$TMP/server.log" >&2
    fail "server did not start"
}
start_server
wait_until 30 curl -sf "$URL/api/v1/health" || { tail "$TMP/server.log" >&2; fail "server not healthy"; }

WRITE_SECONDS=20
"$BIN/rwload" -r -c 4 -d "$WRITE_SECONDS" -a "$TMP/acked" "$URL/api/v1/write" "$TMP/fleet.rw" \
    >"$TMP/rwload.out" 2>"$TMP/rwload.err" &
WPID=$!
PIDS+=("$WPID")
kills=0
for i in 1 2 3 4 5; do
    # 0.5 to 1.4 s apart: five kills land well inside the data (79,200
    # bodies, which a fast machine writes in about 10 s).
    d=$(( 5 + RANDOM % 10 ))
    sleep "$(( d / 10 )).$(( d % 10 ))"
    kill -0 "$WPID" 2>/dev/null || fail "the writer finished before kill $i: give it more data"
    before=$(wc -l <"$TMP/acked")
    kill -KILL "$SPID"
    wait "$SPID" 2>/dev/null || true
    kills=$((kills + 1))
    sleep "0.$(( RANDOM % 5 ))"
    start_server
    note "kill $i after $before acknowledged bodies"
done
rc=0
wait "$WPID" || rc=$?
cat "$TMP/rwload.out"
[ $rc -eq 0 ] || { cat "$TMP/rwload.err"; tail -20 "$TMP/server.log" >&2; fail "the writer saw a non-retryable answer"; }
acked=$(wc -l <"$TMP/acked")
retries=$(sed -n 's/.*retries=\([0-9]*\).*/\1/p' "$TMP/rwload.out")
[ "$acked" -gt 500 ] || fail "only $acked bodies acknowledged: the writer barely ran"
[ "$retries" -gt 0 ] || fail "the writer never had to retry: the kills missed it"
wait_until 60 curl -sf "$URL/api/v1/health" || fail "server not healthy after the last restart"
note "$kills kills; $acked bodies acknowledged, $retries retries"

# 1. Through the HTTP API, server running.
"$BIN/storetool" expect "$TMP/fleet.rw" "$TMP/acked" >"$TMP/expect.txt" || fail "storetool expect failed"
python3 - "$URL" "$TMP/expect.txt" <<'PY' || fail "acknowledged samples differ when read back through query_range"
import json, sys, urllib.parse, urllib.request
url, path = sys.argv[1], sys.argv[2]
want = {}  # metric -> {(host, gpu, t_s): value}
for line in open(path):
    name, host, gpu, t, v = line.split()
    assert int(t) % 1000 == 0
    want.setdefault(name, {})[(host, gpu, int(t) // 1000)] = float(v)
checked = 0
for name, samples in sorted(want.items()):
    ts = [k[2] for k in samples]
    q = urllib.parse.urlencode({"match": name, "start": min(ts), "end": max(ts), "step": 1})
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{q}", timeout=60) as r:
        d = json.load(r)
    got = {}
    for s in d["data"]["result"]:
        m = s["metric"]
        for t, v in s["values"]:
            got[(m["Hostname"], m["gpu"], int(t))] = float(v)
    bad = [(k, v, got.get(k)) for k, v in samples.items() if got.get(k) != v]
    if bad:
        sys.exit(f"{name}: {len(bad)} of {len(samples)} acknowledged samples wrong or missing, e.g. {bad[:3]}")
    checked += len(samples)
print(f"  - {checked} acknowledged samples read back through query_range")
PY

# 2. Raw, through the store, server stopped (SIGTERM: a clean exit).
kill -TERM "$SPID"
rc=0
wait "$SPID" || rc=$?
[ $rc -eq 0 ] || { tail -20 "$TMP/server.log" >&2; fail "server exited with $rc on SIGTERM"; }
out=$("$BIN/storetool" verify "$DATA" "$TMP/fleet.rw" "$TMP/acked" 2>&1) || { echo "$out"; fail "store verify failed"; }
echo "  - $out"
