#!/usr/bin/env python3
"""fleet_truth.py - scores firing alerts against a simulation's ground truth.

The truth is what `gpulse agent|up --simulate SPEC --simulate-truth FILE`
writes (docs/simulate.md): the planted faults, each with its node, gpu,
job and rank, the alert kinds that must see it (`expect`) and the kinds
that are true of it too (`allow`: the straggler's card is throttled; a
leak also nears exhaustion). The alerts are the `data` of GET
/api/v1/alerts?state=firing (docs/insight.md).

Matching: an alert belongs to a fault when its kind is in the fault's
expect or allow list and every identifying label it carries (node, gpu,
job, rank) equals the fault's, with at least node+gpu or job+rank there
(a fault of scope "job", a hang or a crash loop, also takes an alert that
names its job alone, and so does a fault in a job of one rank). A fault is found (recall) when an alert of an
`expect` kind belongs to it and, where the truth says what that alert
must say (`says`), its summary says it: a badput's name ("lost"), or
the rank to look at ("rank 4": the first rank the summary names). Precision is the share of scored firing alerts that belong to some
fault: anything else is a false alarm. Alerts of severity "info"
(gpu_saturated on a busy healthy card, tensor_cores_unused...) are advice
about healthy work, not fault reports: they are counted apart and not
scored unless --include-info is given. Exit status (as a command): 0 when
recall and precision are both 1, 1 otherwise, 2 on bad input.

Goodput and MFU (--jobs DIR --elapsed S): DIR holds the job documents
(GET /api/v1/jobs/ID, one JOB.json each) read S seconds after the
simulation's first tick (or the seconds in JOB.at, when the bench wrote
down each document's own time). Each job's goodput share and MFU are worked out
here from the truth's timelines, independently of gpulse (the same
closed forms the simulator plays: steps at each rank's step time,
checkpoints, the hang, the crash loop or OOMs whose repeated steps are
lost), and compared: goodput within GOODPUT_TOL, MFU within MFU_TOL of
it, at that time or up to LAG_S before (what the store had seen). A job off, or without the figure, counts as a miss.

Usage: fleet_truth.py [--include-info] [--jobs DIR --elapsed S] TRUTH.json
ALERTS.json   (ALERTS: the API's envelope or its bare data list)
"""
import json
import math
import os
import re
import sys

GOODPUT_TOL = 0.02  # absolute, of the share
MFU_TOL = 0.03      # relative
LAG_S = 2.0         # a document sees the counters up to a sample (1 s) and a store flush behind

IDENT = ("node", "gpu", "job", "rank")


def load_alerts(doc):
    """The firing alerts from the API envelope ({"data": [...]}) or a bare list."""
    if isinstance(doc, dict):
        doc = doc.get("data")
    if not isinstance(doc, list) or not all(isinstance(a, dict) for a in doc):
        raise ValueError("alerts: expected a list of objects or an envelope with one")
    return [a for a in doc if a.get("state", "firing") == "firing"]


def split_info(alerts, include_info=False):
    """(scored, info): info-severity alerts apart unless include_info."""
    if include_info:
        return alerts, []
    return ([a for a in alerts if a.get("severity") != "info"],
            [a for a in alerts if a.get("severity") == "info"])


def belongs(alert, fault, whole_job=False):
    """Whether alert describes fault (see the module comment); whole_job:
    an alert that names the fault's job alone names it (a fault of the
    whole job, or one in a job of one rank)."""
    kinds = set(fault["expect"]) | set(fault.get("allow", []))
    if alert.get("kind") not in kinds:
        return False
    labels = alert.get("labels") or {}
    for k in IDENT:
        if k in labels and str(labels[k]) != str(fault[k]):
            return False
    if whole_job and "job" in labels:
        return True
    return ("node" in labels and "gpu" in labels) or ("job" in labels and "rank" in labels)


def says(alert, fault):
    """Whether alert's summary says what the fault's truth wants said."""
    want = fault.get("says")
    if not want:
        return True
    text = alert.get("summary", "")
    if re.fullmatch(r"rank \d+", want):
        m = re.search(r"\brank \d+\b", text)
        return bool(m) and m.group(0) == want
    return want in text


def score(truth, alerts):
    """Returns (rows, false_alarms, precision, recall) for truth and firing alerts."""
    faults = truth["faults"]
    solo = {j["job"] for j in truth.get("jobs", []) if j.get("ranks") == 1}
    rows, used = [], set()
    for f in faults:
        whole = f.get("scope") == "job" or f["job"] in solo
        mine = [i for i, a in enumerate(alerts) if belongs(a, f, whole)]
        used.update(mine)
        fired = sorted({alerts[i]["kind"] for i in mine})
        found_by = sorted({alerts[i]["kind"] for i in mine if alerts[i]["kind"] in f["expect"] and says(alerts[i], f)})
        summaries = [alerts[i].get("summary", "") for i in mine]
        rows.append({"fault": f, "fired": fired, "found": bool(found_by), "found_by": found_by,
                     "summaries": summaries})
    false_alarms = [a for i, a in enumerate(alerts) if i not in used]
    recall = sum(r["found"] for r in rows) / len(rows) if rows else 1.0
    precision = len(used) / len(alerts) if alerts else 1.0
    return rows, false_alarms, precision, recall


