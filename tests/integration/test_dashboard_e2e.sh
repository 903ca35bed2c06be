#!/usr/bin/env bash
# gp-timeout: 480
# The dashboard's page in a real browser (docs/dashboard.md, "The page"):
# Debian's chromium, headless, driven by playwright-core (npm, pinned in
# tests/e2e/package-lock.json, installed here into tests/e2e/node_modules)
# through tests/e2e/dashboard.mjs.
#
# 1. `gpulse up --simulate 2x8xH100` behind read and write tokens, with
#    planted faults (throttled on sim-node-0/2: gpu_throttled; ECC on
#    sim-node-1/5; a straggler on sim-node-1/6; a leak on sim-node-0/5)
#    and a custom rule (warm_gpu on sim-node-1/3): the page asks for the
#    read token once (and for the write token at the first ack), every
#    view loads with no console error (the CSP's violations are console
#    errors), shows the 16 GPUs and the alerts, updates live, highlights
#    the straggler's rank, a drag on a chart narrows query_range's
#    window, acknowledging and silencing reach the server, the leak's
#    time-to-OOM projection and the ECC error's marker are drawn, and
#    after a server restart the page reconnects by itself.
# 2. The page's weight: index.html and every file it links, gzip'ed, under
#    300 KB.
# 3. `gpulse up` with no GPU (no NVML library, no amdgpu card): the
#    fleet's empty state says so, shows the host's CPU, memory and
#    pressure (this machine's CPU count and memory total), live, and
#    suggests `gpulse up --simulate 2x8xH100`.
# 4. `gpulse up --simulate 64x8xH100` (512 GPUs, 1 s interval): the fleet
#    page keeps the browser's main thread under 20 % busy, and every API
#    call the pages made answers under 50 ms (best of 10).
# Screenshots: build/test-artifacts/dashboard/*.png (GP_ARTIFACTS to move).
source "$(dirname "$0")/lib.sh"
e2e_setup
ART=${GP_ARTIFACTS:-$ROOT/build/test-artifacts/dashboard}
rm -rf "$ART" && mkdir -p "$ART"
note "artifacts (screenshots) in $ART"

# 1. The views, behind tokens, with planted alerts.
TOKEN=e2e-read-$RANDOM$RANDOM
WTOKEN=e2e-write-$RANDOM$RANDOM
printf 'rules:\n  - name: warm_gpu\n    expr: DCGM_FI_DEV_GPU_TEMP{Hostname="sim-node-1",gpu="3"}\n'\
'    agg: last\n    window: 10s\n    op: ">"\n    threshold: 0\n    for: 1s\n    severity: warning\n' \
    >"$TMP/gpulse.yaml"
UP_ARGS=(--simulate 2x8xH100
         --simulate-faults throttled=sim-node-0/2,ecc=sim-node-1/5,straggler=sim-node-1/6,leak=sim-node-0/5
         --read-token "$TOKEN" --write-token "$WTOKEN" --config "$TMP/gpulse.yaml"
         --detector-overrides gpu_throttled.for=3s --interval 500ms --eval-interval 1s --eval-step 1s
         --eval-window 10s --jobs-scan-interval 1s)
SERVER_CMD=up start_server "${UP_ARGS[@]}"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/fleet/gpus")" = 401 ] ||
    fail "the API answers without the token"
# The page's reconnection: dashboard.mjs runs this to restart the server on
# the same port and data (the new pid in $TMP/restarted.pid, stopped below).
{
    echo 'set -e'
    printf 'kill -TERM %s; while kill -0 %s 2>/dev/null; do sleep 0.1; done\n' "$SERVER_PID" "$SERVER_PID"
    printf '%q ' "$GPULSE" up --listen "127.0.0.1:$SERVER_PORT" --data "$SERVER_DATA" "${UP_ARGS[@]}"
    printf '>>%q 2>&1 &\n' "$SERVER_LOG"
    printf 'echo $! >%q\n' "$TMP/restarted.pid"
    printf 'for i in $(seq 300); do curl -sf %q >/dev/null && exit 0; sleep 0.1; done; exit 1\n' "$SERVER_URL/api/v1/health"
} >"$TMP/restart.sh"
rc=0
GP_RESTART="bash $TMP/restart.sh" GP_TOKEN=$TOKEN GP_WRITE_TOKEN=$WTOKEN GP_BADGES=sim-node-0/2,sim-node-1/3 GP_ALERTS=gpu_throttled,warm_gpu \
    GP_GPU=sim-node-0/2 GP_STRAGGLER=sim-node-1/6 GP_LEAK=sim-node-0/5 GP_ECC=sim-node-1/5 GP_GPU_ALERT=gpu_throttled \
    node "$E2E/dashboard.mjs" functional "$SERVER_URL" "$ART" || rc=$?
