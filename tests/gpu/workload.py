"""Workloads of known character for the GPU validation kit (scripts/gpu-validate).

Usage:
  workload.py phases --out F [--start-at EPOCH] [--seconds S]
      three phases of S seconds each: a bf16 matrix-multiply phase (tensor
      cores, SM busy), a memory-bound copy phase (DRAM busy, no tensor
      work), an idle phase (context held, nothing running). Writes the
      phases' epoch start/end times to F, so the kit compares the agent's
      GPM readings inside each phase with what the phase must show.
  workload.py train --out F [--seconds S | --steps N] [--lightning]
                    [--wait-ms MS] [--record-steps]
      a real training loop (an MLP on synthetic data, a DataLoader whose
      batches take MS ms to produce, so data wait is known) that reports
      each step to gpulse (python/gpulse: gpulse.step, or the Lightning
      callback with --lightning). Writes what it measured itself to F:
      steps, step end times (--record-steps), time spent producing
      batches, torch.cuda.max_memory_reserved(), its pid.
  workload.py hf --out F --steps N
      the Hugging Face Trainer on a small model with gpulse's
      GpulseTrainerCallback, evaluating and saving a checkpoint every 10
      steps; writes the steps it ran and the transformers version to F.

On a machine without a GPU (the kit's --stand-in run) the same code runs
on the CPU with smaller sizes: the numbers are then only structural.
"""

import argparse
import json
import os
import signal
import sys
import time

import torch

import gpulse

CUDA = torch.cuda.is_available()
DEV = torch.device("cuda" if CUDA else "cpu")


def sync():
    if CUDA:
        torch.cuda.synchronize()


def phases(a):
    if a.start_at:
        time.sleep(max(0.0, a.start_at - time.time()))
    out = {"pid": os.getpid(), "device": str(DEV), "phases": []}
    n = 8192 if CUDA else 512
    dt = torch.bfloat16 if CUDA else torch.float32
    x = torch.randn(n, n, device=DEV, dtype=dt)
    y = torch.randn(n, n, device=DEV, dtype=dt)
    # 2 GiB source and destination on a GPU: far beyond L2, so DRAM-bound
    big = (1 << 29) if CUDA else (1 << 22)
    src = torch.empty(big, device=DEV, dtype=torch.float32).fill_(1.0)
    dst = torch.empty_like(src)
    sync()
    if a.start_at:  # allocation took time; phases begin on the grid
        time.sleep(max(0.0, a.start_at - time.time()))

    def run(name, body):
        t0 = time.time()
        iters = 0
        while time.time() - t0 < a.seconds:
            body()
            iters += 1
            if iters % 8 == 0:
                sync()
        sync()
        out["phases"].append({"name": name, "start": t0, "end": time.time(), "iterations": iters})

    run("matmul", lambda: torch.mm(x, y))
    run("copy", lambda: dst.copy_(src))
    run("idle", lambda: time.sleep(0.05))
    with open(a.out, "w") as f:
        json.dump(out, f)


