#!/usr/bin/python3
# Writes full.json, the two-GPU fixture job with series (1500 samples per
# GPU line: more than the report draws, so its downsampling is exercised;
# one spike and a gap in the data survive it). Deterministic: run it again
# to rebuild the file after changing it.
import json, math, random

random.seed(4)
N, DT, CAP = 1500, 2.0, 85520809984
start = 1763892900.1
t = [round(i * DT, 1) for i in range(N)]
gpus = []
for g in range(2):
    act = [round(min(1.0, max(0.0, 0.78 + 0.08 * math.sin(i / 40 + g) + random.uniform(-0.05, 0.05))), 3)
           for i in range(N)]
    act[700 + g] = 0.02              # a dip that must survive downsampling
    mem = [int(min(CAP, 2e9 + 36e9 * (1 - math.exp(-i / 120)) + random.uniform(0, 5e8))) for i in range(N)]
    if g == 0:
        mem[1000] = int(0.93 * CAP)  # the spike: GPU 0's peak memory
    act[1200] = None                 # a gap (no sample)
    gpus.append({"uuid": "GPU-0000000%d-aaaa-bbbb-cccc-dddddddddddd" % g, "t": t, "activity": act,
                 "memory_bytes": mem})
steps_t = [round(i * 2.5, 2) for i in range(1200)]
steps_s = [round(0.29 + 0.02 * math.sin(i / 30) + random.uniform(0, 0.03), 4) for i in range(1200)]
steps_s[600] = 0.9
steps_loss = [round(0.3 + 2.2 * math.exp(-i / 300), 4) for i in range(1200)]  # what clients sent
host = {"t": t, "cpu_cores": [round(1.5 + 0.3 * math.sin(i / 50) + random.uniform(-0.1, 0.1), 3) for i in range(N)],
        "rss_bytes": [int(7e9 + 1e9 * (i / N)) for i in range(N)]}
doc = {
    "id": "run-20261123T101500-4242", "scheme": "gpulse_run",
    "command": "python train.py --epochs 3 --batch-size 32",
    "state": "finished", "exit_status": 0, "signal": None,
    "start": start, "end": start + 3000.0, "wall_seconds": 3000.0,
    "nodes": ["node1"],
    "ranks": [{"rank": 0, "node": "node1", "local_rank": 0, "processes": 5},
              {"rank": 1, "node": "node1", "local_rank": 1, "processes": 5}],
    "gpus": [{"node": "node1", "gpu": str(g), "uuid": gpus[g]["uuid"], "model": "NVIDIA H100 80GB HBM3",
              "memory_total_bytes": CAP, "peak_memory_bytes": max(gpus[g]["memory_bytes"]),
              "peak_memory_ratio": round(max(gpus[g]["memory_bytes"]) / CAP, 4),
              "activity_avg": 0.78, "activity_source": "sm_active"} for g in range(2)],
    "totals": {
        "gpu_seconds": 6000.0, "gpu_hours": 1.6667,
        "activity_avg": 0.78, "activity_p50": 0.79, "activity_p90": 0.86, "activity_p99": 0.9,
        "peak_gpu_memory_bytes": max(max(g["memory_bytes"]) for g in gpus),
        "peak_gpu_memory_ratio": round(max(max(g["memory_bytes"]) for g in gpus) / CAP, 4),
        "host_cpu_seconds": 4500.0, "host_cpu_avg_cores": 1.5, "host_rss_peak_bytes": 8000000000,
        "steps": 12000, "samples": 384000, "tokens": None,
        "samples_per_second": 128.0, "tokens_per_second": None, "steps_per_second": 4.0,
        "step_seconds": {"mean": 0.3, "p50": 0.29, "p90": 0.33, "p99": 0.41, "max": 0.9},
        "data_wait_ratio": 0.04,
        "loss_first": 2.5, "loss_last": steps_loss[-1], "loss_min": min(steps_loss),
        "price_per_gpu_hour": 2.5, "cost": 4.17, "currency": "USD"},
    "series": {"gpus": gpus, "steps": {"t": steps_t, "seconds": steps_s, "loss": steps_loss}, "host": host},
    "advice": [],
}
with open("full.json", "w") as f:
    json.dump(doc, f, separators=(",", ":"))
    f.write("\n")
