"""Input checks shared by the whole package (clear ValueErrors at public boundaries)."""
from __future__ import annotations

import math

import torch


def check_positive(**kwargs) -> None:
    """Raise ValueError unless every keyword is a positive int (bools are rejected)."""
    for name, val in kwargs.items():
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
