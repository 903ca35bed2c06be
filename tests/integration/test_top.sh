#!/usr/bin/env bash
# `gpulse top` in a real terminal: tmux (160x48) runs it next to an agent,
# both on the stand-in NVML with the constant h100x8 scenario, the agent
# pushing to a real `gpulse server` whose rule fires for the two warmest
# GPUs. Keys are sent with send-keys and the screen read with
# capture-pane; what it shows (GPUs, models, utilization, memory,
# temperature, power, processes and their order, the alerts) must equal
# the agent's /api/v1/snapshot and the server's /api/v1/alerts taken at
# the same moment. The scenario's values do not change, so the comparison
# is exact. Also: NO_COLOR leaves no colour escape (and without it colour
# shows), help, the interval keys, a resize to 70x30 drops columns and
# wraps nothing, q exits 0 with a clean ASan run, a wrong read token shows
# the server's 401 in the status line, --once prints the same figures,
# Ctrl-C exits as q does, and without a terminal top says so and exits 2.
source "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || fail "tmux is not installed (scripts/deps.sh test)"

export GPULSE_FAKENVML_SCENARIO=$SCEN/h100x8.scn
HOST=top-node
cat >"$TMP/gpulse.yaml" <<'EOF'
server:
  write_token: W
  read_token: R
rules:
  - name: gpu_warm
    expr: DCGM_FI_DEV_GPU_TEMP{Hostname="top-node"}
    agg: last
    window: 10s
    op: ">"
    threshold: 45.5
    for: 1s
    severity: warning
    annotations:
      summary: "GPU {{ $labels.gpu }} at {{ $value }} C"
EOF
start_server --config "$TMP/gpulse.yaml" --eval-interval 1s --eval-step 1s --eval-window 30s
start_agent --interval 200ms --nvml-library "$FAKE_FULL" --hostname "$HOST" \
    --push "$SERVER_URL/api/v1/write" --push-bearer-token W --steps-socket ''
snapshot() { curl -sf "http://127.0.0.1:$AGENT_PORT/api/v1/snapshot" >"$1"; }
alerts() { curl -sf -H 'Authorization: Bearer R' "$SERVER_URL/api/v1/alerts?node=$HOST" >"$1"; }
firing2() { alerts "$TMP/a.json" && [ "$(grep -o '"state":"firing"' "$TMP/a.json" | wc -l)" -eq 2 ]; }
wait_until 30 firing2 || { cat "$TMP/a.json" "$SERVER_LOG" >&2; fail "the server's rule never fired for GPUs 6 and 7"; }
note "server fires gpu_warm for GPUs 6 and 7"

# Without a terminal: a clear message, exit 2, before any source opens.
rc=0
"$GPULSE" top --nvml-library "$FAKE_FULL" >"$TMP/notty.out" 2>"$TMP/notty.err" </dev/null || rc=$?
[ $rc -eq 2 ] || fail "top without a terminal exited $rc, want 2"
grep -q 'stdout is not a terminal; use --once' "$TMP/notty.err" || fail "no clear message: $(cat "$TMP/notty.err")"

# --once: one plain-text frame with the same figures.
"$GPULSE" top --once --width 160 --interval 200ms --nvml-library "$FAKE_FULL" --hostname "$HOST" \
    --server "$SERVER_URL" --read-token R >"$TMP/once.txt" 2>"$TMP/once.err" || {
    cat "$TMP/once.err"; fail "top --once failed"; }
snapshot "$TMP/once.json"
python3 "$ROOT/tests/integration/top_screen.py" "$TMP/once.json" "$TMP/once.txt" --order gpumem --width 160 ||
    fail "--once differs from the snapshot"
grep -q $'\x1b' "$TMP/once.txt" && fail "--once printed escapes"
note "--once matches the snapshot"

# --agent: the agent's view, nothing sampled here (top is given no NVML, so
# the GPUs it shows can only be the agent's); alerts still from the server,
# for the agent's host name.
GPULSE_NVML_LIBRARY=$TMP/none/libnvidia-ml.so.1 "$GPULSE" top --once --width 160 --interval 200ms \
    --agent "http://127.0.0.1:$AGENT_PORT/" --server "$SERVER_URL" --read-token R >"$TMP/agent.txt" \
    2>"$TMP/agent.err" || { cat "$TMP/agent.err"; fail "top --once --agent failed"; }
