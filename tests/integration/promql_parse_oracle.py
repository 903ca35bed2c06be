#!/usr/bin/env python3
"""The PromQL parser against Prometheus's own (test_promql_parse_oracle.sh).

usage: promql_parse_oracle.py PROMETHEUS_URL GPULSE CORPUS

For every expression of CORPUS, Prometheus (2.42, running at
PROMETHEUS_URL) says through /api/v1/format_query whether it parses, its
canonical text or its error, and through /api/v1/query its result type;
`GPULSE promql-parse` says the same of gpulse's parser. They must agree
on acceptance, on the text (where Prometheus's fits one line: longer ones
it pretty-prints over several), on the type, and on the line:col of an
error. "@except EXPR" lines must disagree on acceptance (documented
differences). Prints a summary; exits 1 on any disagreement.
"""
import json
import re
import subprocess
import sys
import urllib.parse
import urllib.request


def prom(url, path, **form):
    data = urllib.parse.urlencode(form).encode()
    try:
        with urllib.request.urlopen(url + path, data=data, timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


def main():
    url, gpulse, corpus = sys.argv[1:4]
    exprs = []  # (expr, expected_to_differ)
    for line in open(corpus, encoding="utf-8").read().split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("@except "):
            exprs.append((line[len("@except "):], True))
        else:
            exprs.append((line, False))
    out = subprocess.run([gpulse, "promql-parse"], input="\n".join(e for e, _ in exprs) + "\n",
                         capture_output=True, text=True, check=True).stdout.split("\n")
    bad = []
    n_ok = n_err = 0
    for i, (expr, differ) in enumerate(exprs):
        got = out[i].split("\t")
        f = prom(url, "/api/v1/format_query", query=expr)
        p_ok = f["status"] == "success"
        g_ok = got[0] == "ok"
        if differ:
            if p_ok == g_ok:
                bad.append(f"{expr!r}: listed as a difference but both {'accept' if p_ok else 'refuse'} it")
            continue
        if p_ok != g_ok:
            bad.append(f"{expr!r}: prometheus {'accepts' if p_ok else 'refuses: ' + f['error']}, "
                       f"gpulse {'accepts' if g_ok else 'refuses: ' + got[1]}")
            continue
        if p_ok:
            n_ok += 1
            text = f["data"]
            if "\n" not in text and text != got[2]:
                bad.append(f"{expr!r}: text {text!r} from prometheus, {got[2]!r} from gpulse")
            q = prom(url, "/api/v1/query", query=expr, time="1000")
            if q["status"] == "success" and q["data"]["resultType"] != got[1]:
                bad.append(f"{expr!r}: type {q['data']['resultType']} from prometheus, {got[1]} from gpulse")
        else:
            n_err += 1
            pm = re.search(r"(\d+:\d+): parse error", f["error"])
            gm = re.match(r"(\d+:\d+): parse error", got[1])
            if not pm or not gm or pm.group(1) != gm.group(1):
                bad.append(f"{expr!r}: error {f['error']!r} from prometheus, {got[1]!r} from gpulse")
    for b in bad:
        print("  MISMATCH " + b)
    print(f"  {len(exprs)} expressions: {n_ok} valid and {n_err} invalid agree with prometheus, "
          f"{sum(d for _, d in exprs)} documented differences, {len(bad)} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
