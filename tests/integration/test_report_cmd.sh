#!/usr/bin/env bash
# `gpulse report JOB` against a stand-in job endpoint (report_server.py,
# serving tests/data/jobs/ in the server's envelope): the text report,
# --json, --html (a well-formed, script-free file with SVG charts, the
# hostile strings escaped), the job name URL-encoded, the bearer token,
# GPULSE_SERVER, and the exit status and one-line message of each
# failure: 404, garbage, no envelope, unreachable, usage errors.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
JOBS=$ROOT/tests/data/jobs

start_jobs_server() { # DIR [TOKEN]: sets JS_URL
    rm -f "$TMP/port"
    REQLOG_DIR=$TMP "$PY" "$ROOT/tests/integration/report_server.py" "$TMP/port" "$@" 2>"$TMP/js.log" &
    PIDS+=("$!")
    wait_until 10 test -s "$TMP/port" || fail "job server did not start: $(cat "$TMP/js.log")"
    JS_URL=http://127.0.0.1:$(cat "$TMP/port")
}
start_jobs_server "$JOBS"

# --help and usage errors: exit 2, one line
"$GPULSE" report --help >"$TMP/help" || fail "report --help failed"
for f in --server --json --html --token-file; do grep -q -- "$f" "$TMP/help" || fail "--help lacks $f"; done
"$GPULSE" help | grep '^  report ' >/dev/null || fail "gpulse help does not list report"
check_usage() { # expected-message ARGS...
    local want=$1; shift
    local rc=0
    "$GPULSE" report "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q -- "$want" "$TMP/err" ||
        fail "report $*: exit $rc, $(cat "$TMP/err")"
}
check_usage "which job" 
check_usage "unknown flag '--bogus'" x --bogus
check_usage "--server needs a value" x --server
check_usage "one at a time" x --json --html "$TMP/x.html"
check_usage "one job at a time" a b
check_usage "token_file '$TMP/none'" x --token-file "$TMP/none"
note "--help and usage errors (exit 2)"

# the text report
"$GPULSE" report run-20261123T101500-4242 --server "$JS_URL" >"$TMP/full.txt" 2>"$TMP/err" ||
    fail "report: $(cat "$TMP/err")"
grep -q '^gpulse report: run-20261123T101500-4242$' "$TMP/full.txt" || fail "no title: $(head -3 "$TMP/full.txt")"
grep -q '^  wall time     0:50:00$' "$TMP/full.txt" || fail "no wall time"
grep -q '^  cost          \$4.17 at \$2.50 per GPU-hour$' "$TMP/full.txt" || fail "no cost"
grep -q '^  1. \[memory_high\]' "$TMP/full.txt" || fail "no advice"
[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$TMP/full.txt")" -le 100 ] ||
    fail "a line passes 100 columns"
! grep -q $'\033' "$TMP/full.txt" || fail "color without --color"
grep -q '^/api/v1/jobs/run-20261123T101500-4242?series=1$' "$TMP/requests.log" || fail "request: $(cat "$TMP/requests.log")"
# GPULSE_SERVER, and a job name that needs URL encoding
GPULSE_SERVER=$JS_URL/ "$GPULSE" report pg-4242@laptop >"$TMP/cpu.txt" 2>"$TMP/err" || fail "env server: $(cat "$TMP/err")"
grep -q '^  per GPU       no GPUs in this job$' "$TMP/cpu.txt" || fail "cpu-only text: $(cat "$TMP/cpu.txt")"
grep -q '^/api/v1/jobs/pg-4242%40laptop?series=1$' "$TMP/requests.log" || fail "not URL-encoded: $(cat "$TMP/requests.log")"
note "text report, GPULSE_SERVER, URL-encoded job"

# --json: the document with the advice, pretty-printed
"$GPULSE" report slurm-881234 --server "$JS_URL" --json >"$TMP/failed.json" || fail "--json"
"$PY" - "$TMP/failed.json" "$JOBS/failed.json" <<'PYEOF' || fail "--json output"
import json, sys
got, src = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert [a["kind"] for a in got["advice"]] == ["killed", "custom", "memory_high", "low_activity"], got["advice"]
got.pop("advice"); src.pop("advice")
assert got.pop("alerts") == [], "the stand-in has no alerts"   # the job's active alerts, added
assert got == src, "the document changed"
assert open(sys.argv[1]).read().startswith('{\n  "id": "slurm-881234"'), "not pretty-printed"
PYEOF
note "--json"

