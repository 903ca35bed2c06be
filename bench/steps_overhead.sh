#!/usr/bin/env bash
# steps_overhead.sh - what reporting a step costs the training loop.
#
# Starts an agent (build/rel/gpulse, else build/asan/gpulse) with its step
# socket in a temp dir as the receiver, then times, amortized over many
# calls: from C, gpulse_step() (include/gpulse/steps.h) next to an empty
# loop iteration; from Python (/usr/bin/python3 and python/gpulse), a
# `with gpulse.step()` block and report_step() next to an empty loop
# iteration. Prints the numbers and the goals (C < 2 us, Python < 20 us).
# Not part of the test suite: prints, asserts nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPULSE=${GPULSE:-$ROOT/build/rel/gpulse}
[ -x "$GPULSE" ] || GPULSE=$ROOT/build/asan/gpulse
[ -x "$GPULSE" ] || { echo "build gpulse first (make, or make build/asan/gpulse)" >&2; exit 1; }
PY=${PY:-/usr/bin/python3}
NC=${NC:-1000000}
NPY=${NPY:-200000}
TMP=$(mktemp -d /tmp/gpulse-bench-XXXXXX)
AGENT=
cleanup() { [ -n "$AGENT" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
export ASAN_OPTIONS=detect_leaks=0
export GPULSE_STEPS_SOCKET=$TMP/steps.sock
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$GPULSE" agent --listen "127.0.0.1:$PORT" --steps-socket "$GPULSE_STEPS_SOCKET" --interval 1s \
    >"$TMP/agent.log" 2>&1 &
AGENT=$!
for _ in $(seq 100); do [ -S "$GPULSE_STEPS_SOCKET" ] && break; sleep 0.1; done
[ -S "$GPULSE_STEPS_SOCKET" ] || { cat "$TMP/agent.log"; exit 1; }

cat >"$TMP/bench.c" <<'CEOF'
#include <gpulse/steps.h>
#include <stdio.h>
#include <stdlib.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    volatile double sink = 0;
    double t0 = now();
    for (unsigned long i = 1; i <= n; i++) {
        sink += (double)i * 1e-9;
        __asm__ volatile("" ::: "memory");
    }
    double empty = (now() - t0) / (double)n * 1e9;
    struct gpulse_steps g;
    gpulse_steps_open(&g);
    t0 = now();
    for (unsigned long i = 1; i <= n; i++) {
        sink += (double)i * 1e-9;
        gpulse_step(&g, i, 0.0834 + (double)(i % 7) * 1e-4, 32, 65536, 2.4131 - (double)i * 1e-7,
                    0.0121);
    }
    double step = (now() - t0) / (double)n * 1e9;
    unsigned long long sent = g.sent_total, lost = g.lost_total;
    /* A slow loop (steps longer than 20 ms): every call sends a datagram.
     * 1 ms apart here so the receiver keeps up; the pause is not timed. */
    unsigned long m = 2000;
    double busy = 0;
    for (unsigned long i = 1; i <= m; i++) {
        usleep(1000);
        g.last_flush_ns = 0; /* as if 20 ms had passed */
        double a = now();
        gpulse_step(&g, n + i, 0.5, 32, 65536, 2.4131, 0.0121);
        busy += now() - a;
    }
    gpulse_close(&g);
    printf("C       empty loop iteration        %8.1f ns\n", empty);
    printf("C       gpulse_step()               %8.1f ns   (goal < 2000 ns)  "
           "%llu datagrams sent, %llu records dropped\n",
           step, sent, lost);
    printf("C       gpulse_step() sending each  %8.1f ns   (a loop slower than 20 ms/step: one "
           "datagram per call)\n", busy / (double)m * 1e9);
    return 0;
}
CEOF
cc -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT/include" -o "$TMP/bench" "$TMP/bench.c" -lm
echo "receiver: $GPULSE agent; $(nproc) CPUs; $(uname -r)"
"$TMP/bench" "$NC"

PYTHONPATH=$ROOT/python "$PY" - "$NPY" <<'PYEOF'
import sys, time
import gpulse
n = int(sys.argv[1])
perf = time.perf_counter
t0 = perf()
for i in range(n):
    pass
empty = (perf() - t0) / n * 1e6
t0 = perf()
for i in range(n):
    with gpulse.step(samples=32, tokens=65536):
        pass
block = (perf() - t0) / n * 1e6
t0 = perf()
for i in range(n):
    gpulse.report_step(0.0834, samples=32, tokens=65536, loss=2.4131)
rep = (perf() - t0) / n * 1e6
gpulse.flush()
m, busy = 2000, 0.0
for i in range(m):
    time.sleep(0.001)
    gpulse._client._last_flush = 0.0  # as if 20 ms had passed: this call sends
    a = perf()
    gpulse.report_step(0.5, samples=32, tokens=65536, loss=2.4131)
    busy += perf() - a
print("Python  empty loop iteration        %8.3f us   (%s)" % (empty, sys.version.split()[0]))
print("Python  with gpulse.step(): block   %8.3f us   (goal < 20 us)" % block)
print("Python  gpulse.report_step()        %8.3f us   (goal < 20 us)  %d records dropped"
      % (rep, gpulse.lost()))
print("Python  report_step() sending each  %8.3f us   (a loop slower than 20 ms/step)" % (busy / m * 1e6))
PYEOF
echo "agent: $(curl -sf "http://127.0.0.1:$PORT/metrics" | grep -E '^gpulse_steps_(records|malformed)_total' | tr '\n' ' ')"
