#!/usr/bin/env bash
# Debian's real Prometheus scrapes a small OpenMetrics target (TYPE, HELP
# and UNIT of every metric type) and remote-writes to the gpulse server
# with metadata_config {send: true}. gpulse's /api/v1/metadata answers
# each of those families exactly as Prometheus's own /api/v1/metadata
# does, but for a name gpulse defines itself (DCGM_FI_DEV_GPU_TEMP),
# where gpulse's definition is the answer (docs/api.md); so does a
# second server in storage: remote (its cluster another Prometheus), which
# answers from itself; after a restart of the first server, with
# Prometheus gone, the answer is the same.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || fail "prometheus is not installed (scripts/deps.sh test)"
start_server
EMB_URL=$SERVER_URL EMB_PID=$SERVER_PID EMB_LOG=$SERVER_LOG EMB_DATA=$SERVER_DATA
start_prom_receiver
unset SERVER_DATA
start_server --storage remote --remote-write-url "$PROM_URL" --remote-query-url "http://127.0.0.1:$PROM_PORT"
REM_URL=$SERVER_URL
TP=$(free_port)
cat >"$TMP/target.txt" <<'OM'
# TYPE app_requests counter
# HELP app_requests Requests served.
app_requests_total{path="/"} 5
# TYPE app_queue_bytes gauge
# UNIT app_queue_bytes bytes
# HELP app_queue_bytes Bytes waiting, "quoted" and \\ escaped, caf\u00e9 é.
app_queue_bytes 1024
# TYPE app_latency_seconds histogram
# UNIT app_latency_seconds seconds
# HELP app_latency_seconds Request latency.
app_latency_seconds_bucket{le="0.1"} 1
app_latency_seconds_bucket{le="+Inf"} 2
app_latency_seconds_sum 0.3
app_latency_seconds_count 2
# TYPE app_queue_wait_seconds gaugehistogram
# UNIT app_queue_wait_seconds seconds
# HELP app_queue_wait_seconds Time items have waited.
app_queue_wait_seconds_bucket{le="1"} 3
app_queue_wait_seconds_bucket{le="+Inf"} 4
app_queue_wait_seconds_gcount 4
app_queue_wait_seconds_gsum 2.5
# TYPE app_rpc_seconds summary
# UNIT app_rpc_seconds seconds
# HELP app_rpc_seconds RPC time.
app_rpc_seconds{quantile="0.5"} 0.1
app_rpc_seconds_sum 1
app_rpc_seconds_count 3
# TYPE app_build info
# HELP app_build Build.
app_build_info{version="1.2"} 1
# TYPE app_mode stateset
# HELP app_mode Mode.
app_mode{app_mode="a"} 1
app_mode{app_mode="b"} 0
# TYPE app_other unknown
app_other 3
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
# HELP DCGM_FI_DEV_GPU_TEMP Someone else's help.
DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40
# EOF
OM
cat >"$TMP/target.py" <<'PY'
import http.server, sys
body = open(sys.argv[2], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$TMP/target.py" "$TP" "$TMP/target.txt" &
PIDS+=($!)
PP=$(free_port)
cat >"$TMP/prom.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: om
    static_configs: [{targets: ["127.0.0.1:$TP"]}]
remote_write:
  - url: $EMB_URL/api/v1/write
    metadata_config: {send: true, send_interval: 1s}
    queue_config: {batch_send_deadline: 1s, max_backoff: 1s}
  - url: $REM_URL/api/v1/write
    metadata_config: {send: true, send_interval: 1s}
    queue_config: {batch_send_deadline: 1s, max_backoff: 1s}
YML
prometheus --config.file="$TMP/prom.yml" --storage.tsdb.path="$TMP/tsdb" \
    --web.listen-address="127.0.0.1:$PP" >"$TMP/prom.log" 2>&1 &
prom=$!
PIDS+=($prom)
PROM=http://127.0.0.1:$PP
FAMS="app_requests app_queue_bytes app_latency_seconds app_queue_wait_seconds app_rpc_seconds app_build app_mode app_other DCGM_FI_DEV_GPU_TEMP"
# compare: Prometheus's answer (a file) against gpulse's, family by family,
# for every query form; prints the differences, exit 1 on any.
cat >"$TMP/cmp.py" <<'PY'
import json, sys, urllib.parse, urllib.request
prom_file, gp, fams = sys.argv[1], sys.argv[2], sys.argv[3].split()
OWN = {"DCGM_FI_DEV_GPU_TEMP"}  # gpulse defines it: its own entry is the answer
def get(base, q):
    with urllib.request.urlopen(base + "/api/v1/metadata?" + q) as r:
        return json.load(r)
prom = json.load(open(prom_file))
bad = 0
def diff(what, want, got):
    global bad
    if want != got:
        bad = 1
        print(f"{what}:\n  prometheus {json.dumps(want)}\n  gpulse     {json.dumps(got)}")
missing = [f for f in fams if f not in prom["data"]]
if missing:
    print("prometheus has no metadata for", missing); sys.exit(2)
everything = get(gp, "")["data"]
own = get(gp, "metric=DCGM_FI_DEV_GPU_UTIL")["data"]["DCGM_FI_DEV_GPU_UTIL"][0]
for f in fams:
    one = get(gp, "metric=" + urllib.parse.quote(f))
    if f in OWN:
        got = one["data"].get(f)
        if not got or got[0]["help"] == prom["data"][f][0]["help"] or got[0]["help"] == "":
            bad = 1; print(f"{f}: want gpulse's own entry, got {got}")
        continue
    diff(f"metric={f}", {f: prom["data"][f]}, one["data"])
    diff(f"{f} in the whole answer", prom["data"][f], everything.get(f))
    diff(f"metric={f}&limit_per_metric=1", {f: prom["data"][f]},
         get(gp, "metric=" + urllib.parse.quote(f) + "&limit_per_metric=1")["data"])
diff("limit=0", {}, get(gp, "limit=0")["data"])
diff("unknown metric", {}, get(gp, "metric=no_such_family")["data"])
sys.exit(bad)
PY
have_all() {
    curl -sf "$1/api/v1/metadata" | python3 -c '
import json, sys
d = json.load(sys.stdin)["data"]
sys.exit(0 if all(f in d for f in sys.argv[1].split()) else 1)' "$FAMS"
}
wait_until 60 have_all "$PROM" || { tail -20 "$TMP/prom.log"; fail "prometheus never had the target's metadata"; }
for url in "$EMB_URL" "$REM_URL"; do
    wait_until 60 have_all "$url" ||
        { tail -20 "$TMP/prom.log"; tail -20 "$SERVER_LOG"; fail "the metadata never reached $url"; }
done
curl -sf "$PROM/api/v1/metadata" >"$TMP/prom-meta.json"
for url in "$EMB_URL" "$REM_URL"; do
    python3 "$TMP/cmp.py" "$TMP/prom-meta.json" "$url" "$FAMS" ||
        fail "$url: gpulse's metadata differs from Prometheus's (above)"
    for q in "limit=0" "metric=app_mode&limit=1" "metric=app_queue_bytes&limit_per_metric=0"; do
        [ "$(curl -sf "$PROM/api/v1/metadata?$q")" = "$(curl -sf "$url/api/v1/metadata?$q" | tr -d '\n')" ] ||
            fail "$url ?$q: gpulse's answer is not Prometheus's"
    done
    curl -sf "$url/metrics" | grep -E '^gpulse_server_http_requests_total\{handler="write",code="[^2]' &&
        fail "Prometheus's remote write to $url got errors (above)"
done
note "gpulse answers Prometheus's metadata for every family remote write carried (embedded and storage: remote)"
# Prometheus first (no more metadata arrives), then a restart of gpulse.
kill "$prom"; wait "$prom" 2>/dev/null || true
stop_server
SERVER_PID=$EMB_PID SERVER_LOG=$EMB_LOG
stop_server
SERVER_DATA=$EMB_DATA
start_server
python3 "$TMP/cmp.py" "$TMP/prom-meta.json" "$SERVER_URL" "$FAMS" || fail "after a restart, gpulse's metadata differs (above)"
note "the metadata survives a restart of the server"
stop_server