def rank_timeline(job, i, elapsed, restart_s):
    """(productive seconds, steps, first step's start, last step's end) of
    rank i of job, elapsed seconds after the first tick: the simulator's
    closed forms (docs/simulate.md). An attempt after a crash or an OOM
    repeats the steps of the one before: only the first attempt's count."""
    step, wait, first = job["step_s"][i], job["wait_share"][i], job["first_step_s"]
    run = elapsed - first
    if run <= 0:
        return 0.0, 0.0, first, first
    hang, every, ck = job["hang_at_s"], job["checkpoint_every_s"], job["checkpoint_s"]
    ckpt = every > 0 and ck > 0 and not job["oom_s"][i]  # the leaking rank does not checkpoint

    def active(tr):  # seconds stepped tr seconds into an attempt
        if hang > 0:
            tr = min(tr, hang)
        if ckpt:
            n = math.floor(tr / (every + ck))
            return n * every + min(tr - n * (every + ck), every)
        return tr

    length = job["oom_s"][i] or job["crash_every_s"]
    if length:
        c = math.floor(run / (length + restart_s))
        tc = run - c * (length + restart_s)
    else:
        c, tc, length = 0, run, math.inf
    per_attempt = math.floor(active(length) / step) if c else 0
    cur = math.floor(active(min(tc, length)) / step)
    new = per_attempt if c else cur

    def at(a):  # seconds into an attempt when it had stepped a seconds
        return a + (max(math.ceil(a / every) - 1, 0) * ck if ckpt and a > 0 else 0)

    # the stepping span ends with the last step (gpulse's throughput leaves out the tail)
    if cur:
        end = first + (c * (length + restart_s) if c else 0) + at(cur * step)
    else:  # restarting: the attempt before ended it
        end = first + ((c - 1) * (length + restart_s) + at(per_attempt * step) if c else 0)
    return new * step * (1 - wait), c * per_attempt + cur, first, end


def expected_figures(truth, job, elapsed):
    """(goodput share, MFU) the job should show at elapsed s; None: none."""
    n = job["ranks"]
    prod = steps_flops = 0.0
    first, last = math.inf, -math.inf
    for i in range(n):
        p, k, b, e = rank_timeline(job, i, elapsed, truth["restart_s"])
        prod += p
        steps_flops += k * job["flops_per_token"][i]
        first, last = min(first, b), max(last, e)
    if steps_flops <= 0:
        return None, None
    mfu = steps_flops * truth["tokens_per_step"] / (last - first) / sum(job["peak_flops"])
    return prod / (n * elapsed), mfu


def figures(truth, jobs_dir, elapsed):
    """Rows comparing each stepping job's goodput and MFU with the truth's."""
    rows = []
    for job in truth.get("jobs", []):
        at = elapsed
        try:  # when this job's document was asked for, where the bench wrote it down
            with open(os.path.join(jobs_dir, job["job"] + ".at")) as f:
                at = float(f.read())
        except (OSError, ValueError):
            pass
        # what gpulse may have seen: the truth at `at`, or up to LAG_S before
        # (a step just after a checkpoint moves MFU by the checkpoint's share)
        cands = [expected_figures(truth, job, at - d) for d in (0, LAG_S / 2, LAG_S)]
        want_g, want_m = cands[0]
        if want_g is None:
            continue
        try:
            with open(os.path.join(jobs_dir, job["job"] + ".json")) as f:
                doc = json.load(f)
            doc = doc.get("data", doc)
        except (OSError, ValueError):
            doc = {}
        got_g = (doc.get("goodput") or {}).get("ratio")
        got_m = (doc.get("totals") or {}).get("mfu")
        ok_g = isinstance(got_g, (int, float)) and any(g is not None and abs(got_g - g) <= GOODPUT_TOL
                                                       for g, _ in cands)
        ok_m = isinstance(got_m, (int, float)) and any(m is not None and abs(got_m - m) <= MFU_TOL * m
                                                       for _, m in cands)
        rows.append({"job": job["job"], "fault": job.get("fault", ""), "goodput": (want_g, got_g, ok_g),
                     "mfu": (want_m, got_m, ok_m)})
    return rows


