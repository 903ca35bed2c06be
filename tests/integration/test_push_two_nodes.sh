#!/usr/bin/env bash
# Two agents on two nodes (different --hostname, the same eight GPUs of
# the stand-in NVML, h100x8.scn, the same host's /proc) push to one server
# (issue 17, item 4). Before, the host, agent and process series carried
# no node label: both agents wrote into one series and rejected each
# other's samples as out of order. Now:
#   - every series either agent's /metrics shows is stored with that
#     agent's host label (Hostname=node-a or node-b; GPU series have it
#     already) and its external label (--external-label cluster=...), so
#     every family keeps one series per node; none is stored without;
#   - the server's fleet counts both nodes' GPUs (16);
#   - no sample is rejected (server) or dropped (agents).
source "$(dirname "$0")/lib.sh"

start_server
export GPULSE_FAKENVML_SCENARIO=$SCEN/h100x8.scn
for n in a b; do
    GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --hostname "node-$n" --external-label "cluster=c-$n" \
        --process-series all --interval 200ms --steps-socket "" --push "$SERVER_URL/api/v1/write"
    eval "PORT_$n=\$AGENT_PORT"
done
sleep 4 # twenty ticks each
for n in a b; do eval "curl -sf http://127.0.0.1:\$PORT_$n/metrics" >"$TMP/agent-$n.prom"; done
sleep 1 # the ticks those snapshots show reach the server
curl -sf -G "$SERVER_URL/api/v1/series" --data-urlencode 'match[]={__name__=~".+"}' \
    --data-urlencode "start=$(( $(date +%s) - 300 ))" --data-urlencode "end=$(( $(date +%s) + 60 ))" \
    >"$TMP/series.json"
curl -sf "$SERVER_URL/metrics" >"$TMP/server.prom"

python3 - "$ROOT/tests/integration" "$TMP" <<'PY' || fail "the two nodes' series are not kept apart"
import json, sys
sys.path.insert(0, sys.argv[1])
from compare_push import parse_expo, with_added
tmp = sys.argv[2]
stored = set()
bad = []
for s in json.load(open(tmp + "/series.json"))["data"]:
    name = s.pop("__name__")
    if name.startswith("gpulse_server_") or name.startswith("gpulse_state_"):
        continue  # the server's own series
    if "Hostname" not in s:
        bad.append("stored without a node label: %s%r" % (name, s))
    stored.add((name, frozenset(s.items())))
families = {}
for n in "ab":
    shown, _ = parse_expo("%s/agent-%s.prom" % (tmp, n))
    for key in with_added(shown, [("Hostname", "node-" + n), ("cluster", "c-" + n)]):
        families.setdefault(key[0], set()).add(n)
        if key not in stored:
            bad.append("node-%s: %s%r not stored" % (n, key[0], dict(key[1])))
cpus = [dict(l) for name, l in stored if name == "gpulse_host_cpus"]
if sorted(l.get("Hostname", "") for l in cpus) != ["node-a", "node-b"]:
    bad.append("gpulse_host_cpus: want one series per node, got %r" % cpus)
for b in bad[:20]:
    print(b)
both = sum(1 for nodes in families.values() if nodes == {"a", "b"})
print("%d families from both nodes, %d series stored, %d problems" % (both, len(stored), len(bad)))
sys.exit(1 if bad else 0)
PY
note "$(grep -c '^# TYPE' "$TMP/agent-a.prom") families per agent, each stored once per node"

# The server's readers of these series count both nodes, external label and all.
wait_until 20 sh -c "curl -sf '$SERVER_URL/api/v1/fleet' | grep -q '\"gpus\":16,'" ||
    fail "the fleet does not show both nodes' 8 GPUs: $(curl -s "$SERVER_URL/api/v1/fleet")"

ingested=$(awk '/^gpulse_server_samples_ingested_total / {print $2}' "$TMP/server.prom")
[ "${ingested:-0}" -gt 0 ] || fail "the server counts no ingested sample"
rejected=$(awk '/^gpulse_server_samples_rejected_total[{ ]/ {s += $2} END {print s + 0}' "$TMP/server.prom")
[ "$rejected" = 0 ] || { grep '^gpulse_server_samples_rejected_total' "$TMP/server.prom" >&2
                         fail "the server rejected $rejected samples of two nodes"; }
for n in a b; do
    grep '^gpulse_push_samples_dropped_total{' "$TMP/agent-$n.prom" | awk '$2 != 0 {exit 1}' ||
        fail "the agent of node-$n had samples dropped"
done
note "$ingested samples ingested, none rejected by the server, none dropped by the agents"
echo "PASS test_push_two_nodes"
