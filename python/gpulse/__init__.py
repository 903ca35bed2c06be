"""Report training steps to gpulse (docs/jobs.md, "The step protocol").

Dependency-free. Records are batched into one datagram of at most 4 KiB,
sent at most every 20 ms (the first record after a quiet spell goes at
once) over a local AF_UNIX datagram socket. Sending never blocks: when no
agent listens or its queue is full the batch is dropped and counted, and
the next datagram that gets through says ``lost=N``. The agent learns the
process id from the kernel, so nothing here names the process.

    import gpulse
    gpulse.meta(target_steps=50000)
    for batch in loader:
        with gpulse.step(samples=len(batch)) as s:
            loss = train(batch)
            s.loss = float(loss)       # optional
    gpulse.memory()                     # torch.cuda allocator, if any

Checkpoints, evaluation and other work between steps are marked as
phases, so goodput (docs/jobs.md) tells them from steps and idle time:

    with gpulse.phase("checkpoint"):   # or "checkpoint_load", "eval", ...
        torch.save(state, path)

The wait for data is measured: the time from one step's end to the next
step's start (here, the loader's ``next``) is reported as ``wait`` and the
step spans it, unless the caller passes ``wait=``.

Where it sends: every path in ``GPULSE_STEPS_SOCKET`` (several separated
by ':'), else /run/gpulse/steps.sock if it exists, else
/tmp/gpulse-steps.sock if it exists, else both.

Calls are serialized by a lock, so threads may share the module; a forked
child (dataloader worker) starts afresh and reports as itself.
"""

import atexit
import math
import os
import socket
import threading
import time

__all__ = ["step", "report_step", "phase", "report_phase", "memory", "meta", "model", "end", "flush", "lost",
           "Client"]

PRECISIONS = ("bf16", "fp16", "fp8", "tf32", "fp32")

_DGRAM = 4096
_PREFIX = 40          # room for "meta lost=N\n" in front of a datagram
_FLUSH_S = 0.020
_DEFAULTS = ("/run/gpulse/steps.sock", "/tmp/gpulse-steps.sock")
_perf = time.perf_counter


def _destinations():
    env = os.environ.get("GPULSE_STEPS_SOCKET", "")
    if env:
        return [p for p in env.split(":") if p][:4]
    for p in _DEFAULTS:
        if os.path.exists(p):
            return [p]
    return list(_DEFAULTS)


_INF = float("inf")


def _num(v):
    """A value the agent takes (finite, >= 0), as text; None when not."""
    t = type(v)
    if t is float:  # the common case first
        return repr(v) if 0.0 <= v < _INF else None
    if t is int:
        return str(v) if v >= 0 else None
    if v is None or t is bool:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return repr(v) if 0.0 <= v < _INF else None


def _loss(v):
    if v is None:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return repr(v) if -_INF < v < _INF else None


