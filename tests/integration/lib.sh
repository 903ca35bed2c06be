# lib.sh - helpers for integration tests (sourced). Everything listens on
# 127.0.0.1 only, on free ports, and is killed when the test exits.
set -euo pipefail
# With pipefail, `producer | grep -q PAT` fails when grep quits at the first
# match and the producer (curl on a long /metrics) dies of SIGPIPE: tests
# write `producer | grep PAT >/dev/null`, which reads to the end.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
GPULSE=${GPULSE:-$ROOT/build/asan/gpulse}
FAKE_FULL=$ROOT/build/fakenvml/full/libnvidia-ml.so.1
FAKE_OLD=$ROOT/build/fakenvml/old/libnvidia-ml.so.1
SCEN=$ROOT/tests/data/nvml
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
TMP=$(mktemp -d /tmp/gpulse-it-XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "  - $*"; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_until SECONDS CMD...: retries CMD every 0.1 s.
wait_until() {
    local limit=$1; shift
    local end=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -ge $end ] && return 1
        sleep 0.1
    done
}

# start_agent ARGS...: starts the agent on a free port; sets AGENT_PORT,
# AGENT_PID, AGENT_LOG; waits until /healthz answers.
start_agent() {
    AGENT_PORT=$(free_port)
    AGENT_LOG=$TMP/agent-$AGENT_PORT.log
    "$GPULSE" agent --listen "127.0.0.1:$AGENT_PORT" "$@" >"$AGENT_LOG" 2>&1 &
    AGENT_PID=$!
    PIDS+=("$AGENT_PID")
    wait_until 10 curl -sf "http://127.0.0.1:$AGENT_PORT/healthz" ||
        { cat "$AGENT_LOG" >&2; fail "agent did not come up"; }
}

# stop_agent: SIGTERM, expect a clean exit 0 (ASan leak check runs at exit).
stop_agent() {
    kill -TERM "$AGENT_PID"
    local rc=0
    wait "$AGENT_PID" || rc=$?
    [ $rc -eq 0 ] || { cat "$AGENT_LOG" >&2; fail "agent exited with $rc"; }
}

metrics() { curl -sf "http://127.0.0.1:$AGENT_PORT/metrics"; }

# check_exposition FILE: promtool's lint plus our own checks. promtool
# 2.42 objects to two things dcgm-exporter compatibility requires: the
# camelCase label `modelName`, and dcgm-exporter's counter names without
# `_total`. Those two findings, and nothing else, are allowed: the file is
# linted with modelName renamed, and only DCGM_FI_* counter-suffix lines
# may remain. Every gpulse_* family must be clean.
check_exposition() {
    local f=$1 rc=0
    sed 's/modelName=/model_name=/g' "$f" >"$f.lint"
    promtool check metrics <"$f.lint" >"$f.promtool" 2>&1 || rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 3 ] || { cat "$f.promtool"; fail "promtool could not parse $f (rc $rc)"; }
    if grep -vE '^DCGM_FI_[A-Z0-9_]+ counter metrics should have "_total" suffix$|^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type .counter.$' \
        "$f.promtool"; then
        fail "promtool check metrics found problems in $f (above)"
    fi
    python3 "$ROOT/tests/integration/check_expo.py" "$f" || fail "exposition check failed on $f"
}

# ---- remote-write receivers (the push tests) ------------------------------

# start_vm [PORT]: Debian's VictoriaMetrics on 127.0.0.1 with its data
# under $TMP/vm (kept across restarts on the same port); sets VM_PORT,
# VM_PID and VM_URL (its remote-write endpoint).
start_vm() {
    command -v victoria-metrics >/dev/null || fail "victoria-metrics is not installed (scripts/deps.sh test)"
    VM_PORT=${1:-$(free_port)}
    victoria-metrics -httpListenAddr "127.0.0.1:$VM_PORT" -storageDataPath "$TMP/vm" \
        -loggerLevel ERROR >>"$TMP/vm.log" 2>&1 &
    VM_PID=$!
    PIDS+=("$VM_PID")
    VM_URL=http://127.0.0.1:$VM_PORT/api/v1/write
    wait_until 30 curl -sf "http://127.0.0.1:$VM_PORT/health" ||
        { tail -20 "$TMP/vm.log" >&2; fail "victoria-metrics did not come up"; }
}

# stop_vm: SIGTERM (VictoriaMetrics flushes what it holds) and wait.
stop_vm() {
    kill -TERM "$VM_PID" 2>/dev/null || true
    wait "$VM_PID" 2>/dev/null || true
}

# start_vm_now [FLAGS...]: start_vm, then again with -search.latencyOffset
# 0s (and FLAGS), so that queries see fresh rows at once (the default
# hides 30 s); sets VM (its query root) too.
start_vm_now() {
    start_vm
    stop_vm
    victoria-metrics -httpListenAddr "127.0.0.1:$VM_PORT" -storageDataPath "$TMP/vm" -loggerLevel ERROR \
        -search.latencyOffset 0s "$@" >>"$TMP/vm.log" 2>&1 &
    VM_PID=$!
    PIDS+=("$VM_PID")
    VM=http://127.0.0.1:$VM_PORT
    wait_until 30 curl -sf "$VM/health" || fail "victoria-metrics did not restart"
}