snapshot "$TMP/agent.json"
python3 "$ROOT/tests/integration/top_screen.py" "$TMP/agent.json" "$TMP/agent.txt" --order gpumem --width 160 ||
    fail "--agent differs from the agent's snapshot"
grep -q "^gpulse top  $HOST " "$TMP/agent.txt" || fail "--agent: not the agent's host: $(head -1 "$TMP/agent.txt")"
grep -q "2 firing" "$TMP/agent.txt" || fail "--agent: the agent's node's alerts are missing"
# Nothing listening, or not an agent: exit 1, one line naming the agent.
for bad in "http://127.0.0.1:1" "$SERVER_URL"; do
    rc=0; "$GPULSE" top --once --agent "$bad" >/dev/null 2>"$TMP/agent.err" || rc=$?
    [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/agent.err")" -eq 1 ] && grep -q "^gpulse top: agent $bad: " "$TMP/agent.err" ||
        fail "--agent $bad: exit $rc, $(cat "$TMP/agent.err")"
done
grep -q "answered 401 (not a gpulse agent or gpulse up?" "$TMP/agent.err" || fail "--agent at a server: $(cat "$TMP/agent.err")"
rc=0; "$GPULSE" top --once --agent localhost:9401 2>"$TMP/agent.err" || rc=$?
[ $rc -eq 2 ] && grep -q "must start with http://" "$TMP/agent.err" || fail "--agent without a scheme: exit $rc"
note "--agent: the agent's screen and its node's alerts; unreachable or not an agent: exit 1"

# The live view in tmux. A wrapper script carries the environment (tmux
# starts commands from its server's environment) and records the exit status.
TMUX_SOCK=gpulse-top-$$
TM() { tmux -L "$TMUX_SOCK" -f /dev/null "$@"; }
trap 'tmux -L "$TMUX_SOCK" kill-server 2>/dev/null || true; cleanup' EXIT
run_top() { # NAME ENV... -- ARGS...
    local name=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    {
        echo "#!/bin/sh"
        echo "unset NO_COLOR" # only what the test names: the runner's own NO_COLOR must not leak in
        # Ctrl-C reaches this shell too (no job control here, one process
        # group); it must live on to record top's exit status
        echo "trap '' INT"
        printf 'export %q\n' "ASAN_OPTIONS=$ASAN_OPTIONS" "UBSAN_OPTIONS=$UBSAN_OPTIONS" \
            "GPULSE_FAKENVML_SCENARIO=$GPULSE_FAKENVML_SCENARIO" "${envs[@]}"
        printf '%q ' "$GPULSE" top --nvml-library "$FAKE_FULL" --hostname "$HOST" "$@"
        echo "2>$TMP/$name.err"
        echo "echo \$? >$TMP/$name.rc"
        echo "sleep 600"
    } >"$TMP/$name.sh"
    chmod +x "$TMP/$name.sh"
    TM new-session -d -s "$name" -x 160 -y 48 "$TMP/$name.sh"
}
screen() { TM capture-pane -p -t "$1" >"$2"; }
# shows NAME TEXT: the pane shows TEXT now (callers wait with wait_until)
shows() { screen "$1" "$TMP/$1.scr" && grep -qF -- "$2" "$TMP/$1.scr"; }
# same NAME ORDER [ARGS]: screen and snapshot at the same moment, compared
same() {
    local name=$1 order=$2; shift 2
    screen "$name" "$TMP/$name.scr"
    snapshot "$TMP/$name.json"
    python3 "$ROOT/tests/integration/top_screen.py" "$TMP/$name.json" "$TMP/$name.scr" --order "$order" "$@"
}

