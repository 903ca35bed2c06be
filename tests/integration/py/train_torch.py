"""A small real PyTorch training loop (CPU) reporting its steps to gpulse.

Usage: train_torch.py OUT.json [STEPS] [--exit N | --die SIGNAL]

Measures, by itself, what gpulse's report must agree with: the number of
steps, each step's duration (as gpulse.step() counts it: from the previous
step's end, the wait for the batch included; the first from its block), the
throughput over the training loop, and the process's own peak RSS
(ru_maxrss), and the loss it sent (first, last, lowest). Writes them to OUT.json, then exits 0, N, or dies of SIGNAL.
"""
import json
import os
import resource
import signal
import sys
import time

import torch

import gpulse

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 300
exit_code = int(sys.argv[sys.argv.index("--exit") + 1]) if "--exit" in sys.argv else 0
die = sys.argv[sys.argv.index("--die") + 1] if "--die" in sys.argv else None

torch.manual_seed(0)
torch.set_num_threads(1)
batch, features, hidden = 64, 256, 512
model = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(),
                            torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                            torch.nn.Linear(hidden, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
# Some memory to hold, so the RSS peak is well above the interpreter's.
data = torch.randn(4096, features)
labels = torch.randint(0, 10, (4096,))
hold = torch.ones(64 * 1024 * 1024 // 4)

durations, losses = [], []
gpulse.meta(target_steps=steps)
loop_start = time.perf_counter()
for i in range(steps):
    lo = (i * batch) % (4096 - batch)
    x, y = data[lo:lo + batch], labels[lo:lo + batch]
    t0 = time.perf_counter() if i == 0 else t_end
    with gpulse.step(samples=batch, tokens=batch * features) as s:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        s.loss = float(loss)
    losses.append(s.loss)
    t_end = time.perf_counter()
    durations.append(t_end - t0)
loop_seconds = time.perf_counter() - loop_start
gpulse.flush()

durations.sort()
with open(out, "w") as f:
    json.dump({
        "steps": steps,
        "samples": steps * batch,
        "step_mean": sum(durations) / len(durations),
        "step_p50": durations[len(durations) // 2],
        "loss_first": losses[0], "loss_last": losses[-1], "loss_min": min(losses),
        "samples_per_second": steps * batch / loop_seconds,
        "ru_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "pid": os.getpid(),
    }, f)
if die:
    os.kill(os.getpid(), getattr(signal, die))
sys.exit(exit_code)
