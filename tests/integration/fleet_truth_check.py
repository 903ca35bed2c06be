#!/usr/bin/env python3
"""fleet_truth_check.py - unit checks of bench/fleet_truth.py on canned alerts.

usage: fleet_truth_check.py TRUTH.json  (the agent's --simulate-truth output)

Builds the alerts the detectors would raise for each planted fault (the
labels of their scope, docs/insight.md), then breaks them one way at a
time and checks the score: a perfect set, allowed extras, a missed fault,
a false alarm, wrong labels, an alert too vague to place, resolved alerts
and the API envelope, faults of a whole job (a hang that must name its
rank, a crash loop its lost work), the goodput and MFU comparison, and
the command's exit status.
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
JOB_KINDS = {"job_hang", "low_goodput"}


def alert(kind, fault, **over):
    """The alert a detector of kind would raise about fault."""
    if kind in JOB_KINDS:
        labels = {"job": fault["job"]}
        labels.update(over)
        return {"id": "x", "kind": kind, "state": "firing", "labels": labels,
                "summary": "job %s: %s" % (fault["job"], fault.get("says", "lost"))}
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
    n = len(faults)
    check(n == 9, "want nine faults, got %d" % n)

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
    alone = [alert(f["expect"][0], f) for f in truth["faults"] if f["kind"] != "straggler"] + \
        [alert("gpu_throttled", faults["straggler"])]
    rows, _, p, r = ft.score(truth, alone)
    check(abs(r - (n - 1) / n) < 1e-9 and p == 1, "throttling alone does not find the straggler (%s %s)" % (p, r))
    check(not [x for x in rows if x["fault"]["kind"] == "straggler"][0]["found"], "straggler marked found")

    # a missed fault
    missed = [a for a in perfect(truth) if a["kind"] != "idle_gpu_allocated"]
    _, _, p, r = ft.score(truth, missed)
    check(abs(r - (n - 1) / n) < 1e-9 and p == 1, "missed idle: recall 8/9 (%s %s)" % (p, r))

    # a false alarm: straggler on a healthy rank of the straggler's job
    s = faults["straggler"]
    other = str((int(s["rank"]) + 1) % 8)
    fa_alerts = perfect(truth) + [alert("straggler", s, rank=other)]
    _, fa, p, r = ft.score(truth, fa_alerts)
    check(r == 1 and abs(p - n / (n + 1)) < 1e-9 and len(fa) == 1, "false straggler: precision 9/10 (%s %s)" % (p, r))

    # the right kind on the wrong GPU is a false alarm and a miss
    e = faults["ecc"]
    wrong = [a for a in perfect(truth) if a["kind"] != "gpu_hardware_errors"]
    wrong.append(alert("gpu_hardware_errors", e, gpu=str((int(e["gpu"]) + 1) % 8)))
    _, fa, p, r = ft.score(truth, wrong)
    check(abs(r - (n - 1) / n) < 1e-9 and abs(p - (n - 1) / n) < 1e-9 and len(fa) == 1,
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

    # a whole job's faults: the job alone places the alert; the hang's must
    # name the stuck rank first, the crash loop's its lost work
    h, rs = faults["hang"], faults["restart"]
    check(h["scope"] == "job" and h["says"] == "rank " + h["rank"] and rs["says"] == "lost", "job faults' truth")
    rows = ft.score(truth, perfect(truth))[0]
    check(all(r["found"] for r in rows), "job-scope alerts found")
    other_rank = str((int(h["rank"]) + 1) % 8)
    for summary, found in (("stopped first: rank %s (last step 3), rank %s" % (other_rank, h["rank"]), False),
                           ("Flight Recorder: rank %s never entered collective 7; all 8 ranks stopped" % h["rank"], True),
                           ("job hangs: 8 ranks, every GPU spinning", False), ("rank %s0 stopped" % h["rank"], False)):
        al = [a for a in perfect(truth) if a["kind"] != "job_hang"]
        al.append(dict(alert("job_hang", h), summary=summary))
        rows, fa, p, r = ft.score(truth, al)
        check([x for x in rows if x["fault"]["kind"] == "hang"][0]["found"] == found and p == 1,
              "a hang alert saying %r: found %s" % (summary, not found))
    al = [a for a in perfect(truth) if a["kind"] != "low_goodput"] + \
        [dict(alert("low_goodput", rs), summary="the biggest badput is idle (60 %)")]
    check(ft.score(truth, al)[3] < 1, "a crash loop's low goodput that does not say lost is not found")
    # the hang's idle GPU and low goodput are true of it; low goodput on a healthy job is not
    hang_idle = alert("idle_gpu_allocated", h)
    check(ft.score(truth, perfect(truth) + [hang_idle, alert("low_goodput", h)])[2] == 1, "hang's extras")
    healthy = [j for j in truth["jobs"] if not j["fault"]][0]
    lg = dict(alert("low_goodput", h), labels={"job": healthy["job"]})
    check(len(ft.score(truth, perfect(truth) + [lg])[1]) == 1, "low goodput on a healthy job is a false alarm")
    # a job alone names a one-rank job (the starved one's low goodput), not a rank of a node job
    st = faults["starved"]
    check(ft.score(truth, perfect(truth) + [alert("low_goodput", st)])[2] == 1, "starved job's low goodput")
    sg = faults["straggler"]
    check(len(ft.score(truth, perfect(truth) + [alert("low_goodput", sg)])[1]) == 1,
          "a job-only alert on a fault of one rank of a node job is a false alarm")

    # goodput and MFU: the truth's closed forms against the job documents
    jobs = {j["job"]: j for j in truth["jobs"]}
    g, m = ft.expected_figures(truth, jobs[rs["job"]], 600)
    g0, _ = ft.expected_figures(truth, jobs[healthy["job"]], 600)
    check(g < 0.5 < 0.85 < g0 < 0.95 and 0.3 < m < 0.6, "the crash loop's goodput %s, a healthy job's %s" % (g, g0))
    gh, mh = ft.expected_figures(truth, jobs[h["job"]], 1200)
    check(gh < 0.2 and abs(mh - ft.expected_figures(truth, jobs[h["job"]], 600)[1]) < 1e-9,
          "a hang lowers goodput, not MFU (the stepping span ends at the hang)")
    check(ft.expected_figures(truth, jobs[faults["idle"]["job"]], 600) == (None, None), "the idle job has no figures")
    with tempfile.TemporaryDirectory() as d:
        for j in truth["jobs"]:
            g, m = ft.expected_figures(truth, j, 600)
            if j["job"] == rs["job"]:
                g += 0.03  # off
            json.dump({"data": {"goodput": {"ratio": g}, "totals": {"mfu": m}}}, open(os.path.join(d, j["job"] + ".json"), "w"))
        os.remove(os.path.join(d, healthy["job"] + ".json"))
        rows = ft.figures(truth, d, 600)
        off = sorted(r["job"] for r in rows if not (r["goodput"][2] and r["mfu"][2]))
        check(len(rows) == len(truth["jobs"]) - 1 and off == sorted([rs["job"], healthy["job"]]),
              "figures off: %s" % off)
        out = io.StringIO()
        check(ft.report_figures(rows, 600, out) == 3, out.getvalue())
        check("figures: %d of %d jobs' goodput and %d of %d jobs' MFU match" % (len(rows) - 2, len(rows), len(rows) - 1,
                                                                                 len(rows)) in out.getvalue(), out.getvalue())

    # the report names each cause and the false alarm
    out = io.StringIO()
    rows, fa, p, r = ft.score(truth, fa_alerts)
    ft.report(rows, fa, p, r, len(fa_alerts), out)
    text = out.getvalue()
    check("precision 0.900  recall 1.000  (9 faults, 10 firing alerts, 1 false alarms)" in text, text)
    check("false alarm: straggler on %s %s#%s" % (s["node"], s["job"], other) in text, text)
    check(text.count("cause: ") == n, text)
    # per detector: the false straggler counts against straggler alone
    det = ft.per_detector(rows, fa, fa_alerts)
    check(det["straggler"] == (3, 1, 2, 2) and det["job_hang"] == (1, 0, 1, 1), det)
    check(det["memory_leak"] == (1, 0, 1, 1) and det["oom_predicted"] == (0, 0, 1, 0), det)
    out = io.StringIO()
    ft.report(rows, fa, p, r, len(fa_alerts), out, alerts=fa_alerts)
    check("  straggler                  3 alerts  1 false  precision 0.667  2 faults 2 found  recall 1.000" in
          out.getvalue(), out.getvalue())

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
