#!/usr/bin/env python3
"""Compares the values a scenario sets (scenario_expect.py) with either an
exposition file or a Prometheus server's query API.
    compare_values.py SCENARIO expo FILE
    compare_values.py SCENARIO prom http://127.0.0.1:PORT
Exits 1 listing every mismatch or missing series."""
import json
import os
import re
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from scenario_expect import expectations  # noqa: E402


def from_expo(path):
    vals = {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        name, rest = line.split("{", 1) if "{" in line else (line.split()[0], "")
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest))
        value = float(line.rsplit(" ", 1)[1])
        vals[(name, labels.get("UUID"), labels.get("pid"))] = value
    return lambda m, u, p: vals.get((m, u, p))


def from_prom(base):
    def get(metric, uuid, pid):
        sel = 'UUID="%s"' % uuid + (',pid="%s"' % pid if pid else "")
        q = urllib.parse.urlencode({"query": "%s{%s}" % (metric, sel)})
        with urllib.request.urlopen("%s/api/v1/query?%s" % (base, q), timeout=5) as r:
            res = json.load(r)["data"]["result"]
        if len(res) != 1:
            return None if not res else float("nan")
        return float(res[0]["value"][1])
    return get


def main(scn, kind, where):
    get = from_expo(where) if kind == "expo" else from_prom(where)
    bad = 0
    exp = expectations(scn)
    for metric, uuid, pid, want in exp:
        got = get(metric, uuid, pid)
        if got is None or abs(got - want) > 1e-9 * max(1.0, abs(want)):
            print("mismatch %s{UUID=%s%s}: want %r, got %r" % (metric, uuid, ",pid=" + pid if pid else "", want, got))
            bad += 1
    print("%d values compared, %d mismatches" % (len(exp), bad))
    return 1 if bad or not exp else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
