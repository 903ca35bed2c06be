#!/usr/bin/env bash
# test_promql_grafana.sh - gpulse server as Grafana's Prometheus data
# source, driven with the requests Grafana's data source sends (form
# POSTs with its headers, GETs for the label browser), against
# `gpulse up --simulate`:
#   - "Save & test": POST /api/v1/query, body query=1%2B1&time=NOW -> 2;
#   - buildinfo (Grafana reads "version" and, without "features", takes
#     the server for Prometheus), metadata, query_exemplars;
#   - panel queries: form POST /api/v1/query_range of PromQL aggregates,
#     rate() and an instant query, each with data, and step timestamps
#     start + k*step;
#   - the label browser: labels and label values narrowed by match[],
#     start and end, series by POST;
#   - errors in Prometheus's shape (bad_data 400 with the position);
#   - the same under the /prometheus prefix, where alerts answer in
#     Prometheus's shape, while /api/v1/alerts stays gpulse's.
. "$(dirname "$0")/lib.sh"

SERVER_CMD=up start_server --simulate 1x2xH100 --interval 1s
U=$SERVER_URL
has_data() { curl -sf "$U/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL" | grep '"result":\[{' >/dev/null; }
wait_until 30 has_data || { tail -20 "$SERVER_LOG"; fail "no DCGM_FI_DEV_GPU_UTIL after 30 s"; }
# rate() needs two samples of the energy counter in its window.
sleep 3

# grafana METHOD PATH [FORM]: the request as Grafana's backend sends it;
# the answer in $TMP/a.json, its status printed.
grafana() {
    local args=(-s -o "$TMP/a.json" -w '%{http_code}' -X "$1" -H 'User-Agent: Grafana/10.4.1'
        -H 'X-Grafana-Org-Id: 1' -H 'Accept-Encoding: gzip' --compressed)
    [ $# -ge 3 ] && args+=(-H 'Content-Type: application/x-www-form-urlencoded' --data-binary "$3")
    curl "${args[@]}" "$U$2"
}
# check PY_EXPR: asserts on d, the answer's JSON.
check() {
    python3 - "$TMP/a.json" "$1" <<'PY' || { cat "$TMP/a.json"; echo; fail "check failed: $1"; }
import json, sys
d = json.load(open(sys.argv[1]))
assert eval(sys.argv[2]), sys.argv[2]
PY
}
NOW=$(date +%s)

# ---- Save & test --------------------------------------------------------
for pre in "" /prometheus; do
    [ "$(grafana POST "$pre/api/v1/query" "query=1%2B1&time=$NOW.123")" = 200 ] || fail "health check via $pre answered $(cat "$TMP/a.json")"
    check 'd["status"] == "success" and d["data"]["resultType"] == "scalar" and d["data"]["result"][1] == "2" and abs(d["data"]["result"][0] - '"$NOW"'.123) < 1e-6'
done
note "Grafana's health check (POST query=1+1) answers scalar 2, also under /prometheus"

[ "$(grafana GET /api/v1/status/buildinfo)" = 200 ] || fail "buildinfo"
check 'd["data"]["version"] == "2.42.0" and "features" not in d["data"] and d["data"]["gpulseVersion"]'
[ "$(grafana GET /api/v1/metadata)" = 200 ] || fail "metadata"
check 'd["data"]["DCGM_FI_DEV_GPU_UTIL"][0]["type"] == "gauge" and d["data"]["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"][0]["type"] == "counter"'
[ "$(grafana POST /api/v1/query_exemplars "query=DCGM_FI_DEV_GPU_UTIL&start=$((NOW - 60))&end=$NOW")" = 200 ] || fail "exemplars"
check 'd == {"status": "success", "data": []}'
note "buildinfo (Prometheus 2.42.0 to Grafana), metadata and query_exemplars answer as Prometheus's"

# ---- panel queries ------------------------------------------------------
START=$((NOW - 30))
range() { # EXPR: a form POST query_range over the last 30 s at 5 s
    local q
    q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")
    grafana POST /api/v1/query_range "query=$q&start=$START&end=$NOW&step=5"
}
for expr in 'avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)' \
    'sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[10s]))' \
    'max(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE))' \
    'DCGM_FI_DEV_GPU_TEMP{gpu="0"}'; do
    [ "$(range "$expr")" = 200 ] || fail "query_range '$expr' answered $(cat "$TMP/a.json")"
    check 'd["data"]["resultType"] == "matrix" and d["data"]["result"] and all(v[0] in range('"$START"', '"$NOW"' + 1, 5) for s in d["data"]["result"] for v in s["values"])'
done
check 'all(s["metric"].get("gpu") == "0" and s["metric"].get("__name__") == "DCGM_FI_DEV_GPU_TEMP" for s in d["data"]["result"])'
range 'avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)' >/dev/null
check 'list(d["data"]["result"][0]["metric"]) == ["Hostname"]'
[ "$(grafana POST /api/v1/query "query=count(DCGM_FI_DEV_GPU_UTIL)&time=$NOW")" = 200 ] || fail "instant count"
check 'd["data"]["resultType"] == "vector" and d["data"]["result"][0]["value"][1] == "2"'
note "panel queries (form POST query_range of avg by, sum of rate, a ratio, a selector; an instant count) answer with data on start + k*step"

# ---- the label browser --------------------------------------------------
M=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("DCGM_FI_DEV_GPU_UTIL", safe=""))')
[ "$(grafana GET "/api/v1/labels?start=$START&end=$NOW")" = 200 ] || fail "labels"
check '"Hostname" in d["data"] and "gpu" in d["data"] and "mode" in d["data"] and d["data"] == sorted(set(d["data"]))'
[ "$(grafana POST /api/v1/labels "match%5B%5D=$M&start=$START&end=$NOW")" = 200 ] || fail "labels with match[]"
check '"gpu" in d["data"] and "mode" not in d["data"]' # mode: host CPU series only
ALL=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["data"]))' "$TMP/a.json")
[ "$(grafana GET "/api/v1/label/__name__/values?match%5B%5D=$M&start=$START&end=$NOW")" = 200 ] || fail "values with match[]"
check 'd["data"] == ["DCGM_FI_DEV_GPU_UTIL"]'
[ "$(grafana GET "/api/v1/label/__name__/values?start=$START&end=$NOW")" = 200 ] || fail "values"
check 'len(d["data"]) > 10 and "DCGM_FI_DEV_GPU_UTIL" in d["data"]'
[ "$(grafana GET "/api/v1/label/gpu/values?match%5B%5D=DCGM_FI_DEV_GPU_UTIL%7Bgpu%3D%221%22%7D")" = 200 ] || fail "gpu values"
check 'd["data"] == ["1"]'
# Before any sample: nothing.
[ "$(grafana GET "/api/v1/label/__name__/values?start=1000000000&end=1000000100")" = 200 ] || fail "values, old range"
check 'd["data"] == []'
[ "$(grafana POST /api/v1/series "match%5B%5D=$M&start=$START&end=$NOW")" = 200 ] || fail "series"
check 'len(d["data"]) == 2 and all(s["__name__"] == "DCGM_FI_DEV_GPU_UTIL" for s in d["data"])'
note "label browser: labels and values narrowed by match[] ($ALL names for one metric), start and end; series by POST"

