"""The machinery behind every exercise checker.

A checker runs the reader's function and the canonical one on several seeded cases
(edge cases included), compares with ``torch.testing.assert_close``, makes sure the
reader's function did not modify its inputs, and, when the answer is wrong, compares
it with typical mistakes to give a hint that teaches. On success it prints one line.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import torch

__all__ = ["CheckFailure", "compare", "passed", "register_question", "check_prediction", "QUESTIONS"]


class CheckFailure(AssertionError):
    """Raised by a checker when the reader's answer is wrong; the message says why."""


def passed(what: str) -> None:
    print(f"\u2713 {what}")


def _clone(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, (tuple, list)):
        return type(obj)(_clone(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _clone(v) for k, v in obj.items()}
    return obj


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return True


def _close(a, b, atol, rtol) -> bool:
    try:
        torch.testing.assert_close(a, b, atol=atol, rtol=rtol, check_dtype=False)
        return True
    except (AssertionError, TypeError, ValueError, RuntimeError):
        return False


def compare(fn: Callable, reference: Callable, cases: Iterable[tuple], name: str,
            mistakes: Mapping[str, Callable] | None = None, atol: float = 1e-5, rtol: float = 1e-4,
            describe: Callable[[tuple], str] | None = None) -> None:
    """Check ``fn(*args) == reference(*args)`` for every ``args`` in ``cases``.

    mistakes: hint -> a function implementing a typical wrong version. If the reader's
    output matches one, that hint is shown.
    """
    if not callable(fn):
        raise CheckFailure(f"{name}: expected a function, got {type(fn).__name__}")
    for i, args in enumerate(cases, start=1):
        label = describe(args) if describe else f"case {i}"
        pristine = _clone(args)
        try:
            got = fn(*args)
        except NotImplementedError:
            raise CheckFailure(f"{name}: not implemented yet: replace `raise NotImplementedError()`") from None
        except Exception as err:  # show the reader's own error, with the case
            raise CheckFailure(f"{name} raised {type(err).__name__} on {label}: {err}") from err
        if not _same(args, pristine):
            raise CheckFailure(f"{name} modified its input in place on {label}: work on copies instead")
        want = reference(*args)
        if isinstance(want, torch.Tensor) and not isinstance(got, torch.Tensor):
            raise CheckFailure(f"{name} should return a tensor, got {type(got).__name__} on {label}")
        if _close(got, want, atol, rtol):
            continue
        for hint, wrong in (mistakes or {}).items():
            try:
                matched = _close(got, wrong(*args), atol, rtol)
            except Exception:  # a mistake model that does not apply to this case
                matched = False
            if matched:
                raise CheckFailure(f"{name}: wrong values on {label}. Hint: {hint}")
        if isinstance(want, torch.Tensor) and got.shape != want.shape:
            raise CheckFailure(
                f"{name}: wrong shape on {label}: got {tuple(got.shape)}, expected {tuple(want.shape)}"
            )
        raise CheckFailure(f"{name}: wrong values on {label} (max abs error "
                           f"{_max_err(got, want):.3g}). Compare your code with the derivation above.")
    passed(f"{name} matches the reference on every case")


def _max_err(a, b) -> float:
    try:
        return (torch.as_tensor(a, dtype=torch.float64) - torch.as_tensor(b, dtype=torch.float64)).abs().max().item()
    except Exception:
        return float("nan")


# ---------------------------------------------------------------- predict-then-run
QUESTIONS: dict[str, dict] = {}


def register_question(key: str, answer, explanation: str, choices: Iterable | None = None,
                      tolerance: float | None = None) -> None:
    """Register a predict-then-run question: its answer and the explanation shown afterwards."""
    QUESTIONS[key] = {"answer": answer, "explanation": explanation,
                      "choices": None if choices is None else list(choices), "tolerance": tolerance}


def _norm(x):
    return x.strip().lower() if isinstance(x, str) else x


def check_prediction(key: str, prediction) -> None:
    """Check a predict-then-run answer; explain the result either way."""
    if key not in QUESTIONS:
        raise ValueError(f"unknown question {key!r}; known: {sorted(QUESTIONS)}")
    q = QUESTIONS[key]
    if prediction is None or prediction is Ellipsis:
        raise CheckFailure(f"{key}: write your prediction first (replace the ...)")
    if q["choices"] is not None and _norm(prediction) not in [_norm(c) for c in q["choices"]]:
        raise CheckFailure(f"{key}: answer with one of {q['choices']}, got {prediction!r}")
    if q["tolerance"] is not None:
        try:
            ok = abs(float(prediction) - float(q["answer"])) <= q["tolerance"]
        except (TypeError, ValueError):
            raise CheckFailure(f"{key}: answer with a number, got {prediction!r}") from None
    else:
        ok = _norm(prediction) == _norm(q["answer"])
    if not ok:
        raise CheckFailure(f"{key}: not quite. {q['explanation']}")
    passed(f"{key}: right. {q['explanation']}")
