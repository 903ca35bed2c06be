#!/usr/bin/env bash
# `gpulse up --simulate 1x2xH100`: one process samples the simulated GPUs
# and serves the server's API and /metrics; /metrics carries the server's
# families and then the agent's, each family once, lint-clean. The
# agent's samples reach the store in-process (gp_server_write), so the
# inventory lists the two simulated GPUs and their series can be queried.
# Its own samples carry the node label and external labels as a pushing
# agent's do. SIGTERM stops it cleanly, and a restart on the same data
# recovers them.
source "$(dirname "$0")/lib.sh"
SERVER_CMD=up start_server --simulate 1x2xH100 --interval 200ms --hostname up-node --external-label cluster=solo
grep -q 'msg="sampling into the embedded server"' "$SERVER_LOG" || fail "up did not start its agent"
sleep 1
curl -sf "$SERVER_URL/metrics" >"$TMP/m"
check_exposition "$TMP/m"
grep -q '^gpulse_server_samples_ingested_total ' "$TMP/m" || fail "no server families in up's /metrics"
[ "$(grep -c '^DCGM_FI_DEV_GPU_UTIL{' "$TMP/m")" -eq 2 ] || fail "want 2 simulated GPUs in up's /metrics"
[ "$(grep -c '^# TYPE gpulse_build_info ' "$TMP/m")" -eq 1 ] || fail "gpulse_build_info twice"
awk '/^# TYPE / {print $3}' "$TMP/m" | sort | uniq -d | grep . && fail "a family is repeated (above)"
# The server's families come first.
first_agent=$(grep -n '^# TYPE DCGM_' "$TMP/m" | head -1 | cut -d: -f1)
last_server=$(grep -n '^# TYPE gpulse_server_' "$TMP/m" | tail -1 | cut -d: -f1)
[ "$last_server" -lt "$first_agent" ] || fail "agent families before the server's"
note "up's /metrics: server and agent families, each once, lint-clean"

# The agent pushes in-process: the store fills and the inventory shows the GPUs.
wait_until 30 sh -c "curl -sf '$SERVER_URL/api/v1/gpus' | grep -q 'sim-node-0'" ||
    fail "the simulated GPUs never reached the store: $(curl -s "$SERVER_URL/api/v1/gpus")"
python3 - "$SERVER_URL" <<'PY' || fail "inventory does not match the simulation"
import json, sys, urllib.request
u = sys.argv[1]
gpus = json.load(urllib.request.urlopen(u + "/api/v1/gpus"))["data"]
nodes = json.load(urllib.request.urlopen(u + "/api/v1/nodes"))["data"]
mine = [g for g in gpus if g["node"] == "sim-node-0"]
assert len(mine) == 2, gpus
assert sorted(g["gpu"] for g in mine) == ["0", "1"], mine
assert all("H100" in g["model"] for g in mine), mine
assert all(g["memory_bytes"] > 70e9 for g in mine), mine
node = [n for n in nodes if n["node"] == "sim-node-0"]
assert len(node) == 1 and node[0]["gpus"] == 2 and node[0]["simulated"] is True, nodes
print("  - inventory:", ", ".join("%s/%s %s" % (g["node"], g["gpu"], g["model"]) for g in mine))
PY
curl -sf "$SERVER_URL/api/v1/series?match[]=DCGM_FI_DEV_GPU_UTIL" | grep -c '"Hostname":"sim-node-0"' >/dev/null ||
    fail "series API does not list the simulated GPU series"
# up's agent view, as an agent serves it, for `gpulse top --agent`.
curl -sf "$SERVER_URL/api/v1/snapshot" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert sorted((g["hostname"], g["gpu"]) for g in d["gpus"]) == [("sim-node-0", 0), ("sim-node-0", 1)], d["gpus"]
assert d["host"]["cpus"] >= 1 and d["jobs"], d
' || fail "up's /api/v1/snapshot is not its agent's frame"
GPULSE_NVML_LIBRARY=$TMP/none/libnvidia-ml.so.1 "$GPULSE" top --once --width 160 --agent "$SERVER_URL" \
    >"$TMP/top.txt" 2>"$TMP/top.err" || { cat "$TMP/top.err"; fail "top --agent at up failed"; }
[ "$(grep -c '^GPU [01]@sim-node-0 NVIDIA H100' "$TMP/top.txt")" -eq 2 ] || { cat "$TMP/top.txt"; fail "top --agent at up: not up's GPUs"; }
note "up's /api/v1/snapshot: its agent's frame; gpulse top --agent shows it"
# Host series reach the store with the node label and the external label,
# as an agent pushing to a server sends them; GPU series keep their node.
curl -sf "$SERVER_URL/api/v1/series?match[]=gpulse_host_cpus" | grep '"Hostname":"up-node"' >/dev/null ||
    fail "up's host series lack the node label: $(curl -s "$SERVER_URL/api/v1/series?match[]=gpulse_host_cpus")"
curl -sf "$SERVER_URL/api/v1/series?match[]=DCGM_FI_DEV_GPU_UTIL" | grep '"cluster":"solo"' >/dev/null ||
    fail "up's GPU series lack the external label"
note "up's own samples carry Hostname=up-node (host series) and cluster=solo"
stop_server
SERVER_CMD=up start_server --simulate 1x2xH100 --interval 200ms
grep -q 'msg="store open" .*series=[1-9]' "$SERVER_LOG" || { cat "$SERVER_LOG"; fail "up's restart recovered nothing"; }
stop_server