# --html: written atomically, text on stdout, well-formed, charts, no script
check_html() { # FILE
    "$PY" - "$1" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
from html.parser import HTMLParser
src = open(sys.argv[1], encoding="utf-8").read()
assert "<script" not in src.lower(), "a script element"
root = ET.fromstring(src.split("\n", 1)[1])           # XML: every element closed, entities known
ns = "{http://www.w3.org/2000/svg}"
svgs = list(root.iter(ns + "svg"))
paths = [p for s in svgs for p in s.iter(ns + "path") if p.get("d", "").startswith("M")]
class P(HTMLParser):                                    # the HTML parser sees the same elements
    def __init__(self):
        super().__init__(); self.tags = []; self.stack = []
    def handle_starttag(self, t, a):
        self.tags.append(t)
        if t not in ("meta", "br", "img", "input", "link"): self.stack.append(t)
    def handle_startendtag(self, t, a): self.tags.append(t)
    def handle_endtag(self, t):
        assert self.stack and self.stack[-1] == t, "unbalanced </%s>" % t
        self.stack.pop()
p = P(); p.feed(src); p.close()
assert not p.stack, "unclosed %s" % p.stack
for t in ("script", "img", "iframe", "object", "embed", "link"):
    assert t not in p.tags, "<%s> in the page" % t
print(len(svgs), len(paths), src.count('class="nodata"'))
PYEOF
}
"$GPULSE" report run-20261123T101500-4242 --server "$JS_URL" --html "$TMP/full.html" >"$TMP/out" 2>"$TMP/err" ||
    fail "--html: $(cat "$TMP/err")"
cmp -s "$TMP/out" "$TMP/full.txt" || fail "--html did not print the text report"
[ -z "$(ls "$TMP" | grep 'full.html.tmp')" ] || fail "temporary file left behind"
[ "$(check_html "$TMP/full.html")" = "6 8 0" ] || fail "full.html: $(check_html "$TMP/full.html" 2>&1)"
"$GPULSE" report job-nulls --server "$JS_URL" --html "$TMP/nulls.html" >/dev/null 2>&1 || fail "--html nulls"
[ "$(check_html "$TMP/nulls.html")" = "0 0 6" ] || fail "nulls.html: $(check_html "$TMP/nulls.html" 2>&1)"
hostile=$("$PY" -c 'import json; print(json.load(open("'"$JOBS"'/hostile.json"))["id"])')
"$GPULSE" report "$hostile" --server "$JS_URL" --html "$TMP/hostile.html" >"$TMP/hostile.txt" 2>"$TMP/err" ||
    fail "--html hostile: $(cat "$TMP/err")"
check_html "$TMP/hostile.html" >/dev/null || fail "hostile.html: $(check_html "$TMP/hostile.html" 2>&1)"
grep -q '&lt;script&gt;alert(&#39;id&#39;)&lt;/script&gt;' "$TMP/hostile.html" || fail "id not escaped"
! grep -q $'\033' "$TMP/hostile.txt" || fail "an escape sequence reached the terminal"
# an HTML path that cannot be written: exit 1, the old file untouched
rc=0; "$GPULSE" report run-20261123T101500-4242 --server "$JS_URL" --html "$TMP/nodir/r.html" \
    >/dev/null 2>"$TMP/err" || rc=$?
[ $rc -eq 1 ] && grep -q "cannot write '$TMP/nodir/r.html'" "$TMP/err" || fail "bad --html path: exit $rc, $(cat "$TMP/err")"
note "--html: well-formed, charts, no data notes, escaped"

# runtime failures: exit 1 and one line naming the problem
check_fail() { # expected-message ARGS...
    local want=$1; shift
    local rc=0
    "$GPULSE" report "$@" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -qF -- "$want" "$TMP/err" && [ ! -s "$TMP/out" ] ||
        fail "report $*: exit $rc, $(cat "$TMP/err")"
}
check_fail "no job 'nosuch' on $JS_URL" nosuch --server "$JS_URL"
check_fail "bad JSON from $JS_URL" garbage --server "$JS_URL"
check_fail "bad answer from $JS_URL" noenvelope --server "$JS_URL"
dead=$(free_port)
check_fail "cannot reach server http://127.0.0.1:$dead" x --server "http://127.0.0.1:$dead"
note "404, garbage, no envelope, unreachable (exit 1)"

# the bearer token
echo s3cret >"$TMP/token"
start_jobs_server "$JOBS" s3cret
check_fail "refused the request (HTTP 401)" slurm-881234 --server "$JS_URL"
"$GPULSE" report slurm-881234 --server "$JS_URL" --token-file "$TMP/token" >/dev/null || fail "--token-file"
GPULSE_TOKEN_FILE=$TMP/token "$GPULSE" report slurm-881234 --server "$JS_URL" >/dev/null || fail "GPULSE_TOKEN_FILE"
note "bearer token from --token-file and GPULSE_TOKEN_FILE"
