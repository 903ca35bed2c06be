#!/usr/bin/env bash
# The GPU validation kit (scripts/gpu-validate, docs/validation.md) end to
# end here, so a session lent a GPU only runs it: the pack step (the
# release binary and every library it needs but glibc's and NVML, loaded
# from the kit), then the run step with --stand-in --quick against the
# stand-in NVML and CPU PyTorch: every section in the table, plausible
# values, the job attributed, at most 8 result files, none in a folder.
# gp-timeout: 300
source "$(dirname "$0")/lib.sh"
KIT=$TMP/kit
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "Debian's python3-torch is not installed (scripts/deps.sh test)"
[ -f "$FAKE_FULL" ] || fail "no stand-in NVML: make fakenvml"

# 1. pack
"$ROOT/scripts/gpu-validate" pack --kit "$KIT" >"$TMP/pack.txt" 2>&1 || { cat "$TMP/pack.txt"; fail "pack failed"; }
note "$(cat "$TMP/pack.txt")"
[ -x "$KIT/bin/gpulse" ] || fail "no gpulse in the kit"
cmp -s "$KIT/bin/gpulse" "$ROOT/build/rel/gpulse" || fail "the kit's gpulse is not build/rel/gpulse"
ls "$KIT/lib" | grep -E '^(libc|libm|libpthread|libdl|librt|ld-linux)[.-]' && fail "glibc's own libraries were packed"
ls "$KIT/lib" | grep nvidia-ml >/dev/null && fail "libnvidia-ml was packed"
for lib in libmicrohttpd.so.12 libcurl.so.4 libsqlite3.so.0 libjansson.so.4; do
    [ -f "$KIT/lib/$lib" ] || fail "$lib is missing from the kit"
done
# every library gpulse needs, apart from glibc's, comes from the kit
/lib64/ld-linux-x86-64.so.2 --library-path "$KIT/lib" --list "$KIT/bin/gpulse" >"$TMP/list.txt"
grep '=>' "$TMP/list.txt" | grep -vE "=> $KIT/lib/|^\s*(libc|libm|libresolv)\.so" &&
    fail "libraries not loaded from the kit (above)"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); sys.exit(not (m["libs"] and m["sha256"] and m["needs_glibc"]))' \
    "$KIT/MANIFEST.json" || fail "MANIFEST.json incomplete"

# The nvidia-smi readers on canned output (no nvidia-smi runs here).
"$ROOT/scripts/gpu-validate" selftest >"$TMP/selftest.txt" 2>&1 || { cat "$TMP/selftest.txt"; fail "selftest failed"; }
note "$(tail -1 "$TMP/selftest.txt")"

# 2. the run, stand-in
OUTD=$TMP/out
start=$SECONDS
"$ROOT/scripts/gpu-validate" run --stand-in --quick --kit "$KIT" --out "$OUTD" >"$TMP/run.txt" 2>"$TMP/run.err" ||
    { tail -30 "$TMP/run.err"; cat "$TMP/run.txt"; fail "gpu-validate run --stand-in exited non-zero"; }
note "stand-in run: $((SECONDS - start)) s"
[ "$(find "$OUTD" -mindepth 1 | wc -l)" -le 8 ] || { ls -R "$OUTD"; fail "more than 8 result files"; }
[ -z "$(find "$OUTD" -mindepth 1 -type d)" ] || fail "result files in a subfolder"
for f in results.md results.json logs.txt gpulse-run.json agent-samples.json; do
    [ -s "$OUTD/$f" ] || fail "no $f"
done
python3 - "$OUTD" "$FAKE_FULL" <<'PYEOF' || { cat "$OUTD/results.md"; fail "the stand-in table is incomplete or implausible"; }
import json, os, sys
out = sys.argv[1]
md = open(os.path.join(out, "results.md")).read()
j = json.load(open(os.path.join(out, "results.json")))
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
for h in ("## 1. Every field", "## 2. GPM", "## 3. gpulse run", "## 4. Training slowdown", "## 5. Agent cost", "## 6. Goodput",
          "## 5b. What one NVML call costs"):
    want(h in md, f"section '{h}' missing")
want("ERROR" not in md and not j["errors"], f"errors: {j['errors']}")
want(j["header"]["mode"].startswith("STAND-IN") and j["header"]["NVML library"] == sys.argv[2], "not the stand-in NVML")
r = j["results"]
# 1: the scenario's values through the agent; every field has a row
f = {row[0]: row for row in r["fields"]}
want(len(f) >= 30, f"only {len(f)} field rows")
want(f["memory used MiB"][5] == "8192 / 8192", f"memory used: {f['memory used MiB'][5]}")
want(f["GPU utilization %"][5] == "97 / 97", "GPU utilization")
want(f["power W (agent vs power.draw)"][5] == "450 / 450", "power")
want(all(row[9].startswith("no nvidia-smi") for n, row in f.items() if not n.startswith("energy")), "nvidia-smi columns")
proc = [row for n, row in f.items() if n.startswith("process memory MiB")]
want(proc and proc[0][5] == "2048", f"training process memory: {proc}")
# 2: the phases seen, each expectation met
want(len(r["gpm"]["rows"]) == 3 and r["gpm"]["all_ok"], f"gpm: {r['gpm']}")
want(all(int(row[2]) >= 5 for row in r["gpm"]["rows"]), "too few samples per phase")
# 3: gpulse run agrees with the script, job and rank attributed
run = {row[0]: row for row in r["run"]}
for k in ("steps", "data wait ratio", "steps per second", "job document ranks", "agent's process series labels"):
    want(run.get(k, [None] * 4)[3] == "agree", f"run: {k}: {run.get(k)}")
# 4: three configurations, steps/s measured in each window
s = r["slowdown"]["per_window"]
want(set(s) == {"off", "1s + GPM", "100ms + GPM"} and all(len(v) == 2 and min(v) > 0 for v in s.values()), f"slowdown: {s}")
# 5: ticks counted and timed; every NVML call answered
for row in r["cost"]["agent"]:
    want(int(row[1]) > 0 and row[3] != "n/a", f"cost: {row}")
calls = r["cost"]["nvml_calls"]
want(len(calls) >= 10 and all(c[1] in ("0", "-") for c in calls), f"nvml calls: {calls}")
# 6: goodput across a restart and MFU against the script; the hang found and rank 1 named
jobs = {row[0]: row for row in r["jobs"]}
for k in ("attempts, last step", "goodput productive s", "goodput lost s", "goodput checkpoint s", "goodput ratio",
          "MFU", "job_hang fired", "job_hang names rank 1 (Flight Recorder)"):
    want(jobs.get(k, [None] * 4)[3] == "agree", f"jobs: {k}: {jobs.get(k)}")
want(jobs.get("Hugging Face callback", [None, None])[1] == "skipped", "the HF callback without transformers")
doc = json.load(open(os.path.join(out, "gpulse-run.json")))
want(doc["id"] == "gpu-validate" and doc["state"] == "finished", "job document")
if bad:
    print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
note "every section present, values plausible"

# 3. without a kit the run says what to do
rc=0; "$ROOT/scripts/gpu-validate" run --stand-in --kit "$TMP/nokit" --out "$TMP/o2" 2>"$TMP/nokit.err" || rc=$?
[ $rc -eq 1 ] && grep -q "no packed gpulse in $TMP/nokit: run 'scripts/gpu-validate pack'" "$TMP/nokit.err" ||
    { cat "$TMP/nokit.err"; fail "a missing kit is not named (rc $rc)"; }