if [ -s "$TMP/restarted.pid" ]; then SERVER_PID=$(cat "$TMP/restarted.pid"); PIDS+=("$SERVER_PID"); fi
[ $rc -eq 0 ] || { tail -20 "$SERVER_LOG" >&2; fail "the dashboard's functional checks failed (above)"; }

# 2. The page's weight over the wire (gzip, as a browser asks).
total=0
for u in / $(grep -o '/assets/[A-Za-z0-9._-]*' "$ROOT/web/index.html" | sort -u); do
    n=$(curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w '%{size_download}' "$SERVER_URL$u") || fail "GET $u failed"
    total=$((total + n))
done
note "PAGE $total bytes gzip'ed (index.html and every file it links; limit 300 KB)"
[ "$total" -lt 307200 ] || fail "the page weighs $total bytes gzip'ed, over 300 KB"
# The restarted server is not this shell's child: no exit status to wait for.
kill -TERM "$SERVER_PID"
wait_until 30 sh -c "! kill -0 $SERVER_PID" || fail "the server did not stop"

# 3. No GPU: `gpulse up` without --simulate, with NVML and amdgpu pointed
# at nothing: the fleet view says no GPU was found, shows this machine's
# CPU, memory and pressure live, and suggests --simulate.
unset SERVER_DATA
SERVER_CMD=up start_server --nvml-library "$TMP/no-gpu/libnvidia-ml.so.1" --sysfs-root "$TMP/no-gpu" --interval 1s
GP_CPUS=$(getconf _NPROCESSORS_ONLN) GP_MEM_TOTAL=$(awk '/^MemTotal:/ {printf "%.0f", $2 * 1024}' /proc/meminfo) \
    node "$E2E/dashboard.mjs" nogpu "$SERVER_URL" "$ART" ||
    { tail -20 "$SERVER_LOG" >&2; fail "the dashboard's no-GPU checks failed (above)"; }
stop_server

# 4. 512 GPUs: main-thread load and API latency. Timings are the
# product's, so the release binary serves them (make check-build builds
# it; GPULSE_LOAD names another); the sanitizers' binary is about 3x
# slower.
unset SERVER_DATA
LOAD_BIN=${GPULSE_LOAD:-$ROOT/build/rel/gpulse}
# A release binary older than web/'s files embeds an older page: make
# brings it up to date (a relink when only web/ changed).
if [ -z "${GPULSE_LOAD:-}" ] && { [ ! -x "$LOAD_BIN" ] ||
        [ -n "$(find "$ROOT/web" -maxdepth 1 -type f -newer "$LOAD_BIN" | head -1)" ]; }; then
    note "building build/rel/gpulse for the load check"
    make -s -C "$ROOT" build/rel/gpulse >"$TMP/make-rel.log" 2>&1 || { cat "$TMP/make-rel.log" >&2; fail "make build/rel/gpulse failed"; }
fi
note "load check served by $LOAD_BIN"
GPULSE=$LOAD_BIN SERVER_CMD=up start_server --simulate 64x8xH100 --interval 1s
wait_until 60 sh -c "curl -sf '$SERVER_URL/api/v1/fleet' | grep -q '\"gpus\":512'" ||
    fail "the fleet never showed 512 GPUs: $(curl -s "$SERVER_URL/api/v1/fleet" | head -c 300)"
node "$E2E/dashboard.mjs" load "$SERVER_URL" "$ART" 512 ||
    { tail -20 "$SERVER_LOG" >&2; fail "the dashboard's load checks failed (above)"; }
stop_server
