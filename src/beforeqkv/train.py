"""One model-agnostic training loop for every experiment in the book.

    history = train(model, lambda g: associative_recall(128, 8, generator=g), steps=300)
    accuracy(model, associative_recall(4000, 8, generator=torch.Generator().manual_seed(1)))

Fresh random batches every step; a *step budget*, never a wall-clock budget, so a
seeded run gives the same numbers on any machine.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._runtime import _uses_cuda, get_device, seed_everything, workers  # noqa: F401  (workers: public here)
from ._validate import check_finite, check_finite_number, check_positive, move

__all__ = ["History", "train", "accuracy", "evaluate_loss", "cross_entropy", "move", "param_groups",
           "lr_factor", "map_runs", "workers", "fit", "Fit"]


@dataclass
class History:
    """What a training run did: losses every ``log_every`` steps, evaluations, the time it took."""

    steps: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    eval_steps: list = field(default_factory=list)
    eval_values: list = field(default_factory=list)

    @property
    def final_loss(self) -> float:
        return self.loss[-1] if self.loss else float("nan")

    def as_dict(self) -> dict:
        return {"steps": list(self.steps), "loss": list(self.loss),
                "eval_steps": list(self.eval_steps), "eval_values": list(self.eval_values)}


def _call(model, inputs):
    return model(*inputs) if isinstance(inputs, (tuple, list)) else model(inputs)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) for logits (..., C) and integer targets (...)."""
    if logits.shape[:-1] != target.shape:
        raise ValueError(
            f"logits {tuple(logits.shape)} and target {tuple(target.shape)} do not match: "
            "logits must be target.shape + (n_classes,)"
        )
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on weight matrices only: never on biases, norms or embeddings (as nanoGPT/minGPT).

    A parameter decays if it has >= 2 dims and belongs to no ``nn.Embedding`` (a tied
    ``W_U = W_E^T`` counts as an embedding). Frozen parameters are left out.
    """
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    decay, no_decay, seen = [], [], set()
    for p in model.parameters():
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        (decay if p.dim() >= 2 and id(p) not in embeddings else no_decay).append(p)
    return [g for g in ({"params": decay, "weight_decay": weight_decay},
                        {"params": no_decay, "weight_decay": 0.0}) if g["params"]]


def _optimizer(name: str, groups, lr: float, momentum: float):
    # foreach=True: one batched update for all parameters, the default on a GPU but not on a
    # CPU, where it makes the tiny models' steps up to 1.9x faster with the same numbers
    # (tests/test_train.py checks they are bit-identical to the per-parameter loop).
    if name == "adam":
        return torch.optim.Adam(groups, lr=lr, foreach=True)
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=lr, foreach=True)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum, foreach=True)
    raise ValueError(f"optimizer must be 'adam', 'adamw' or 'sgd', got {name!r}")


def lr_factor(step: int, steps: int, warmup: int = 0, schedule: str = "constant",
              min_factor: float = 0.1) -> float:
    """Learning-rate multiplier at ``step`` (1-based): linear warmup, then constant or cosine.

    Cosine decays from 1 after the warmup to ``min_factor`` at the last step.
    """
    if warmup and step <= warmup:
        return step / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, steps - warmup)  # 0 -> 1
    return min_factor + (1 - min_factor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def _progress_enabled(progress) -> bool:
    if progress is not None:
        return bool(progress)
    return os.environ.get("BEFOREQKV_PROGRESS", "1") != "0"


def _check_batch(batch, step: int):
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        got = f"a {type(batch).__name__}" + (f" of length {len(batch)}" if isinstance(batch, (tuple, list)) else "")
        raise ValueError(f"batch_fn must return (inputs, target), got {got} at step {step}")
    inputs, target = batch
    if not isinstance(target, torch.Tensor):
        raise ValueError(f"batch_fn's target must be a tensor, got {type(target).__name__} at step {step}")
    return inputs, target


def train(model: nn.Module, batch_fn: Callable, steps: int, lr: float = 3e-3, optimizer: str = "adam",
          momentum: float = 0.9, weight_decay: float = 0.0, loss_fn: Callable | None = None,
          grad_clip: float | None = None, seed: int = 0, device=None, log_every: int = 10,
          progress: bool | None = None, desc: str | None = None, warmup: int = 0,
          schedule: str = "constant", eval_fn: Callable | None = None, eval_every: int | None = None) -> History:
    """Train ``model`` for ``steps`` steps on fresh batches; return a :class:`History`.

    batch_fn(generator) -> (inputs, target): a new batch from the given generator
        (seeded with ``seed``), e.g. ``lambda g: associative_recall(128, 8, generator=g)``.
    loss_fn(model, inputs, target) -> scalar; default: cross-entropy of ``model(*inputs)``.
    weight_decay: on weight matrices only (:func:`param_groups`), for every optimizer.
    warmup, schedule: ``warmup`` steps of linear warmup, then ``"constant"`` or ``"cosine"``
        (down to 0.1 lr at the last step).
    eval_fn(model) -> float, run in eval mode every ``eval_every`` steps and at the end;
        recorded in ``History.eval_steps`` / ``History.eval_values``.
    device: where to train (default: where the model's parameters are). The model's
    train/eval mode is restored afterwards. The loss is checked for NaN/inf at log steps.
    """
    _check_train_args(batch_fn, steps, lr, weight_decay, grad_clip, schedule, warmup, eval_fn, eval_every,
                      log_every)
    groups = param_groups(model, weight_decay)
    if not groups:
        raise ValueError("the model has no trainable parameters")
    params = [p for p in model.parameters() if p.requires_grad]  # model order: clipping unchanged
    device = params[0].device if device is None else device
    opt = _optimizer(optimizer, groups, lr, momentum)
    sched = _scheduler(opt, steps, warmup, schedule)
    gen, hist = torch.Generator().manual_seed(seed), History()
    was_training = model.training
    model.train()
    t0, c0 = time.perf_counter(), time.process_time()
    bar = _progress_bar(progress, steps, desc or type(model).__name__)
    try:
        for step in range(1, steps + 1):
            inputs, target = _check_batch(batch_fn(gen), step)
            inputs, target = move(inputs, device), move(target, device)
            loss = loss_fn(model, inputs, target) if loss_fn else cross_entropy(_call(model, inputs), target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(params, grad_clip)
            opt.step()
            sched.step()
            if step % log_every == 0 or step == steps:
                _log(hist, step, loss.item(), bar)  # the one host-device sync, at log steps only
            if eval_fn is not None and (step == steps or (eval_every and step % eval_every == 0)):
                _evaluate(model, eval_fn, hist, step)
            bar.update(1)
    finally:
        bar.close()
        model.train(was_training)
    hist.seconds, hist.cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    return hist


def _check_train_args(batch_fn, steps, lr, weight_decay, grad_clip, schedule, warmup, eval_fn, eval_every,
                      log_every) -> None:
    check_positive(steps=steps, log_every=log_every)
    if not callable(batch_fn):
        raise ValueError("batch_fn must be callable: batch_fn(generator) -> (inputs, target)")
    check_finite_number("lr", lr, low=0, strict=True)
    check_finite_number("weight_decay", weight_decay, low=0)
    if grad_clip is not None:
        check_finite_number("grad_clip", grad_clip, low=0, strict=True)
    if schedule not in ("constant", "cosine"):
        raise ValueError(f"schedule must be 'constant' or 'cosine', got {schedule!r}")
    if not isinstance(warmup, int) or isinstance(warmup, bool) or not 0 <= warmup <= steps:
        raise ValueError(f"warmup must be an int in [0, steps={steps}], got {warmup!r}")
    if eval_fn is not None and not callable(eval_fn):
        raise ValueError("eval_fn must be callable: eval_fn(model) -> float")
    if eval_every is not None:
        check_positive(eval_every=eval_every)
        if eval_fn is None:
            raise ValueError("eval_every needs an eval_fn")


class _ConstantRate:
    """The schedule of a constant learning rate without warmup: stepping it changes nothing."""

    def step(self) -> None:
        pass


class _NoBar:
    """The progress bar when progress is off (``BEFOREQKV_PROGRESS=0``, ``progress=False``)."""

    def update(self, n: int) -> None:
        pass

    def set_postfix(self, **kwargs) -> None:
        pass

    def close(self) -> None:
        pass


def _scheduler(opt, steps: int, warmup: int, schedule: str):
    """The learning-rate schedule: :func:`lr_factor` times each group's rate, stepped once a step."""
    if not warmup and schedule == "constant":
        return _ConstantRate()
    return torch.optim.lr_scheduler.LambdaLR(opt, lambda i: lr_factor(i + 1, steps, warmup, schedule))


def _progress_bar(progress, steps: int, desc: str):
    if not _progress_enabled(progress):
        return _NoBar()
    from tqdm.auto import tqdm
    return tqdm(total=steps, desc=desc, leave=False, mininterval=0.5)


def _log(hist: History, step: int, value: float, bar) -> None:
    if not math.isfinite(value):
        raise ValueError(f"loss became {value} by step {step}: lower the learning rate")
    hist.steps.append(step)
    hist.loss.append(value)
    bar.set_postfix(loss=f"{value:.3f}", refresh=False)


def _evaluate(model: nn.Module, eval_fn: Callable, hist: History, step: int) -> None:
    """``eval_fn(model)`` in eval mode, recorded at ``step``; back to training mode after."""
    model.eval()
    with torch.no_grad():
        hist.eval_steps.append(step)
        hist.eval_values.append(float(eval_fn(model)))
    model.train()


@torch.no_grad()
def _per_chunk(model: nn.Module, batch, batch_size: int, device, score):
    """Average ``score(logits, target) -> (sum, count)`` over a fixed batch, in chunks, in eval mode.

    ``sum`` may be a number or a CPU tensor of several sums (one average each). The shared
    evaluation of :func:`accuracy`, :func:`evaluate_loss` and :func:`beforeqkv.measure.probes.ring_accuracy`.
    """
    inputs, target = batch
    if device is None:
        device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for start in range(0, target.shape[0], batch_size):
            sl = slice(start, start + batch_size)
            x = tuple(t[sl] for t in inputs) if isinstance(inputs, (tuple, list)) else inputs[sl]
            y = target[sl].to(device)
            s, c = score(_call(model, move(x, device)), y)
            total, count = total + s, count + c
    finally:
        model.train(was_training)
    return total / count


def accuracy(model: nn.Module, batch, batch_size: int = 1000, device=None) -> float:
    """Fraction of examples where ``argmax model(*inputs) == target`` (over all positions).

    NaN/inf logits raise a ValueError (argmax would silently pick the NaN).
    """
    def score(logits, y):
        check_finite("the model's logits", logits)
        return (logits.argmax(dim=-1) == y).sum().item(), y.numel()

    return _per_chunk(model, batch, batch_size, device, score)


def evaluate_loss(model: nn.Module, batch, batch_size: int = 1000, device=None) -> float:
    """Mean cross-entropy (nats) of ``model`` on a fixed batch ``(inputs, target)``."""
    return _per_chunk(model, batch, batch_size, device,
                      lambda logits, y: (cross_entropy(logits, y).item() * y.numel(), y.numel()))


# ------------------------------------------------------------------ one experiment: seed, build, train, score
@dataclass
class Fit:
    """What :func:`fit` returns: the trained model, its held-out accuracy (``None`` without a
    test batch) and the training :class:`History`."""

    model: nn.Module
    accuracy: float | None
    history: History

    @property
    def cpu_seconds(self) -> float:
        return self.history.cpu_seconds


def fit(make: Callable[[], nn.Module], batch_fn: Callable, steps: int, lr: float = 3e-3, *, test=None,
        seed: int = 0, device=None, desc: str | None = None, **train_kwargs) -> Fit:
    """The experiment every chapter runs: seed everything with ``seed``, build ``make()`` on
    ``device`` (default: :func:`beforeqkv.get_device`), :func:`train` it for ``steps`` steps
    on ``batch_fn`` (batches drawn from ``seed`` too), then score :func:`accuracy` on the
    held-out batch ``test``. A seeded :func:`fit` gives the same numbers every time, in a
    plain loop or spread over the cores with :func:`map_runs`::

        runs = map_runs(lambda n: fit(make, batches(n), 600, test=held_out(n)), [4, 16, 64])
    """
    if not callable(make) or isinstance(make, nn.Module):
        got = "a model" if isinstance(make, nn.Module) else type(make).__name__
        raise ValueError(f"fit needs make, a function that builds the model (fit(lambda: Model(...), ...) or the "
                         f"model's class), got {got}")
    seed_everything(seed)
    model = make()
    if not isinstance(model, nn.Module):
        raise ValueError(f"make() must return an nn.Module, got {type(model).__name__}")
    model = model.to(device if device is not None else get_device())
    hist = train(model, batch_fn, steps=steps, lr=lr, seed=seed, desc=desc, **train_kwargs)
    return Fit(model, None if test is None else accuracy(model, test), hist)


# ------------------------------------------------------------------ independent runs, one per core
_JOB = None  # (fn, items) while map_runs runs: the forked workers inherit it, nothing is pickled


def _import_before_fork() -> None:
    """Import here, once, what every training run imports on first use, so that the forked
    workers inherit it: torch's first optimizer imports ``torch._dynamo`` (about 1.3 s on a
    2-core CPU), which each worker of each :func:`map_runs` would otherwise import again."""
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:  # pragma: no cover - a torch without it
        pass


def _run_one(i: int):
    fn, items = _JOB
    return fn(items[i])


def _quiet_worker() -> None:
    """Start of each forked worker: nothing in it may touch the parent's Jupyter machinery.

    Inside a kernel, ``sys.stdout``/``sys.stderr`` are ipykernel streams that send through
    ZeroMQ sockets and threads of the parent; a fork copies the sockets but not the threads,
    so a worker writing to them (a print, a warning, a tqdm widget) can block. The worker
    writes to the process's own file descriptors instead (in a kernel they reach the
    notebook too, through the kernel's capture of its output), and shows no progress bar.
    """
    os.environ["BEFOREQKV_PROGRESS"] = "0"
    for name in ("stdout", "stderr"):
        original = getattr(sys, f"__{name}__")
        if getattr(sys, name) is not original:
            setattr(sys, name, original if original is not None else open(os.devnull, "w"))


def map_runs(fn: Callable, items, n_workers: int | None = None) -> list:
    """``[fn(x) for x in items]``, the independent runs spread over the CPU cores.

    Each run must be independent and seed itself (e.g. ``seed_everything(0)`` at its
    start), so the results are the same numbers as in a plain loop, whatever the number of
    workers; only the wall time changes. The workers are forked (Linux): ``fn`` may be a
    lambda or a function defined in a notebook, and what it returns (models included) comes
    back pickled. Each worker keeps the thread count of this process (1 after ``setup()``).
    Safe inside a Jupyter kernel: a worker never writes to the kernel's streams
    (:func:`_quiet_worker`), and a worker that dies (killed, out of memory) does not leave the
    cell waiting: its runs are done again in this process, which says so.
    Once CUDA is in use, off Linux or with one core this is the plain loop (:func:`workers`).
    """
    global _JOB
    if not callable(fn):
        raise ValueError("map_runs needs a function: map_runs(fn, items)")
    items = list(items)
    n = workers(len(items)) if n_workers is None else max(1, min(int(n_workers), len(items)))
    if n <= 1 or _JOB is not None:
        return [fn(x) for x in items]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    _import_before_fork()
    _JOB = (fn, items)
    results = {}
    try:
        # A process pool that notices a dead worker (multiprocessing.Pool waits for it forever).
        with ProcessPoolExecutor(n, mp_context=mp.get_context("fork"), initializer=_quiet_worker) as pool:
            futures = [pool.submit(_run_one, i) for i in range(len(items))]
            try:
                for i, future in enumerate(futures):
                    results[i] = future.result()
            except BrokenProcessPool:
                print(f"map_runs: a worker process died; running the {len(items) - len(results)} runs "
                      "it left in this process")
    finally:
        _JOB = None
    return [results[i] if i in results else fn(x) for i, x in enumerate(items)]