class Client:
    """One sender: a socket, a batch buffer, per-destination drop counts."""

    def __init__(self, paths=None):
        self._lock = threading.Lock()
        self._paths = paths
        self._pid = None
        self.lost_total = 0
        self.sent_total = 0

    def _after_fork(self):
        # Another thread may have held the lock at fork(): a new one.
        self._lock = threading.Lock()
        self._pid = None

    def _reset(self):
        # First use, or first use in a forked child: the parent's batch is
        # the parent's to send.
        self._pid = os.getpid()
        self._dest = list(self._paths) if self._paths else _destinations()
        self._unsent = [0] * len(self._dest)
        self._parts = []
        self._len = 0
        self._seq = 0
        self._n = 0
        self._last_flush = 0.0
        self._prev_end = None   # perf_counter at the last step's end
        try:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._sock.setblocking(False)
        except OSError:
            self._sock = None

    def _add(self, kind, rest):
        """Appends one record (kind, then the text after its seq); called
        with the lock held, after the fork check."""
        self._seq += 1
        rec = "%s seq=%d%s\n" % (kind, self._seq, rest)
        if self._len + len(rec) > _DGRAM - _PREFIX:
            self._flush()
        self._parts.append(rec)
        self._len += len(rec)
        if _perf() - self._last_flush >= _FLUSH_S:
            self._flush()

    def _locked_add(self, kind, rest):
        with self._lock:
            if self._pid != os.getpid():
                self._reset()
            self._add(kind, rest)

    def _flush(self):
        self._last_flush = _perf()
        if not self._parts:
            return
        data = "".join(self._parts).encode("ascii", "replace")
        nrec = len(self._parts)
        self._parts = []
        self._len = 0
        for i, path in enumerate(self._dest):
            msg = data
            if self._unsent[i]:
                msg = b"meta lost=%d\n" % self._unsent[i] + data
            try:
                if self._sock is None:
                    raise OSError
                self._sock.sendto(msg, socket.MSG_DONTWAIT, path)
                self._unsent[i] = 0
                self.sent_total += 1
            except OSError:
                self._unsent[i] += nrec
                self.lost_total += nrec

    # ---- the API ---------------------------------------------------------

    def report_step(self, duration, samples=None, tokens=None, loss=None, wait=None, n=None):
        """One step, ending now, that ran ``duration`` seconds. ``n`` is
        your step number (default: counts the steps reported); ``wait`` is
        the part of ``duration`` spent waiting for input data.

        Without ``wait`` the client measures it: the time from the end of
        the previous step (the previous call) to this step's start (now
        minus ``duration``) is the wait for data, and the step reported
        runs from the previous end, wait included, as the protocol wants
        (docs/jobs.md). A ``duration`` that already spans from the previous
        end gives a wait of 0: pass ``wait`` yourself then."""
        now = _perf()
        if type(duration) is float and 0.0 <= duration < _INF:  # the common case first
            d = duration
        else:
            d = _num(duration)
            d = float(d) if d else 0.0
        # t: when the step ended, so batching (up to 20 ms) does not blur
        # the time line that throughput is computed from
        wall = time.time()
        rest = ""
        if samples is not None:
            v = _num(samples)
            if v is not None:
                rest += " samples=" + v
        if tokens is not None:
            v = _num(tokens)
            if v is not None:
                rest += " tokens=" + v
        if loss is not None:
            v = _loss(loss)
            if v is not None:
                rest += " loss=" + v
        told = wait is not None
        if told:
            wait = _num(wait)
        with self._lock:
            if self._pid != os.getpid():
                self._reset()
            prev, self._prev_end = self._prev_end, now
            if not told and prev is not None:
                gap = now - d - prev
                if gap > 0:
                    d += gap
                    wait = repr(gap)
                else:
                    wait = "0"
            if wait is not None:
                rest += " wait=" + wait
            self._n = n if type(n) is int and n >= 0 else self._n + 1
            self._add("step", " n=%d dur=%r t=%.6f%s" % (self._n, d, wall, rest))
            # the next wait starts when this call returns: sending is not
            # the loader's time
            self._prev_end = _perf()

    def memory(self, device=None):
        """Reports torch.cuda's allocator (allocated, reserved, peak bytes)
        for ``device`` (default: every visible device) when torch with CUDA
        is importable; else does nothing. Returns the devices reported."""
        try:
            import torch  # noqa: PLC0415 - optional, imported on first use
            if not torch.cuda.is_available():
                return []
            devs = [device] if device is not None else range(torch.cuda.device_count())
            stats = [(int(d if isinstance(d, int) else torch.device(d).index or 0),
                      torch.cuda.memory_allocated(d), torch.cuda.memory_reserved(d),
                      torch.cuda.max_memory_allocated(d)) for d in devs]
        except Exception:  # no torch, no CUDA, a driver problem: nothing to say
            return []
        return [self.report_memory(*s) or s[0] for s in stats]

    def report_phase(self, name, duration):
        """A phase (``checkpoint``, ``checkpoint_load``, ``eval``, or any
        name of [a-z0-9_], 32 at most) that ran ``duration`` seconds and
        ends now. The next step's data wait is measured from here, so a
        phase is never counted as waiting for data."""
        name = str(name)
        if not (0 < len(name) <= 32 and ("a" <= name[0] <= "z" or name[0] == "_")
                and all(c.isdigit() or c == "_" or "a" <= c <= "z" for c in name)):
            return
        d = _num(duration)
        if d is None:
            return
        wall = time.time()
        with self._lock:
            if self._pid != os.getpid():
                self._reset()
            self._add("phase", " name=%s dur=%s t=%.6f" % (name, d, wall))
            if self._prev_end is not None:
                self._prev_end = _perf()

    def report_memory(self, device, allocated, reserved, peak):
        """Allocator bytes of one device, from any framework."""
        try:
            vals = [_num(int(v)) for v in (allocated, reserved, peak)]
        except (TypeError, ValueError, OverflowError):
            return
        if not isinstance(device, int) or device < 0 or None in vals:
            return
        self._locked_add("mem", " dev=%d alloc=%s reserved=%s peak=%s" % (device, *vals))

    def meta(self, target_steps=None, job=None, rank=None, world=None):
        """Steps the job means to run; a job name, rank and world size used
        only when the process has no job of its own (Slurm, torchrun,
        GPULSE_JOB name it otherwise)."""
        extra = ""
        if isinstance(target_steps, int) and target_steps > 0:
            extra += " target=%d" % target_steps
        if job:
            name = "".join(c if 0x20 < ord(c) < 0x7f else "_" for c in str(job))[:127]
            extra += " job=" + name
        if isinstance(rank, int) and rank >= 0:
            extra += " rank=%d" % rank
        if isinstance(world, int) and world >= 1:
            extra += " world=%d" % world
        self._locked_add("meta", extra)

    def model(self, flops_per_token=None, flops_per_sample=None, params=None, training=True,
              precision="bf16"):
        """What the model computes, once per job, for MFU (docs/jobs.md):
        its FLOPs per token or per sample, or its parameter count N (then
        6·N FLOPs per token when ``training``, 2·N for inference; the
        attention term is left out), and the ``precision`` its matmuls run
        in (bf16, fp16, fp8, tf32, fp32). The steps must report tokens (or
        samples) for MFU to be known. Raises ValueError on a value the
        agent would refuse."""
        if precision not in PRECISIONS:
            raise ValueError("gpulse.model: precision %r is not one of %s" % (precision, ", ".join(PRECISIONS)))
        extra = ""
        for key, v in (("flops_token", flops_per_token), ("flops_sample", flops_per_sample), ("params", params)):
            if v is None:
                continue
            t = _num(v)
            if t is None or float(t) <= 0:
                raise ValueError("gpulse.model: %s must be a finite number > 0, not %r" % (key, v))
            extra += " %s=%s" % (key, t)
        if not extra:
            raise ValueError("gpulse.model: give flops_per_token, flops_per_sample or params")
        extra += " mode=%s precision=%s" % ("train" if training else "infer", precision)
        self._locked_add("model", extra)

    def end(self, status=0):
        """Training is over (exit ``status``); flushes."""
        extra = " status=%d" % status if isinstance(status, int) and status >= 0 else ""
        with self._lock:
            if self._pid != os.getpid():
                self._reset()
            self._add("end", extra + " t=%.6f" % time.time())
            self._flush()

    def flush(self):
        """Sends what is batched now. Never blocks."""
        with self._lock:
            if self._pid == os.getpid():
                self._flush()


