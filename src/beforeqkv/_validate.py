"""Input checks shared by the whole package (clear ValueErrors at public boundaries)."""
from __future__ import annotations


def check_positive(**kwargs) -> None:
    """Raise ValueError unless every keyword is a positive int (bools are rejected)."""
    for name, val in kwargs.items():
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ValueError(f"{name} must be a positive int, got {val!r}")
