#!/usr/bin/env bash
# bench/ingest.sh - remote-write ingest per CPU-second of the gpulse
# server beside Debian's VictoriaMetrics and Prometheus, on the two shapes
# a receiver gets, in one run (issue 19 item 2).
#
#   bench/ingest.sh [NODES] [MINUTES]  (default 32 nodes = 256 GPUs, 20 min)
#   QUICK=1 bench/ingest.sh            (8 nodes, 5 min: a smoke test)
#   CONNECTIONS=8 FAMILIES=20 SM_TICKS=60
#   BEFORE=path/to/gpulse              (another build beside this one, e.g.
#                                       the previous release: before/after)
#
# Data: bench/fleetgen -F FAMILIES, NODES x 8 H100 x FAMILIES
# dcgm-exporter families at 1 s, the MINUTES that end now, pre-encoded
# (snappy) twice:
#   time-major    live traffic: all series of a group of nodes (8 shards)
#                 at one or a few timestamps, ~1,500 samples a request
#                 (what bench/store.sh sends);
#   series-major  backfill, catch-up after an outage: all series of one
#                 node at SM_TICKS consecutive timestamps, so SM_TICKS
#                 samples of each series a request (default 60: 9,600
#                 samples, about vmagent's 10,000-row blocks).
# Each receiver starts empty for each shape, alone on the machine, on
# 127.0.0.1; bench/rwload POSTs every body over CONNECTIONS keep-alive
# connections (each owns whole shards, so every series arrives in time
# order) and the receiver's CPU time (utime + stime, /proc) from before
# the first request to 5 s after the last answer (so deferred flushes
# count) gives samples per CPU-second. gpulse syncs its WAL before every
# answer; the other two do not. Prints the figures, the ratios and the
# goal (gpulse >= 1.5x VictoriaMetrics on each shape). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-32}
MINUTES=${2:-20}
if [ "${QUICK:-0}" = 1 ]; then NODES=8 MINUTES=5; fi
CONNECTIONS=${CONNECTIONS:-8}
FAMILIES=${FAMILIES:-20}
SM_TICKS=${SM_TICKS:-60}
scripts/deps.sh test
make -s -j2 build/rel/gpulse bench-tools
source bench/lib.sh # TMP, PIDS and the cleanup trap

END=$(date +%s)
PER_NODE=$((8 * FAMILIES))
GROUP=$(( (NODES + 7) / 8 ))
TS=$(( (1536 + GROUP * PER_NODE - 1) / (GROUP * PER_NODE) ))
gen() { # FILE NODES_PER_REQUEST TICKS_PER_REQUEST
    build/rel/fleetgen -F "$FAMILIES" -n "$NODES" -m "$MINUTES" -e "${END}000" -G "$2" -T "$3" -o "$1"
}
gen "$TMP/tm.rw" "$GROUP" "$TS"
gen "$TMP/sm.rw" 1 "$SM_TICKS"

for shape in tm sm; do
    start_vm
    ingest "VM_$shape" "http://127.0.0.1:$VP/api/v1/write" $VPID "$TMP/$shape.rw"
    stop $VPID; rm -rf "$TMP/vm"
    start_prom
    ingest "PROM_$shape" "http://127.0.0.1:$PP/api/v1/write" $PPID_ "$TMP/$shape.rw"
    stop $PPID_; rm -rf "$TMP/prom"
    start_gpulse "$TMP/gp"
    ingest "GP_$shape" "http://127.0.0.1:$GP/api/v1/write" $GPID "$TMP/$shape.rw"
    stop $GPID; rm -rf "$TMP/gp"
    if [ -n "${BEFORE:-}" ]; then
        start_gpulse "$TMP/gp" "$BEFORE"
        ingest "GPB_$shape" "http://127.0.0.1:$GP/api/v1/write" $GPID "$TMP/$shape.rw"
        stop $GPID; rm -rf "$TMP/gp"
    fi
done

echo
echo "$NODES nodes x 8 GPUs x $FAMILIES families = $((NODES * PER_NODE)) series, $MINUTES min at 1 s;" \
    "$CONNECTIONS connections; time-major: $GROUP node(s) x $TS tick(s) a request," \
    "series-major: 1 node x $SM_TICKS ticks a request"
python3 - <<PY
rows = (("time-major (live)", $ING_VM_tm, $ING_PROM_tm, $ING_GP_tm),
        ("series-major (backfill)", $ING_VM_sm, $ING_PROM_sm, $ING_GP_sm))
def row(*c):
    print(f"{c[0]:<26}{c[1]:>12}{c[2]:>12}{c[3]:>12}  {c[4]:<16}{c[5]}")
row("samples per CPU-second", "VictoriaM.", "Prometheus", "gpulse", "gpulse/VM", "goal")
for what, vm, prom, gp in rows:
    row(what, f"{vm:,.0f}", f"{prom:,.0f}", f"{gp:,.0f}", f"{gp / vm:.2f}", ">= 1.5")
before = "${BEFORE:-}"
if before:
    for what, b, vm in (("time-major", ${ING_GPB_tm:-0}, $ING_VM_tm), ("series-major", ${ING_GPB_sm:-0}, $ING_VM_sm)):
        print(f"  {before} on {what}: {b:,.0f} samples per CPU-second, gpulse/VM {b / vm:.2f}")
PY
