#!/usr/bin/env python3
"""promql_diff.py - the PromQL differential test's driver (issue 16): one
data set remote-written to several servers, one corpus of expressions run
against a reference (Debian's Prometheus 2.42) and a candidate (gpulse
server, or a second Prometheus to prove the harness), answers compared.

  promql_diff.py write --t0 MS [--mutate] URL...
        writes the data set, anchored at T0 (ms, a whole minute, about
        75 minutes ago so every sample is within Prometheus's head
        window), to each server's /api/v1/write; --mutate writes one
        more sample (on top of the data set) so a comparison against a
        server without it must find differences
  promql_diff.py compare --t0 MS --corpus FILE [--self] [-v] REF CAND
        runs every corpus expression as instant queries at several times
        and as range queries (several start/end/step, steps unaligned to
        the samples included) on both; prints each difference and a last
        line "N expressions, M comparisons, K differences"; exit 1 when
        K > 0. --self: CAND is a second Prometheus, so the hand-checked
        lines (functions 2.42 lacks) are skipped.

Compared: success or error (and the errorType when both fail), the result
type, the series (label sets), their timestamps (to the millisecond) and
values (equal within 1e-9 relative; NaN equals NaN; infinities by sign;
equal values written alike, as Go's FormatFloat writes them). Order is compared only where Prometheus defines it: an instant query
whose outermost operation is sort, sort_desc, or topk/bottomk without
grouping (the value sequence must be equal; ties may swap labels).
The query routes' parameters (RFC 3339 and fractional times, duration
steps, missing and bad ones, too many points) are compared the same way.

Corpus lines (tests/data/promql/diff_corpus.txt): one expression per
line; "#" starts a comment line; "$T(30m)" is T0 + 30 m in Unix seconds
(for @). A trailing "#! DIRECTIVE" (PromQL takes "#" as a comment, so
the expression is sent without it):
  #! except: REASON        a documented difference: compared and printed,
                           not counted (and "now equal" is printed when it
                           no longer differs)
  #! expect@OFFSET: SPEC   Prometheus 2.42 lacks the function: only the
                           candidate is asked, at T0 + OFFSET, and its
                           answer must be SPEC, in order:
                           '{a="x"} 1; {a="y"} 2' (empty SPEC: no series)
"""
import http.client
import json
import math
import os
import re
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rw  # noqa: E402  the remote-write encoder of the other tests

STEP = 15000
SPAN = 60 * 60000  # the data covers [T0, T0 + 60 m]


# ---- the data set ----------------------------------------------------------

