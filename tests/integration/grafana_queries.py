#!/usr/bin/env python3
"""grafana_queries.py [--empty-vars] PROM_URL DASHBOARD.json... - runs
every panel query of the dashboards against a Prometheus data source
(Prometheus, or gpulse server), in Grafana's request shapes: the template
variables resolved through their own label_values() queries
(/api/v1/label/NAME/values with match[], start and end; each variable
tried with "All" where it allows it, and with single values),
$__rate_interval and friends replaced by concrete durations, each panel
query sent as a form-encoded POST to /api/v1/query and to
/api/v1/query_range (the last 5 minutes at 15 s). Fails, naming the
dashboard and panel, when a query errors or returns no data.
--empty-vars: a variable whose query finds no values is interpolated as
the empty string (as Grafana does) and named on stderr, instead of
failing. Prints "PANELS QUERIES
COMBINATIONS" on success."""
import json
import re
import sys
import time
import urllib.parse
import urllib.request

EMPTY_VARS = "--empty-vars" in sys.argv
if EMPTY_VARS:
    sys.argv.remove("--empty-vars")
PROM = sys.argv[1]
FIXED = {"__rate_interval": "20s", "__interval": "5s", "__range": "1m", "__range_s": "60",
         "__interval_ms": "5000"}


def esc(value):
    """A label value as a regex inside a PromQL string (Grafana's escaping
    of variables used with =~): regex-escaped, backslashes doubled."""
    return re.escape(value).replace("\\", "\\\\")


def api(path, post=False, **params):
    body = urllib.parse.urlencode(params, doseq=True)
    if post:  # Grafana's default method: a form body
        req = urllib.request.Request(PROM + path, data=body.encode(),
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    else:
        req = urllib.request.Request(PROM + path + "?" + body)
    with urllib.request.urlopen(req, timeout=20) as r:
        d = json.load(r)
    if d.get("status") != "success":
        raise RuntimeError(f"{path}: {d}")
    return d["data"]


def subst(text, values):
    def rep(m):
        name = m.group(1) or m.group(2) or m.group(3)
        if name in FIXED:
            return FIXED[name]
        if name not in values:
            raise KeyError(f"undefined variable ${name}")
        return values[name]
    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)", rep, text)


def var_values(v, values):
    q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
    m = re.fullmatch(r"label_values\((?:(.*),\s*)?(\w+)\)", q.strip())
    if not m:
        raise ValueError(f"variable {v['name']}: unsupported query {q}")
    sel, label = m.group(1), m.group(2)
    # Grafana's label_values(): the label's values narrowed by match[] and
    # the dashboard's time range (the last hour).
    now = int(time.time())
    params = {"start": now - 3600, "end": now}
    if sel:
        params["match[]"] = subst(sel, values)
    return sorted(api(f"/api/v1/label/{label}/values", **params))


def combos(dash):
    """Yields dicts of variable values: everything "All" first, then
    single values, each variable resolved after those before it."""
    qvars = [v for v in dash["templating"]["list"] if v["type"] == "query"]
    modes = ("all", "single") if any(v.get("includeAll") for v in qvars) else ("single",)
    for mode in modes:
        values, ok = {"datasource": "prometheus"}, True
        for v in qvars:
            vals = var_values(v, values)
            if not vals and EMPTY_VARS:
                print(f"note: {dash['title']}: variable {v['name']} has no values: empty", file=sys.stderr)
                values[v["name"]] = ""
                continue
            if not vals:
                raise RuntimeError(f"{dash['title']}: variable {v['name']} has no values")
            if mode == "all" and v.get("includeAll"):
                values[v["name"]] = v.get("allValue") or "|".join(esc(x) for x in vals)
            else:
                values[v["name"] + "__choices"] = vals
                values[v["name"]] = esc(vals[0])
        yield mode, values


def panels(dash):
    for p in dash["panels"]:
        if p["type"] == "row":
            yield from p.get("panels", [])
        else:
            yield p


def empty_panels(dash, values):
    out, n = [], 0
    for p in panels(dash):
        for t in p.get("targets", []):
            expr = subst(t["expr"], values)
            n += 1
            now = round(time.time(), 3)
            try:
                res = api("/api/v1/query", post=True, query=expr, time=now)["result"]
                rng = api("/api/v1/query_range", post=True, query=expr, start=now - 300, end=now,
                          step=15)["result"]
            except Exception as e:  # a 400 is a broken query
                out.append(f"{p['title']} [{t['refId']}]: {expr}: {e}")
                continue
            if not res:
                out.append(f"{p['title']} [{t['refId']}]: no data: {expr}")
            elif not rng:
                out.append(f"{p['title']} [{t['refId']}]: no data over the last 5 minutes: {expr}")
    return out, n


def structure(dash):
    """What Grafana needs to place and run the panels."""
    out, ids = [], set()
    for p in panels(dash):
        g = p.get("gridPos", {})
        if p.get("id") in ids:
            out.append(f"{p['title']}: duplicate panel id {p.get('id')}")
        ids.add(p.get("id"))
        if not (0 <= g.get("x", -1) and g.get("x", 0) + g.get("w", 99) <= 24 and g.get("h", 0) > 0):
            out.append(f"{p['title']}: gridPos {g} outside the 24-column grid")
        for t in p.get("targets", []):
            if t.get("datasource", p.get("datasource", {})).get("uid") != "${datasource}":
                out.append(f"{p['title']} [{t.get('refId')}]: not on the $datasource variable")
    return out


def main():
    bad, npanels, nq, ncombo = [], 0, 0, 0
    for path in sys.argv[2:]:
        dash = json.load(open(path))
        bad += [f"{dash['title']}: {e}" for e in structure(dash)]
        npanels += sum(1 for _ in panels(dash))
        for mode, values in combos(dash):
            # A single-value variable (a job) is tried over its values until
            # one has data in every panel; the one chosen is printed.
            singles = [k[:-9] for k in values if k.endswith("__choices")]
            tries = [values]
            if mode == "single":
                tries = []
                for name in singles:
                    for c in values[name + "__choices"]:
                        tv = dict(values)
                        tv[name] = esc(c)
                        tries.append(tv)
                tries = tries or [values]
            first = None
            for tv in tries:
                errs, n = empty_panels(dash, tv)
                ncombo += 1
                if first is None:
                    first = errs
                if errs:
                    shown = {k: re.sub(r"\\+(.)", r"\1", v) for k, v in tv.items()
                             if not k.endswith("__choices") and k != "datasource"}
                    print(f"    ({dash['title']} with {shown}: {len(errs)} empty, e.g. {errs[0][:120]}; next value)")
                if not errs:
                    shown = {k: re.sub(r"\\+(.)", r"\1", v) for k, v in tv.items()
                             if not k.endswith("__choices") and k != "datasource"}
                    print(f"  - {dash['title']}: {n} queries return data with {shown}")
                    nq += n
                    break
            else:
                bad += [f"{dash['title']} ({mode}): {e}" for e in first]
    for b in bad:
        print("FAIL: " + b, file=sys.stderr)
    if bad:
        sys.exit(1)
    print(npanels, nq, ncombo)


main()
