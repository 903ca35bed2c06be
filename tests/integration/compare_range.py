#!/usr/bin/env python3
"""compare_range.py PROM_URL GPULSE_URL START END STEP SELECTOR [AGG BY]

Asks Prometheus (/api/v1/query_range?query=...) and the gpulse server
(/api/v1/query_range?match=...) for the same selector, times and step,
and checks that both return the same series with the same points.

With a step shorter than the sampling interval, gpulse's window
(t - step, t] holds at most one sample, so both sides answer with the
newest sample at or before t (within the 5-minute lookback): the values
must be bit-identical. With AGG (avg, sum, min, max, count) and BY
(comma-separated labels), Prometheus gets `AGG by (BY) (SELECTOR)`;
sums may then differ in the last bits only (order of additions).
Prints one line per series; exits 1 on any difference.
"""
import json
import math
import sys
import urllib.parse
import urllib.request


def get(url, params):
    with urllib.request.urlopen(url + "?" + urllib.parse.urlencode(params), timeout=30) as r:
        doc = json.load(r)
    if doc.get("status") != "success":
        raise SystemExit("query failed: %s -> %s" % (url, doc))
    return doc["data"]["result"]


def key(metric):
    return tuple(sorted(metric.items()))


def points(values):
    return [(round(float(t) * 1000), v) for t, v in values]


def same(a, b, exact):
    fa, fb = float(a), float(b)
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    if exact:
        return fa == fb
    return fa == fb or abs(fa - fb) <= 1e-9 * max(abs(fa), abs(fb))


def main(argv):
    prom, gp, start, end, step, sel = argv[1:7]
    agg = argv[7] if len(argv) > 7 else ""
    by = argv[8] if len(argv) > 8 else ""
    pq = {"query": "%s by (%s) (%s)" % (agg, by, sel) if agg else sel,
          "start": start, "end": end, "step": step}
    gq = {"match": sel, "start": start, "end": end, "step": step}
    if agg:
        gq["agg"] = agg
        gq["by"] = by
    want = {key(s["metric"]): points(s["values"]) for s in get(prom + "/api/v1/query_range", pq)}
    got = {key(s["metric"]): points(s["values"]) for s in get(gp + "/api/v1/query_range", gq)}
    bad = 0
    if not want:
        print("FAIL %s: Prometheus returned no series" % sel)
        return 1
    for k in sorted(set(want) | set(got)):
        name = "{" + ",".join("%s=%s" % kv for kv in k if kv[0] in ("__name__", "gpu", "cpu", "mode", "Hostname")) + "}"
        if k not in got:
            print("FAIL %s %s: missing from gpulse" % (sel, name)); bad += 1; continue
        if k not in want:
            print("FAIL %s %s: only in gpulse" % (sel, name)); bad += 1; continue
        w, g = want[k], got[k]
        if [t for t, _ in w] != [t for t, _ in g]:
            print("FAIL %s %s: timestamps differ (%d vs %d points; first %s vs %s)" %
                  (sel, name, len(w), len(g), w[:2], g[:2])); bad += 1; continue
        diff = [(t, a, b) for (t, a), (_, b) in zip(w, g) if not same(a, b, not agg)]
        if diff:
            print("FAIL %s %s: %d of %d values differ, first at %d: prometheus %s, gpulse %s" %
                  (sel, name, len(diff), len(w), diff[0][0], diff[0][1], diff[0][2])); bad += 1
        else:
            print("ok   %s %s: %d points equal" % (sel, name, len(w)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
