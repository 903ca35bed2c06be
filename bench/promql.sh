#!/usr/bin/env bash
# bench/promql.sh - gpulse server's PromQL engine beside Debian's
# VictoriaMetrics and Prometheus 2.42, on the same generated GPU-fleet
# data, measured in one run (issue 16, "Speed on the embedded store").
#
#   bench/promql.sh [NODES] [MINUTES]   (default 64 nodes = 512 GPUs, 120 min)
#   QUICK=1 bench/promql.sh             (8 nodes = 64 GPUs, 70 min: a smoke test)
#   CONNECTIONS=8 RUNS=20 ROUNDS=20     (senders; timed runs per query; rule rounds)
#
# Data: bench/fleetgen -F 20, NODES x 8 H100 x 20 dcgm-exporter families
# (the 12 gauges of bench/store.sh and 8 more of dcgm-exporter's default
# list, the DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter among them) with
# dcgm-exporter's labels, one sample a second for the MINUTES that end
# now; sent by bench/rwload to each receiver in turn, alone on the machine
# (bench/lib.sh, shared with bench/store.sh).
#
# Figures, each against each receiver while it runs alone:
#   - 1-hour range queries (the data's last hour) at 15 s step, median of
#     RUNS after 2 warm-ups (curl's time_total):
#       avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)                      all GPUs
#       DCGM_FI_DEV_GPU_UTIL{Hostname="node-000",gpu="0"}              one series
#       sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))
#   - one evaluation round of deploy/prometheus/gpulse-rules.yml's rule
#     expressions, each as an instant query at the data's end: the
#     receiver's CPU time (utime + stime from /proc/PID/stat) over ROUNDS
#     rounds, divided by ROUNDS; rule expressions a receiver refuses are
#     counted and named. Most of the 39 read gpulse_* families that this
#     fleet lacks, so they select nothing; the DCGM ones (memory ratio,
#     temperature, 15-minute averages of SM, tensor and DRAM activity) do
#     the work.
# gpulse is measured on the data as ingested (head) and again compacted
# into blocks (bench/storetool load, as bench/store.sh does), and its
# answers are compared with Prometheus's (values within 1e-9 relative):
# a fast wrong answer is not a result. VictoriaMetrics runs with its
# result cache off (-search.disableCache); its rate() extrapolates
# differently, so only its speed is compared. A gpulse built without the
# PromQL routes (they answer /api/v1/query?query=1+1 with anything but
# the scalar 2) is reported as n/a and the peers are still measured.
#
# Prints the numbers, the ratios and the issue's goals. Not part of the
# tests; about 4 GB of temporary disk at the default size.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${1:-64}
MINUTES=${2:-120}
if [ "${QUICK:-0}" = 1 ]; then NODES=8 MINUTES=70; fi
[ "$MINUTES" -ge 66 ] || { echo "bench: MINUTES must be at least 66 (a 1-hour range of rate(...[5m]))" >&2; exit 2; }
# gpulse refuses samples of a 2-hour window it has compacted (half a
# window after its end: src/store/compact.c), and the peers load first, so
# the data must start after the oldest window still open when gpulse
# loads (a few minutes later): fewer minutes, or wait, rather than a
# gpulse that silently holds less data than its peers.
NOW=$(date +%s) W=7200
FLOOR=$(( NOW / W * W ))  # the current window; the one before stays open until FLOOR + W/2
[ $(( NOW - FLOOR )) -lt $(( W / 2 - 600 )) ] && FLOOR=$(( FLOOR - W ))
AVAIL=$(( (NOW - FLOOR) / 60 - 10 ))
if [ "$MINUTES" -gt "$AVAIL" ]; then
    [ "$AVAIL" -ge 66 ] || { echo "bench: only $AVAIL minutes of data fit gpulse's open windows now; run again after $(date -u -d @$(( FLOOR + 76 * 60 )) +%H:%M) UTC" >&2; exit 2; }
    echo "bench: $MINUTES minutes would reach into a window gpulse has compacted; using $AVAIL" >&2
    MINUTES=$AVAIL