def dataset(t0):
    """{labels tuple: [(value, ts_ms), ...]}: deterministic, ascending."""
    S = {}

    def add(name, labels, samples):
        key = tuple(sorted([("__name__", name)] + list(labels.items())))
        S.setdefault(key, []).extend(samples)

    ks = range(0, SPAN // STEP + 1)
    # Gauges: smooth, sawtooth, and one on jittered (unaligned) timestamps.
    add("diff_gauge", {"job": "node", "instance": "a"},
        [(round(50 + 40 * math.sin(k / 7), 3), t0 + k * STEP) for k in ks])
    add("diff_gauge", {"job": "node", "instance": "b"},
        [(round(10 + k * 0.25 - (k % 13) * 1.5, 3), t0 + k * STEP) for k in ks])
    add("diff_gauge", {"job": "node", "instance": "c"},
        [((k * 37 % 101) / 4, t0 + k * STEP + (k * 7919 % 5000)) for k in ks if k < 240])
    # Counters with resets, each series its own pace.
    i = 0
    for inst in ("a", "b"):
        for method in ("get", "post"):
            for code in ("200", "500"):
                i += 1
                v, out = 0.0, []
                resets = {("b", "get", "200"): (100, 170), ("a", "post", "500"): (50,),
                          ("b", "post", "500"): (3, 4, 5)}.get((inst, method, code), ())
                for k in ks:
                    if k in resets:
                        v = (k % 3) * 0.5
                    else:
                        v += (k * i % 7) + i * 0.125
                    out.append((v, t0 + k * STEP))
                add("diff_requests_total", {"job": "api", "instance": inst, "method": method,
                                            "code": code}, out)
    # Stale markers: a series that goes stale, comes back, goes stale for good.
    stale = rw.STALE
    add("diff_stale", {"instance": "a"},
        [(k * 1.5, t0 + k * STEP) for k in range(0, 81)] + [(stale, t0 + 81 * STEP)] +
        [(k * 2.0, t0 + k * STEP) for k in range(100, 161)] + [(stale, t0 + 161 * STEP)])
    add("diff_stale", {"instance": "b"},
        [(stale if k == 120 else float(k % 17), t0 + k * STEP) for k in ks])
    # Series that stop without a marker: early, and near the data's end.
    add("diff_stop", {"instance": "a"}, [(float(k), t0 + k * STEP) for k in range(0, 141)])
    add("diff_stop", {"instance": "b"}, [(k * 0.5, t0 + k * STEP) for k in range(0, 233)])
    # A gap longer than the 5 m lookback (20 m .. 31 m), gauge and counter.
    gap = [k for k in ks if not 80 < k < 124]
    add("diff_gap", {"instance": "a"}, [(float(k % 11), t0 + k * STEP) for k in gap])
    add("diff_gap_total", {"instance": "a"}, [(float(k * 3), t0 + k * STEP) for k in gap])
    # Sparse: one sample every 2 m, and a lone sample.
    add("diff_sparse", {"instance": "a"}, [(float(k), t0 + k * STEP) for k in ks if k % 8 == 0])
    add("diff_lonely", {"instance": "a"}, [(42.0, t0 + 30 * 60000)])
    # Classic histograms: two instances (b's counters reset at 30 m), with
    # _sum and _count; one whose buckets are not monotonic; one without +Inf.
    les = ("0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf")
    for inst, reset in (("a", None), ("b", 120)):
        cum = [0.0] * len(les)
        tot_sum = 0.0
        series = {le: [] for le in les}
        sums, counts = [], []
        for k in ks:
            if k == reset:
                cum, tot_sum = [0.0] * len(les), 0.0
            incs = [((k + j * 3) % 5) + (1 if inst == "a" else 2) * (j == 2) for j in range(len(les))]
            run = 0.0
            for j in range(len(les)):
                run += incs[j]
                cum[j] += run
            tot_sum += run * 0.3 + k * 0.01
            for j, le in enumerate(les):
                series[le].append((cum[j], t0 + k * STEP))
            sums.append((round(tot_sum, 3), t0 + k * STEP))
            counts.append((cum[-1], t0 + k * STEP))
        for le in les:
            add("diff_latency_seconds_bucket", {"job": "api", "instance": inst, "le": le}, series[le])
        add("diff_latency_seconds_sum", {"job": "api", "instance": inst}, sums)
        add("diff_latency_seconds_count", {"job": "api", "instance": inst}, counts)
    for j, le in enumerate(("0.1", "1", "10", "+Inf")):
        add("diff_weird_bucket", {"le": le},
            [(float((k * (j + 1)) % 9 + (5 if j == 1 else 0)), t0 + k * STEP) for k in ks])
    for le in ("1", "2"):
        add("diff_noinf_bucket", {"le": le}, [(float(k * int(le)), t0 + k * STEP) for k in ks])
    # Vector matching: an info series per instance (group_left), two GPUs
    # per instance on the many side, memory one-to-one with utilization.
    for inst, node, role in (("a", "n1", "train"), ("b", "n2", "infer"), ("c", "n3", "train")):
        add("diff_info", {"instance": inst, "node": node, "role": role},
            [(1.0, t0 + k * STEP) for k in ks if k % 2 == 0])
        for gpu in ("0", "1"):
            g = int(gpu)
            add("diff_gpu_util", {"instance": inst, "gpu": gpu},
                [(float((k * (3 + g) + ord(inst)) % 100), t0 + k * STEP) for k in ks])
            add("diff_mem_used", {"instance": inst, "gpu": gpu, "unit": "bytes"},
                [(float(((k + g) * 1000003 + ord(inst) * 7) % 80000) * 1e6, t0 + k * STEP) for k in ks])
    # Special values.
    nan, inf = float("nan"), float("inf")
    cycle = (1.0, nan, inf, -2.0, -inf, 0.0, 3.5)
    add("diff_special", {"kind": "nan"}, [(nan, t0 + k * STEP) for k in ks])
    add("diff_special", {"kind": "inf"}, [(inf, t0 + k * STEP) for k in ks])
    add("diff_special", {"kind": "neginf"}, [(-inf, t0 + k * STEP) for k in ks])
    add("diff_special", {"kind": "mixed"}, [(cycle[k % 7], t0 + k * STEP) for k in ks])
    add("diff_special", {"kind": "neg"}, [(-(k % 9) * 1.25 - 0.5, t0 + k * STEP) for k in ks])
    add("diff_special", {"kind": "zero"}, [(0.0, t0 + k * STEP) for k in ks])
    # Labels for label_replace / label_join / sort_by_label.
    for src, dst, path, v in (("a-b-c", "x", "/api/v1", 3.0), ("d-e", "y", "/", 1.0),
                              ("f", "z", "/metrics", 2.0), ("g-h", "x", "/api/v2", 4.0)):
        add("diff_labels", {"src": src, "dst": dst, "path": path},
            [(v, t0 + k * STEP) for k in ks])
    # Small integers, for count_values and value equality.
    for inst in ("a", "b", "c", "d"):
        add("diff_int", {"instance": inst},
            [(float((k // 20 + ord(inst)) % 3), t0 + k * STEP) for k in ks])
    # A series that starts late (45 m), on 10 s samples.
    add("diff_late", {"instance": "a"},
        [(float(k % 5) + 0.5, t0 + 45 * 60000 + k * 10000) for k in range(0, 91)])
    # Huge values (sums and means overflow), values of every scale.
    for i, v in enumerate((1.5e308, 1.7e308, -1e308, 1e-310)):
        add("diff_huge", {"i": str(i)}, [(v * (1 + (k % 3) * 0.01), t0 + k * STEP) for k in ks])
    for i, v in enumerate((0.1, 1 / 3, 1e21, 123456789.125, 1e-7, -2.5e-5)):
        add("diff_scale", {"i": str(i)}, [(v * (k % 4 + 1), t0 + k * STEP) for k in ks])
    # A histogram whose le labels repeat one bound in two spellings ("1",
    # "1.0"), spell +Inf as "Inf", and hold a bound that is not a number.
    for j, le in enumerate(("0.5", "1", "1.0", "abc", "Inf")):
        add("diff_alt_bucket", {"le": le}, [(float(k * (j + 1) + j), t0 + k * STEP) for k in ks])
    # Two names, one label set: their values without __name__ collide.
    add("diff_dup_a", {"x": "1"}, [(1.0, t0 + k * STEP) for k in ks])
    add("diff_dup_b", {"x": "1"}, [(2.0, t0 + k * STEP) for k in ks])
    return S


def cmd_write(args):
    t0, mutate, urls = None, False, []
    it = iter(args)
    for a in it:
        if a == "--t0":
            t0 = int(next(it))
        elif a == "--mutate":
            mutate = True
        else:
            urls.append(a)
    S = dataset(t0)
    if mutate:
        # One more sample of diff_gauge{instance="c"}, after its last one
        # (a server accepts it on top of the data set): a comparison
        # against a server without it must report differences.
        key = next(k for k in S if ("instance", "c") in k and ("__name__", "diff_gauge") in k)
        S = {key: [(123.456, t0 + SPAN + 1000)]}
    # Batches of 5 minutes across every series, in time order: Prometheus's
    # head refuses samples more than an hour older than its newest.
    n = 0
    for lo in range(t0, t0 + SPAN + 60000, 5 * 60000):
        batch = []
        for key, samples in S.items():
            part = [(v, t) for v, t in samples if lo <= t < lo + 5 * 60000]
            if part:
                batch.append((list(key), part))
                n += len(part)
        body = rw.snappy_literal(rw.write_request(batch))
        for url in urls:
            status, text, _ = rw.post(url + "/api/v1/write", body)
            if status != 204:
                raise SystemExit(f"write to {url}: {status} {text[:300]}")
    print(f"{len(S)} series, {n} samples written to {len(urls)} servers")


# ---- queries ---------------------------------------------------------------

class Client:
    """One keep-alive connection; instant queries as GET, range queries as
    form-encoded POST (Grafana's shape)."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.conn = None

    def _do(self, method, path, body=None, headers=None):
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                r = self.conn.getresponse()
                data = r.read()
                return r.status, data
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def query(self, params):
        if "step" in params or "start" in params or "end" in params:
            body = urllib.parse.urlencode(params)
            st, data = self._do("POST", "/api/v1/query_range", body,
                                {"Content-Type": "application/x-www-form-urlencoded"})
        else:
            st, data = self._do("GET", "/api/v1/query?" + urllib.parse.urlencode(params))
        try:
            d = json.loads(data)
        except ValueError:
            return {"status": "error", "errorType": f"(not JSON, HTTP {st})", "error": data[:200].decode(errors="replace")}
        d["_http"] = st
        return d


def secs(ms):
    return f"{ms // 1000}.{ms % 1000:03d}"


def ms_of(t):
    return int(round(float(t) * 1000))


class Num(float):
    """A value with the text it came as: equal values must be written the
    same way (Go's strconv.FormatFloat(v, 'f', -1, 64), as Prometheus)."""

    def __new__(cls, text):
        n = super().__new__(cls, text)  # "NaN", "+Inf", "-Inf" parse as such
        n.text = text
        return n


def fval(s):
    return Num(s)


def same_text(a, b):
    """False when a and b are the same number written differently."""
    ta, tb = getattr(a, "text", None), getattr(b, "text", None)
    if ta is None or tb is None or ta == tb:
        return True
    return not (a == b or (math.isnan(a) and math.isnan(b)))


def same_value(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


def labels_str(m):
    name = m.get("__name__", "")
    rest = ",".join(f'{k}="{v}"' for k, v in sorted(m.items()) if k != "__name__")
    return f"{name}{{{rest}}}"


def normalize(d):
    """(kind, payload) of an answer: ('error', type) or (resultType, ...)."""
    if d.get("status") != "success":
        return "error", d.get("errorType", "?"), d.get("error", "")
    data = d["data"]
    rt, res = data["resultType"], data["result"]
    if rt in ("scalar", "string"):
        return rt, [(ms_of(res[0]), res[1])], None
    out = []
    for s in res:
        pts = [s["value"]] if rt == "vector" else s.get("values", [])
        out.append((labels_str(s["metric"]), [(ms_of(t), fval(v)) for t, v in pts]))
    return rt, out, None


def compare(ref, cand, ordered):
    """A list of difference descriptions (empty: equal)."""
    r, c = normalize(ref), normalize(cand)
    if r[0] == "error" or c[0] == "error":
        if r[0] != c[0]:
            side = "candidate" if c[0] == "error" else "reference"
            msg = c[2] if c[0] == "error" else r[2]
            other = r if c[0] == "error" else c
            return [f"only the {side} failed: {msg[:160]!r} (other answered a {other[0]})"]
        if r[1] != c[1]:
            return [f"error types differ: {r[1]} ({r[2][:100]!r}) vs {c[1]} ({c[2][:100]!r})"]
        return []
    if r[0] != c[0]:
        return [f"result types differ: {r[0]} vs {c[0]}"]
    if r[0] == "string":
        return [] if r[1] == c[1] else [f"expected {r[1]}, got {c[1]}"]
    if r[0] == "scalar":
        (rt, rv), (ct, cv) = r[1][0], c[1][0]
        if rt != ct or not same_value(fval(rv), fval(cv)) or not same_text(fval(rv), fval(cv)):
            return [f"expected scalar {rv}@{rt}, got {cv}@{ct}"]
        return []
    diffs = []
    rm, cm = dict(r[1]), dict(c[1])
    if len(rm) != len(r[1]) or len(cm) != len(c[1]):
        diffs.append(f"duplicate series in an answer (reference {len(r[1])}, candidate {len(c[1])})")
    for k in sorted(rm.keys() - cm.keys()):
        diffs.append(f"missing {k} {fmt_pts(rm[k])}")
    for k in sorted(cm.keys() - rm.keys()):
        diffs.append(f"extra {k} {fmt_pts(cm[k])}")
    for k in sorted(rm.keys() & cm.keys()):
        a, b = rm[k], cm[k]
        if len(a) != len(b) or any(ta != tb or not same_value(va, vb)
                                   for (ta, va), (tb, vb) in zip(a, b)):
            diffs.append(f"{k}: expected {fmt_pts(a)}, got {fmt_pts(b)}")
        elif not all(same_text(va, vb) for (_, va), (_, vb) in zip(a, b)):
            x = next((va.text, vb.text) for (_, va), (_, vb) in zip(a, b) if not same_text(va, vb))
            diffs.append(f"{k}: the same value written differently: expected {x[0]!r}, got {x[1]!r}")
    if ordered and not diffs:
        av = [p[0][1] for _, p in r[1]]
        bv = [p[0][1] for _, p in c[1]]
        if any(not same_value(x, y) for x, y in zip(av, bv)):
            diffs.append(f"order differs: expected values {av}, got {bv}")
    return diffs


def fmt_pts(pts, limit=4):
    """The first differing points, briefly."""
    s = " ".join(f"{getattr(v, 'text', v)}@{t}" for t, v in pts[:limit])
    return s + (f" ... ({len(pts)} points)" if len(pts) > limit else "")


def outer_call(e):
    """(name, args text) when e is one call `name(...)` as a whole (its
    first parenthesis closes at the end), else None. Prefix-form grouping
    (`topk by (x) (...)`) is not a plain call: None."""
    e = e.strip()
    m = re.match(r"([a-z_]+)\s*\(", e)
    if not m:
        return None
    depth, quote, i = 0, None, m.end() - 1
    while i < len(e):
        ch = e[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return (m.group(1), e[m.end():i]) if i == len(e) - 1 else None
        i += 1
    return None


def is_ordered(expr):
    """Prometheus orders an instant query's answer: sort/sort_desc
    outermost, or topk/bottomk outermost without by/without (one group).
    Parentheses around the whole are looked through."""
    e = expr.strip()
    c = outer_call(e)
    while c is None and e.startswith("(") and e.endswith(")"):
        inner = e[1:-1].strip()
        if outer_call("f" + e) is None:  # "(a) + (b)" is not one parenthesis
            break
        e = inner
        c = outer_call(e)
    if c is None:
        return False
    if c[0] in ("sort", "sort_desc"):
        return True
    return c[0] in ("topk", "bottomk") and not re.search(r"\b(by|without)\s*\(", e)


def parse_spec(spec):
    """'{a="x"} 1; {b="y"} NaN' -> [(labels_str, value)]."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        m = re.fullmatch(r"([A-Za-z_:][\w:]*)?(\{.*\})?\s+(\S+)", part)
        if not m:
            raise SystemExit(f"bad expect spec {part!r}")
        lab = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if m.group(1):
            lab["__name__"] = m.group(1)
        out.append((labels_str(lab), fval(m.group(3))))
    return out


def dur_ms(s):
    total = 0
    for n, u in re.findall(r"(\d+)(ms|s|m|h)", s):
        total += int(n) * {"ms": 1, "s": 1000, "m": 60000, "h": 3600000}[u]
    return total


def load_corpus(path, t0):
    items = []
    for lineno, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        expr, _, directive = line.partition("#!")
        expr = re.sub(r"\$T\((\w+)\)", lambda m: secs(t0 + dur_ms(m.group(1))), expr.strip())
        d = {"line": lineno, "expr": expr, "except": None, "expect": None}
        directive = directive.strip()
        if directive.startswith("except:"):
            d["except"] = directive[7:].strip()
            if not d["except"]:
                raise SystemExit(f"{path}:{lineno}: an exception needs its reason")
        elif directive.startswith("expect@"):
            m = re.fullmatch(r"expect@(\w+):(.*)", directive)
            if not m:
                raise SystemExit(f"{path}:{lineno}: bad directive {directive!r}")
            d["expect"] = (t0 + dur_ms(m.group(1)), parse_spec(m.group(2)))
        elif directive:
            raise SystemExit(f"{path}:{lineno}: unknown directive {directive!r}")
        items.append(d)
    return items


def cmd_compare(args):
    t0, corpus, self_mode, verbose, urls = None, None, False, False, []
    it = iter(args)
    for a in it:
        if a == "--t0":
            t0 = int(next(it))
        elif a == "--corpus":
            corpus = next(it)
        elif a == "--self":
            self_mode = True
        elif a == "-v":
            verbose = True
        else:
            urls.append(a)
    ref, cand = Client(urls[0]), Client(urls[1])
    items = load_corpus(corpus, t0)
    M = 60000
    # Instant times: inside the data, between samples, at its last sample,
    # after series end (within the lookback), beyond the lookback, near its start,
    # the lookback's exact end (both ends are in the window in 2.42), before the data.
    instants = [t0 + 30 * M, t0 + 30 * M + 7321, t0 + SPAN, t0 + SPAN + 3 * M,
                t0 + SPAN + 8 * M, t0 + 2 * M + 500, t0 + SPAN + 5 * M, t0 - 10 * M]
    # Range queries: aligned, unaligned past the end of the data, dense
    # across the stale markers and the gap.
    ranges = [(t0, t0 + SPAN, 60000), (t0 + 10 * M + 3300, t0 + SPAN + 10 * M, 37000),
              (t0 + 19 * M, t0 + 42 * M, 15000)]
    n_expr, n_cmp, n_diff, n_exc, n_hand = 0, 0, 0, 0, 0
    fixed = []
    kinds = {"data": 0, "empty": 0, "error": 0}  # what the reference answered

    def tally(r):
        n = normalize(r)
        kinds["error" if n[0] == "error" else "data" if n[1] else "empty"] += 1

    def both(params):
        out = [None, None]

        def run_cand():
            out[1] = cand.query(params)
        th = threading.Thread(target=run_cand)
        th.start()
        out[0] = ref.query(params)
        th.join()
        return out

    for it_ in items:
        expr = it_["expr"]
        if it_["expect"]:
            if self_mode:
                continue
            n_expr += 1
            n_hand += 1
            at, want = it_["expect"]
            got = cand.query({"query": expr, "time": secs(at)})
            n_cmp += 1
            g = normalize(got)
            problem = None
            if g[0] == "error":
                problem = f"failed: {g[1]} {g[2][:160]}"
            elif g[0] != "vector":
                problem = f"answered a {g[0]}, want a vector"
            else:
                have = [(lab, pts[0][1]) for lab, pts in g[1]]
                if len(have) != len(want) or any(a[0] != b[0] or not same_value(a[1], b[1])
                                                 for a, b in zip(have, want)):
                    problem = f"expected {want}, got {have}"
            if problem:
                n_diff += 1
                print(f"DIFF line {it_['line']}: {expr} (hand-checked @{secs(at)}): {problem}")
            continue
        n_expr += 1
        queries = [{"query": expr, "time": secs(t)} for t in instants]
        found = []
        ref_type = None
        for q in queries:
            r, c = both(q)
            n_cmp += 1
            tally(r)
            if ref_type is None and r.get("status") == "success":
                ref_type = r["data"]["resultType"]
            d = compare(r, c, is_ordered(expr))
            if d:
                found.append((f"instant @{q['time']}", d))
        # A range vector answers an error to range queries: one is enough.
        for start, end, step in (ranges[:1] if ref_type in ("matrix", "string") else ranges):
            q = {"query": expr, "start": secs(start), "end": secs(end), "step": f"{step / 1000:g}"}
            r, c = both(q)
            n_cmp += 1
            tally(r)
            d = compare(r, c, False)
            if d:
                found.append((f"range {q['start']}..{q['end']} step {q['step']}", d))
        if found:
            tag = "EXCEPTED" if it_["except"] else "DIFF"
            if it_["except"]:
                n_exc += 1
            else:
                n_diff += len(found)
            nq = len(queries) + (1 if ref_type in ("matrix", "string") else len(ranges))
            print(f"{tag} line {it_['line']}: {expr}: {len(found)} of {nq} queries differ")
            shown = found if verbose else found[:2]
            for where, d in shown:
                print(f"    {where}: {d[0]}")
                for x in d[1:4]:
                    print(f"        {x}")
        elif it_["except"]:
            fixed.append(it_)
        elif verbose:
            print(f"ok   line {it_['line']}: {expr}")
    # The query routes' parameters, as Prometheus reads them: RFC 3339
    # and fractional times, durations as steps, and the bad ones.
    rfc = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((t0 + 30 * M) // 1000))
    api_cases = [
        {"query": "diff_gauge", "time": rfc + "Z"},
        {"query": "diff_gauge", "time": rfc + ".250+00:00"},
        {"query": "diff_gauge", "time": secs(t0 + 30 * M) + "5"},
        {"query": "diff_gauge", "time": "abc"},
        {"query": "diff_gauge", "time": secs(t0 + 30 * M), "timeout": "10s"},
        {"query": "diff_gauge", "time": secs(t0 + 30 * M), "timeout": "abc"},
        {"query": "", "time": secs(t0 + 30 * M)},
        {"time": secs(t0 + 30 * M)},
        {"query": "diff_gauge", "start": rfc + "Z", "end": secs(t0 + 40 * M), "step": "1m"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + 10 * M), "step": "90s"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + 10 * M), "step": "0.5"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + 10 * M), "step": "1h"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0), "step": "15"},
        {"query": "diff_gauge", "start": secs(t0 + 10 * M), "end": secs(t0), "step": "15"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + 10 * M), "step": "0"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + 10 * M), "step": "-15"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + 10 * M), "step": "abc"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + SPAN), "step": "0.3"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + SPAN), "step": "0.33"},
        {"query": "diff_gauge", "start": "abc", "end": secs(t0 + SPAN), "step": "15"},
        {"query": "diff_gauge", "end": secs(t0 + SPAN), "step": "15"},
        {"query": "diff_gauge", "start": secs(t0), "end": secs(t0 + SPAN)},
    ]
    for q in api_cases:
        r, c = both(q)
        n_cmp += 1
        d = compare(r, c, False)
        if d:
            n_diff += 1
            print(f"DIFF parameters {q}: {d[0]}")
    for it_ in fixed:
        if not self_mode:
            print(f"NOW EQUAL line {it_['line']}: {it_['expr']} (excepted: {it_['except']})")
    print(f"{n_expr} expressions, {n_cmp} comparisons, {n_diff} differences"
          f" ({n_exc} documented exceptions differ, {n_hand} hand-checked;"
          f" the reference answered {kinds['data']} with data, {kinds['empty']} empty,"
          f" {kinds['error']} errors)")
    return 1 if n_diff else 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("write", "compare"):
        raise SystemExit(__doc__)
    sys.exit({"write": cmd_write, "compare": cmd_compare}[sys.argv[1]](sys.argv[2:]) or 0)