# no_colour FILE: capture-pane -e output holds no colour SGR (39/49, "default", are fine), but reverse video
no_colour() {
    python3 - "$1" <<'PY'
import re, sys
t = open(sys.argv[1], encoding="utf-8", errors="replace").read()
codes = set()
for m in re.finditer(r"\x1b\[([0-9;:]*)m", t):
    for p in (m.group(1) or "0").split(";"):
        if p.split(":")[0]:
            codes.add(int(p.split(":")[0]))
colour = sorted(c for c in codes if 30 <= c <= 38 or 40 <= c <= 48 or 90 <= c <= 97 or 100 <= c <= 107)
if colour:
    sys.exit("colour escapes %s under NO_COLOR" % colour)
if 7 not in codes:
    sys.exit("no reverse video for the table header (codes %s)" % sorted(codes))
PY
}

echo R >"$TMP/read.token"
run_top live NO_COLOR=1 -- --interval 500ms --server "$SERVER_URL" --read-token-file "$TMP/read.token" \
    --alerts-interval 1s
wait_until 20 shows live "ALERTS  2 active, 2 firing" || { cat "$TMP/live.scr" "$TMP/live.err"; fail "top never showed the alerts"; }
alerts "$TMP/live-alerts.json"
same live gpumem --width 160 --alerts "$TMP/live-alerts.json" || { cat "$TMP/live.scr"; fail "screen differs (above)"; }
grep -q '2 alerts' "$TMP/live.scr" || fail "no alert count in the header"
TM capture-pane -p -e -t live >"$TMP/live.esc"
no_colour "$TMP/live.esc" || fail "NO_COLOR not respected"
note "160x48 screen equals the snapshot and the alerts; NO_COLOR: no colour escapes"

# Sorting: P (pid), P again (reversed), > then M (GPU memory, largest first).
TM send-keys -t live P
wait_until 15 shows live "sort: PID  r reverse" || fail "P did not sort by PID"
same live pid || fail "PID order differs"
TM send-keys -t live P
wait_until 15 shows live "sort: PID (reversed)" || fail "P again did not reverse"
same live pid-rev || fail "reversed PID order differs"
TM send-keys -t live '>'
wait_until 15 shows live "sort: USER" || fail "> did not move to the next column"
TM send-keys -t live M
wait_until 15 shows live "sort: GPU MEM  r reverse" || fail "M did not sort by GPU memory"
same live gpumem || fail "GPU memory order differs"
note "sort keys P, P, >, M"

# Help, and back.
TM send-keys -t live h
wait_until 15 shows live "q            quit" || fail "h showed no help"
grep -q COMMAND "$TMP/live.scr" && fail "help and the table at once"
TM send-keys -t live Escape
wait_until 15 shows live "COMMAND" || fail "Esc did not close the help"
# The interval keys: 500ms -> 1s -> 500ms -> 250ms.
TM send-keys -t live +
wait_until 15 shows live "every 1s" || fail "+ did not slow sampling"
TM send-keys -t live - -
wait_until 15 shows live "every 250ms" || fail "- did not speed sampling"
note "help, Esc, +, -"

# Resize to 70x30: columns dropped, nothing wider than 70, the same figures.
TM resize-window -t live -x 70 -y 30
wait_until 15 shows live "   PID" || fail "no table after the resize"
narrow() { screen live "$TMP/live.scr" && [ "$(wc -l <"$TMP/live.scr")" -eq 30 ] && ! grep -q 'RSS' "$TMP/live.scr"; }
wait_until 15 narrow || { cat "$TMP/live.scr"; fail "the screen did not follow the resize"; }
# 30 rows leave room for 5 of the 8 processes: the first five, then, after End, the last five
same live gpumem --width 70 --window first || { cat "$TMP/live.scr"; fail "narrow screen differs"; }
TM send-keys -t live End
wait_until 15 shows live "   1001 " || fail "End did not scroll to the last process"
same live gpumem --width 70 --window last || { cat "$TMP/live.scr"; fail "scrolled screen differs"; }
hdr=$(grep -E '^ +PID' "$TMP/live.scr")
for c in USER RSS; do [[ $hdr == *"$c"* ]] && fail "$c still shown at 70 columns: $hdr"; done
for c in JOB "GPU MEM" COMMAND; do [[ $hdr == *"$c"* ]] || fail "$c dropped at 70 columns: $hdr"; done
tail -n 1 "$TMP/live.scr" | grep 'h help' >/dev/null || fail "no status line at the bottom after the resize"
note "resize to 70x30 and End: $hdr"

