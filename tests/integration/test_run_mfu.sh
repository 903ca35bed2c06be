#!/usr/bin/env bash
# MFU end to end: a real PyTorch loop (Debian's python3-torch, CPU) under
# gpulse run declares its model (gpulse.model(params=N), bf16). With the
# stand-in NVML's H100 held by the job, the report's MFU equals the hand
# computation 6·N·tokens/s ÷ 989.4e12 (the H100 SXM's dense bf16 peak,
# gpumodels.c) from the script's own token rate, within 2 %, and the text
# and HTML reports show it and explain the gap to the GPU's activity;
# without a GPU, MFU is n/a with its reason.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import torch' 2>/dev/null || fail "Debian's python3-torch is not installed (scripts/deps.sh test)"
[ -f "$FAKE_FULL" ] || fail "no stand-in NVML at $FAKE_FULL (make fakenvml)"
export PYTHONPATH=$ROOT/python
TRAIN=$ROOT/tests/integration/py/train_mfu.py
JOB=mfu-e2e

# The GPU's process: one of the job by its environment (jobattr.c reads
# GPULSE_RUN_ID), started first so the scenario can name its pid.
env GPULSE_RUN_ID=$JOB sleep 120 &
HOLDER=$!
trap 'kill $HOLDER 2>/dev/null; cleanup' EXIT
cat >"$TMP/h100.scn" <<SCN
gpu 0
  name "NVIDIA H100 80GB HBM3"
  uuid GPU-0f0f0000-0000-4000-8000-000000000000
  bus 00000000:18:00.0
  minor 0
  mem_total 85520809984
  mem_used 8589934592
  util_gpu 90
  proc $HOLDER 8589934592 90 40
SCN

# 1. An H100 held: MFU against the hand computation.
GPULSE_FAKENVML_SCENARIO=$TMP/h100.scn "$GPULSE" run --quiet --job $JOB --interval 200ms \
    --nvml-library "$FAKE_FULL" --json "$TMP/doc.json" --html "$TMP/report.html" \
    -- $PY "$TRAIN" "$TMP/self.json" 300 2>"$TMP/report.txt" ||
    { cat "$TMP/report.txt"; fail "gpulse run exited non-zero"; }
python3 - "$TMP/doc.json" "$TMP/self.json" <<'PYEOF' || { cat "$TMP/report.txt"; fail "MFU disagrees with the hand computation"; }
import json, sys
doc, me = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t = doc["totals"]
ok = [g["model"] for g in doc["gpus"]] == ["NVIDIA H100 80GB HBM3"]
print(f"  GPUs: {[g['model'] for g in doc['gpus']]}")
ok &= t["precision"] == "bf16" and t["model_flops_per_token"] == 6 * me["params"]
ok &= t["peak_flops_per_second"] == 989.4e12
want = 6 * me["params"] * me["tokens_per_second"] / 989.4e12
got = t["mfu"]
close = got is not None and abs(got - want) <= 0.02 * want
print(f"  MFU: report {got} hand {want} (6 x {me['params']} x {me['tokens_per_second']:.1f} / 989.4e12)"
      f" {'ok' if close else 'DIFFERS'}")
ok &= close and t["mfu_reason"] is None
ok &= t["mfu_gap"] is not None and t["mfu_gap"].startswith("GPU activity 90% but MFU 0.0%")
print(f"  gap: {t['mfu_gap']}")
sys.exit(0 if ok else 1)
PYEOF
grep -Eq '^  MFU +0\.0% \(model [0-9.e+-]+ TFLOP/s of a 989\.4 TFLOP/s bf16 peak\)$' "$TMP/report.txt" ||
    fail "the text report has no MFU line: $(grep -i mfu "$TMP/report.txt")"
grep -q '^  MFU gap .*GPU activity 90% but MFU 0.0%' "$TMP/report.txt" || fail "the text report does not explain the gap"
grep -q 'GPU activity 90% but MFU 0.0%' "$TMP/report.html" || fail "the HTML report does not explain the gap"

# 2. No GPU (no NVML here): n/a, and why.
"$GPULSE" run --quiet --job mfu-nogpu --interval 200ms --nvml-library "$TMP/none.so" \
    --json "$TMP/nogpu.json" -- $PY "$TRAIN" "$TMP/self2.json" 20 2>"$TMP/nogpu.txt" ||
    { cat "$TMP/nogpu.txt"; fail "gpulse run without a GPU exited non-zero"; }
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; sys.exit(not (t["mfu"] is None and t["mfu_reason"] == "the job held no GPU" and t["model_flops_per_token"] > 0))' \
    "$TMP/nogpu.json" || fail "without a GPU MFU should be n/a because the job held no GPU"
grep -q '^  MFU  *n/a (the job held no GPU)$' "$TMP/nogpu.txt" || fail "the text report does not say why MFU is n/a"
note "MFU equals 6·N·tokens/s ÷ 989.4e12 on the stand-in H100; n/a with its reason without a GPU"
