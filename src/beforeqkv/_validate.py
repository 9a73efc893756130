"""Input checks shared by the whole package (clear ValueErrors at public boundaries)."""
from __future__ import annotations

import math

import torch


def _traced_size(val) -> bool:
    """A tensor's size while torch traces a model for ONNX (beforeqkv.live): a 0-dim integer
    tensor standing for an int, so the exported graph keeps the size as a variable."""
    return (torch.jit.is_tracing() and isinstance(val, torch.Tensor) and val.dim() == 0
            and not val.is_floating_point())


def check_positive(**kwargs) -> None:
    """Raise ValueError unless every keyword is a positive int (bools are rejected)."""
    for name, val in kwargs.items():
        if _traced_size(val):
            continue
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ValueError(f"{name} must be a positive int, got {val!r}")


def check_finite_number(name: str, val, low: float | None = None, strict: bool = False) -> None:
    """Raise ValueError unless ``val`` is a finite real number (>= ``low``, or > with ``strict``)."""
    ok = isinstance(val, (int, float)) and not isinstance(val, bool) and math.isfinite(val)
    if ok and low is not None:
        ok = val > low if strict else val >= low
    if not ok:
        bound = "" if low is None else f" {'>' if strict else '>='} {low:g}"
        raise ValueError(f"{name} must be a finite number{bound}, got {val!r}")


def check_finite(name: str, x: torch.Tensor) -> None:
    """Raise ValueError if the tensor ``x`` holds a NaN or an infinity (one device sync)."""
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        n_bad = int((~torch.isfinite(x)).sum())
        raise ValueError(f"{name} contains {n_bad} NaN/inf value(s): the result would be meaningless")


def check_ids(name: str, ids, n: int, dim: int | None = None) -> None:
    """Raise ValueError unless ``ids`` is an integer tensor (with ``dim`` dims) of values in [0, n).

    The range is checked on the CPU only: on an accelerator it would cost a host-device
    sync on every forward pass (the embedding lookup then fails on the device instead).
    """
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32):
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(f"{name} must be an integer (int64 or int32) tensor, got {got}")
    if dim is not None and ids.dim() != dim:
        raise ValueError(f"{name} must be an integer tensor with {dim} dims, got shape {tuple(ids.shape)}")
    if ids.device.type == "cpu" and ids.numel():
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= n:
            raise ValueError(f"{name} ids must lie in [0, {n}), got range [{lo}, {hi}]")


def move(inputs, device):
    """Move a tensor or a (nested) tuple/list of tensors to ``device`` (``None``: leave it)."""
    if device is None:
        return inputs
    if isinstance(inputs, torch.Tensor):
        return inputs.to(device)
    if isinstance(inputs, (tuple, list)):
        return tuple(move(x, device) for x in inputs)
    raise ValueError(f"expected a tensor or a tuple of tensors, got {type(inputs).__name__}")
