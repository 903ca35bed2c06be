#!/usr/bin/env python3
"""Checks what a remote-write receiver stored against the agent's own
/metrics: every series of every snapshot must be stored with a sample at
exactly the snapshot's frame time (gpulse_agent_last_sample_timestamp_seconds)
and exactly the same value (NaN matches NaN).

Prometheus stores float64 bit for bit, so every value must match exactly.
VictoriaMetrics stores a value as a decimal with a 12-digit conversion
precision (lib/decimal: conversionPrecision = 1e12), so there a value whose
shortest form has at most 12 significant digits (integers, counters, most
readings) must match exactly, and a longer one must match to within
VictoriaMetrics's precision (relative 1e-11); both counts are printed.

    compare_push.py vm   http://127.0.0.1:PORT [--add NAME=VALUE...] SNAPSHOT...   (VictoriaMetrics /api/v1/export)
    compare_push.py prom http://127.0.0.1:PORT [--add NAME=VALUE...] SNAPSHOT...   (Prometheus /api/v1/query)

        --add: a label the agent adds to what it pushes (its host label,
        external labels) on every series that lacks one of that name; the
        stored series must carry it, /metrics does not.

    compare_push.py ticks vm|prom http://127.0.0.1:PORT MIN_LAST
        The outage check: gpulse_agent_ticks_total as stored, in timestamp
        order, must count 1, 2, 3, ... without a gap or a repeat (a restarted
        agent starts again at 1), timestamps strictly increasing, the last
        run reaching at least MIN_LAST; and a GPU series must have a sample
        at every one of those timestamps, exactly once.

Exits 1 listing what differs."""
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def unescape(v):
    return re.sub(r'\\(.)', lambda m: {"n": "\n", "\\": "\\", '"': '"'}[m.group(1)], v)


def parse_expo(path):
    """{(name, frozenset(labels)): value} and the frame time in ms."""
    out = {}
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            labels_text, value = rest.rsplit("}", 1)
            labels = {k: unescape(v) for k, v in LABEL.findall(labels_text)}
        else:
            name, value = line.split(None, 1)
            labels = {}
        labels = frozenset((k, v) for k, v in labels.items() if v != "")
        out[(name.strip(), labels)] = float(value.split()[0])
    t = out[("gpulse_agent_last_sample_timestamp_seconds", frozenset())]
    return out, int(round(t * 1000))


def key_of(metric):
    m = dict(metric)
    name = m.pop("__name__")
    return name, frozenset((k, v) for k, v in m.items() if v != "")


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def vm_samples(base, start_ms, end_ms, match='{__name__!=""}'):
    """{key: {ts_ms: [values...]}} from VictoriaMetrics's raw export."""
    q = urllib.parse.urlencode({"match[]": match, "start": "%.3f" % (start_ms / 1000),
                                "end": "%.3f" % (end_ms / 1000)})
    out = {}
    for line in get("%s/api/v1/export?%s" % (base, q)).splitlines():
        if not line.strip():
            continue
        s = json.loads(line)
        d = out.setdefault(key_of(s["metric"]), {})
        for ts, v in zip(s["timestamps"], s["values"]):
            d.setdefault(int(ts), []).append(float(v))
    return out


def prom_samples(base, at_ms, window="1s", match='{__name__=~".+"}'):
    """The raw samples in (at - window, at] from Prometheus (a range selector)."""
    q = urllib.parse.urlencode({"query": "%s[%s]" % (match, window), "time": "%.3f" % (at_ms / 1000)})
    res = json.loads(get("%s/api/v1/query?%s" % (base, q)))
    if res.get("status") != "success":
        raise SystemExit("prometheus query failed: %r" % res)
    out = {}
    for s in res["data"]["result"]:
        d = out.setdefault(key_of(s["metric"]), {})
        for ts, v in s["values"]:
            d.setdefault(int(round(float(ts) * 1000)), []).append(float(v))
    return out


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def significant_digits(v):
    """Digits in the shortest decimal form of v (the agent's text)."""
    if math.isnan(v) or math.isinf(v) or v == 0:
        return 1
    m = repr(abs(v)).split("e")[0].replace(".", "").lstrip("0")
    return len(m.rstrip("0")) or 1


