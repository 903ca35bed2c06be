"""A rank of a 4-rank torch.distributed job (gloo, CPU) that hangs.

Usage: hang_worker.py STORE_FILE DUMP_DIR STUCK_RANK STEPS (RANK and
WORLD_SIZE in the environment). Every step is a small matmul and an
all_reduce, reported to the agent with gpulse.step(). After STEPS steps
the rank STUCK_RANK stops entering the collective (as a rank stuck in
its data loader would); the others wait in all_reduce until gloo's 3 s
timeout. Each rank then writes what PyTorch's Flight Recorder writes with
TORCH_NCCL_DUMP_ON_TIMEOUT=1 (gloo writes none): a pickle of its
collectives in the documented format, to DUMP_DIR/nccl_trace_rank_RANK,
prints the time of its last step, and stays alive, as a hung job does.

GPULSE_HANG_DEVICE=cuda (the GPU validation kit) computes on the rank's
GPU and waits for the collective inside the step; GPULSE_HANG_BACKEND=nccl
(a machine with a GPU per rank) uses NCCL with a long timeout, so the
waiting ranks spin in the collective, alive, and write no dump.
"""
import datetime
import os
import pickle
import sys
import time

import torch
import torch.distributed as dist

import gpulse

store, dump_dir, stuck, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
backend = os.environ.get("GPULSE_HANG_BACKEND", "gloo")
dev = torch.device(f"cuda:{rank % torch.cuda.device_count()}" if os.environ.get("GPULSE_HANG_DEVICE") == "cuda"
                   else "cpu")
if dev.type == "cuda":
    torch.cuda.set_device(dev)
dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=3 if backend == "gloo" else 1800))
entries = []


def record(seq, state):
    entries.append({
        "record_id": len(entries), "pg_id": 0, "process_group": ("0", "default_pg"),
        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
        "profiling_name": "gloo:all_reduce", "time_created_ns": time.time_ns(),
        "input_sizes": [[64]], "input_dtypes": ["Float"], "output_sizes": [[64]],
        "output_dtypes": ["Float"], "state": state, "is_p2p": False,
        "frames": [{"name": "train", "filename": __file__, "line": 0}]})


x = torch.randn(64, 64, device=dev)
seq, last = 0, None
try:
    while True:
        if seq == steps and rank == stuck:
            break  # never enters collective steps + 1
        with gpulse.step(samples=64):
            y = (x @ x).sum(dim=0)
            seq += 1
            record(seq, "started")
            dist.all_reduce(y)
            y.sum().item()  # the step ends when the collective has
            entries[-1]["state"] = "completed"
            time.sleep(0.2)
        last = time.time()
except RuntimeError:
    pass  # gloo's timeout: the others waited for the stuck rank
gpulse.flush()
dump = {"version": "2.3", "rank": rank, "entries": entries,
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}}}
tmp = f"{dump_dir}/.nccl_trace_rank_{rank}.tmp"
with open(tmp, "wb") as f:
    pickle.dump(dump, f, protocol=2)
os.rename(tmp, f"{dump_dir}/nccl_trace_rank_{rank}")
print(f"rank {rank} last step {seq} at {last}", flush=True)
while True:
    time.sleep(60)
