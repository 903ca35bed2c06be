#!/usr/bin/env python3
"""promql_gen.py SEED COUNT - prints COUNT random PromQL expressions over
promql_diff.py's data set, one a line, the same for the same SEED: the
differential test runs them beside its hand-written corpus, so the
combinations nobody thought of are compared with Prometheus too.

Expressions are well typed and mostly answer data: binary operators
match on labels both sides have (instance, or none after an
aggregation), ranges and steps are drawn from values that make windows
hold 0, 1, 2 or many samples, and the functions, aggregations and
operators of the language appear nested up to a few levels; not topk and
bottomk, whose choice among equal values is not reproducible in 2.42's
range queries (the corpus has them, on data without such ties)."""
import random
import sys

# metric -> labels it has besides __name__ (all have instance but where noted)
METRICS = {
    "diff_gauge": ("job", "instance"),
    "diff_requests_total": ("job", "instance", "method", "code"),
    "diff_stale": ("instance",),
    "diff_stop": ("instance",),
    "diff_gap": ("instance",),
    "diff_gap_total": ("instance",),
    "diff_sparse": ("instance",),
    "diff_late": ("instance",),
    "diff_gpu_util": ("instance", "gpu"),
    "diff_mem_used": ("instance", "gpu", "unit"),
    "diff_int": ("instance",),
    "diff_info": ("instance", "node", "role"),
}
VALUES = {"instance": ("a", "b", "c"), "method": ("get", "post"), "code": ("200", "500"),
          "gpu": ("0", "1"), "job": ("node", "api")}
RANGES = ("15s", "30s", "1m", "2m", "5m", "10m", "1h")
# Subquery steps divide a minute: T0 is a whole minute, so their absolute
# alignment, and with it every answer, is the same in every run.
STEPS = ("", "15s", "30s", "1m", "20s", "12s")
OFFSETS = ("", "", "", " offset 1m", " offset 5m", " offset -2m", " offset 20s",
           " @ start()", " @ end()", " @ $T(30m)", " @ $T(44m30s) offset 1m")
# Not exp, sinh, cosh: their ulp differences on huge values (Go's
# assembly vs the C library) become any value under sin, cos and tan;
# not tanh: it is 1 within an ulp for most data, and stddev of such
# values is that ulp's noise.
SIMPLE = ("abs", "ceil", "floor", "round", "sqrt", "ln", "log2", "log10", "sgn", "sin",
          "cos", "tan", "asin", "acos", "atan", "asinh", "acosh",
          "atanh", "deg", "rad", "timestamp", "minute", "hour", "day_of_week", "day_of_month",
          "day_of_year", "days_in_month", "month", "year")
RANGE_FNS = ("rate", "irate", "increase", "delta", "idelta", "deriv", "changes", "resets",
             "avg_over_time", "min_over_time", "max_over_time", "sum_over_time",
             "count_over_time", "stddev_over_time", "stdvar_over_time", "last_over_time",
             "present_over_time", "absent_over_time")
