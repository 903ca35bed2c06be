"""One rank of a 4-rank data-parallel job (gloo, CPU) with a
straggler, for the per-rank MFU and straggler scores of `gpulse run`.

Usage: train_ranks.py OUT_DIR SLOW_RANK SECONDS (RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT in the environment, as torchrun sets them). Every rank declares the same model (gpulse.model(params=N),
bf16) and trains for SECONDS of wall time from a common start, each step a
small matmul and a sleep of 50 ms reported with its tokens. The slow rank
runs as fast as the others for the first 40 % of the time, then its steps
take twice as long (a power-capped GPU). Ranks average their weights with
all_reduce at the end (local SGD), so no rank waits for another inside a
step. Each rank writes its own measurements to OUT_DIR/rank_RANK.json:
every step's end (epoch s) and seconds, its tokens, the tokens per step.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

import gpulse

out, slow, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", rank=rank, world_size=world)
torch.manual_seed(rank)
w = torch.nn.Linear(64, 64)
PARAMS = sum(p.numel() for p in w.parameters())
TOKENS = 512  # per step
gpulse.model(params=PARAMS, precision="bf16")
x = torch.randn(8, 64)
start = torch.tensor([time.time()], dtype=torch.float64)
dist.broadcast(start, 0)  # one clock for every rank's budget
t0 = start.item()
end, slow_from = t0 + seconds, t0 + 0.4 * seconds
steps = []
prev = time.time()
while prev < end:
    with gpulse.step(tokens=TOKENS):
        w(x).sum().backward()
        time.sleep(0.1 if rank == slow and prev >= slow_from else 0.05)
    now = time.time()
    steps.append([now, now - prev])
    prev = now
for p in w.parameters():  # local SGD: one averaging at the end
    dist.all_reduce(p.data)
    p.data /= world
gpulse.flush()
with open(os.path.join(out, f"rank_{rank}.json"), "w") as f:
    json.dump({"rank": rank, "params": PARAMS, "tokens_per_step": TOKENS, "steps": steps}, f)
dist.destroy_process_group()