def report_figures(rows, elapsed, out=sys.stdout):
    """Prints the goodput and MFU table; returns the number of misses."""
    def f(v):
        return "%.4f" % v if isinstance(v, (int, float)) else "-"
    out.write("goodput and MFU at %.0f s (truth vs gpulse; goodput within %.2f, MFU within %.0f %%):\n"
              % (elapsed, GOODPUT_TOL, 100 * MFU_TOL))
    fmt = "  %-11s %-10s goodput %s vs %s %-4s  mfu %s vs %s %s\n"
    misses = 0
    for r in rows:
        g, m = r["goodput"], r["mfu"]
        misses += (not g[2]) + (not m[2])
        out.write(fmt % (r["job"], r["fault"] or "-", f(g[0]), f(g[1]), "ok" if g[2] else "OFF",
                         f(m[0]), f(m[1]), "ok" if m[2] else "OFF"))
    out.write("figures: %d of %d jobs' goodput and %d of %d jobs' MFU match\n" %
              (sum(r["goodput"][2] for r in rows), len(rows), sum(r["mfu"][2] for r in rows), len(rows)))
    return misses


def per_detector(rows, false_alarms, alerts):
    """{kind: (alerts, false alarms, faults that expect it, of those found by it)}."""
    out = {}
    for a in alerts:
        k = a.get("kind")
        n = out.setdefault(k, [0, 0, 0, 0])
        n[0] += 1
    for a in false_alarms:
        out[a.get("kind")][1] += 1
    for r in rows:
        for k in r["fault"]["expect"]:
            n = out.setdefault(k, [0, 0, 0, 0])
            n[2] += 1
            n[3] += k in r["found_by"]
    return {k: tuple(v) for k, v in out.items()}


def where(labels):
    parts = []
    if "node" in labels:
        parts.append(labels["node"] + ("/" + str(labels["gpu"]) if "gpu" in labels else ""))
    if "job" in labels:
        parts.append(labels["job"] + ("#" + str(labels["rank"]) if "rank" in labels else ""))
    return " ".join(parts) or "-"


def report(rows, false_alarms, precision, recall, nalerts, out=sys.stdout, info=(), alerts=None):
    """Prints the table, the false alarms, the unscored info alerts and the two numbers."""
    fmt = "%-10s %-16s %-15s %-36s %-36s %s\n"
    out.write(fmt % ("fault", "node/gpu", "job#rank", "expected", "fired", "ok"))
    for r in rows:
        f = r["fault"]
        out.write(fmt % (f["kind"], "%s/%s" % (f["node"], f["gpu"]), "%s#%s" % (f["job"], f["rank"]),
                         " or ".join(f["expect"]), ",".join(r["fired"]) or "-",
                         "yes" if r["found"] else "MISSED"))
        for s in r["summaries"]:
            if s:
                out.write("           cause: %s\n" % s)
    for a in false_alarms:
        out.write("false alarm: %s on %s: %s\n" % (a.get("kind"), where(a.get("labels") or {}),
                                                   a.get("summary", "")))
    if info:
        kinds = {}
        for a in info:
            kinds[a.get("kind")] = kinds.get(a.get("kind"), 0) + 1
        out.write("not scored (info): %s\n" % ", ".join("%s x%d" % kv for kv in sorted(kinds.items())))
    if alerts is not None:
        out.write("per detector: kind, firing alerts, false alarms, precision; faults it must find, found, recall\n")
        for k, (n, fa, nf, found) in sorted(per_detector(rows, false_alarms, alerts).items()):
            out.write("  %-24s %3d alerts %2d false  precision %s  %d faults %d found  recall %s\n" %
                      (k, n, fa, "%.3f" % ((n - fa) / n) if n else "  -  ", nf, found,
                       "%.3f" % (found / nf) if nf else "  -  "))
    out.write("precision %.3f  recall %.3f  (%d faults, %d firing alerts, %d false alarms)\n" %
              (precision, recall, len(rows), nalerts, len(false_alarms)))


def main(argv):
    include_info = "--include-info" in argv[1:]
    argv = [a for a in argv if a != "--include-info"]
    jobs_dir = elapsed = None
    while len(argv) > 2 and argv[1] in ("--jobs", "--elapsed"):
        if argv[1] == "--jobs":
            jobs_dir = argv[2]
        else:
            try:
                elapsed = float(argv[2])
            except ValueError:
                elapsed = -1
        argv = argv[:1] + argv[3:]
    if len(argv) != 3 or (jobs_dir is None) != (elapsed is None) or (elapsed is not None and elapsed <= 0):
        sys.stderr.write("usage: fleet_truth.py [--include-info] [--jobs DIR --elapsed S] TRUTH.json ALERTS.json\n")
        return 2
    try:
        with open(argv[1]) as f:
            truth = json.load(f)
        with open(argv[2]) as f:
            alerts = load_alerts(json.load(f))
    except (OSError, ValueError) as e:
        sys.stderr.write("fleet_truth: %s\n" % e)
        return 2
    alerts, info = split_info(alerts, include_info)
    rows, false_alarms, precision, recall = score(truth, alerts)
    misses = 0
    if jobs_dir is not None:
        misses = report_figures(figures(truth, jobs_dir, elapsed), elapsed)
    report(rows, false_alarms, precision, recall, len(alerts), info=info, alerts=alerts)
    return 0 if precision == 1 and recall == 1 and not misses else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
