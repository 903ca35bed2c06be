"""Training-framework callbacks that report every optimizer step to gpulse.

Defined only when their framework imports; nothing here is a hard
dependency:

- ``GpulseLightningCallback`` (PyTorch Lightning: ``lightning.pytorch`` or
  ``pytorch_lightning``): ``Trainer(callbacks=[GpulseLightningCallback()])``
- ``GpulseTrainerCallback`` (Hugging Face transformers):
  ``Trainer(..., callbacks=[GpulseTrainerCallback()])``

Both report, per step, the time from the batch's start hook to its end
hook, and the client adds the wait before it (from the previous step's
end to this step's start: fetching the batch) as the data wait, so the
step runs from the previous step's end; and the samples of the step; the target step count at the start; the allocator
memory every ``memory_every`` steps; and ``end`` when training ends.

For MFU, pass ``model=`` the arguments of ``gpulse.model`` (for example
``model={"params": 7e9, "precision": "bf16"}``), sent once at the start,
and, when it counts per token, ``tokens_per_sample=`` (the sequence
length), so each step reports its tokens too.

They also mark evaluation (``eval``) and checkpoint saves (``checkpoint``)
as phases, so goodput does not count them as steps, data wait or idle
time: Lightning from its validation hooks and from ``on_save_checkpoint``
to the next hook; transformers from the step's end to ``on_evaluate``
and from there to ``on_save``.
"""

import time

import gpulse

__all__ = []


class _Timer:
    """Times a batch from its start hook to its end hook; the client
    measures the wait before it (from the previous step's end)."""

    def __init__(self):
        self.start = None

    def begin(self):
        self.start = time.perf_counter()

    def finish(self):
        if self.start is None:
            return None
        dur, self.start = time.perf_counter() - self.start, None
        return dur


def _tokens(samples, per_sample):
    return samples * per_sample if samples is not None and per_sample else None


class _PhaseTimer:
    """One phase at a time: begun at one hook, reported at a later one."""

    def __init__(self):
        self.name = None
        self.start = None

    def begin(self, name):
        self.finish()
        self.name, self.start = name, time.perf_counter()

    def finish(self):
        if self.name is not None:
            gpulse.report_phase(self.name, time.perf_counter() - self.start)
        self.name = None


def _batch_size(batch):
    """Samples in a batch: the first dimension of its first tensor."""
    if hasattr(batch, "shape") and len(getattr(batch, "shape", ())) > 0:
        return int(batch.shape[0])
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for item in batch:
            n = _batch_size(item)
            if n is not None:
                return n
    return None


try:
    try:
        import lightning.pytorch as _pl
    except ImportError:
        import pytorch_lightning as _pl

    class GpulseLightningCallback(_pl.Callback):
        def __init__(self, memory_every=100, model=None, tokens_per_sample=None):
            super().__init__()
            self._t = _Timer()
            self._ph = _PhaseTimer()
            self._every = memory_every
            self._model = model
            self._tps = tokens_per_sample

        def on_validation_start(self, trainer, pl_module):
            self._ph.begin("eval")

        def on_validation_end(self, trainer, pl_module):
            self._ph.finish()

        def on_save_checkpoint(self, trainer, pl_module, checkpoint):
            # called before the file is written: the phase lasts to the next hook
            self._ph.begin("checkpoint")

        def on_train_start(self, trainer, pl_module):
            if self._model:
                gpulse.model(**self._model)
            if trainer.max_steps and trainer.max_steps > 0:
                gpulse.meta(target_steps=int(trainer.max_steps))

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self._ph.finish()
            self._t.begin()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            dur = self._t.finish()
            if dur is None:
                return
            loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
            try:
                loss = float(loss.detach()) if hasattr(loss, "detach") else loss
            except (TypeError, ValueError, RuntimeError):
                loss = None
            samples = _batch_size(batch)
            gpulse.report_step(dur, samples=samples, tokens=_tokens(samples, self._tps), loss=loss,
                               n=int(trainer.global_step))
            if self._every and trainer.global_step % self._every == 0:
                gpulse.memory()

        def on_train_end(self, trainer, pl_module):
            self._ph.finish()
            gpulse.memory()
            gpulse.flush()

    __all__.append("GpulseLightningCallback")
except ImportError:
    pass

try:
    import transformers as _tf

    class GpulseTrainerCallback(_tf.TrainerCallback):
        def __init__(self, memory_every=100, model=None, tokens_per_sample=None):
            self._t = _Timer()
            self._every = memory_every
            self._model = model
            self._tps = tokens_per_sample
            self._samples = None
            self._loss = None
            self._mark = None  # perf_counter at the last step's end, or phase's

        def on_train_begin(self, args, state, control, **kwargs):
            self._samples = (args.per_device_train_batch_size *
                             max(1, args.gradient_accumulation_steps))
            if self._model:
                gpulse.model(**self._model)
            if state.max_steps and state.max_steps > 0:
                gpulse.meta(target_steps=int(state.max_steps))

        def on_step_begin(self, args, state, control, **kwargs):
            self._t.begin()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self._loss = logs["loss"]

        def on_step_end(self, args, state, control, **kwargs):
            dur = self._t.finish()
            if dur is None:
                return
            gpulse.report_step(dur, samples=self._samples, tokens=_tokens(self._samples, self._tps),
                               loss=self._loss,
                               n=int(state.global_step))
            self._mark = time.perf_counter()
            self._loss = None
            if self._every and state.global_step % self._every == 0:
                gpulse.memory()

        def _phase(self, name):
            # the Trainer evaluates, then saves, right after a step's end hook
            now = time.perf_counter()
            if self._mark is not None:
                gpulse.report_phase(name, now - self._mark)
            self._mark = now

        def on_evaluate(self, args, state, control, **kwargs):
            self._phase("eval")

        def on_save(self, args, state, control, **kwargs):
            self._phase("checkpoint")

        def on_train_end(self, args, state, control, **kwargs):
            gpulse.memory()
            gpulse.flush()

    __all__.append("GpulseTrainerCallback")
except ImportError:
    pass
