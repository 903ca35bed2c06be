#!/usr/bin/env bash
# Damage to the store's files, one after another, on one data directory
# served by the ASan server: head.snap deleted, head.snap damaged, a
# meta.db page damaged, series.log damaged then meta.db deleted, a block
# chunk damaged, a byte flipped in the
# middle of the WAL, state.db damaged; after each the server restarts and
# the samples that survive are counted through /api/v1/query_range. Then
# `gpulse repair` (refused while the server runs) rebuilds what it can and
# says what it found. docs/storage.md "Damage and repair".
#
# Data: NS series of metric dmg, one sample every 10 minutes, in whole
# 2-hour windows that ended more than an hour ago, so the server compacts
# them into blocks at start and their head chunks are empty (nothing lives
# in head.snap alone). Samples 10 minutes apart, queried from the raw
# samples (rollups=false) at a 10-minute step on their times, make each
# point exactly one sample (the 5-minute lookback never reaches the
# previous one).
source "$(dirname "$0")/lib.sh"
NS=300
STEP=600
now=$(date +%s)
WEND=$(( (now - 3600) / 7200 * 7200 ))   # end of the last window compacted
T0=$(( WEND - 3 * 7200 ))
NT=$(( 3 * 7200 / STEP ))                # samples per series: 36
ALL=$(( NS * NT ))

