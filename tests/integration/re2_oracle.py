#!/usr/bin/env python3
"""re2_oracle.py - gpulse's RE2 regexes (src/lib/re2posix.c) match the values
Prometheus 2.42's Go regexp matches.

Usage: re2_oracle.py PROM_URL GPULSE_URL [N [SEED]]

N random patterns (a fixed seed: the same ones every run) over RE2's
syntax: literals, UTF-8, ".", Perl and POSIX classes inside and outside
brackets, escapes, \\Q...\\E, groups of every kind, flags, counts, lazy
quantifiers, anchors. Each runs on both servers as one instant query

    label_replace(label_replace(vector(1), "v", VALUE, "", ""), "m", "y", "v", `PATTERN`)
    or ... (one term per value)

so the answer names the values the pattern matches whole. They must be
the same; where Prometheus refuses a pattern gpulse must too; where only
gpulse refuses, the reason must be one docs/api.md gives (what POSIX
cannot say, the cost cap). Exit 1 on any difference.
"""
import json
import random
import sys
import urllib.error
import urllib.parse
import urllib.request

ALPH = ['a', 'b', 'A', 'B', '-', '1', '7', '\n', ' ', '\t', '\xe9', '_', '.', 'z', ':', '{']
DOCUMENTED = ("cannot be translated", "not supported", "too costly", "lazy quantifiers")


def atom(rnd, d):
    r = rnd.random()
    if r < 0.28:
        return rnd.choice(['a', 'b', 'A', 'z', '-', '1', '_', ' ', ':', '\xe9'])
    if r < 0.38:
        return '.'
    if r < 0.5:
        return rnd.choice(['\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\.', '\\-', '\\n', '\\t',
                           '\\x41', '\\x{62}', '\\141', '\\Qa.\\E', '\\{', '[[:word:]]',
                           'a{', '{,2}', '\\pL', '\\b'])
    if r < 0.66:
        neg = '^' if rnd.random() < 0.3 else ''
        items = ''.join(rnd.choice(['a', 'b-z', 'A-C', '0-9', '\\d', '\\w', '\\s', '\\S', '\\-',
                                    '.', '_', '[:alpha:]', '[:^digit:]', '\\]', ' ', '-', ':'])
                        for _ in range(rnd.randint(1, 3)))
        return '[' + neg + items + ']'
    if d < 3 and r < 0.92:
        kind = rnd.choice(['(?:', '(?:', '(?i:', '(?s:', '(?U:', '(?-s:', '(', '(?P<g%d>' % d])
        return kind + alt(rnd, d + 1) + ')'
    return rnd.choice(['a', 'b', '(?i)', '(?s)'])


def quant(rnd, s):
    if rnd.random() < 0.6 or s in ('(?i)', '(?s)'):
        return s
    q = rnd.choice(['*', '+', '?', '{2}', '{1,2}', '{0,}', '{2,3}', '{0}'])
    if rnd.random() < 0.3:
        q += '?'
    return s + q


def seq(rnd, d):
    return ''.join(quant(rnd, atom(rnd, d)) for _ in range(rnd.randint(0, 4)))


def alt(rnd, d):
    return '|'.join(seq(rnd, d) for _ in range(rnd.randint(1, 3)))


def pattern(rnd):
    p = alt(rnd, 0)
    r = rnd.random()
    if r < 0.15:
        p = '(?i)' + p
    elif r < 0.25:
        p = '^(?:' + p + ')$'
    elif r < 0.3:
        p = '\\A' + p + '\\z'
    return p


def values(rnd):
    vals = {''}
    while len(vals) < 24:
        vals.add(''.join(rnd.choice(ALPH) for _ in range(rnd.randint(0, 5))))
    return sorted(vals)


def pq_string(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') \
        .replace('\t', '\\t') + '"'


def query(url, q):
    data = urllib.parse.urlencode({"query": q, "time": "1000"}).encode()
    try:
        with urllib.request.urlopen(url + "/api/v1/query", data=data, timeout=30) as r:
            doc = json.load(r)
    except urllib.error.HTTPError as e:
        doc = json.load(e)
    if doc.get("status") != "success":
        return None, doc.get("error", "")
    return sorted(s["metric"].get("v", "") for s in doc["data"]["result"]
                  if s["metric"].get("m") == "y"), None


def main():
    prom, gp = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    rnd = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 16)
    bad = compared = refused = both_refused = matched = 0
    for _ in range(n):
        p = pattern(rnd)
        if '`' in p:
            continue
        vals = values(rnd)
        q = " or ".join('label_replace(label_replace(vector(1), "v", %s, "", ""), "m", "y", "v", `%s`)'
                        % (pq_string(v), p) for v in vals)
        want, werr = query(prom, q)
        got, gerr = query(gp, q)
        if werr is not None:
            if gerr is None:
                bad += 1
                print(f"ONLY PROMETHEUS REFUSES {p!r}: {werr}")
            both_refused += 1
            continue
        if gerr is not None:
            refused += 1
            if not any(w in gerr for w in DOCUMENTED):
                bad += 1
                print(f"UNDOCUMENTED REFUSAL {p!r}: {gerr}")
            continue
        compared += len(vals)
        matched += len(want)
        if want != got:
            bad += 1
            print(f"DIFF {p!r}: prometheus matches {want!r}, gpulse {got!r}")
    print(f"{n} patterns: {compared} pattern/value pairs compared ({matched} matching), "
          f"{refused} refused by gpulse only (documented), {both_refused} refused by both, "
          f"{bad} differences")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
