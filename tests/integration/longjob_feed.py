#!/usr/bin/env python3
"""longjob_feed.py END_S HOURS GPUS EVERY_S PER URL... - remote-writes (rw.py's
encoder, which shares no code with the server) one ended training job,
long-1, to each URL's /api/v1/write: GPUS GPUs, 8 a node, one rank a node,
a sample every EVERY_S seconds from END_S - HOURS h to END_S, then its end;
PER series a request (0: all in one, which an embedded store needs for
samples older than its compaction: it takes them before compacting).

Per GPU: SM active (0-1, idle stretches below 0.05), FB used / free (MiB,
one peak), temperature and power (families the job document never reads);
per rank: steps and step seconds (counters), host CPU seconds, RSS, loss,
samples and tokens (counters), processes, model FLOPs, the job's info,
start and end. Also long-2 over the same span: 2 GPUs, one of them
without an activity family (memory only); long-3: one GPU, a tokens
counter that resets halfway; long-4: still running (no end). Prints the
number of samples of long-1."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rw  # noqa: E402

end, hours, gpus, every, per = map(int, sys.argv[1:6])
urls = sys.argv[6:]
t0 = end - hours * 3600
ts = list(range(t0, end + 1, every))
nodes = (gpus + 7) // 8
batch, total = [], 0


def flush():
    global batch
    if not batch:
        return
    body = rw.snappy_literal(rw.write_request(batch))
    for u in urls:
        status, text, _ = rw.post(u + "/api/v1/write", body)
        if status != 204:
            raise SystemExit("write to %s answered %d %s" % (u, status, text))
    batch = []


def add(name, labels, samples, job="long-1"):
    global total
    ls = sorted([("__name__", name), ("job", job)] + list(labels.items()))
    batch.append((ls, [(float(v), int(t * 1000)) for t, v in samples]))
    total += len(samples) if job == "long-1" else 0
    if per and len(batch) >= per:
        flush()


for g in range(gpus):
    node, idx = "n%d" % (g // 8), g % 8
    lab = {"Hostname": node, "gpu": str(idx), "UUID": "GPU-%04d" % g, "rank": str(g // 8),
           "modelName": "NVIDIA H100 80GB HBM3"}
    act = [(t, 0.02 if (i // 40 + g) % 9 == 0 else round(0.3 + ((i * 7 + g * 13) % 60) / 100, 2))
           for i, t in enumerate(ts)]
    add("DCGM_FI_PROF_SM_ACTIVE", lab, act)
    used = [(t, 30000 + (i * 37 + g * 11) % 4000 + (9000 if i == 100 + g else 0)) for i, t in enumerate(ts)]
    add("DCGM_FI_DEV_FB_USED", lab, used)
    add("DCGM_FI_DEV_FB_FREE", lab, [(t, 81559 - v) for t, v in used])
    add("DCGM_FI_DEV_GPU_TEMP", lab, [(t, 40 + (i + g) % 23) for i, t in enumerate(ts)])
    add("DCGM_FI_DEV_POWER_USAGE", lab, [(t, round(350 + ((i * 3 + g) % 97) * 1.5, 3)) for i, t in enumerate(ts)])
for r in range(nodes):
    lab = {"Hostname": "n%d" % r, "rank": str(r)}
    proc = dict(lab, pid=str(1000 + r))
    add("gpulse_job_info", dict(lab, scheme="gpulse_job", local_rank="0", world_size=str(nodes)),
        [(t, 1) for t in ts])
    add("gpulse_job_start_time_seconds", lab, [(t, t0) for t in ts])
    add("gpulse_job_steps_total", proc, [(t, 4 * i) for i, t in enumerate(ts)])
    add("gpulse_job_step_seconds_total", proc, [(t, round(i * (3.6 + 0.01 * r), 3)) for i, t in enumerate(ts)])
    add("gpulse_job_cpu_seconds_total", proc, [(t, round(i * 11.5, 2)) for i, t in enumerate(ts)])
    add("gpulse_job_resident_memory_bytes", proc, [(t, 2e10 + (i % 50) * 1e7) for i, t in enumerate(ts)])
    add("gpulse_job_loss", proc, [(t, round(4 - 3 * i / len(ts), 4)) for i, t in enumerate(ts)])
    add("gpulse_job_samples_total", proc, [(t, 32 * i) for i, t in enumerate(ts)])
    add("gpulse_job_tokens_total", proc, [(t, 65536 * i + (i * 37) % 11) for i, t in enumerate(ts)])
    add("gpulse_job_processes", lab, [(t, 1 + (i // 100) % 2) for i, t in enumerate(ts)])
    add("gpulse_job_model_flops", dict(proc, per="token", precision="bf16"), [(t, 6.2e9) for t in ts])
add("gpulse_job_end_time_seconds", {"Hostname": "n0", "rank": "0"}, [(end, end)])
add("gpulse_job_exit_status", {"Hostname": "n0", "rank": "0"}, [(end, 0)])
lab = {"Hostname": "m0", "rank": "0"}
add("gpulse_job_info", dict(lab, scheme="gpulse_job", local_rank="0", world_size="1"), [(t, 1) for t in ts], "long-2")
add("gpulse_job_start_time_seconds", lab, [(t, t0) for t in ts], "long-2")
for g in range(2):
    gl = dict(lab, gpu=str(g), UUID="GPU-m%d" % g)
    if g == 0:
        add("DCGM_FI_DEV_GPU_UTIL", gl, [(t, (i * 7) % 101) for i, t in enumerate(ts)], "long-2")
    add("DCGM_FI_DEV_FB_USED", gl, [(t, 1000 + (i * 13) % 500) for i, t in enumerate(ts)], "long-2")
    add("DCGM_FI_DEV_FB_FREE", gl, [(t, 80000) for t in ts], "long-2")
add("gpulse_job_end_time_seconds", lab, [(end, end)], "long-2")
add("gpulse_job_exit_status", lab, [(end, 0)], "long-2")
# long-3: one GPU whose process's tokens counter falls back to 0 halfway
# (a reset: its increase needs every sample)
lab = {"Hostname": "k0", "rank": "0"}
add("gpulse_job_info", dict(lab, scheme="gpulse_job", local_rank="0", world_size="1"), [(t, 1) for t in ts], "long-3")
add("gpulse_job_start_time_seconds", lab, [(t, t0) for t in ts], "long-3")
add("DCGM_FI_PROF_SM_ACTIVE", dict(lab, gpu="0", UUID="GPU-k0"), [(t, 0.5 + (i % 5) / 10) for i, t in enumerate(ts)],
    "long-3")
half = len(ts) // 2
add("gpulse_job_tokens_total", dict(lab, pid="7"), [(t, 100 * (i if i < half else i - half)) for i, t in enumerate(ts)],
    "long-3")
add("gpulse_job_end_time_seconds", lab, [(end, end)], "long-3")
add("gpulse_job_exit_status", lab, [(end, 0)], "long-3")
# long-4: still running (no end; seen until END_S), one GPU and one process
lab = {"Hostname": "q0", "rank": "0"}
add("gpulse_job_info", dict(lab, scheme="gpulse_job", local_rank="0", world_size="1", command="python run.py"),
    [(t, 1) for t in ts], "long-4")
add("gpulse_job_start_time_seconds", lab, [(t, t0) for t in ts], "long-4")
gl = dict(lab, gpu="0", UUID="GPU-q0", modelName="NVIDIA H100 80GB HBM3")
add("DCGM_FI_PROF_SM_ACTIVE", gl, [(t, 0.25 + (i % 3) / 4) for i, t in enumerate(ts)], "long-4")
add("DCGM_FI_DEV_FB_USED", gl, [(t, 2000 + (i * 7) % 300) for i, t in enumerate(ts)], "long-4")
add("DCGM_FI_DEV_FB_FREE", gl, [(t, 79000) for t in ts], "long-4")
for name, per in (("gpulse_job_tokens_total", 4096), ("gpulse_job_steps_total", 2), ("gpulse_job_step_seconds_total", 7)):
    add(name, dict(lab, pid="11"), [(t, per * i) for i, t in enumerate(ts)], "long-4")
flush()
print(total)