fi
CONNECTIONS=${CONNECTIONS:-8}
RUNS=${RUNS:-20}
ROUNDS=${ROUNDS:-20}
FAMILIES=20
scripts/deps.sh test
make -s -j2 build/rel/gpulse bench-tools
source bench/lib.sh # TMP, PIDS and the cleanup trap

# ---- data ----
END=$(date +%s)
QEND=$END QSTART=$((END - 3600))
GROUP=$(( (NODES + 7) / 8 ))                                   # nodes per request: 8 shards
TS=$(( (1536 + GROUP * 8 * FAMILIES - 1) / (GROUP * 8 * FAMILIES) )) # ticks per request: ~1500 samples
build/rel/fleetgen -F "$FAMILIES" -n "$NODES" -m "$MINUTES" -e "${END}000" -G "$GROUP" -T "$TS" \
    -o "$TMP/fleet.rw" 2>"$TMP/gen.log"
cat "$TMP/gen.log"
SERIES=$((NODES * 8 * FAMILIES)) GPUS=$((NODES * 8))
# gpulse's compacted copy: the same samples in the last complete 2-hour window
CEND=$(( END / 7200 * 7200 ))
SHIFT_MS=$(( (END - CEND) * 1000 ))

# The rule expressions, one file each (curl sends them with query@FILE).
mkdir -p "$TMP/rules"
NRULES=$(python3 - "$TMP/rules" <<'PY'
import sys, yaml
doc = yaml.safe_load(open("deploy/prometheus/gpulse-rules.yml"))
n = 0
for g in doc["groups"]:
    for r in g["rules"]:
        n += 1
        with open(f"{sys.argv[1]}/{n:02d}.promql", "w") as f:
            f.write(r["expr"].strip() + "\n")
print(n)
PY
)
echo "  $NRULES rule expressions from deploy/prometheus/gpulse-rules.yml"

Q_AVG='avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)'
Q_ONE='DCGM_FI_DEV_GPU_UTIL{Hostname="node-000",gpu="0"}'
Q_RATE='sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))'
queries() { # PREFIX BASEURL: LAT_<PREFIX>_{AVG,ONE,RATE} in ms, answers in $TMP/LAT_<PREFIX>_*.json
    local r=(-d start=$QSTART -d end=$QEND -d step=15)
    latency "LAT_${1}_AVG" "$2" /api/v1/query_range "$NODES" --data-urlencode "query=$Q_AVG" "${r[@]}"
    latency "LAT_${1}_ONE" "$2" /api/v1/query_range 1 --data-urlencode "query=$Q_ONE" "${r[@]}"
    latency "LAT_${1}_RATE" "$2" /api/v1/query_range "$NODES" --data-urlencode "query=$Q_RATE" "${r[@]}"
}

