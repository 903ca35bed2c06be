#!/usr/bin/env python3
"""funnel_feed.py END_S HOURS GPUS EVERY_S URL... - remote-writes (rw.py's
encoder, which shares no code with the server) a fleet's GPU activity
for the funnel and the cost, in one request to each URL's /api/v1/write:
GPUS GPUs, 8 a node, a sample every EVERY_S seconds (each a few ms off
the grid, as scrapes are) from END_S - HOURS h to END_S.

Every fourth GPU is never held by a job (idle but for bursts); the
others are held in jobs of three GPUs (job-K, user uK, team tK % 2),
each job starting and ending at a time of its own, the GPU's series
without a job label before and after; odd jobs' series carry no user
label (the owner is their process's uid), and the process of each GPU
holds memory while its job runs, job-1's for 5 minutes after its end
(a zombie). Activity (SM active, 0-1) has
idle stretches below 0.05 and minutes on both sides of it; GPU 1 reports
utilization (0-100) only; GPU 2 reports both and a value above 1 now
and then. Prices come from the model table (H100, A100). Prints the
number of activity samples. FIRST_GPU=K in the environment numbers the
GPUs from K (another part of the same fleet)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rw  # noqa: E402

end, hours, gpus, every = map(int, sys.argv[1:5])
urls = sys.argv[5:]
t0 = end - hours * 3600
ts = [t * 1000 + (i * 37) % 7 for i, t in enumerate(range(t0, end + 1, every))]
batch, total = [], 0


def add(name, labels, samples):
    global total
    ls = sorted([("__name__", name)] + list(labels.items()))
    batch.append((ls, [(float(v), t) for t, v in samples]))
    total += len(samples) if name.startswith("DCGM") else 0


def act(i, g):
    if (i // 30 + g) % 7 == 0:
        return 0.01 * ((i + g) % 4)  # an idle stretch
    if (i + g) % 97 == 0:
        return 0.04  # a lone idle sample: the minute has both sides
    return round(0.2 + ((i * 7 + g * 13) % 70) / 100, 2)


first = int(os.environ.get("FIRST_GPU", "0"))
for g in range(first, first + gpus):
    lab = {"Hostname": "n%d" % (g // 8), "gpu": str(g % 8), "UUID": "GPU-%04d" % g,
           "modelName": "NVIDIA H100 80GB HBM3" if g % 3 else "NVIDIA A100-SXM4-80GB"}
    k = g // 4 * 3 + g % 4 - 1  # the job's number, -1 none
    if g % 4:
        span = (t0 * 1000 + (k * 17 % 40) * 60000, end * 1000 - (k * 23 % 50) * 60000 - 1)
        held = {"job": "job-%d" % (k // 3), "team": "t%d" % (k // 3 % 2)}
        if k // 3 % 2 == 0:
            held["user"] = "u%d" % (k // 3)
        parts = [({}, lambda t: t < span[0]),
                 (held, lambda t: span[0] <= t <= span[1]),
                 ({}, lambda t: t > span[1])]
        # the job's process on this GPU: its owner (uid), its memory, the
        # job's end; job-1's process outlives its job by 5 minutes (a zombie)
        host, job, pid = lab["Hostname"], held["job"], str(1000 + g)
        proc = {"Hostname": host, "pid": pid, "comm": "train", "job": job}
        inside = [t for t in ts if span[0] <= t <= span[1] + (300000 if job == "job-1" else 0)]
        add("gpulse_process_info", dict(proc, uid=str(2000 + k // 3)), [(t, 1) for t in inside])
        add("gpulse_gpu_process_memory_bytes", dict(proc, gpu=lab["gpu"], UUID=lab["UUID"]),
            [(t, 1e9 + g) for t in inside])
        add("gpulse_job_end_time_seconds", {"Hostname": host, "job": job, "gpu_slot": lab["gpu"]},
            [(t, span[1] / 1000) for t in ts if span[1] < t <= span[1] + 120000])
    else:
        parts = [({}, lambda t: True)]
    for extra, within in parts:
        pts = [(t, act(i, g) if extra or g % 4 == 0 else 0.02 + 0.01 * (i % 3))
               for i, t in enumerate(ts) if within(t)]
        if not pts:
            continue
        if g != 1:
            add("DCGM_FI_PROF_SM_ACTIVE", dict(lab, **extra),
                [(t, 1.5 if g == 2 and i % 97 == 0 else v) for i, (t, v) in enumerate(pts)])
        if g in (1, 2):
            add("DCGM_FI_DEV_GPU_UTIL", dict(lab, **extra), [(t, round(v * 100)) for t, v in pts])

body = rw.snappy_literal(rw.write_request(batch))
for u in urls:
    status, text, _ = rw.post(u + "/api/v1/write", body)
    if status != 204:
        raise SystemExit("write to %s answered %d %s" % (u, status, text))
print(total)