# vm_ranges: how many /api/v1/query_range requests VictoriaMetrics ($VM)
# has answered.
vm_ranges() {
    curl -sf "$VM/metrics" >"$TMP/vm.prom" &&
        awk '$1 == "vm_http_requests_total{path=\"/api/v1/query_range\"}" {print $2; exit}' "$TMP/vm.prom"
}

# start_prom_receiver [NAME]: Debian's Prometheus as a remote-write
# receiver only (no scrapes); sets PROM_PORT, PROM_PID and PROM_URL. A
# NAME gives a second one its own files ($TMP/prom-NAME*).
start_prom_receiver() {
    command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh test)"
    local sfx=${1:+-$1}
    PROM_PORT=$(free_port)
    printf 'global: {scrape_interval: 1m}\nscrape_configs: []\n' >"$TMP/prom-rw$sfx.yml"
    prometheus --config.file="$TMP/prom-rw$sfx.yml" --storage.tsdb.path="$TMP/prom-tsdb$sfx" \
        --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver \
        >"$TMP/prom$sfx.log" 2>&1 &
    PROM_PID=$!
    PIDS+=("$PROM_PID")
    PROM_URL=http://127.0.0.1:$PROM_PORT/api/v1/write
    wait_until 30 curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" ||
        { tail -20 "$TMP/prom$sfx.log" >&2; fail "prometheus did not come up"; }
}

# agent_metric NAME: the value of an unlabelled series, or of the first
# series whose line starts with NAME (e.g. 'gpulse_push_queue_bytes{').
agent_metric() {
    metrics | awk -v n="$1" 'index($0, n) == 1 {print $NF; exit}'
}

# snapshot_metrics N DIR: N copies of /metrics, each of a new frame, in DIR.
snapshot_metrics() {
    local n=$1 dir=$2 last="" t i=0
    mkdir -p "$dir"
    while [ $i -lt "$n" ]; do
        metrics >"$dir/cur"
        t=$(awk '/^gpulse_agent_last_sample_timestamp_seconds / {print $2}' "$dir/cur")
        if [ -n "$t" ] && [ "$t" != "$last" ]; then
            mv "$dir/cur" "$dir/snap-$i.prom"; last=$t; i=$((i + 1))
        fi
        sleep 0.25
    done
    rm -f "$dir/cur"
}

# ---- the gpulse server ----------------------------------------------------

# start_server ARGS...: starts `gpulse server` on a free port with a fresh
# data directory (unless ARGS give --data); sets SERVER_PORT, SERVER_PID,
# SERVER_LOG, SERVER_URL, SERVER_DATA; waits until /api/v1/health answers
# 200. SERVER_SCHEME=https and SERVER_CURL (extra curl options, e.g.
# --cacert) serve the TLS test; SERVER_CMD=up starts `gpulse up` instead.
start_server() {
    SERVER_PORT=$(free_port)
    SERVER_DATA=${SERVER_DATA:-$TMP/data-$SERVER_PORT}
    SERVER_LOG=$TMP/server-$SERVER_PORT.log
    SERVER_URL=${SERVER_SCHEME:-http}://127.0.0.1:$SERVER_PORT
    "$GPULSE" "${SERVER_CMD:-server}" --listen "127.0.0.1:$SERVER_PORT" --data "$SERVER_DATA" "$@" \
        >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    # shellcheck disable=SC2086
    wait_until 30 curl -sf ${SERVER_CURL:-} "$SERVER_URL/api/v1/health" ||
        { cat "$SERVER_LOG" >&2; fail "server did not come up"; }
}

# stop_server: SIGTERM, expect a clean exit 0 (store closed, ASan leak check).
stop_server() {
    kill -TERM "$SERVER_PID"
    local rc=0
    wait "$SERVER_PID" || rc=$?
    [ $rc -eq 0 ] || { cat "$SERVER_LOG" >&2; fail "server exited with $rc"; }
}

# start_notify_receiver: the notification tests' HTTP receiver
# (notify_receiver.py) on a free port; sets RPORT, RLOG (its JSONL log of
# requests) and R (its base URL); waits until it answers.
start_notify_receiver() {
    RPORT=$(free_port)
    RLOG=$TMP/requests.jsonl
    python3 "$ROOT/tests/integration/notify_receiver.py" "$RPORT" "$RLOG" >"$TMP/receiver.out" 2>&1 &
    PIDS+=($!)
    R=http://127.0.0.1:$RPORT
    wait_until 10 curl -sf "$R/health" || fail "the receiver did not come up"
}

# rw ARGS...: the remote-write test client (tests/integration/rw.py).
rw() { python3 "$ROOT/tests/integration/rw.py" "$@"; }

# e2e_setup: what tests/e2e/dashboard.mjs needs (Debian's chromium, node,
# playwright-core installed into tests/e2e/node_modules); sets CHROMIUM
# (exported) and E2E.
e2e_setup() {
    CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
    export CHROMIUM
    [ -x "$CHROMIUM" ] || fail "chromium is not installed ($CHROMIUM; scripts/deps.sh test)"
    command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed (scripts/deps.sh build)"
    E2E=$ROOT/tests/e2e
    if [ ! -f "$E2E/node_modules/.package-lock.json" ] || [ "$E2E/package-lock.json" -nt "$E2E/node_modules/.package-lock.json" ]; then
        PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$E2E" --silent --no-audit --no-fund --prefer-offline ||
            fail "npm ci --prefix tests/e2e failed (playwright-core)"
    fi
}
