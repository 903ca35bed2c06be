#!/usr/bin/env bash
# bench/store.sh - the gpulse server's store next to Debian's
# VictoriaMetrics and Prometheus, on the same generated GPU-fleet data,
# measured in one run.
#
#   bench/store.sh [NODES] [MINUTES]   (default 64 nodes = 512 GPUs, 120 min)
#   QUICK=1 bench/store.sh             (8 nodes, 10 min: a smoke test)
#   CONNECTIONS=8                      (concurrent senders)
#   FAMILIES=20                        (fleetgen -F: 20, or the older 12)
#
# Data: bench/fleetgen -F 20, NODES x 8 H100 x 20 dcgm-exporter families
# (issue 19's data: milliwatt power, 6-decimal profiling ratios, integer
# temperatures, clocks and MiB as NVML gives them, the energy and
# PCIe-replay counters) with dcgm-exporter's labels, one sample a second
# for the MINUTES that end now, scrape times with a few ms of jitter,
# pre-encoded into remote-write bodies (snappy) of ~1500 samples: all
# series of a group of nodes at one or a few timestamps. Each connection
# owns whole groups, so every series arrives in time order.
#
# Each receiver in turn, alone on the machine, on 127.0.0.1:
#   ingest    bench/rwload POSTs every body over CONNECTIONS keep-alive
#             connections; the receiver's CPU time (utime + stime from
#             /proc/PID/stat) from before the first request to 5 s after
#             the last answer (so deferred flushes count): samples per CPU
#             second = samples per second per core. gpulse syncs its WAL
#             before every answer; the other two do not.
#   queries   a 1-hour range (the last hour of the data) at 15 s step,
#             median of 20 after 2 warm-ups (curl's time_total): one GPU's
#             DCGM_FI_DEV_GPU_UTIL, and avg by Hostname over every GPU's.
#             PromQL for VictoriaMetrics (result cache off:
#             -search.disableCache) and Prometheus (the data in its head);
#             gpulse's match=...&agg=avg&by=Hostname, on the data as
#             ingested (head) and again compacted (blocks, below).
#   disk      VictoriaMetrics: /internal/force_flush, /internal/force_merge,
#             wait until no merge runs, size of its data path.
#             Prometheus: `promtool tsdb create-blocks-from openmetrics` over
#             the same data as OpenMetrics text, size of the blocks; also a
#             TSDB snapshot of its remote-written head (admin API) as a
#             cross-check. gpulse: a server compacts a 2-hour window only
#             once it is an hour past, so data that ends now stays in the
#             head; `bench/storetool load` appends the same bodies through
#             the store API with their times moved into the last complete
#             window and forces compaction; size of that data directory
#             (blocks, rollups, meta.db, ...), each part printed, and
#             `storetool sizes` (bytes per sample per family and part).
# Prints the numbers, the ratios and the goals. Not part of the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-64}
MINUTES=${2:-120}
if [ "${QUICK:-0}" = 1 ]; then NODES=8 MINUTES=10; fi
CONNECTIONS=${CONNECTIONS:-8}
FAMILIES=${FAMILIES:-20}
RUNS=20
scripts/deps.sh test
make -s -j2 build/rel/gpulse bench-tools
source bench/lib.sh # TMP, PIDS and the cleanup trap

# ---- data ----
END=$(date +%s)
QEND=$END QSTART=$((END - 3600))
GROUP=$(( (NODES + 7) / 8 ))               # nodes per request: 8 shards
TS=$(( (1536 + GROUP * 8 * FAMILIES - 1) / (GROUP * 8 * FAMILIES) ))  # timestamps per request: ~1500 samples
build/rel/fleetgen -F "$FAMILIES" -n "$NODES" -m "$MINUTES" -e "${END}000" -G "$GROUP" -T "$TS" -o "$TMP/fleet.rw" 2>"$TMP/gen.log"
cat "$TMP/gen.log"
SERIES=$((NODES * 8 * FAMILIES)) GPUS=$((NODES * 8))
# gpulse's compacted copy: the same samples in the last complete 2-hour window
CEND=$(( END / 7200 * 7200 ))
SHIFT_MS=$(( (END - CEND) * 1000 ))