class Batches(torch.utils.data.Dataset):
    """Synthetic batches that take wait_ms to produce (a slow loader)."""

    def __init__(self, n, batch, features, wait_ms):
        self.n, self.batch, self.features, self.wait = n, batch, features, wait_ms / 1000.0
        self.produce_seconds = 0.0
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(batch, features, generator=g)
        self.y = torch.randint(0, 10, (batch,), generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t0 = time.perf_counter()
        if self.wait:
            time.sleep(self.wait)
        self.produce_seconds += time.perf_counter() - t0
        return self.x, self.y


def model_for(features, hidden):
    return torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


STOP = []


def train(a):
    # the kit ends a timed loop with SIGTERM when its windows are done
    signal.signal(signal.SIGTERM, lambda *_: STOP.append(1))
    torch.manual_seed(0)
    if not CUDA:
        torch.set_num_threads(1)
    batch, features, hidden = (1024, 4096, 4096) if CUDA else (64, 256, 512)
    steps = a.steps or 10 ** 9
    ds = Batches(steps, batch, features, a.wait_ms)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    ends = []
    res = {"pid": os.getpid(), "device": str(DEV), "lightning": False}
    if a.lightning:
        try:
            import lightning.pytorch as pl
        except ImportError:
            import pytorch_lightning as pl
        from gpulse.callbacks import GpulseLightningCallback

        class Net(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = model_for(features, hidden)

            def training_step(self, b, i):
                x, y = b
                return torch.nn.functional.cross_entropy(self.net(x), y)

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.01)

        class Ends(pl.Callback):
            def on_train_batch_end(self, trainer, *rest):
                ends.append(time.time())

        trainer = pl.Trainer(max_steps=a.steps, accelerator="gpu" if CUDA else "cpu", devices=1,
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False,
                             callbacks=[GpulseLightningCallback(memory_every=50), Ends()])
        t0 = time.time()
        trainer.fit(Net(), loader)
        res["lightning"] = True
    else:
        model = model_for(features, hidden).to(DEV)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        gpulse.meta(target_steps=steps if a.steps else 0)
        t0 = time.time()
        it = iter(loader)
        prev_end = None
        for i in range(steps):
            if STOP or (a.seconds and time.time() - t0 >= a.seconds):
                break
            w0 = time.perf_counter()
            x, y = next(it)
            x, y = x.to(DEV, non_blocking=True), y.to(DEV, non_blocking=True)
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            lv = loss.item()  # waits for the GPU: the step really ended
            end = time.perf_counter()
            base = prev_end if prev_end is not None else w0
            gpulse.report_step(end - base, samples=batch, loss=lv,
                               wait=(start - base) if prev_end is not None else None, n=i + 1)
            prev_end = end
            ends.append(time.time())
            if i % 50 == 0:
                gpulse.memory()
        gpulse.memory()
        gpulse.flush()
    res["steps"] = len(ends)
    res["start"] = t0
    res["end"] = time.time()
    res["produce_seconds"] = ds.produce_seconds
    res["stepping_seconds"] = (ends[-1] - ends[0]) if len(ends) > 1 else None
    res["max_memory_reserved"] = torch.cuda.max_memory_reserved() if CUDA else None
    res["max_memory_allocated"] = torch.cuda.max_memory_allocated() if CUDA else None
    if a.record_steps:
        res["step_ends"] = ends
    with open(a.out, "w") as f:
        json.dump(res, f)


def hf(a):
    import inspect
    import tempfile

    import transformers
    from gpulse.callbacks import GpulseTrainerCallback

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model_for(256, 512)

        def forward(self, x, labels=None):
            logits = self.net(x)
            return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}

    class Data(torch.utils.data.Dataset):
        def __init__(self, n):
            g = torch.Generator().manual_seed(0)
            self.x, self.y = torch.randn(n, 256, generator=g), torch.randint(0, 10, (n,), generator=g)

        def __len__(self):
            return len(self.y)

        def __getitem__(self, i):
            return {"x": self.x[i], "labels": self.y[i]}

    out_dir = tempfile.mkdtemp(prefix="gpulse-hf-")
    kw = dict(output_dir=out_dir, max_steps=a.steps, per_device_train_batch_size=32, per_device_eval_batch_size=64,
              logging_steps=10, save_steps=10, eval_steps=10, report_to=[], disable_tqdm=True)
    # the evaluation strategy's keyword was renamed in transformers 4.41
    params = inspect.signature(transformers.TrainingArguments.__init__).parameters
    kw["eval_strategy" if "eval_strategy" in params else "evaluation_strategy"] = "steps"
    trainer = transformers.Trainer(model=Net(), args=transformers.TrainingArguments(**kw),
                                   train_dataset=Data(4096), eval_dataset=Data(256),
                                   callbacks=[GpulseTrainerCallback(memory_every=10)])
    trainer.train()
    gpulse.flush()
    with open(a.out, "w") as f:
        json.dump({"steps": trainer.state.global_step, "version": transformers.__version__, "pid": os.getpid()}, f)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("phases")
    p.add_argument("--out", required=True)
    p.add_argument("--start-at", type=float, default=0.0)
    p.add_argument("--seconds", type=float, default=8.0)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--seconds", type=float, default=0.0)
    t.add_argument("--steps", type=int, default=0)
    t.add_argument("--lightning", action="store_true")
    t.add_argument("--wait-ms", type=float, default=0.0)
    t.add_argument("--record-steps", action="store_true")
    h = sub.add_parser("hf")
    h.add_argument("--out", required=True)
    h.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    if a.cmd == "train" and not (a.seconds or a.steps):
        ap.error("train needs --seconds or --steps")
    if a.cmd == "train" and a.lightning and not a.steps:
        ap.error("train --lightning needs --steps")
    {"phases": phases, "train": train, "hf": hf}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
