"""A real PyTorch training loop (CPU) that declares its model for MFU.

Usage: train_mfu.py OUT.json [STEPS]

An MLP, whose training FLOPs per token (one sample is one token here)
are 6·N for its N weights, the rule gpulse.model(params=N) applies. It
measures its own token rate over the loop, as gpulse's report must
(the time from the first step's start to the last step's end), and
writes N, the tokens and the rate to OUT.json.
"""
import json
import sys
import time

import torch

import gpulse

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
torch.manual_seed(0)
torch.set_num_threads(1)
batch, features, hidden = 64, 256, 512
model = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(),
                            torch.nn.Linear(hidden, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
x, y = torch.randn(batch, features), torch.randint(0, 10, (batch,))
params = sum(p.numel() for p in model.parameters())
gpulse.model(params=params, precision="bf16")
start = time.perf_counter()
for i in range(steps):
    with gpulse.step(samples=batch, tokens=batch) as s:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        s.loss = float(loss)
loop = time.perf_counter() - start
gpulse.flush()
with open(out, "w") as f:
    json.dump({"params": params, "tokens": steps * batch, "tokens_per_second": steps * batch / loop}, f)