promql_latency() { # PREFIX BASEURL
    latency "${1}_ONE" "$2" /api/v1/query_range 1 --data-urlencode 'query=DCGM_FI_DEV_GPU_UTIL{Hostname="node-000",gpu="0"}' \
        -d start=$QSTART -d end=$QEND -d step=15
    latency "${1}_AVG" "$2" /api/v1/query_range "$NODES" --data-urlencode 'query=avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)' \
        -d start=$QSTART -d end=$QEND -d step=15
}
gpulse_latency() { # PREFIX BASEURL
    latency "${1}_ONE" "$2" /api/v1/query_range 1 --data-urlencode 'match=DCGM_FI_DEV_GPU_UTIL{Hostname="node-000",gpu="0"}' \
        -d start=$QSTART -d end=$QEND -d step=15
    latency "${1}_AVG" "$2" /api/v1/query_range "$NODES" --data-urlencode 'match=DCGM_FI_DEV_GPU_UTIL' \
        -d agg=avg -d by=Hostname -d start=$QSTART -d end=$QEND -d step=15
}

# ---- VictoriaMetrics ----
start_vm
ingest VM "http://127.0.0.1:$VP/api/v1/write" $VPID
curl -sf "http://127.0.0.1:$VP/internal/force_flush" >/dev/null
curl -sf "http://127.0.0.1:$VP/internal/force_merge" >/dev/null
vm_busy() { curl -sf "http://127.0.0.1:$VP/metrics" | awk '/^vm_active_merges|^vm_pending_rows/ {s += $2} END {print s + 0}'; }
sleep 2
for _ in $(seq 300); do [ "$(vm_busy)" = 0 ] && break; sleep 1; done
sleep 1
BYTES_VM=$(du -sb "$TMP/vm" | cut -f1)
BYTES_VM_DATA=$(du -sb "$TMP/vm/data" | cut -f1) BYTES_VM_INDEX=$(du -sb "$TMP/vm/indexdb" | cut -f1)
promql_latency LAT_VM "http://127.0.0.1:$VP"
kill $VPID; wait $VPID 2>/dev/null || true

# ---- Prometheus ----
start_prom
ingest PROM "http://127.0.0.1:$PP/api/v1/write" $PPID_
promql_latency LAT_PROM "http://127.0.0.1:$PP"
snap=$(curl -sf -XPOST "http://127.0.0.1:$PP/api/v1/admin/tsdb/snapshot" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["name"])')
BYTES_PROM_SNAP=$(du -sb "$TMP/prom/snapshots/$snap" | cut -f1)
kill $PPID_; wait $PPID_ 2>/dev/null || true
rm -rf "$TMP/prom"
build/rel/fleetgen -F "$FAMILIES" -n "$NODES" -m "$MINUTES" -e "${END}000" -f om -o "$TMP/fleet.om" 2>>"$TMP/gen.log"
promtool tsdb create-blocks-from openmetrics "$TMP/fleet.om" "$TMP/promblocks" >"$TMP/promtool.log" 2>&1 ||
    { cat "$TMP/promtool.log"; exit 1; }
rm -f "$TMP/fleet.om"
BYTES_PROM=$(du -sb "$TMP/promblocks" | cut -f1)
echo "  promtool: $(grep -c '^[0-9A-Z]\{26\}' "$TMP/promtool.log") block(s) from the OpenMetrics text"

