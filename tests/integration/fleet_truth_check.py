#!/usr/bin/env python3
"""fleet_truth_check.py - unit checks of bench/fleet_truth.py on canned alerts.

usage: fleet_truth_check.py TRUTH.json  (the agent's --simulate-truth output)

Builds the alerts the detectors would raise for each planted fault (the
labels of their scope, docs/insight.md), then breaks them one way at a
time and checks the score: a perfect set, allowed extras, a missed fault,
a false alarm, wrong labels, an alert too vague to place, resolved alerts
and the API envelope, and the command's exit status.
"""
import copy
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
spec = importlib.util.spec_from_file_location("fleet_truth", os.path.join(ROOT, "bench", "fleet_truth.py"))
ft = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ft)

RANK_KINDS = {"memory_leak", "straggler", "allocator_fragmentation"}


def alert(kind, fault, **over):
    """The alert a detector of kind would raise about fault."""
    if kind in RANK_KINDS:
        labels = {"node": fault["node"], "job": fault["job"], "rank": fault["rank"], "pid": "123456"}
    else:
        labels = {"node": fault["node"], "gpu": fault["gpu"], "job": fault["job"], "rank": fault["rank"]}
    labels.update(over)
    return {"id": "x", "kind": kind, "state": "firing", "labels": labels,
            "summary": "%s on %s/%s" % (kind, fault["node"], fault["gpu"])}


def perfect(truth):
    return [alert(f["expect"][0], f) for f in truth["faults"]]


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def main():
    truth = json.load(open(sys.argv[1]))
    faults = {f["kind"]: f for f in truth["faults"]}
    check(len(faults) == 6, "want six faults, got %d" % len(faults))

    rows, fa, p, r = ft.score(truth, perfect(truth))
    check((p, r, fa) == (1, 1, []), "one expected alert per fault scores 1/1 (%s %s %s)" % (p, r, fa))
    check(all(row["found"] for row in rows), "every fault found")

    # allowed extras: the straggler's throttling, the leak near exhaustion; both leak kinds
    extra = perfect(truth) + [alert("gpu_throttled", faults["straggler"]),
                              alert("memory_near_exhaustion", faults["leak"]),
                              alert("oom_predicted", faults["leak"])]
    _, fa, p, r = ft.score(truth, extra)
    check((p, r) == (1, 1), "allowed kinds are not false alarms (%s %s)" % (p, r))

    # an allowed kind alone does not find a fault
    alone = [a for a in perfect(truth) if a["kind"] != "straggler"] + [alert("gpu_throttled", faults["straggler"])]
    rows, _, p, r = ft.score(truth, alone)
    check(abs(r - 5 / 6) < 1e-9 and p == 1, "throttling alone does not find the straggler (%s %s)" % (p, r))
    check(not [x for x in rows if x["fault"]["kind"] == "straggler"][0]["found"], "straggler marked found")

    # a missed fault
    missed = [a for a in perfect(truth) if a["kind"] != "idle_gpu_allocated"]
    _, _, p, r = ft.score(truth, missed)
    check(abs(r - 5 / 6) < 1e-9 and p == 1, "missed idle: recall 5/6 (%s %s)" % (p, r))

    # a false alarm: straggler on a healthy rank of the straggler's job
    s = faults["straggler"]
    other = str((int(s["rank"]) + 1) % 8)
    fa_alerts = perfect(truth) + [alert("straggler", s, rank=other)]
    _, fa, p, r = ft.score(truth, fa_alerts)
    check(r == 1 and abs(p - 6 / 7) < 1e-9 and len(fa) == 1, "false straggler: precision 6/7 (%s %s)" % (p, r))

    # the right kind on the wrong GPU is a false alarm and a miss
    e = faults["ecc"]
    wrong = [a for a in perfect(truth) if a["kind"] != "gpu_hardware_errors"]
    wrong.append(alert("gpu_hardware_errors", e, gpu=str((int(e["gpu"]) + 1) % 8)))
    _, fa, p, r = ft.score(truth, wrong)
    check(abs(r - 5 / 6) < 1e-9 and abs(p - 5 / 6) < 1e-9 and len(fa) == 1,
          "ECC on the wrong GPU (%s %s)" % (p, r))

    # the wrong kind on the right GPU is a false alarm
    t = faults["throttled"]
    _, fa, p, _ = ft.score(truth, perfect(truth) + [alert("memory_leak", t)])
    check(len(fa) == 1 and p < 1, "a leak alert on the throttled card is a false alarm")

    # a label set that names neither node+gpu nor job+rank cannot be placed
    vague = perfect(truth)
    vague[0] = {"kind": vague[0]["kind"], "state": "firing", "labels": {"node": vague[0]["labels"]["node"]}}
    _, fa, _, r = ft.score(truth, vague)
    check(r < 1 and len(fa) == 1, "a node-only alert does not count")

    # envelope, resolved alerts dropped; nothing firing: recall 0, precision 1
    env = {"status": "success", "data": perfect(truth) + [dict(alert("straggler", s, rank=other), state="resolved")]}
    _, fa, p, r = ft.score(truth, ft.load_alerts(env))
    check((p, r) == (1, 1), "envelope and resolved alerts")
    _, _, p, r = ft.score(truth, [])
    check((p, r) == (1, 0), "no alerts: precision 1, recall 0")
    try:
        ft.load_alerts({"data": {}})
        check(False, "a non-list data is refused")
    except ValueError:
        pass

    # info alerts (advice on healthy work) are set apart unless asked for
    sat = dict(alert("gpu_saturated", faults["leak"], gpu="0"), severity="info")
    scored, info = ft.split_info(perfect(truth) + [sat])
    check(len(info) == 1 and ft.score(truth, scored)[2:] == (1, 1), "info alert not set apart")
    scored, info = ft.split_info(perfect(truth) + [sat], include_info=True)
    check(not info and ft.score(truth, scored)[2] < 1, "--include-info does not score info alerts")

    # the report names each cause and the false alarm
    out = io.StringIO()
    rows, fa, p, r = ft.score(truth, fa_alerts)
    ft.report(rows, fa, p, r, len(fa_alerts), out)
    text = out.getvalue()
    check("precision 0.857  recall 1.000  (6 faults, 7 firing alerts, 1 false alarms)" in text, text)
    check("false alarm: straggler on %s %s#%s" % (s["node"], s["job"], other) in text, text)
    check(text.count("cause: ") == 6, text)

    # the command: 0 perfect, 1 not, 2 unreadable
    with tempfile.TemporaryDirectory() as d:
        good, bad, junk = (os.path.join(d, n) for n in ("good.json", "bad.json", "junk.json"))
        json.dump({"data": perfect(truth) + [sat]}, open(good, "w"))
        json.dump(missed, open(bad, "w"))
        open(junk, "w").write("{")
        cmd = [sys.executable, os.path.join(ROOT, "bench", "fleet_truth.py"), sys.argv[1]]
        for path, want in ((good, 0), (bad, 1), (junk, 2)):
            rc = subprocess.run(cmd + [path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            check(rc == want, "fleet_truth.py on %s: exit %d, want %d" % (os.path.basename(path), rc, want))
        rc = subprocess.run(cmd[:2] + ["--include-info"] + cmd[2:] + [good], stdout=subprocess.DEVNULL).returncode
        check(rc == 1, "--include-info: the saturated alert is a false alarm")
    print("  - fleet_truth scoring: perfect, extras, misses, false alarms, wrong labels, exit codes")


if __name__ == "__main__":
    main()
