#!/usr/bin/env python3
"""Reads a `gpulse top` screen (tmux capture-pane -p, or --once text) and
checks it against the agent's /api/v1/snapshot taken at the same moment.

usage: top_screen.py SNAPSHOT.json SCREEN.txt [--order gpumem|pid|pid-rev]
                     [--width N] [--alerts ALERTS.json] [--window first|last]

The stand-in NVML scenario is constant, so every compared value is
exact: GPU count, index, model (as wide as the screen shows it),
utilization %, memory used and total (GiB, one decimal), temperature,
power and limit (W), and the processes (pid, GPU, GPU memory in MiB) as a
set, and in the screen's order when --order is given. --width checks that
no line is wider than the terminal. --alerts compares the ALERTS section
with the server's answer. --window says the table is scrolled: it shows
the first (or last) rows of the order, not all of them.
"""
import json
import re
import sys


def fail(msg):
    print("top_screen: " + msg, file=sys.stderr)
    sys.exit(1)


def parse(lines):
    gpus, procs, header = {}, [], None
    cur = None
    for ln in lines:
        m = re.match(r"^GPU (\d+)(?:@\S+)? (.+?)  (\d+)C  (\d+)/(\d+)W", ln)
        if m:
            cur = int(m.group(1))
            gpus[cur] = {"model": m.group(2), "temp": int(m.group(3)), "power": int(m.group(4)),
                         "limit": int(m.group(5))}
            continue
        if cur is not None and ln.startswith("  ") and "MEM [" in ln and cur in gpus and "mem" not in gpus[cur]:
            u = re.search(r"UTIL \[[| ]*?(\d+)%\]", ln)
            mm = re.search(r"MEM \[[| ]*?([\d.]+)/([\d.]+)G\]", ln)
            if not mm:
                fail("no memory bar in %r" % ln)
            gpus[cur]["util"] = int(u.group(1)) if u else None
            gpus[cur]["mem"] = (mm.group(1), mm.group(2))
            continue
        if re.match(r"^\s*PID", ln) and "COMMAND" in ln:
            header = ln
            continue
        if header is not None:
            m = re.match(r"^\s*(\d+)\s.*?\s(\d+)\s+(\d+)MiB(\s|$)", ln)
            if m:
                procs.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
    return gpus, procs, header


def main():
    snap = json.load(open(sys.argv[1]))
    lines = open(sys.argv[2]).read().split("\n")
    args = sys.argv[3:]
    opt = dict(zip(args[::2], args[1::2]))
    if "--width" in opt:
        w = int(opt["--width"])
        for ln in lines:
            if len(ln.rstrip()) > w:
                fail("line wider than %d: %r" % (w, ln))
    gpus, procs, header = parse(lines)
    if header is None:
        fail("no process table header on the screen")
    if len(gpus) != len(snap["gpus"]):
        fail("screen shows %d GPUs, snapshot has %d" % (len(gpus), len(snap["gpus"])))
    want_procs = []
    for g in snap["gpus"]:
        i = g["gpu"]
        s = gpus.get(i)
        if s is None:
            fail("GPU %d missing on the screen" % i)
        m = g["metrics"]
        if not g["model"].startswith(s["model"]) or len(s["model"]) < min(len(g["model"]), 20):
            fail("GPU %d model %r, snapshot %r" % (i, s["model"], g["model"]))
        checks = [
            ("temp", s["temp"], round(m["DCGM_FI_DEV_GPU_TEMP"])),
            ("power", s["power"], round(m["DCGM_FI_DEV_POWER_USAGE"])),
            ("limit", s["limit"], round(m["gpulse_gpu_power_limit_watts"])),
            ("mem used", s["mem"][0], "%.1f" % (m["gpulse_gpu_memory_used_bytes"] / 2**30)),
            ("mem total", s["mem"][1], "%.1f" % (m["gpulse_gpu_memory_total_bytes"] / 2**30)),
        ]
        if s["util"] is not None:
            checks.append(("util", s["util"], round(m["DCGM_FI_DEV_GPU_UTIL"])))
        for name, got, want in checks:
            if got != want:
                fail("GPU %d %s: screen %r, snapshot %r" % (i, name, got, want))
        for p in g["processes"]:
            want_procs.append((p["pid"], i, p["memory_bytes"] >> 20))
    window = opt.get("--window")
    if not window and sorted(procs) != sorted(want_procs):
        fail("processes: screen %s, snapshot %s" % (sorted(procs), sorted(want_procs)))
    order = opt.get("--order")
    if order == "gpumem":
        want = sorted(want_procs, key=lambda p: (-p[2], p[0], p[1]))
    elif order == "pid":
        want = sorted(want_procs, key=lambda p: (p[0], p[1]))
    elif order == "pid-rev":
        want = sorted(want_procs, key=lambda p: (p[0], p[1]), reverse=True)
    else:
        want = procs
    if window:
        # a scrolled table: the rows shown are the first (or last) of the order
        if not procs or len(procs) >= len(want):
            fail("want a partial table, screen shows %d of %d rows" % (len(procs), len(want)))
        want = want[:len(procs)] if window == "first" else want[-len(procs):]
    if procs != want:
        fail("order %s: screen %s, want %s" % (order, procs, want))
    if "--alerts" in opt:
        data = json.load(open(opt["--alerts"]))["data"]
        text = "\n".join(lines)
        firing = sum(1 for a in data if a["state"] == "firing")
        head = "ALERTS  %d active, %d firing" % (len(data), firing)
        if head not in text:
            fail("no %r on the screen" % head)
        for a in data[:5]:
            pat = r"%s\s+%s\s+%s gpu %s\s+%s" % (a["severity"], a["state"], re.escape(a["kind"]),
                                                  a["labels"]["gpu"], re.escape(a["summary"]))
            if not re.search(pat, text):
                fail("alert %s of GPU %s not on the screen" % (a["kind"], a["labels"]["gpu"]))
    print("top_screen: %d GPUs, %d processes match the snapshot" % (len(gpus), len(procs)))


main()