# push METRIC NSERIES FROM COUNT: one request per time step, all series.
push() {
    python3 - "$SERVER_URL/api/v1/write" "$@" <<'EOF'
import sys
sys.path.insert(0, "tests/integration")
import rw
url, metric, ns, t0, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
for k in range(count):
    t = (t0 + k * 600) * 1000
    series = [([("__name__", metric), ("gpu", str(i % 8)), ("job", "damage-test-job"),
                ("node", "node-%04d" % (i // 8))], [(float(i + k), t)]) for i in range(ns)]
    st, body, _ = rw.post(url, rw.snappy_literal(rw.write_request(series)))
    if st != 204:
        sys.exit("push: %d %s" % (st, body))
EOF
}

# count METRIC FROM COUNT: "SAMPLES WARNINGS" of query_range at the samples' times.
count() {
    curl -sf "$SERVER_URL/api/v1/query_range?match=$1&start=$2&end=$(( $2 + ($3 - 1) * STEP ))&step=$STEP&rollups=false" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(len(r["values"]) for r in d["data"]["result"]), len(d.get("warnings", [])))'
}
metric() { curl -sf "$SERVER_URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
restart() { stop_server; start_server --log-level info; }
expect_count() { # LABEL METRIC FROM COUNT WANT_SAMPLES WANT_WARNINGS
    local got; got=$(count "$2" "$3" "$4")
    [ "$got" = "$5 $6" ] || { tail -20 "$SERVER_LOG" >&2; fail "$1: $got samples/warnings, expected $5 $6"; }
    note "$1: $5 samples visible, $6 warnings"
}

cd "$ROOT"
start_server --log-level info
DATA=$SERVER_DATA
export SERVER_DATA
push dmg $NS $T0 $NT
wait_until 30 sh -c "[ \"\$(curl -sf $SERVER_URL/metrics | awk '\$1 == \"gpulse_server_blocks\" { print \$2 }')\" -ge 3 ]" ||
    fail "the server did not compact the pushed windows into blocks"
expect_count "pushed" dmg $T0 $NT $ALL 0

# `gpulse repair` refuses a directory a server runs on, and touches nothing.
rc=0; "$GPULSE" repair --data "$DATA" >"$TMP/repair0.out" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "stop the server first" "$TMP/repair0.out" || fail "repair on a running server: rc=$rc"
rc=0; "$GPULSE" repair >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "repair without --data: rc=$rc, expected 2"

# 1. head.snap deleted: blocks are found from their files, twice over.
stop_server
rm "$DATA/head.snap"
start_server --log-level info
grep -q 'head.snap missing: rebuilt from blocks, chunk files and the whole WAL' "$SERVER_LOG" || fail "no log of the missing head.snap"
curl -sf "$SERVER_URL/api/v1/health" | grep '"store_damage":\["head.snap missing"\]' >/dev/null || fail "health does not report the missing head.snap"
[ "$(metric 'gpulse_server_store_damage{what="head_snap_missing"}')" = 1 ] || fail "/metrics does not report the missing head.snap"
expect_count "head.snap deleted" dmg $T0 $NT $ALL 0
restart
expect_count "head.snap deleted, restarted" dmg $T0 $NT $ALL 0

# 2. head.snap damaged: set aside, never deleted.
stop_server
printf '\xff' | dd of="$DATA/head.snap" bs=1 seek=12 conv=notrunc 2>/dev/null
start_server --log-level info
grep -q 'head.snap damaged: set aside' "$SERVER_LOG" || fail "no log of the damaged head.snap"
ls "$DATA"/head.snap.damaged-* >/dev/null || fail "the damaged head.snap was not kept"
expect_count "head.snap damaged" dmg $T0 $NT $ALL 0

# 3. meta.db: the type byte of its last page (series rows) damaged. The
# rows SQLite still reads, series.log and the WAL rebuild the registry:
# no series loses its labels (before series.log: 37 of 300 did).
stop_server
pages=$(( $(stat -c %s "$DATA/meta.db") / 4096 ))
[ "$pages" -ge 4 ] || fail "meta.db has only $pages pages"
printf '\x55' | dd of="$DATA/meta.db" bs=1 seek=$(( (pages - 1) * 4096 )) conv=notrunc 2>/dev/null
start_server --log-level info
grep -q 'meta.db damaged: set aside; the series registry rebuilt' "$SERVER_LOG" || fail "no log of the damaged meta.db"
ls "$DATA"/meta.db.damaged-* >/dev/null || fail "the damaged meta.db was not kept"
[ "$(metric gpulse_server_store_series_lost)" = 0 ] || fail "series lost: '$(metric gpulse_server_store_series_lost)'"
curl -sf "$SERVER_URL/api/v1/health" | grep '"meta.db damaged"' >/dev/null || fail "health does not report meta.db"
LEFT=$ALL
expect_count "meta.db damaged (no series' labels lost)" dmg $T0 $NT $LEFT 0
restart
expect_count "meta.db rebuilt, restarted" dmg $T0 $NT $LEFT 0

# 3b. series.log, the registry's second copy: a byte of its first record
# (the symbols the series records after it name; damage to the last
# record reads as a torn tail) flipped. Set aside and rebuilt from
# meta.db; then meta.db deleted, and the rebuilt series.log alone names
# every series again.
stop_server
printf '\x5a' | dd of="$DATA/series.log" bs=1 seek=12 conv=notrunc 2>/dev/null
start_server --log-level info
grep -q 'series.log damaged: set aside; rebuilt from meta.db' "$SERVER_LOG" || fail "no log of the damaged series.log"
ls "$DATA"/series.log.damaged-* >/dev/null || fail "the damaged series.log was not kept"
curl -sf "$SERVER_URL/api/v1/health" | grep '"series.log damaged"' >/dev/null || fail "health does not report series.log"
[ "$(metric 'gpulse_server_store_damage{what="series_log_damaged"}')" = 1 ] || fail "/metrics does not report series.log"
expect_count "series.log damaged" dmg $T0 $NT $LEFT 0
stop_server
rm -f "$DATA/meta.db" "$DATA/meta.db-wal" "$DATA/meta.db-shm"
start_server --log-level info
[ "$(metric gpulse_server_store_series_lost)" = 0 ] || fail "series lost after meta.db deleted"
expect_count "meta.db deleted, rebuilt from the rebuilt series.log" dmg $T0 $NT $LEFT 0

# 4. A block chunk damaged: the answer says so and lacks only that chunk.
stop_server
blk=$(ls "$DATA"/blocks/*.blk | head -1)
# a byte of the first chunk (the index's first entry: u32 id, u32 crc, then
# the offset, u48 in format version 3, u64 before), past the time record
# that precedes it (store_fmt.h)
at=$(python3 - "$blk" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
ioff = struct.unpack_from("<Q", b, len(b) - 24)[0]
if struct.unpack_from("<I", b, 8)[0] >= 3:
    lo, hi = struct.unpack_from("<IH", b, ioff + 8)
    print((lo | hi << 32) + 2)
else:
    print(struct.unpack_from("<Q", b, ioff + 8)[0] + 2)
EOF
) || fail "block layout"
printf '\x5a' | dd of="$blk" bs=1 seek="$at" conv=notrunc 2>/dev/null
start_server --log-level info
got=$(count dmg $T0 $NT)
set -- $got
[ "$2" -ge 1 ] && [ "$1" -lt $LEFT ] && [ "$1" -ge $(( LEFT - 7200 / STEP )) ] ||
    fail "damaged block chunk: $got (of $LEFT)"
note "damaged block chunk: $1 of $LEFT samples visible, $2 warning(s)"
curl -sf "$SERVER_URL/api/v1/query_range?match=dmg&start=$T0&end=$(( T0 + (NT - 1) * STEP ))&step=$STEP&rollups=false" |
    grep -q '"warnings":\["store: [0-9]* damaged chunk(s) skipped between ' || fail "no warning of the damaged chunk"
[ "$(metric gpulse_server_damaged_chunks_read_total)" -ge 1 ] || fail "damaged chunk reads not counted"
AFTER_BLOCK=$1

# 5. A byte flipped in the middle of a WAL segment: the records after it
# are replayed. Six requests of recent samples, the server SIGKILLed
# before any checkpoint, a byte of the third SAMPLES record flipped.
push dmgw 20 $WEND 6
kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
seg=$(ls "$DATA"/wal/*.wal | tail -1)
python3 - "$seg" <<'EOF' || fail "WAL segment layout"
import struct, sys
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
pos, samples = 0, []
while pos + 9 <= len(b):
    n, _, t = struct.unpack_from("<IIB", b, pos)
    if t == 2:
        samples.append(pos)
    pos += 9 + n
assert len(samples) == 6, samples
at = samples[2] + 9 + 20
b[at] ^= 0x40
open(path, "wb").write(b)
EOF
start_server --log-level info
grep -q 'corrupt record at offset [0-9]* of segment [0-9]*; 3 valid records after it recovered' "$SERVER_LOG" ||
    { grep wal "$SERVER_LOG" >&2; fail "no mid-segment corruption log"; }
grep -q 'torn record' "$SERVER_LOG" && fail "a mid-segment corruption logged as a torn tail"
[ "$(metric gpulse_server_wal_corrupt_records)" = 1 ] || fail "WAL corruption not counted"
expect_count "WAL byte flipped (1 of 6 batches lost)" dmgw $WEND 6 $(( 20 * 5 )) 0
expect_count "older data, same as before" dmg $T0 $NT $AFTER_BLOCK 1

# 6. gpulse repair on the stopped server: state.db not a database,
# head.snap deleted, series.log deleted. It rebuilds them, reports the
# damaged block chunk (exit 1: that cannot be repaired), and the blocks'
# samples are all still there.
stop_server
[ -f "$DATA/state.db" ] || fail "no state.db"
printf 'notsql' | dd of="$DATA/state.db" bs=1 seek=0 conv=notrunc 2>/dev/null
rm "$DATA/head.snap" "$DATA/series.log"
rc=0; "$GPULSE" repair --data "$DATA" >"$TMP/repair.out" 2>"$TMP/repair.err" || rc=$?
cat "$TMP/repair.out" | sed 's/^/      /'
[ $rc -eq 1 ] || fail "repair: exit $rc, expected 1 (a block chunk is lost)"
grep -q '^head.snap: missing: rebuilt' "$TMP/repair.out" || fail "repair: head.snap"
grep -q '^state.db: damaged (.*): set aside as state.db.damaged-' "$TMP/repair.out" || fail "repair: state.db"
grep -q '^meta.db: ok' "$TMP/repair.out" || fail "repair: meta.db"
grep -q '^series.log: damaged or missing: .* rebuilt from meta.db' "$TMP/repair.out" || fail "repair: series.log"
grep -q 'labels of' "$TMP/repair.out" && fail "repair: labels reported lost"
grep -q '^blocks: 1 of [0-9]* chunks damaged' "$TMP/repair.out" || fail "repair: block chunk"
ls "$DATA"/state.db.damaged-* >/dev/null || fail "the damaged state.db was not kept"
[ -f "$DATA/head.snap" ] || fail "repair wrote no head.snap"
rc=0; "$GPULSE" repair --data "$DATA" >"$TMP/repair2.out" 2>&1 || rc=$?
grep -q '^head.snap: ok' "$TMP/repair2.out" && grep -q '^state.db: absent' "$TMP/repair2.out" &&
    grep -q '^series.log: ok' "$TMP/repair2.out" ||
    { cat "$TMP/repair2.out" >&2; fail "a second repair still finds damage"; }
start_server --log-level info
curl -sf "$SERVER_URL/api/v1/health" | grep '"status":"ok"' >/dev/null || fail "health after repair"
expect_count "after repair" dmg $T0 $NT $AFTER_BLOCK 1
# The recent samples sat in open head chunks, whose only copy after the
# last checkpoint was the deleted head.snap: those are what deleting it
# costs (docs/storage.md), and all it costs.
expect_count "after repair, recent (held only by the deleted head.snap)" dmgw $WEND 6 0 0
stop_server
echo "PASS test_store_damage"
