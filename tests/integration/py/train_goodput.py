"""A real PyTorch training loop (CPU, or CUDA where torch has it: the GPU
validation kit runs it there) with phases, a checkpoint and a restart,
measuring by itself what gpulse's goodput and MFU must agree with.

Usage: train_goodput.py OUT.json CKPT FIRST LAST [--lost-through N] [--exit N]

Runs steps FIRST..LAST (numbered; FIRST > 1 resumes from CKPT, loaded
inside gpulse.phase("checkpoint_load")); every 10th step is followed by an
evaluation (phase "eval") and every 20th by a checkpoint save (phase
"checkpoint"); a loader sleeps 10 ms before each step. Measures, with the
same clock reads as the client: start-up (the process's start to its
first step, less the phases before it), productive step time (the step
blocks), data wait (from the previous step's or phase's end to the block),
checkpoint and evaluation time (the blocks), and lost work: the whole steps numbered
at or below --lost-through (done before the restart). Writes them to
OUT.json and leaves with os._exit (no interpreter teardown after the
measured end). For MFU it declares its model (gpulse.model: 6·N FLOPs per
sample for its N weights, fp32) and writes its samples and its stepping
span (the first step's start to the last step's end).
"""
import json
import os
import sys
import time

import torch

import gpulse


def proc_start_epoch():
    # /proc/self/stat field 22: start time in clock ticks since boot
    # (CLOCK_BOOTTIME), so the process's own start, fork included
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    boot_now = time.clock_gettime(time.CLOCK_BOOTTIME)
    return time.time() - (boot_now - ticks / os.sysconf("SC_CLK_TCK"))


out, ckpt, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lost_through = int(sys.argv[sys.argv.index("--lost-through") + 1]) if "--lost-through" in sys.argv else 0
exit_code = int(sys.argv[sys.argv.index("--exit") + 1]) if "--exit" in sys.argv else 0
start = proc_start_epoch()

torch.manual_seed(0)
torch.set_num_threads(1)
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
data, labels = torch.randn(4096, 256, device=dev), torch.randint(0, 10, (4096,), device=dev)
flops_per_sample = 6 * sum(p.numel() for p in model.parameters())
gpulse.model(flops_per_sample=flops_per_sample, precision="fp32")

m = {"startup": 0.0, "productive": 0.0, "data_wait": 0.0, "checkpoint": 0.0, "evaluation": 0.0,
     "lost": 0.0, "phases_before": 0.0}
samples, last_step_end = 0, None
first_step_start = None
prev_end = None  # as the client keeps it: the last step's or phase's end, after a step


def phase(name, part, fn):
    global prev_end
    with gpulse.phase(name):
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
    m[part] += t1 - t0
    if first_step_start is None:
        m["phases_before"] += t1 - t0
    if prev_end is not None:
        prev_end = time.perf_counter()


def evaluate():
    with torch.no_grad():
        loss_fn(model(data[:1024]), labels[:1024]).item()


def save():
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, ckpt)


def load():
    state = torch.load(ckpt, map_location=dev)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])


if first > 1:
    phase("checkpoint_load", "checkpoint", load)
for n in range(first, last + 1):
    time.sleep(0.01)  # the loader
    lo = (n * 64) % (4096 - 64)
    x, y = data[lo:lo + 64], labels[lo:lo + 64]
    if first_step_start is None:
        first_step_start = time.time()
    block = gpulse.step(samples=64, n=n)
    t0 = time.perf_counter()
    with block as s:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        s.loss = float(loss)
        t1 = time.perf_counter()  # the client reads its clock as the block ends
    wait = t0 - prev_end if prev_end is not None else 0.0
    prev_end = time.perf_counter()  # and again as its call returns
    samples += 64
    last_step_end = time.time()
    if n <= lost_through:
        m["lost"] += wait + (t1 - t0)
    else:
        m["productive"] += t1 - t0
        m["data_wait"] += wait
    if n % 10 == 0:
        phase("eval", "evaluation", evaluate)
    if n % 20 == 0:
        phase("checkpoint", "checkpoint", save)
m["startup"] = first_step_start - start - m.pop("phases_before")
m["wall"] = time.time() - start
m["run"] = {"device": str(dev), "samples": samples, "flops_per_sample": flops_per_sample,
            "stepping_seconds": last_step_end - first_step_start}
with open(out, "w") as f:
    json.dump(m, f)
gpulse.flush()
os._exit(exit_code)