TM send-keys -t live q
wait_until 15 test -s "$TMP/live.rc" || fail "q did not quit"
[ "$(cat "$TMP/live.rc")" = 0 ] || { cat "$TMP/live.err"; fail "top exited $(cat "$TMP/live.rc")"; }
[ ! -s "$TMP/live.err" ] || { cat "$TMP/live.err"; fail "top wrote on stderr (ASan?)"; }
note "q: exit 0, nothing on stderr"

# Colour without NO_COLOR (so the check above can fail), and a wrong read
# token: the server's 401 in the status line, never fatal.
run_top colour -- --interval 500ms --server "$SERVER_URL" --read-token wrong --alerts-interval 1s
wait_until 20 shows colour "alerts: the server answered 401" || { cat "$TMP/colour.scr"; fail "no 401 in the status line"; }
same colour gpumem || fail "screen differs with a failing server"
TM capture-pane -p -e -t colour >"$TMP/colour.esc"
no_colour "$TMP/colour.esc" 2>/dev/null && fail "no colour without NO_COLOR (the NO_COLOR check proves nothing)"
# Ctrl-C leaves like q: through endwin, exit 0, a clean ASan run.
TM send-keys -t colour C-c
wait_until 15 test -s "$TMP/colour.rc" || fail "Ctrl-C did not stop top"
[ "$(cat "$TMP/colour.rc")" = 0 ] || { cat "$TMP/colour.err"; fail "top exited $(cat "$TMP/colour.rc") on Ctrl-C"; }
[ ! -s "$TMP/colour.err" ] || { cat "$TMP/colour.err"; fail "top wrote on stderr"; }
note "colour shown without NO_COLOR; 401 in the status line; Ctrl-C exits 0"
stop_agent

# --simulate: the same simulated node as an agent with the same spec and
# seed. Readings depend on the time since each one's first tick, so only
# what the seed fixes is compared: GPUs, models, each GPU's job and rank,
# and the processes (pid, GPU, job, rank).
start_agent --interval 200ms --simulate 1x4xH100 --seed 7 --steps-socket ''
"$GPULSE" top --once --width 160 --interval 200ms --simulate 1x4xH100 --seed 7 >"$TMP/sim.txt" 2>"$TMP/sim.err" ||
    { cat "$TMP/sim.err"; fail "top --once --simulate failed"; }
snapshot "$TMP/sim.json"
# --agent at that agent draws the same GPUs, jobs and processes.
"$GPULSE" top --once --width 160 --interval 200ms --agent "http://127.0.0.1:$AGENT_PORT" >"$TMP/simagent.txt" \
    2>"$TMP/sim.err" || { cat "$TMP/sim.err"; fail "top --once --agent (simulated) failed"; }
for txt in "$TMP/sim.txt" "$TMP/simagent.txt"; do
python3 - "$TMP/sim.json" "$txt" <<'PY' || fail "$txt: screen differs from the agent's snapshot"
import json, re, sys
snap = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
gpus = re.findall(r"^GPU (\d+)@(\S+) (.+?)  .*?job (\S+) rank (\d+)", text, re.M)
want = [(str(g["gpu"]), g["hostname"], g["model"], g["job"], str(g["rank"])) for g in snap["gpus"]]
assert sorted(gpus) == sorted(want), (gpus, want)
rows = re.findall(r"^\s*(\d+) -\s+(\S+)\s+(\d+)\s+(\d+)\s+\d+MiB", text, re.M)
want = [(str(p["pid"]), p.get("job", g["job"]), str(p.get("rank", g["rank"])), str(g["gpu"]))
        for g in snap["gpus"] for p in g["processes"]]
assert len(rows) == 4 and sorted(rows) == sorted(want), (rows, want)
PY
done
stop_agent
note "--simulate 1x4xH100 --seed 7: GPUs, jobs, ranks and processes as the agent's"
note "gpulse top ok"