AGGS = ("sum", "avg", "min", "max", "count", "group", "stddev", "stdvar")
# Not ^, % and atan2: Go's math.Pow and Atan2 round unlike the C
# library's by an ulp (within the 1e-9), and % of a huge power turns that
# ulp into any value; the corpus has them on tame operands.
ARITH = ("+", "-", "*", "/")
CMP = ("==", "!=", ">", "<", ">=", "<=")


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def pick(self, seq):
        return self.r.choice(seq)

    def scalar(self, depth):
        k = self.r.random()
        if depth <= 0 or k < 0.5:
            return self.pick(("1", "2", "0.5", "10", "-3", "0", "100", "1e3"))
        if k < 0.7:
            return f"scalar({self.vector(depth - 1)[0]})"
        if k < 0.8:
            return "time()"
        return f"({self.scalar(depth - 1)} {self.pick(ARITH)} {self.scalar(depth - 1)})"

    def selector(self):
        name = self.pick(list(METRICS))
        labels = METRICS[name]
        ms = []
        if self.r.random() < 0.4:
            ln = self.pick([l for l in labels if l in VALUES])
            op = self.pick(("=", "!=", "=~", "!~"))
            v = self.pick(VALUES[ln])
            ms.append(f'{ln}{op}"{v if "~" not in op else v + "|x"}"')
        sel = name + ("{" + ", ".join(ms) + "}" if ms else "")
        return sel, set(labels)

    def matrix(self, depth):
        """A range vector: a selector with a range, or a subquery."""
        if depth <= 0 or self.r.random() < 0.7:
            sel, labels = self.selector()
            return f"{sel}[{self.pick(RANGES)}]{self.pick(OFFSETS)}", labels
        inner, labels = self.vector(depth - 1)
        mod = self.pick(OFFSETS)
        if "@" in inner and "@" in mod:  # 2.42's nested @: the corpus's exception
            mod = ""
        return f"({inner})[{self.pick(('5m', '10m', '30m'))}:{self.pick(STEPS)}]{mod}", labels

    def vector(self, depth):
        """(expression, labels its series may have besides __name__)."""
        k = self.r.random() if depth > 0 else 0
        if k < 0.2:
            sel, labels = self.selector()
            return sel + self.pick(OFFSETS), labels
        if k < 0.38:
            m, labels = self.matrix(depth - 1)
            f = self.pick(RANGE_FNS + ("quantile_over_time", "predict_linear", "holt_winters"))
            if f == "quantile_over_time":
                return f"quantile_over_time({self.pick(('0', '0.5', '0.9', '1'))}, {m})", labels
            if f == "predict_linear" and "@" not in m:  # 2.42's @ here: the corpus's exception
                return f"predict_linear({m}, {self.pick(('60', '-30', '600'))})", labels
            if f == "predict_linear":
                f = "deriv"
            if f == "holt_winters":
                return f"holt_winters({m}, 0.{self.r.randint(1, 9)}, 0.{self.r.randint(1, 9)})", labels
            return f"{f}({m})", (set() if f == "absent_over_time" else labels)
        if k < 0.5:
            inner, labels = self.vector(depth - 1)
            f = self.pick(SIMPLE + ("clamp", "clamp_min", "clamp_max", "neg", "label_replace"))
            if f == "clamp":
                return f"clamp({inner}, {self.scalar(0)}, {self.scalar(0)})", labels
            if f in ("clamp_min", "clamp_max"):
                return f"{f}({inner}, {self.scalar(depth - 1)})", labels
            if f == "neg":
                return f"-({inner})", labels
            if f == "label_replace":
                return f'label_replace({inner}, "instance", "x$1", "instance", "(a|b)")', labels
            return f"{f}({inner})", labels
        if k < 0.7:
            inner, labels = self.vector(depth - 1)
            grp = sorted(self.r.sample(sorted(labels), min(len(labels), self.r.randint(0, 2))))
            without = self.r.random() < 0.3
            clause = f"{'without' if without else 'by'} ({', '.join(grp)})"
            out = set(labels) - set(grp) if without else set(grp)
            # Not topk/bottomk: among equal values (NaN included) which
            # series 2.42 keeps follows its heap and its input order, which
            # in range queries comes from a Go map: not reproducible.
            op = self.pick(AGGS + ("quantile", "count_values"))
            if op == "quantile":
                return f"quantile {clause} ({self.pick(('0', '0.25', '0.5', '1'))}, {inner})", out
            if op == "count_values":
                # Over stored values only: a computed value one ulp off
                # (Go's math vs the C library's) would be another label.
                sel, labels = self.selector()
                grp = [g for g in grp if g in labels]
                clause = f"{'without' if without else 'by'} ({', '.join(grp)})"
                out = set(labels) - set(grp) if without else set(grp)
                return f'count_values {clause} ("value", {sel})', out | {"value"}
            return f"{op} {clause} ({inner})", out
        if k < 0.8:
            inner, labels = self.vector(depth - 1)
            op = self.pick(ARITH + CMP)
            b = " bool" if op in CMP and self.r.random() < 0.5 else ""
            s = self.scalar(depth - 1)
            return (f"{inner} {op}{b} {s}" if self.r.random() < 0.5 else f"{s} {op}{b} {inner}"), labels
        if k < 0.86:
            # Many-to-one onto the info series, or a set operator between
            # any two vectors (matching on instance, which all have).
            a, la = self.vector(depth - 1)
            if "instance" not in la:
                return a, la
            if self.r.random() < 0.5:
                inc = self.pick(("node", "role", "node, role", ""))
                op = self.pick(("*", "+", ">", "==", "/"))
                return (f"{a} {op} on(instance) group_left({inc}) diff_info",
                        la | {x.strip() for x in inc.split(",") if x.strip()})
            b, lb = self.vector(depth - 1)
            op = self.pick(("and", "or", "unless"))
            on = self.pick(("", " on(instance)", " ignoring(job)"))
            if op != "or" and "instance" not in lb:
                on = ""
            return f"{a} {op}{on} {b}", la | (lb if op == "or" else set())
        if k < 0.95:
            # Two sides aggregated to the labels they share: one-to-one.
            a, la = self.vector(depth - 1)
            b, lb = self.vector(depth - 1)
            on = sorted(la & lb & {"instance"})
            op = self.pick(ARITH + CMP + ("and", "or", "unless"))
            b_ = " bool" if op in CMP and self.r.random() < 0.5 else ""
            on_s = ", ".join(on)
            return (f"sum by ({on_s}) ({a}) {op}{b_} on({on_s}) sum by ({on_s}) ({b})",
                    set(on))
        le = self.pick(("0", "0.5", "0.9", "0.99", "1"))
        r = self.pick(("1m", "5m", "10m"))
        by = self.pick(("le", "le, instance"))
        return (f"histogram_quantile({le}, sum by ({by}) (rate(diff_latency_seconds_bucket[{r}])))",
                set(by.replace("le", "").replace(",", "").split()))


def main():
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    g = Gen(seed)
    seen = set()
    while len(seen) < count:
        e = g.vector(g.r.randint(1, 4))[0]
        if e not in seen:
            seen.add(e)
            print(e)


if __name__ == "__main__":
    main()