class _Step:
    """``with gpulse.step(...)``: times the block with time.perf_counter.
    Set ``.loss``, ``.samples`` or ``.tokens`` inside the block if known
    only then. The time from the previous step's end to the block's start
    (fetching the next batch, in ``for batch in loader``) is measured as
    the wait for data and the step reported spans both; set ``.wait`` to
    say otherwise (then the step is the block alone). A block left by an
    exception is not reported."""

    __slots__ = ("_c", "samples", "tokens", "loss", "wait", "n", "_t0")

    def __init__(self, client, samples, tokens, loss, wait, n):
        self._c = client
        self.samples, self.tokens, self.loss, self.wait, self.n = samples, tokens, loss, wait, n

    def __enter__(self):
        self._t0 = _perf()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._c.report_step(_perf() - self._t0, self.samples, self.tokens, self.loss,
                                self.wait, self.n)
        return False


class _Phase:
    """``with gpulse.phase(name)``: times the block as one phase. A block
    left by an exception is reported too: the time was spent."""

    __slots__ = ("_c", "name", "_t0")

    def __init__(self, client, name):
        self._c, self.name = client, name

    def __enter__(self):
        self._t0 = _perf()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._c.report_phase(self.name, _perf() - self._t0)
        return False


_client = Client()


def phase(name):
    """A context manager that reports the block it wraps as a phase."""
    return _Phase(_client, name)


def report_phase(name, duration):
    _client.report_phase(name, duration)


def step(samples=None, tokens=None, loss=None, wait=None, n=None):
    """A context manager that reports the block it wraps as one step."""
    return _Step(_client, samples, tokens, loss, wait, n)


def report_step(duration, samples=None, tokens=None, loss=None, wait=None, n=None):
    _client.report_step(duration, samples, tokens, loss, wait, n)


def memory(device=None):
    return _client.memory(device)


def report_memory(device, allocated, reserved, peak):
    _client.report_memory(device, allocated, reserved, peak)


def meta(target_steps=None, job=None, rank=None, world=None):
    _client.meta(target_steps, job, rank, world)


def model(flops_per_token=None, flops_per_sample=None, params=None, training=True, precision="bf16"):
    _client.model(flops_per_token, flops_per_sample, params, training, precision)


def end(status=0):
    _client.end(status)


def flush():
    _client.flush()


def lost():
    """Records dropped so far (summed over destinations)."""
    return _client.lost_total


atexit.register(flush)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_client._after_fork)
