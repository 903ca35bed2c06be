# bench/lib.sh - what the benchmarks that put gpulse server beside
# Debian's VictoriaMetrics and Prometheus share (bench/store.sh,
# bench/promql.sh): free ports, starting each receiver on 127.0.0.1,
# sending bench/fleetgen's bodies with bench/rwload and counting the
# receiver's CPU, and timing queries. Sourced, not run.
#
# Sourcing makes TMP (a scratch directory) and a trap that, on exit,
# stops every process in PIDS (every start_* appends its own) and
# removes TMP. The caller sets CONNECTIONS (rwload's senders) and RUNS
# (timed queries per figure).

PIDS=()
TMP=$(mktemp -d /tmp/gpulse-bench-XXXXXX)
cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime, in clock ticks
hz=$(getconf CLK_TCK)
wait_http() { # URL SECONDS
    local end=$((SECONDS + $2))
    until curl -sf -o /dev/null "$1"; do
        [ $SECONDS -ge $end ] && { echo "bench: $1 did not answer" >&2; return 1; }
        sleep 0.2
    done
}
kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; } # LINE KEY
median_ms() { sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2) * 1000}'; }

# ingest NAME URL PID [BODIES]: sends BODIES (default $TMP/fleet.rw); sets
# ING_<NAME> (samples per CPU second) and WALL_<NAME>.
ingest() {
    local name=$1 url=$2 pid=$3 bodies=${4:-$TMP/fleet.rw} c0 c1 out
    c0=$(cpu_ticks "$pid")
    out=$(build/rel/rwload -c "$CONNECTIONS" -p "$pid" "$url" "$bodies") ||
        { echo "$out"; echo "bench: $name did not take every request" >&2; exit 1; }
    sleep 5
    c1=$(cpu_ticks "$pid")
    local samples wall
    samples=$(kv "$out" samples) wall=$(kv "$out" wall_s)
    printf -v "ING_$name" '%s' "$(python3 -c "print($samples / (($c1 - $c0) / $hz))")"
    printf -v "WALL_$name" '%s' "$wall"
    echo "  $name ingest: $out, CPU incl. 5 s after: $(python3 -c "print(($c1 - $c0) / $hz)") s"
}

# latency VAR BASEURL PATH EXPECT_SERIES CURLARGS...: the median of RUNS
# range queries after 2 warm-ups (curl's time_total), in ms, into VAR;
# exits unless every answer is 200 with EXPECT_SERIES series of points.
latency() {
    local var=$1 base=$2 path=$3 want=$4; shift 4
    local times=() i r code t
    for i in $(seq $((RUNS + 2))); do
        r=$(curl -s -G -o "$TMP/q.json" -w '%{http_code} %{time_total}' "$base$path" "$@")
        code=${r% *} t=${r#* }
        [ "$code" = 200 ] || { head -c 300 "$TMP/q.json"; echo; echo "bench: $base$path answered $code" >&2; exit 1; }
        [ "$i" -gt 2 ] && times+=("$t")
    done
    python3 - "$TMP/q.json" "$want" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
res = d["data"]["result"]
if d["status"] != "success" or len(res) != int(sys.argv[2]) or not all(r["values"] for r in res):
    sys.exit(f"bench: expected {sys.argv[2]} series with points, got {len(res)}")
PY
    printf -v "$var" '%s' "$(printf '%s\n' "${times[@]}" | median_ms)"
    cp "$TMP/q.json" "$TMP/$var.json" # the last answer, for comparisons
}

# start_vm: VictoriaMetrics with its result cache off; sets VP, VPID.
start_vm() {
    VP=$(port)
    victoria-metrics -httpListenAddr "127.0.0.1:$VP" -storageDataPath "$TMP/vm" -search.disableCache \
        -loggerLevel ERROR >"$TMP/vm.log" 2>&1 &
    VPID=$!; PIDS+=($VPID)
    wait_http "http://127.0.0.1:$VP/health" 30
    echo "VictoriaMetrics $(dpkg-query -W -f="\${Version}" victoria-metrics)"
}

# start_prom: Prometheus as a remote-write receiver; sets PP, PPID_.
start_prom() {
    PP=$(port)
    printf 'global: {scrape_interval: 15s}\nscrape_configs: []\n' >"$TMP/prom.yml"
    prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/prom" --web.listen-address="127.0.0.1:$PP" \
        --web.enable-remote-write-receiver --web.enable-admin-api --log.level=warn >"$TMP/prom.log" 2>&1 &
    PPID_=$!; PIDS+=($PPID_)
    wait_http "http://127.0.0.1:$PP/-/ready" 60
    echo "$(prometheus --version 2>&1 | head -1)"
}

# start_gpulse DIR [BINARY]: build/rel/gpulse (or BINARY) server on DIR;
# sets GP, GPID.
start_gpulse() {
    GP=$(port)
    "${2:-build/rel/gpulse}" server --data "$1" --listen "127.0.0.1:$GP" --log-level warn >>"$TMP/gpulse.log" 2>&1 &
    GPID=$!; PIDS+=($GPID)
    wait_http "http://127.0.0.1:$GP/api/v1/health" 120
}

stop() { kill "$1"; wait "$1" 2>/dev/null || true; } # PID