# ---- gpulse ----
start_gpulse "$TMP/gpulse"
echo "gpulse $(build/rel/gpulse version 2>&1 | head -1)"
ingest GP "http://127.0.0.1:$GP/api/v1/write" $GPID
gpulse_latency LAT_GPH "http://127.0.0.1:$GP"
kill $GPID; wait $GPID 2>/dev/null || true
rm -rf "$TMP/gpulse"
echo "  gpulse compacted copy (storetool load): $(build/rel/storetool load "$TMP/gpc" "$TMP/fleet.rw" $SHIFT_MS 2>>"$TMP/gpulse.log")"
BYTES_GP=$(du -sb "$TMP/gpc" | cut -f1)
BYTES_GP_BLOCKS=$(du -sb "$TMP/gpc/blocks" | cut -f1)
BYTES_GP_ROLLUPS=$(du -sb "$TMP/gpc/rollups" | cut -f1)
echo "  gpulse data dir after compaction (bytes): $(cd "$TMP/gpc" && du -sb -- * | awk '{printf "%s %s, ", $2, $1}')"
echo "  where gpulse's bytes go (storetool sizes, bytes per sample):"
build/rel/storetool sizes "$TMP/gpc" | sed 's/^/    /'
start_gpulse "$TMP/gpc"
QEND=$CEND QSTART=$((CEND - 3600))
gpulse_latency LAT_GPC "http://127.0.0.1:$GP"
kill $GPID; wait $GPID 2>/dev/null || true

SAMPLES=$(( SERIES * MINUTES * 60 ))
echo
echo "$NODES nodes x 8 GPUs x $FAMILIES families = $SERIES series, $MINUTES min at 1 s = $SAMPLES samples; $CONNECTIONS connections"
python3 - <<PY
vm, prom, gp = $ING_VM, $ING_PROM, $ING_GP
n = $SAMPLES
bvm, bprom, bsnap, bgp, bgpb, bgpr = $BYTES_VM / n, $BYTES_PROM / n, $BYTES_PROM_SNAP / n, $BYTES_GP / n, $BYTES_GP_BLOCKS / n, $BYTES_GP_ROLLUPS / n
def row(what, a, b, c, unit, ratio, goal):
    print(f"{what:<34}{a:>14}{b:>14}{c:>14}  {unit:<10}{ratio:<30}{goal}")
row("", "VictoriaM.", "Prometheus", "gpulse", "", "ratio", "goal")
row("ingest per core", f"{vm:,.0f}", f"{prom:,.0f}", f"{gp:,.0f}", "samples/s", f"gpulse/VM {gp/vm:.2f}", "gpulse/VM >= 1")
row("bytes per sample on disk", f"{bvm:.3f}", f"{bprom:.3f}", f"{bgp:.3f}", "B", f"gpulse/VM {bgp/bvm:.2f}, /Prom. {bgp/bprom:.2f}", "gpulse/VM <= 0.85")
print(f"  (VictoriaMetrics: data {$BYTES_VM_DATA / n:.3f} B + index {$BYTES_VM_INDEX / n:.3f} B. Prometheus: promtool blocks from the same data; "
      f"its head snapshot: {bsnap:.3f} B. gpulse: whole data dir, blocks {bgpb:.3f} B + rollups {bgpr:.3f} B + "
      f"the rest (meta.db, series.log, head.snap) {bgp - bgpb - bgpr:.3f} B)")
one = [$LAT_VM_ONE, $LAT_PROM_ONE, $LAT_GPH_ONE, $LAT_GPC_ONE]
avg = [$LAT_VM_AVG, $LAT_PROM_AVG, $LAT_GPH_AVG, $LAT_GPC_AVG]
for what, l in (("1h range, one series", one), ("1h range, avg by Hostname ($GPUS)", avg)):
    row(what, f"{l[0]:.2f}", f"{l[1]:.2f}", f"{l[3]:.2f}", "ms", f"Prometheus/gpulse {l[1]/l[3]:.1f}", "Prometheus/gpulse >= 2")
    print(f"  (gpulse on the data as ingested, head: {l[2]:.2f} ms, Prometheus/gpulse {l[1]/l[2]:.1f})")
PY
