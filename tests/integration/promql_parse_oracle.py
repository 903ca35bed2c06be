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
differences). Then the same for 3,000 expressions made by mutating the
corpus (tokens and characters deleted, inserted, replaced or swapped,
with a fixed seed), leaving out those that touch a documented difference.
Prints a summary; exits 1 on any disagreement.
"""
import json
import random
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


TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`|[A-Za-z_:][A-Za-z0-9_:]*'
                   r'|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[a-z]*|==|!=|=~|!~|<=|>=|\S')
FRAGMENTS = ['(', ')', '[', ']', '{', '}', ',', '+', '-', '*', '/', '^', '@', 'offset', 'by', 'on',
             'ignoring', 'group_left', 'bool', '5m', '1m:', 'x', 'sum', 'rate', '"a"', '1', ':', 'and',
             'or', '=', 'start()', 'without', 'count_values', 'topk', 'abs', '#c']
CHARS = '()[]{},+-*/^@=!~<>"\'`:.# 0123456789abcdefxyzmshdwyEINaon_\\'
# Mutants that touch a documented difference (see the corpus) are left out:
# NUL bytes, Prometheus 3's names, durations over 10 years, huge @ times,
# regexes (RE2 that POSIX cannot say, \b or \pL, is refused: docs/api.md),
# ignoring () group_left's text.
DIFFERENCE = re.compile(r'\\x00|\\0|limitk|limit_ratio|sort_by_label|\d+y|\de1[5-9]|=~|!~'
                        r'|ignoring\s*\(\s*\)')


def mutants(lines, n, seed):
    rnd = random.Random(seed)
    out = set()
    while len(out) < n:
        e = rnd.choice(lines)
        if rnd.random() < 0.3:
            e += " " + rnd.choice(["+", "and", "or", "/ on(a)", "> bool"]) + " " + rnd.choice(lines)
        if rnd.random() < 0.5:
            t = TOKEN.findall(e)
            for _ in range(rnd.randint(1, 3)):
                i = rnd.randrange(len(t) + 1)
                op = rnd.random()
                if op < 0.3 and i < len(t):
                    del t[i]
                elif op < 0.6 or i == len(t):
                    t.insert(i, rnd.choice(FRAGMENTS))
                elif op < 0.8:
                    t[i] = rnd.choice(FRAGMENTS)
                else:
                    j = rnd.randrange(len(t))
                    t[i], t[j] = t[j], t[i]
            e = rnd.choice([" ", ""]).join(t)
        else:
            b = list(e)
            for _ in range(rnd.randint(1, 3)):
                i = rnd.randrange(len(b) + 1)
                op = rnd.random()
                if op < 0.35 and i < len(b):
                    del b[i]
                elif op < 0.7 or i == len(b):
                    b.insert(i, rnd.choice(CHARS))
                else:
                    b[i] = rnd.choice(CHARS)
            e = "".join(b)
        if e.strip() and not DIFFERENCE.search(e):
            out.add(e)
    return sorted(out)


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
    ncorpus = len(exprs)
    exprs += [(e, False) for e in mutants([e for e, _ in exprs], 3000, 16)]
    out = subprocess.run([gpulse, "promql-parse"], input="\n".join(e for e, _ in exprs) + "\n",
                         capture_output=True, text=True, check=True).stdout.split("\n")
    bad = []
    n_ok = n_err = n_words = 0
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
        before = len(bad)
        if p_ok:
            text = f["data"]
            if "\n" not in text and text != got[2]:
                bad.append(f"{expr!r}: text {text!r} from prometheus, {got[2]!r} from gpulse")
            q = prom(url, "/api/v1/query", query=expr, time="1000")
            if q["status"] == "success" and q["data"]["resultType"] != got[1]:
                bad.append(f"{expr!r}: type {q['data']['resultType']} from prometheus, {got[1]} from gpulse")
        else:
            pm = re.search(r"(\d+:\d+): parse error", f["error"])
            gm = re.match(r"(\d+:\d+): parse error", got[1])
            if not pm or not gm or pm.group(1) != gm.group(1):
                bad.append(f"{expr!r}: error {f['error']!r} from prometheus, {got[1]!r} from gpulse")
            elif f["error"].split("parse error: ", 1)[1].split("\n")[0] == got[1].split("parse error: ", 1)[1]:
                n_words += 1
        if len(bad) == before:
            n_ok += p_ok
            n_err += not p_ok
    for b in bad:
        print("  MISMATCH " + b)
    print(f"  {ncorpus} expressions of the corpus and {len(exprs) - ncorpus} mutants: {n_ok} valid and "
          f"{n_err} invalid agree with prometheus, {sum(d for _, d in exprs)} documented differences, "
          f"{len(bad)} mismatches; {n_words} of the errors word for word")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
