#!/usr/bin/env bash
# Runs the built test suites and prints one closing line:
#   N passed, N failed
# Suites: unit tests (each in its own process), fuzz corpus replay, then
# tests/integration/*.sh (each drives the real binary over HTTP).
# Filter integration scripts with GP_ONLY=name.
set -uo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
pass=0 fail=0

echo "== unit tests"
out=$(build/asan/unit-tests 2>&1); rc=$?
echo "$out" | grep -v '^ok ' || true
line=$(echo "$out" | grep -E '^unit: [0-9]+ passed, [0-9]+ failed$' | tail -1)
if [ -n "$line" ]; then
    p=$(echo "$line" | sed -E 's/unit: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
    pass=$((pass + p)); fail=$((fail + f))
    [ $rc -ne 0 ] && [ "$f" -eq 0 ] && fail=$((fail + 1))
else
    echo "FAIL unit tests did not finish (rc $rc)"; fail=$((fail + 1))
fi

echo "== fuzz corpus replay"
for bin in build/asan/fuzz-*; do
    name=${bin#build/asan/fuzz-}
    if out=$("$bin" "tests/fuzz/corpus/$name" 2>&1); then
        echo "ok   fuzz.$name ($(echo "$out" | tail -1))"; pass=$((pass + 1))
    else
        echo "FAIL fuzz.$name"; echo "$out" | tail -20; fail=$((fail + 1))
    fi
done

echo "== integration tests"
for t in tests/integration/test_*.sh; do
    name=$(basename "$t" .sh)
    [ -n "${GP_ONLY:-}" ] && [[ $name != *"$GP_ONLY"* ]] && continue
    log=$(mktemp)
    start=$(date +%s%N)
    # A script may ask for longer than 300 s with a "# gp-timeout: N" line.
    limit=$(sed -n 's/^# gp-timeout: *\([0-9][0-9]*\)$/\1/p' "$t" | head -1)
    if timeout "${limit:-300}" bash "$t" >"$log" 2>&1; then
        echo "ok   $name ($(( ($(date +%s%N) - start) / 1000000 )) ms)"; pass=$((pass + 1))
    else
        echo "FAIL $name"; tail -40 "$log"; fail=$((fail + 1))
    fi
    rm -f "$log"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
