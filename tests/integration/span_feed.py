#!/usr/bin/env python3
"""span_feed.py URL_A URL_B SECONDS - remote-writes one job, span-1, whose
4 ranks report through two servers (test_storage_remote_multi.sh), through
rw.py's encoder (which shares no code with the server): node n1 (rank 0)
to URL_A, node n2 (ranks 1-3, GPUs 0-2) to URL_B. Every GPU is busy (SM
active 0.9) but rank 2's (0.2): a straggler. B alone holds 3 of the ranks,
enough for the straggler detector to judge them; A alone, 1. Rank 3's GPU
is nearly full (a per-GPU alert its own server, B, must raise alone). The last 90 s are written at once (B's,
then 3 s later A's), then a sample a second until SECONDS have passed.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rw  # noqa: E402

url_a, url_b, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
MODEL = "NVIDIA H100 80GB HBM3"
RANKS = [("n1", "0", 0), ("n2", "0", 1), ("n2", "1", 2), ("n2", "2", 3)]


def series_at(node, times):
    out = []

    def add(name, labels, value):
        ls = sorted([("__name__", name)] + list(labels.items()))
        out.append((ls, [(float(value), int(t * 1000)) for t in times]))

    for n, gpu, rank in RANKS:
        if n != node:
            continue
        g = {"Hostname": n, "gpu": gpu, "UUID": "GPU-%s-%s" % (n, gpu), "modelName": MODEL,
             "job": "span-1", "rank": str(rank)}
        add("DCGM_FI_PROF_SM_ACTIVE", g, 0.2 if rank == 2 else 0.9)
        add("DCGM_FI_DEV_GPU_UTIL", g, 30 if rank == 2 else 95)
        add("DCGM_FI_DEV_FB_USED", g, 80000 if rank == 3 else 20000)
        add("DCGM_FI_DEV_FB_FREE", g, 1000 if rank == 3 else 61000)
        add("gpulse_job_info", {"job": "span-1", "rank": str(rank), "Hostname": n, "scheme": "gpulse_job",
                                "local_rank": gpu, "world_size": "4"}, 1)
        add("gpulse_job_start_time_seconds", {"job": "span-1", "rank": str(rank), "Hostname": n}, T0)
    return out


def write(url, series):
    status, body, _ = rw.post(url + "/api/v1/write", rw.snappy_literal(rw.write_request(series)))
    if status != 204:
        raise SystemExit("write to %s answered %d %s" % (url, status, body))


now = int(time.time())
T0 = now - 90
back = list(range(T0, now + 1))
# B's part first, the start-up race: a job's ranks do not all start in the
# same second, and B's 3 ranks are enough to judge a straggler alone, so B
# must wait for the ranks gpulse_job_info's world_size (4) promises.
write(url_b, series_at("n2", back))
time.sleep(3)
write(url_a, series_at("n1", back))
end = time.time() + seconds
t = now
while time.time() < end:
    time.sleep(1)
    t += 1
    for node, url in (("n1", url_a), ("n2", url_b)):
        write(url, series_at(node, [t]))
