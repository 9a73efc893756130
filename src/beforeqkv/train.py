"""One model-agnostic training loop for every experiment in the book.

    history = train(model, lambda g: associative_recall(128, 8, generator=g), steps=300)
    accuracy(model, associative_recall(4000, 8, generator=torch.Generator().manual_seed(1)))

Fresh random batches every step; a *step budget*, never a wall-clock budget, so a
seeded run gives the same numbers on any machine.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._validate import check_positive

__all__ = ["History", "train", "accuracy", "evaluate_loss", "cross_entropy", "move"]


@dataclass
class History:
    """What a training run did: losses every ``log_every`` steps and the time it took."""

    steps: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def final_loss(self) -> float:
        return self.loss[-1] if self.loss else float("nan")

    def as_dict(self) -> dict:
        return {"steps": list(self.steps), "loss": list(self.loss)}


def move(inputs, device):
    """Move a tensor or a tuple of tensors to ``device``."""
    if device is None:
        return inputs
    if isinstance(inputs, torch.Tensor):
        return inputs.to(device)
    return tuple(move(x, device) for x in inputs)


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


def _optimizer(name: str, params, lr: float, momentum: float, weight_decay: float):
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be 'adam', 'adamw' or 'sgd', got {name!r}")


def _progress_enabled(progress) -> bool:
    if progress is not None:
        return bool(progress)
    return os.environ.get("BEFOREQKV_PROGRESS", "1") != "0"


def train(model: nn.Module, batch_fn: Callable, steps: int, lr: float = 3e-3, optimizer: str = "adam",
          momentum: float = 0.9, weight_decay: float = 0.0, loss_fn: Callable | None = None,
          grad_clip: float | None = None, seed: int = 0, device=None, log_every: int = 10,
          progress: bool | None = None, desc: str | None = None) -> History:
    """Train ``model`` for ``steps`` steps on fresh batches; return a :class:`History`.

    batch_fn(generator) -> (inputs, target): a new batch from the given generator
        (seeded with ``seed``), e.g. ``lambda g: associative_recall(128, 8, generator=g)``.
    loss_fn(model, inputs, target) -> scalar; default: cross-entropy of ``model(*inputs)``.
    device: where to train (default: where the model's parameters are).
    """
    check_positive(steps=steps)
    if not callable(batch_fn):
        raise ValueError("batch_fn must be callable: batch_fn(generator) -> (inputs, target)")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    if device is None:
        device = params[0].device
    opt = _optimizer(optimizer, params, lr, momentum, weight_decay)
    gen = torch.Generator().manual_seed(seed)
    hist = History()
    model.train()
    t0, c0 = time.perf_counter(), time.process_time()
    bar = None
    if _progress_enabled(progress):
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=desc or type(model).__name__, leave=False, mininterval=0.5)
    for step in range(1, steps + 1):
        inputs, target = batch_fn(gen)
        inputs, target = move(inputs, device), move(target, device)
        loss = loss_fn(model, inputs, target) if loss_fn else cross_entropy(_call(model, inputs), target)
        if not torch.isfinite(loss):
            raise ValueError(f"loss became {loss.item()} at step {step}: lower the learning rate")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        if step % log_every == 0 or step == steps:
            hist.steps.append(step)
            hist.loss.append(loss.item())
            if bar is not None:
                bar.set_postfix(loss=f"{hist.loss[-1]:.3f}", refresh=False)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    hist.seconds = time.perf_counter() - t0
    hist.cpu_seconds = time.process_time() - c0
    model.eval()
    return hist


@torch.no_grad()
def _per_chunk(model: nn.Module, batch, batch_size: int, device, score) -> float:
    """Average ``score(logits, target) -> (sum, count)`` over a fixed batch, in chunks, in eval mode."""
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
    """Fraction of examples where ``argmax model(*inputs) == target`` (over all positions)."""
    return _per_chunk(model, batch, batch_size, device,
                      lambda logits, y: ((logits.argmax(dim=-1) == y).sum().item(), y.numel()))


def evaluate_loss(model: nn.Module, batch, batch_size: int = 1000, device=None) -> float:
    """Mean cross-entropy (nats) of ``model`` on a fixed batch ``(inputs, target)``."""
    return _per_chunk(model, batch, batch_size, device,
                      lambda logits, y: (cross_entropy(logits, y).item() * y.numel(), y.numel()))
