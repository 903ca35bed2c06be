#!/usr/bin/env bash
# docs/openapi.yaml against the real server. `gpulse up --simulate` with
# planted faults, a custom rule that fires at once, a dry-run remediation,
# a webhook receiver (notify_receiver.py) and a silence give every GET
# route something to answer; then openapi_check.py
#   1. lints the file (OpenAPI 3.1 structure, $refs, JSON Schema validity),
#   2. calls every GET route with its example parameters and validates the
#      status, content type and body against the schema (objects are
#      closed: a field the server adds without documenting it fails), and
#      the documented 400 and 404 answers with their error bodies,
#   3. checks that every route of the server's own route index is in the
#      file and that no documented method answers 405;
#   4. with read and write tokens configured, checks each operation's
#      documented security: open routes answer without a token, the
#      others 401 with the error body and WWW-Authenticate;
# and a mutated copy of the file (one field's type changed) must fail, so
# the validation is known to bite. The routes docs/dashboard.md adds are
# skipped with a note while this build answers them 404.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3 # Debian's, with python3-jsonschema and python3-yaml
SPEC=$ROOT/docs/openapi.yaml
$PY -c 'import jsonschema, yaml' 2>/dev/null || fail "python3-jsonschema and python3-yaml are needed (scripts/deps.sh)"

$PY "$ROOT/tests/integration/openapi_check.py" lint "$SPEC" || fail "docs/openapi.yaml is not a valid OpenAPI 3.1 file"
note "docs/openapi.yaml lints clean"

RPORT=$(free_port)
$PY "$ROOT/tests/integration/notify_receiver.py" "$RPORT" "$TMP/requests.jsonl" >"$TMP/receiver.out" 2>&1 &
PIDS+=($!)
wait_until 10 curl -sf "http://127.0.0.1:$RPORT/health" || fail "the receiver did not come up"
export GPULSE_READ_TOKEN=openapi-read-token GPULSE_WRITE_TOKEN=openapi-write-token
cat >"$TMP/gpulse.yaml" <<EOF
server:
  read_token: $GPULSE_READ_TOKEN
  write_token: $GPULSE_WRITE_TOKEN
rules:
  - name: gpu_warm
    expr: DCGM_FI_DEV_GPU_TEMP
    agg: last
    window: 10s
    op: ">"
    threshold: 0
    for: 1s
    severity: warning
    annotations:
      summary: "GPU {{ \$labels.gpu }} of {{ \$labels.Hostname }} at {{ \$value }} C"
      runbook: "nothing to do: the test's rule fires on any temperature"
notify:
  retry_max_backoff: 1s
  receivers:
    - name: hooks
      type: webhook
      url: http://127.0.0.1:$RPORT/hook/receive
  routes:
    - receiver: hooks
      group_wait: 1s
      group_interval: 2s
EOF
SERVER_CMD=up start_server --config "$TMP/gpulse.yaml" --simulate 2x2xH100 \
    --simulate-faults "leak=sim-node-0/1,idle=sim-node-1/0" --interval 1s \
    --eval-interval 1s --eval-step 1s --eval-window 30s --steps-socket "$TMP/steps.sock" \
    --remediation 'gpu_warm=echo drain {node}' --gpu-hour-price 2
U=$SERVER_URL
AUTH=(-H "Authorization: Bearer $GPULSE_READ_TOKEN")
has() { curl -sf "${AUTH[@]}" "$U$1" | $PY -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["data"] else 1)'; }
wait_until 60 has "/api/v1/alerts?state=all" || fail "no alert within 60 s"
wait_until 60 has "/api/v1/audit" || fail "no remediation audit entry within 60 s"
wait_until 60 has "/api/v1/notifications?state=done" || fail "no notification delivered within 60 s"
wait_until 60 has "/api/v1/recommendations" || fail "no recommendation within 60 s"
wait_until 30 has "/api/v1/jobs" || fail "no job within 30 s"
SIL=$(curl -sf -H "Authorization: Bearer $GPULSE_WRITE_TOKEN" -X POST -d '{"matchers":{"kind":"gpu_warm","node":"sim-node-1"},"duration":"1h","comment":"openapi test"}' \
    "$U/api/v1/silences" | $PY -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"])') ||
    fail "POST /api/v1/silences"
# a preflight result, as gpulse check --push sends it (the stand-in NVML)
printf '%s\n' "$GPULSE_WRITE_TOKEN" >"$TMP/write-token"
GPULSE_FAKENVML_SCENARIO=$ROOT/tests/data/nvml/preflight.scn GPULSE_NVML_LIBRARY=$ROOT/build/fakenvml/full/libnvidia-ml.so.1 \
    "$GPULSE" check --hostname=sim-node-1 --kernel-log= --driver-version=550.54.15 --server="$U" --push --write-token-file="$TMP/write-token" >/dev/null 2>"$TMP/check.err" &&
    [ ! -s "$TMP/check.err" ] || { cat "$TMP/check.err"; fail "gpulse check --push"; }
note "server up with alerts, audit entries, notifications, recommendations, jobs, a silence and a preflight"

$PY "$ROOT/tests/integration/openapi_check.py" server "$SPEC" "$U" >"$TMP/check.out" 2>&1 ||
    { cat "$TMP/check.out" >&2; fail "the server's answers do not match docs/openapi.yaml"; }
grep -E '^  (skip|PROBLEM)' "$TMP/check.out" || true
grep -E 'operations answer without a token' "$TMP/check.out" || fail "the security check did not run"
tail -1 "$TMP/check.out"
n=$(grep -c '^  ok  GET' "$TMP/check.out")
[ "$n" -ge 17 ] || { cat "$TMP/check.out" >&2; fail "only $n GET routes were checked"; }
note "every GET route answers as docs/openapi.yaml says ($n checked)"

# The check must bite: the same file with one documented type wrong fails.
sed 's/^\(                        memory_bytes: \){type: \[number, "null"\], minimum: 0}/\1{type: string}/' \
    "$SPEC" >"$TMP/mutated.yaml"
cmp -s "$SPEC" "$TMP/mutated.yaml" && fail "the mutation did not apply"
if $PY "$ROOT/tests/integration/openapi_check.py" server "$TMP/mutated.yaml" "$U" >"$TMP/mut.out" 2>&1; then
    fail "a wrong schema passed the check"
fi
grep -q "GET /api/v1/gpus: .* is not of type 'string'" "$TMP/mut.out" || { cat "$TMP/mut.out" >&2; fail "the wrong schema failed for another reason"; }
note "a wrong schema fails the check"

code=$(curl -s -o "$TMP/del.json" -w '%{http_code}' -H "Authorization: Bearer $GPULSE_WRITE_TOKEN" \
    -X DELETE "$U/api/v1/silences/$SIL")
[ "$code" = 200 ] || fail "DELETE /api/v1/silences/$SIL: $code"
$PY - "$SPEC" "$TMP/del.json" <<'EOF' || fail "the DELETE answer does not match its schema"
import json, sys, yaml, jsonschema
spec = yaml.safe_load(open(sys.argv[1]))
s = spec["paths"]["/api/v1/silences/{id}"]["delete"]["responses"]["200"]["content"]["application/json"]["schema"]
jsonschema.Draft202012Validator(s, resolver=jsonschema.RefResolver.from_schema(spec)).validate(json.load(open(sys.argv[2])))
EOF
note "DELETE /api/v1/silences/ID answers as documented"
stop_server
echo "PASS"