# ---- errors -------------------------------------------------------------
[ "$(grafana POST /api/v1/query "query=sum(rate(x%5B5m%5D)&time=$NOW")" = 400 ] || fail "a parse error is not 400"
check 'd["status"] == "error" and d["errorType"] == "bad_data" and d["error"].startswith("1:")'
[ "$(grafana POST /api/v1/query_range "query=up&start=$NOW&end=$START&step=5")" = 400 ] || fail "end before start is not 400"
check 'd["errorType"] == "bad_data"'
note "errors in Prometheus's shape (bad_data 400, the position first)"

# ---- /prometheus and the two alerts routes ------------------------------
[ "$(grafana GET /prometheus/api/v1/alerts)" = 200 ] || fail "/prometheus/api/v1/alerts"
check 'd["status"] == "success" and isinstance(d["data"]["alerts"], list) and all(set(a) >= {"labels", "annotations", "state", "activeAt", "value"} and a["labels"]["alertname"] for a in d["data"]["alerts"])'
[ "$(grafana GET /api/v1/alerts)" = 200 ] || fail "/api/v1/alerts"
check 'd["status"] == "success" and isinstance(d["data"], list)'
[ "$(grafana GET "/prometheus/api/v1/labels?match%5B%5D=$M")" = 200 ] || fail "/prometheus labels"
# Grafana's rule view reads the rules under the same URL.
[ "$(grafana GET /prometheus/api/v1/rules)" = 200 ] || fail "/prometheus/api/v1/rules answered $(cat "$TMP/a.json")"
check 'd["status"] == "success" and isinstance(d["data"]["groups"], list)'
[ "$(grafana GET /prometheus/api/v1/gpus)" = 404 ] || fail "gpulse's own routes must not be under /prometheus"
note "/prometheus/api/v1/alerts answers in Prometheus's shape (rules too); /api/v1/alerts stays gpulse's"

stop_server
echo "PASS"