def with_added(series, added):
    """The series as pushed: each label of added that it lacks, added."""
    out = {}
    for (name, labels), v in series.items():
        have = {k for k, _ in labels}
        out[(name, labels | frozenset((k, x) for k, x in added if k not in have))] = v
    return out


def compare(kind, base, snaps, added=()):
    parsed = [(with_added(s, added), t) for s, t in (parse_expo(p) for p in snaps)]
    bad = checked = rounded = 0
    vm = None
    if kind == "vm":
        lo = min(t for _, t in parsed) - 1000
        hi = max(t for _, t in parsed) + 1000
        vm = vm_samples(base, lo, hi)
    for (series, t), path in zip(parsed, snaps):
        stored = vm if kind == "vm" else prom_samples(base, t)
        for key, want in series.items():
            checked += 1
            got = stored.get(key, {}).get(t)
            ok = got is not None and len(got) == 1 and same(got[0], want)
            if (not ok and kind == "vm" and got is not None and len(got) == 1 and
                    significant_digits(want) > 12 and abs(got[0] - want) <= 1e-11 * abs(want)):
                ok = True
                rounded += 1
            if not ok:
                bad += 1
                if bad <= 20:
                    print("%s @%d %s%s: agent %r, stored %r" % (path, t, key[0], dict(key[1]), want, got))
    print("%d samples compared over %d snapshots: %d exact, %d within the receiver's 12-digit "
          "precision, %d differ" % (checked, len(snaps), checked - rounded - bad, rounded, bad))
    return 1 if bad or not checked else 0


def ticks(kind, base, min_last):
    now = int(time.time() * 1000)
    if kind == "vm":  # a day either side catches everything the test stored
        counter = vm_samples(base, now - 86400000, now + 86400000, 'gpulse_agent_ticks_total')
        gpu = vm_samples(base, now - 86400000, now + 86400000, 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}')
    else:
        counter = prom_samples(base, now, "1h", 'gpulse_agent_ticks_total')
        gpu = prom_samples(base, now, "1h", 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}')
    if len(counter) != 1 or len(gpu) != 1:
        print("want one series each, got %d and %d" % (len(counter), len(gpu)))
        return 1
    c = next(iter(counter.values()))
    g = next(iter(gpu.values()))
    bad = 0
    stamps = sorted(c)
    runs, expect = [], 1
    for ts in stamps:
        vals = c[ts]
        if len(vals) != 1:
            print("tick timestamp %d stored %d times: %r" % (ts, len(vals), vals))
            bad += 1
            continue
        v = int(vals[0])
        if v == 1 and expect != 1:  # a restarted agent counts again
            runs.append(expect - 1)
            expect = 1
        if v != expect:
            print("gap or repeat at %d: tick %d where %d was due" % (ts, v, expect))
            bad += 1
            expect = v
        expect += 1
        gv = g.get(ts)
        if gv is None or len(gv) != 1:
            print("GPU series: %d samples at tick timestamp %d" % (0 if gv is None else len(gv), ts))
            bad += 1
    runs.append(expect - 1)
    extra = sorted(set(g) - set(c))
    if extra:
        print("GPU series has samples at %d timestamps that are not ticks" % len(extra))
        bad += 1
    if runs[-1] < min_last:
        print("the last run ends at tick %d, before %d" % (runs[-1], min_last))
        bad += 1
    print("%d tick timestamps, runs of %s ticks, %d problems" % (len(stamps), runs, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "ticks":
        sys.exit(ticks(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    rest, added = sys.argv[3:], []
    while rest and rest[0] == "--add":
        added.append(tuple(rest[1].split("=", 1)))
        rest = rest[2:]
    sys.exit(compare(sys.argv[1], sys.argv[2], rest, added))