# rules PREFIX BASEURL PID: RULES_<PREFIX> = CPU ms per round, RWALL_<PREFIX>
# = wall ms per round, RERR_<PREFIX> = the rule numbers refused; the
# answers of the first round stay in $TMP/<PREFIX>-NN.json.
rules() {
    local pfx=$1 base=$2 pid=$3 f n code errs="" c0 c1 t0 t1
    for f in "$TMP"/rules/*.promql; do
        n=$(basename "$f" .promql)
        code=$(curl -s -G -o "$TMP/$pfx-$n.json" -w '%{http_code}' "$base/api/v1/query" \
            --data-urlencode "query@$f" -d time=$QEND)
        [ "$code" = 200 ] && grep -q '"status": *"success"' "$TMP/$pfx-$n.json" || errs="$errs $n"
    done
    c0=$(cpu_ticks "$pid") t0=$(date +%s.%N)
    for _ in $(seq "$ROUNDS"); do
        for f in "$TMP"/rules/*.promql; do
            curl -s -G -o /dev/null "$base/api/v1/query" --data-urlencode "query@$f" -d time=$QEND
        done
    done
    c1=$(cpu_ticks "$pid") t1=$(date +%s.%N)
    printf -v "RULES_$pfx" '%s' "$(python3 -c "print(($c1 - $c0) / $hz * 1000 / $ROUNDS)")"
    printf -v "RWALL_$pfx" '%s' "$(python3 -c "print(($t1 - $t0) * 1000 / $ROUNDS)")"
    printf -v "RERR_$pfx" '%s' "${errs# }"
    [ -z "$errs" ] || echo "  $pfx refused rule expression(s)$errs: $(for n in $errs; do head -c 200 "$TMP/$pfx-$n.json"; echo; done)"
}

# VictoriaMetrics serves no point newer than now - 30 s (its
# -search.latencyOffset): wait until the data's end is older than that.
settle() { while [ "$(date +%s)" -lt $((END + 31)) ]; do sleep 1; done; }

# ---- VictoriaMetrics ----
start_vm
ingest VM "http://127.0.0.1:$VP/api/v1/write" $VPID
curl -sf "http://127.0.0.1:$VP/internal/force_flush" >/dev/null
settle
queries VM "http://127.0.0.1:$VP"
rules VM "http://127.0.0.1:$VP" $VPID
stop $VPID
rm -rf "$TMP/vm"

# ---- Prometheus ----
start_prom
ingest PROM "http://127.0.0.1:$PP/api/v1/write" $PPID_
queries PROM "http://127.0.0.1:$PP"
rules PROM "http://127.0.0.1:$PP" $PPID_
stop $PPID_
rm -rf "$TMP/prom"

# ---- gpulse ----
has_promql() { # BASEURL
    curl -s -G "$1/api/v1/query" --data-urlencode 'query=1+1' | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
    ok = d.get("status") == "success" and d["data"]["resultType"] == "scalar" and d["data"]["result"][1] == "2"
except Exception:
    ok = False
sys.exit(0 if ok else 1)'
}
GP_PROMQL=1
start_gpulse "$TMP/gpulse"
echo "gpulse $(build/rel/gpulse version 2>&1 | head -1)"
if has_promql "http://127.0.0.1:$GP"; then
    ingest GP "http://127.0.0.1:$GP/api/v1/write" $GPID
    queries GPH "http://127.0.0.1:$GP"
    rules GPH "http://127.0.0.1:$GP" $GPID
else
    GP_PROMQL=0
    echo "  gpulse: this build does not answer PromQL on /api/v1/query (query=1+1): not measured"
fi
stop $GPID
rm -rf "$TMP/gpulse"
if [ $GP_PROMQL = 1 ]; then
    echo "  gpulse compacted copy (storetool load): $(build/rel/storetool load "$TMP/gpc" "$TMP/fleet.rw" $SHIFT_MS 2>>"$TMP/gpulse.log")"
    start_gpulse "$TMP/gpc"
    QEND=$CEND QSTART=$((CEND - 3600))
    queries GPC "http://127.0.0.1:$GP"
    rules GPC "http://127.0.0.1:$GP" $GPID
    stop $GPID
fi

# ---- report ----
SAMPLES=$(( SERIES * MINUTES * 60 ))
echo
echo "$NODES nodes x 8 GPUs x $FAMILIES families = $SERIES series, $MINUTES min at 1 s = $SAMPLES samples;" \
     "median of $RUNS; rules: $NRULES expressions x $ROUNDS rounds"
export TMP NODES GPUS NRULES GP_PROMQL
export LAT_VM_AVG LAT_VM_ONE LAT_VM_RATE LAT_PROM_AVG LAT_PROM_ONE LAT_PROM_RATE RULES_VM RULES_PROM \
       RWALL_VM RWALL_PROM RERR_VM RERR_PROM
export LAT_GPH_AVG=${LAT_GPH_AVG:-nan} LAT_GPH_ONE=${LAT_GPH_ONE:-nan} LAT_GPH_RATE=${LAT_GPH_RATE:-nan} \
       LAT_GPC_AVG=${LAT_GPC_AVG:-nan} LAT_GPC_ONE=${LAT_GPC_ONE:-nan} LAT_GPC_RATE=${LAT_GPC_RATE:-nan} \
       RULES_GPH=${RULES_GPH:-nan} RULES_GPC=${RULES_GPC:-nan} RWALL_GPH=${RWALL_GPH:-nan} \
       RWALL_GPC=${RWALL_GPC:-nan} RERR_GPH=${RERR_GPH:-} RERR_GPC=${RERR_GPC:-}
python3 - <<'PY'
import json, math, os
e = os.environ
f = lambda k: float(e[k])
gp = e["GP_PROMQL"] == "1"
def row(what, a, b, c, d, unit, ratio, goal):
    print(f"{what:<44}{a:>11}{b:>11}{c:>13}{d:>15}  {unit:<4}{ratio:<34}{goal}")
def ms(x):
    return "n/a" if math.isnan(x) else f"{x:.2f}"
row("", "VictoriaM.", "Prometheus", "gpulse head", "gpulse blocks", "", "ratio (blocks; head)", "goal")
gpus, n = e["GPUS"], int(e["NRULES"])
for key, what, goal, lim in (
        ("AVG", f"1h/15s avg by (Hostname), {gpus} GPUs", "gpulse/VM <= 0.5", 0.5),
        ("ONE", "1h/15s one series", "gpulse/VM <= 1", 1.0),
        ("RATE", f"1h/15s sum by (Hostname) (rate[5m]), {gpus}", "gpulse/VM < 1", 1.0)):
    vm, prom, gph, gpc = (f(f"LAT_{p}_{key}") for p in ("VM", "PROM", "GPH", "GPC"))
    ratio = f"gpulse/VM {gpc / vm:.2f}; {gph / vm:.2f}" if gp else "n/a"
    row(what, ms(vm), ms(prom), ms(gph), ms(gpc), "ms", ratio, goal)
vm, prom, gph, gpc = (f(f"RULES_{p}") for p in ("VM", "PROM", "GPH", "GPC"))
row(f"rules round, {n} instant queries, CPU", ms(vm), ms(prom), ms(gph), ms(gpc), "ms",
    f"gpulse/VM {gpc / vm:.2f}; {gph / vm:.2f}" if gp and vm > 0 else "n/a", "gpulse < 50 ms")
walls = [f(f"RWALL_{p}") for p in ("VM", "PROM", "GPH", "GPC")]
print(f"  (rules round wall time with curl: " + " / ".join(ms(w) for w in walls) + " ms;"
      f" expressions refused: VictoriaMetrics [{e['RERR_VM']}], Prometheus [{e['RERR_PROM']}],"
      f" gpulse [{e['RERR_GPH']}] [{e['RERR_GPC']}])")

# gpulse's answers against Prometheus's, the head copy (same timestamps).
if gp:
    def load(p):
        d = json.load(open(p))
        if d.get("status") != "success":
            return None
        d = d["data"]
        key = lambda m: tuple(sorted(m.items()))
        if d["resultType"] == "matrix":
            return {key(r["metric"]): r["values"] for r in d["result"]}
        if d["resultType"] == "vector":
            return {key(r["metric"]): [r["value"]] for r in d["result"]}
        return {(): [d["result"]]}
    def same(a, b):
        if a is None or b is None:
            return "an error answer"
        if a.keys() != b.keys():
            return f"series differ ({len(a)} vs {len(b)})"
        worst = 0.0
        for k in a:
            if [t for t, _ in a[k]] != [t for t, _ in b[k]]:
                return "timestamps differ"
            for (_, x), (_, y) in zip(a[k], b[k]):
                x, y = float(x), float(y)
                if math.isnan(x) and math.isnan(y) or x == y:
                    continue
                worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
        return "equal" if worst <= 1e-9 else f"differ, max relative {worst:.3g}"
    tmp = e["TMP"]
    for key in ("AVG", "ONE", "RATE"):
        print(f"  gpulse vs Prometheus, {key.lower()}: " +
              same(load(f"{tmp}/LAT_GPH_{key}.json"), load(f"{tmp}/LAT_PROM_{key}.json")))
    bad = [p for p in sorted(os.listdir(tmp)) if p.startswith("GPH-") and
           os.path.exists(f"{tmp}/PROM-{p[4:]}") and
           same(load(f"{tmp}/{p}"), load(f"{tmp}/PROM-{p[4:]}")) != "equal"]
    print(f"  gpulse vs Prometheus, rule expressions: {n - len(bad)} of {n} equal" +
          (f" (differ: {', '.join(p[4:6] for p in bad)})" if bad else ""))
PY
