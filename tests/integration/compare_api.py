#!/usr/bin/env python3
"""compare_api.py EMBEDDED.json REMOTE.json [WHAT]: the two API answers are
equal up to float rounding (12 significant digits: VictoriaMetrics keeps
no more) and the order of lists of objects (series ids, hence orders,
differ between the embedded store and a remote cluster). Prints the first
difference and exits 1."""
import json
import math
import sys


def num(x):
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        return float("%.11g" % x)
    if isinstance(x, str):
        try:
            f = float(x)
        except ValueError:
            return x
        return num(f) if x.strip() == x else x
    return x


def norm(x):
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    if isinstance(x, list):
        y = [norm(v) for v in x]
        if y and all(isinstance(v, dict) for v in y):
            y.sort(key=lambda v: json.dumps(v, sort_keys=True))
        return y
    if isinstance(x, bool) or x is None:
        return x
    return num(x)


def diff(a, b, path="$"):
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)) and type(a) != type(b):
        a, b = float(a), float(b)  # 2 and 2.0000000000001: one number printed two ways
    if type(a) != type(b):
        return f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'remote' if k in b else 'embedded'}"
            d = diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            extra = ""
            if all(isinstance(v, str) for v in a + b):
                extra = f" (only embedded: {sorted(set(a) - set(b))}, only remote: {sorted(set(b) - set(a))})"
            return f"{path}: {len(a)} items != {len(b)} items{extra}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) and isinstance(b, float):
        if a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b)):
            return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


a = norm(json.load(open(sys.argv[1])))
b = norm(json.load(open(sys.argv[2])))
d = diff(a, b)
if d:
    print(f"  {sys.argv[3] if len(sys.argv) > 3 else ''}: {d}", file=sys.stderr)
    sys.exit(1)
