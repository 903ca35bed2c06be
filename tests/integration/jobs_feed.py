#!/usr/bin/env python3
"""jobs_feed.py URL NOW_S - remote-writes the synthetic jobs of
test_server_jobs.sh through rw.py's encoder (which shares no code with the
server), and prints the numbers the job document must show.

  train-1        2 ranks on n1 (gpu 0: SM active 0.5, gpu 1: GPU_UTIL 80),
                 11 samples 10 s apart from T0 = NOW - 600, ended T0+100 with
                 exit 0; steps 10 per sample per rank at 0.5 s a step
  killed-1       1 rank, exit 137 (signal 9)
  lost-1         1 rank, last seen T0 (10 minutes ago), no end
  run-1          1 rank on n2, seen until NOW
  odd job/x?y%z  1 rank, still running: an id that must be URL-escaped
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rw  # noqa: E402

url, now = sys.argv[1], int(sys.argv[2])
T0 = now - 600
series = []


def add(name, labels, samples):
    ls = sorted([("__name__", name)] + list(labels.items()))
    series.append((ls, [(float(v), int(t * 1000)) for t, v in samples]))


def info(job, rank, node, times, scheme="gpulse_job"):
    add("gpulse_job_info", {"job": job, "rank": str(rank), "Hostname": node, "scheme": scheme,
                            "local_rank": str(rank), "world_size": "2"}, [(t, 1) for t in times])


ts = [T0 + 10 * i for i in range(11)]
for r in (0, 1):
    info("train-1", r, "n1", ts)
    add("gpulse_job_start_time_seconds", {"job": "train-1", "rank": str(r), "Hostname": "n1"},
        [(t, T0) for t in ts])
    add("gpulse_job_steps_total", {"job": "train-1", "rank": str(r), "Hostname": "n1", "pid": str(100 + r)},
        [(t, 10 * (i + 1)) for i, t in enumerate(ts)])
    add("gpulse_job_step_seconds_total", {"job": "train-1", "rank": str(r), "Hostname": "n1",
                                          "pid": str(100 + r)}, [(t, 5 * (i + 1)) for i, t in enumerate(ts)])
add("gpulse_job_end_time_seconds", {"job": "train-1", "rank": "0", "Hostname": "n1"}, [(ts[-1], T0 + 100)])
add("gpulse_job_exit_status", {"job": "train-1", "rank": "0", "Hostname": "n1"}, [(ts[-1], 0)])
gpu = {"job": "train-1", "Hostname": "n1", "UUID": "GPU-a", "modelName": "NVIDIA H100 80GB HBM3"}
add("DCGM_FI_PROF_SM_ACTIVE", dict(gpu, gpu="0", rank="0"), [(t, 0.5) for t in ts])
add("DCGM_FI_DEV_FB_USED", dict(gpu, gpu="0", rank="0"), [(t, 2000 if i == 5 else 1000) for i, t in enumerate(ts)])
add("DCGM_FI_DEV_FB_FREE", dict(gpu, gpu="0", rank="0"), [(t, 3000) for t in ts])
gpu["UUID"] = "GPU-b"
add("DCGM_FI_DEV_GPU_UTIL", dict(gpu, gpu="1", rank="1"), [(t, 80) for t in ts])

info("killed-1", 0, "n1", [T0 + 200, T0 + 210])
add("gpulse_job_exit_status", {"job": "killed-1", "rank": "0", "Hostname": "n1"}, [(T0 + 210, 137)])
add("gpulse_job_end_time_seconds", {"job": "killed-1", "rank": "0", "Hostname": "n1"}, [(T0 + 210, T0 + 210)])
info("lost-1", 0, "n3", [T0 - 20, T0 - 10, T0])
info("run-1", 0, "n2", [now - 20, now - 10, now])
info("odd job/x?y%z", 0, "n2", [now - 10, now])

status, body, _ = rw.post(url + "/api/v1/write", rw.snappy_literal(rw.write_request(series)))
if status != 204:
    raise SystemExit("write answered %d %s" % (status, body))
print(T0)
