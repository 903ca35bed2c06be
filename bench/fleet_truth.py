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
job, rank) equals the fault's, with at least node+gpu or job+rank there.
A fault is found (recall) when an alert of an `expect` kind belongs to
it. Precision is the share of scored firing alerts that belong to some
fault: anything else is a false alarm. Alerts of severity "info"
(gpu_saturated on a busy healthy card, tensor_cores_unused...) are advice
about healthy work, not fault reports: they are counted apart and not
scored unless --include-info is given. Exit status (as a command): 0 when
recall and precision are both 1, 1 otherwise, 2 on bad input.

Usage: fleet_truth.py [--include-info] TRUTH.json ALERTS.json   (ALERTS:
the API's envelope or its bare data list)
"""
import json
import sys

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


def belongs(alert, fault):
    """Whether alert describes fault (see the module comment)."""
    kinds = set(fault["expect"]) | set(fault.get("allow", []))
    if alert.get("kind") not in kinds:
        return False
    labels = alert.get("labels") or {}
    for k in IDENT:
        if k in labels and str(labels[k]) != str(fault[k]):
            return False
    return ("node" in labels and "gpu" in labels) or ("job" in labels and "rank" in labels)


def score(truth, alerts):
    """Returns (rows, false_alarms, precision, recall) for truth and firing alerts."""
    faults = truth["faults"]
    rows, used = [], set()
    for f in faults:
        mine = [i for i, a in enumerate(alerts) if belongs(a, f)]
        used.update(mine)
        fired = sorted({alerts[i]["kind"] for i in mine})
        found = any(alerts[i]["kind"] in f["expect"] for i in mine)
        summaries = [alerts[i].get("summary", "") for i in mine]
        rows.append({"fault": f, "fired": fired, "found": found, "summaries": summaries})
    false_alarms = [a for i, a in enumerate(alerts) if i not in used]
    recall = sum(r["found"] for r in rows) / len(rows) if rows else 1.0
    precision = len(used) / len(alerts) if alerts else 1.0
    return rows, false_alarms, precision, recall


def where(labels):
    parts = []
    if "node" in labels:
        parts.append(labels["node"] + ("/" + str(labels["gpu"]) if "gpu" in labels else ""))
    if "job" in labels:
        parts.append(labels["job"] + ("#" + str(labels["rank"]) if "rank" in labels else ""))
    return " ".join(parts) or "-"


def report(rows, false_alarms, precision, recall, nalerts, out=sys.stdout, info=()):
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
    out.write("precision %.3f  recall %.3f  (%d faults, %d firing alerts, %d false alarms)\n" %
              (precision, recall, len(rows), nalerts, len(false_alarms)))


def main(argv):
    include_info = "--include-info" in argv[1:]
    argv = [a for a in argv if a != "--include-info"]
    if len(argv) != 3:
        sys.stderr.write("usage: fleet_truth.py [--include-info] TRUTH.json ALERTS.json\n")
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
    report(rows, false_alarms, precision, recall, len(alerts), info=info)
    return 0 if precision == 1 and recall == 1 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
