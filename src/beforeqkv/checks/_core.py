"""The machinery behind every exercise checker.

A checker runs the reader's function and the canonical one on several seeded cases
(edge cases included), compares with ``torch.testing.assert_close``, makes sure the
reader's function did not modify its inputs, and, when the answer is wrong, compares
it with typical mistakes to give a hint that teaches.

Three modes decide what a failed check does (see :func:`mode`):

* ``lenient`` (a student's notebook): print ``✗`` and the hint, return a falsy
  :class:`CheckResult`; Run All goes on to the end of the chapter.
* ``strict`` (the instructor's notebook, unit tests, plain scripts): raise
  :class:`CheckFailure` with the full message, so a canonical solution that stops
  passing fails CI loudly.
* ``graded`` (``BEFOREQKV_GRADING=1``, set by ``python -m beforeqkv.grade``, or
  ``NBGRADER_EXECUTION``, set by nbgrader's validate and autograde): raise, and never
  show a prediction's answer. Graded cells do not rely on the mode: their hidden test
  asserts :func:`beforeqkv.checks.grading.verify`, which a student's kernel cannot switch.

The mode is chosen explicitly (:func:`mode`, :func:`configure`), never by reading the
code under check. Checkers written with :func:`compare` and :func:`check_prediction`
get all of this without any change; a checker that raises :class:`CheckFailure` by
itself should be decorated with :func:`checker`.
"""
from __future__ import annotations

import functools
import os
import re
import sys
from typing import Callable, Iterable, Mapping

import torch

from .. import i18n
from ..i18n import N_, _, tr
from . import _record, _seal
from ._failed import failed
from ._failure import CheckFailure

__all__ = ["CheckFailure", "CheckResult", "compare", "passed", "register_question",
           "check_prediction", "explain", "checker", "mode", "configure", "QUESTIONS",
           "canonical", "is_right", "tr", "hint_line", "not_implemented", "matches_everywhere"]

_NESTED = 0  # > 0 while a @checker function runs: failures go up to it, reported once


class CheckResult:
    """What a check returns: truthy when it passed. Shows nothing when a cell ends with it.

    ``measured``: what a passed check measured that the chapter may quote (empty otherwise).
    """

    def __init__(self, name: str, ok: bool, message: str = "", measured: dict | None = None):
        self.name, self.ok, self.message = name, ok, message
        self.measured = dict(measured or {})

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"CheckResult({self.name!r}, ok={self.ok})"

    def _ipython_display_(self) -> None:  # the ✓/✗ line was already printed
        pass


# ---------------------------------------------------------------- modes
def _in_kernel() -> bool:
    ip = sys.modules.get("IPython")
    return ip is not None and getattr(ip, "get_ipython", lambda: None)() is not None


_CONFIGURED: str | None = None  # set by configure(); wins over BEFOREQKV_CHECKS


def configure(mode: str | None = None) -> None:
    """Choose what a failed check does from now on in this process.

    ``"strict"`` raises, ``"lenient"`` prints the hint and goes on, ``None`` goes back to the
    default (``BEFOREQKV_CHECKS``, else strict outside a Jupyter kernel and lenient inside).
    Grading (``BEFOREQKV_GRADING`` or nbgrader) cannot be switched off from here.
    """
    global _CONFIGURED
    if mode is not None and mode not in ("strict", "lenient"):
        raise ValueError(f"configure: mode must be 'strict', 'lenient' or None, got {mode!r}")
    _CONFIGURED = mode


def mode(fn=None) -> str:
    """``"graded"``, ``"strict"`` or ``"lenient"``: what a failed check does now.

    Chosen explicitly, never guessed from the code being checked:
    ``BEFOREQKV_GRADING=1`` or a run by nbgrader's validator or autograder (which set
    ``NBGRADER_EXECUTION``) -> graded, so *Validate* reports a wrong answer; else what
    :func:`configure` set; else ``BEFOREQKV_CHECKS=strict|lenient``; else strict outside a
    Jupyter kernel (scripts, unit tests) and lenient inside one (a reader's notebook, so
    Run All reaches the end). The book's own runs of its source notebooks are strict:
    ``book/conftest.py`` (nbmake), ``make execute`` and ``tools/bench.py`` set
    ``BEFOREQKV_CHECKS=strict``. ``fn`` is accepted for backwards compatibility and ignored.
    """
    if os.environ.get("BEFOREQKV_GRADING", "") not in ("", "0") or os.environ.get("NBGRADER_EXECUTION"):
        return "graded"
    if _CONFIGURED is not None:
        return _CONFIGURED
    forced = os.environ.get("BEFOREQKV_CHECKS", "").strip().lower()
    if forced in ("strict", "lenient"):
        return forced
    return "lenient" if _in_kernel() else "strict"


def _report(name: str, err: CheckFailure, fn=None) -> CheckResult:
    __tracebackhide__ = True  # IPython hides this frame: no checker source in the traceback
    if _NESTED:
        raise err
    m = mode(fn)
    if m == "lenient":
        print(f"\u2717 {err}")
        return CheckResult(name, False, str(err))
    failed(CheckFailure, str(err))  # a short frame of its own: no checker source in the traceback


def passed(what: str) -> None:
    print(f"\u2713 {what}")


# ---------------------------------------------------------------- the reader's language
def hint_line(hint: str) -> str:
    """``"\nHint: ..."``, the hint translated."""
    return "\n" + _("Hint: {hint}").format(hint=tr(hint))


def not_implemented(name: str) -> str:
    """What a check says of a function that still raises ``NotImplementedError``."""
    return _("{name}: not implemented yet. Write your code where it says `# YOUR CODE HERE` and "
             "delete `raise NotImplementedError()`, then run this cell again.").format(name=tr(name))


def matches_everywhere(name: str) -> None:
    """Print the ✓ line of a check that agreed with the reference on every case."""
    passed(_("{name} matches the reference on every case").format(name=tr(name)))


def checker(func: Callable) -> Callable:
    """Decorate a ``check_*(fn, ...)`` function that raises :class:`CheckFailure` itself.

    Its failures are then reported by mode, like those of :func:`compare`.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True
        global _NESTED
        _NESTED += 1
        try:
            result = func(*args, **kwargs)
        except CheckFailure as err:
            failure = err
        else:
            failure = None
        finally:
            _NESTED -= 1
        if failure is not None:
            return _report(func.__name__.removeprefix("check_"), failure, args[0] if args else None)
        return result if isinstance(result, CheckResult) else CheckResult(func.__name__, True)
    return wrapper


# ---------------------------------------------------------------- comparing functions
_clone, _same = _record.clone, _record.same


def _close(a, b, atol, rtol, equal_nan=False) -> bool:
    try:
        torch.testing.assert_close(a, b, atol=atol, rtol=rtol, check_dtype=False, equal_nan=equal_nan)
        return True
    except (AssertionError, TypeError, ValueError, RuntimeError):
        return False


def _has_nan(x) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point() and bool(torch.isnan(x).any())


def _ndim(args) -> int:
    return max((a.dim() for a in args if isinstance(a, torch.Tensor)), default=0)


def _where_in_your_code(err: BaseException) -> str:
    """`` (your line N: `code`)`` for the innermost frame outside the package and torch."""
    frame = _record.your_frame(err)
    if frame is None:
        return ""
    lineno, line = frame
    return " " + _("(your line {lineno}: `{code}`)").format(lineno=lineno, code=line)


NAN_HINT = N_("your output contains NaN. A softmax over a row whose scores are all -inf is 0/0: "
              "check which positions your mask fills (True = may attend in this book).")
BATCH_HINT = N_("it works with fewer batch dimensions but not with more: the contract is (..., T, d), "
                "so index from the end (dim=-1, .transpose(-2, -1)), not from the front.")


_GENERIC_ERRORS = {
    r"subscripts in the equation \(\d+\) does not match the number of dimensions|too many indices":
        N_("your code assumes a number of dimensions; the inputs may have any number of batch dimensions, "
           "including none: write '...' in einsum and index from the end (dim=-1, .transpose(-2, -1))."),
}


def compare(fn: Callable, reference: Callable, cases: Iterable[tuple], name: str,
            mistakes: Mapping[str, Callable] | None = None, atol: float = 1e-5, rtol: float = 1e-4,
            describe: Callable[[tuple], str] | None = None,
            errors: Mapping[str, str] | None = None) -> CheckResult:
    """Check ``fn(*args) == reference(*args)`` for every ``args`` in ``cases``.

    mistakes: hint -> a function implementing a typical wrong version. A hint is shown
    when the reader's output matches that version on every case where it applies.
    errors: regular expression -> hint, for errors the reader's function raises.
    Mark the hints and ``name`` with ``N_``: they are shown in the reader's language.
    Returns a :class:`CheckResult`; a failure is printed or raised according to :func:`mode`.
    """
    __tracebackhide__ = True
    try:
        _compare(fn, reference, list(cases), name, mistakes or {}, atol, rtol, describe, errors or {})
    except CheckFailure as err:
        return _report(name, err, fn)
    matches_everywhere(name)
    return CheckResult(name, True)


def _compare(fn, reference, cases, name, mistakes, atol, rtol, describe, errors):
    name = tr(name)
    if not callable(fn):
        raise CheckFailure(_("{name}: expected a function, got {type}").format(name=name, type=type(fn).__name__))
    site = f"compare:{name}"
    if _record.STATE["mode"] == "collect":  # the student's process: run every case, judge nothing
        for args in cases:
            try:
                _record.call(site, fn, *args)
            except Exception:
                pass
        return
    done_ndim = 0
    for i, args in enumerate(cases, start=1):
        label = describe(args) if describe else _("case {i}").format(i=i)
        try:
            got, modified = _record.call(site, fn, *args)
        except NotImplementedError:
            raise CheckFailure(not_implemented(name)) from None
        except Exception as err:  # show the reader's own error, with the case
            msg = _("{name} raised {error} on {case}: {message}").format(
                name=name, error=type(err).__name__, case=label, message=err) + _where_in_your_code(err)
            hints = [h for pattern, h in {**errors, **_GENERIC_ERRORS}.items() if re.search(pattern, str(err))]
            if done_ndim and _ndim(args) > done_ndim:
                hints.append(BATCH_HINT)
            raise CheckFailure(msg + "".join(hint_line(h) for h in hints[:1])) from None
        if modified:
            raise CheckFailure(_("{name} modified its input in place on {case}: work on copies instead").format(
                name=name, case=label))
        want = reference(*args)
        if isinstance(want, torch.Tensor) and not isinstance(got, torch.Tensor):
            raise CheckFailure(_("{name} should return a tensor, got {type} on {case}").format(
                name=name, type=type(got).__name__, case=label))
        if _close(got, want, atol, rtol):
            done_ndim = max(done_ndim, _ndim(args))
            continue
        hint = _matching_mistake(fn, got, args, cases, mistakes, atol, rtol, site)
        if hint:
            raise CheckFailure(_("{name}: wrong values on {case}.").format(name=name, case=label) + hint_line(hint))
        extra = hint_line(BATCH_HINT) if done_ndim and _ndim(args) > done_ndim else ""
        if isinstance(want, torch.Tensor) and got.shape != want.shape:
            raise CheckFailure(_("{name}: wrong shape on {case}: got {got}, expected {want}").format(
                name=name, case=label, got=tuple(got.shape), want=tuple(want.shape)) + extra)
        if _has_nan(got) and not _has_nan(want):
            raise CheckFailure(_("{name}: NaN on {case}.").format(name=name, case=label) + hint_line(NAN_HINT))
        raise CheckFailure(_("{name}: wrong values on {case} (max abs error {error}). Your output matches neither "
                             "the reference nor any of the {n} typical mistakes this check knows: check each step "
                             "of your code against the exercise's statement.").format(
                                 name=name, case=label, error=f"{_max_err(got, want):.3g}", n=len(mistakes)) + extra)


def _matching_mistake(fn, got, args, cases, mistakes, atol, rtol, site) -> str | None:
    """The first hint whose wrong version matches the reader on this case and every other."""
    def matches(wrong, a, out) -> bool | None:
        try:
            w = wrong(*a)
        except Exception:  # a mistake model that does not apply to this case
            return None
        return _close(out, w, atol, rtol, equal_nan=True)

    outputs: dict[int, object] = {}
    for hint, wrong in mistakes.items():
        if not matches(wrong, args, got):
            continue
        agree = True
        for j, other in enumerate(cases):
            if other is args:
                continue
            if j not in outputs:
                try:
                    outputs[j] = _record.call(site, fn, *_clone(other))[0]
                except Exception:
                    outputs[j] = None
            if outputs[j] is None:
                continue
            if matches(wrong, other, outputs[j]) is False:
                agree = False
                break
        if agree:
            return hint
    return None


def _max_err(a, b) -> float:
    try:
        return (torch.as_tensor(a, dtype=torch.float64) - torch.as_tensor(b, dtype=torch.float64)).abs().max().item()
    except Exception:
        return float("nan")


# ---------------------------------------------------------------- predict-then-run
QUESTIONS: dict[str, dict] = {}
_EXPLAINED: dict[str, str] = {}  # question -> its explanation, once answered right here


def register_question(key: str, *, choices: Iterable | None = None, digits: int | None = None,
                      tolerance: float | None = None, hint: str | None = None, reveals: Iterable[str] = ()) -> None:
    """Register a predict-then-run question. Its answer is not here: it is sealed.

    choices: the answers to choose from (the check accepts any natural spelling of one);
    digits: for a numeric answer, the decimals it is compared at (0: a whole number,
    1: 2.77 and 2.8 are the same answer); tolerance: for a numeric answer, how far from the
    sealed answer (itself rounded to ``digits``) a prediction may be and still be right, whatever
    its own digits (default: half a unit of the last digit); say it in the question's text.
    hint: shown after a wrong answer, marked with
    ``N_`` so that it is shown in the reader's language. The answer and the explanation shown after a
    right answer live in the instructor's key (``instructor/answers.json``, not shipped)
    and reach the package only hashed (``_sealed.py``, ``tools/editions/seal.py``; see ``_seal``:
    out of plain sight, not a secret).
    hint: shown after a wrong answer (it must not give the answer away).
    reveals: the names of the glued values that give the answer away; the chapter may
    glue them or quote them in its prose only after the cell that checks the prediction
    (tests/test_no_answer_first.py).
    """
    if (choices is None) == (digits is None):
        raise ValueError(f"{key}: give either choices or digits (a numeric answer)")
    if tolerance is not None and (digits is None or not 0 <= tolerance <= 50 * 10.0 ** -digits):
        raise ValueError(f"{key}: a tolerance needs digits and at most 50 units of the last digit")
    QUESTIONS[key] = {"choices": None if choices is None else list(choices), "digits": digits,
                      "tolerance": tolerance, "hint": hint, "reveals": tuple(reveals)}


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$")


def _text(x) -> str:
    """Lower case, no quotes, one space between words, numbers written one way."""
    s = str(x).strip().strip("'\"`").strip().lower()
    s = re.sub(r"[\s_\-]+", " ", s)
    return re.sub(r"\d+\.\d+|\d+", lambda m: repr(float(m.group())), s)


def _number(x) -> float | None:
    """The number ``x`` stands for (1, "1", 1.0, "1e12", "10^12", "10**12", "1,000"), else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, torch.Tensor) and x.numel() == 1:
        x = x.item()
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    if hasattr(x, "__float__") and not isinstance(x, str):
        try:
            return float(x)
        except (TypeError, ValueError):
            return None
    if not isinstance(x, str):
        return None
    s = x.strip().strip("'\"`").lower().replace(" ", "").replace(",", "").replace("×", "*")
    power = re.fullmatch(r"([0-9.]+)(?:\^|\*\*)([+-]?[0-9]+)", s)
    if power:
        return float(power.group(1)) ** int(power.group(2))
    ratio = re.fullmatch(r"([0-9]*\.?[0-9]+)/([0-9]*\.?[0-9]+)", s)  # "1/2"
    if ratio and float(ratio.group(2)):
        return float(ratio.group(1)) / float(ratio.group(2))
    return float(s) if _NUMBER.match(s) else None


def _equal(a, b) -> bool:
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return abs(na - nb) <= 1e-9 * max(1.0, abs(nb))
    return _text(a) == _text(b)


def canonical(answer, choices: Iterable | None = None, digits: int | None = None) -> str | None:
    """The one spelling of an answer that is hashed: the matching choice, written one way,
    or the number rounded to ``digits`` decimals; None when it is neither."""
    if choices is not None:
        for c in choices:
            if _equal(answer, c):
                n = _number(c)
                return _text(c) if n is None else repr(n)
        return None
    n = _number(answer)
    if n is None or n != n or n in (float("inf"), float("-inf")):
        return None
    text = f"{round(n, digits or 0):.{digits or 0}f}"
    return "0" if float(text) == 0 else text.lstrip("+")


def _sealed(key: str) -> dict:
    from ._sealed import SEALED
    if key not in SEALED:
        raise ValueError(f"question {key!r} has no sealed answer: run `python -m editions.seal`")
    return SEALED[key]


def _unknown(key: str) -> ValueError:
    return ValueError(_("unknown question {key}; known: {known}").format(key=repr(key), known=sorted(QUESTIONS)))


def _grid(n: float, digits: int, within: float, strict: bool = False) -> list[str]:
    """The canonical numbers at ``digits`` decimals within ``within`` of ``n``, nearest first."""
    unit = 10.0 ** -digits
    steps = int(within / unit + 1e-9)
    near = sorted((round(n / unit) + i for i in range(-steps - 1, steps + 2)), key=lambda k: abs(k * unit - n))
    fits = [k * unit for k in near
            if (abs(k * unit - n) < within - 1e-12 if strict else abs(k * unit - n) <= within + 1e-9)]
    return [canonical(g, digits=digits) for g in fits]


def _tolerance(q) -> float:
    return q["tolerance"] if q.get("tolerance") is not None else 0.5 * 10.0 ** -q["digits"]


def _right_canon(key: str, q, prediction) -> str | None:
    """The canonical answer under which ``prediction`` is right (within the tolerance), else None."""
    if q["choices"] is not None:
        canon = canonical(prediction, q["choices"])
        return canon if canon is not None and _seal.digest(key, canon) == _sealed(key)["check"] else None
    n = _number(prediction)
    if n is None or n != n or n in (float("inf"), float("-inf")):
        return None
    return next((c for c in _grid(n, q["digits"], _tolerance(q))
                 if _seal.digest(key, c) == _sealed(key)["check"]), None)


def _decimals(prediction) -> int:
    """How many decimals the reader wrote (``3`` -> 0, ``2.8`` -> 1, ``2.80`` -> 1)."""
    text = prediction.strip() if isinstance(prediction, str) else repr(_number(prediction))
    frac = re.fullmatch(r"[+-]?\d*\.(\d+)", text)
    return len(frac.group(1).rstrip("0")) if frac else 0


def _rounded_right(key: str, q, prediction) -> bool:
    """Whether the sealed answer, rounded to the reader's own decimals, is the reader's number."""
    n, mine = _number(prediction), _decimals(prediction)
    if n is None or q["choices"] is not None or mine >= q["digits"]:
        return False
    return any(_seal.digest(key, c) == _sealed(key)["check"]
               for c in _grid(n, q["digits"], 0.5 * 10.0 ** -mine, strict=True))


def is_right(key: str, prediction) -> bool:
    """Whether ``prediction`` is the sealed answer of question ``key``, within its tolerance (prints nothing)."""
    if key not in QUESTIONS:
        raise _unknown(key)
    return _right_canon(key, QUESTIONS[key], prediction) is not None


def grade_prediction(key: str, prediction, expected=None) -> tuple[bool, str]:
    """A graded run's verdict on a prediction, without the package's hash (prints nothing).

    ``expected=None`` (participation, the graders' default): right when ``prediction`` is an
    answer in the question's form (one of its choices, or a number), since the experiment below
    the question shows its answer once run. Otherwise ``expected`` is the instructor's answer
    (from the instructor's version of the notebook) and the prediction must be it, within the
    question's tolerance.
    """
    if key not in QUESTIONS:
        raise _unknown(key)
    q = QUESTIONS[key]
    if prediction is None or prediction is Ellipsis:
        return False, "unanswered: write your prediction first (replace the `...`)"
    canon = canonical(prediction, q["choices"], q["digits"])
    if canon is None:
        wanted = "one of " + ", ".join(repr(c) for c in q["choices"]) if q["choices"] is not None else "a number"
        return False, f"not an answer: {prediction!r} is not {wanted}"
    if expected is None:
        return True, "answered (predictions count for participation)"
    right = canonical(expected, q["choices"], q["digits"])
    if right is None:
        raise ValueError(f"{key}: the instructor's answer {expected!r} is not in the question's form")
    if q["choices"] is not None:
        ok = canon == right
    else:
        ok = right in _grid(_number(prediction), q["digits"], _tolerance(q))
    return ok, "right" if ok else "not the instructor's answer"


def explain(key: str) -> None:
    """Print again the explanation of a question answered right in this session.

    The package cannot print an answer it was not given: the experiment right after the
    question measures it, and a right answer unlocks the explanation.
    """
    if key not in QUESTIONS:
        raise _unknown(key)
    if key in _EXPLAINED:
        print(f"{key}: {_EXPLAINED[key]}")
    else:
        print(_("{key}: answer it first with checks.check_prediction({quoted}, ...). The package does not "
                "print answers: the experiment that follows the question measures it, and a right answer "
                "shows the explanation.").format(key=key, quoted=repr(key)))


def check_prediction(key: str, prediction) -> CheckResult:
    """Check a predict-then-run answer; explain the result when it is right.

    A wrong answer is told so, with a hint but never the answer, so the reader can try again
    (the experiment that follows measures the answer).
    """
    __tracebackhide__ = True
    if key not in QUESTIONS:
        raise _unknown(key)
    q = QUESTIONS[key]
    try:
        explanation = _check_prediction(key, q, prediction)
    except CheckFailure as err:
        return _report(key, err)
    _EXPLAINED[key] = explanation
    passed(_("{key}: right. {explanation}").format(key=key, explanation=explanation))
    return CheckResult(key, True)


def _check_prediction(key, q, prediction) -> str:
    if prediction is None or prediction is Ellipsis:
        raise CheckFailure(_("{key}: write your prediction first: replace the `...` with your answer, then run "
                             "this cell again.").format(key=key))
    canon = canonical(prediction, q["choices"], q["digits"])
    if canon is None and q["choices"] is not None:
        shown = ", ".join(repr(c) for c in q["choices"])
        raise CheckFailure(_("{key}: answer with one of {choices}; got {answer}").format(
            key=key, choices=shown, answer=repr(prediction)))
    if canon is None:
        raise CheckFailure(_("{key}: answer with a number, got {answer}").format(key=key, answer=repr(prediction)))
    sealed = _sealed(key)
    right = _right_canon(key, q, prediction)
    if right is None and _rounded_right(key, q, prediction):
        raise CheckFailure(_("{key}: {answer} is the right value rounded to {mine} decimal(s), but the question "
                             "asks for it to within {tolerance}: give more decimals.").format(
                                 key=key, answer=repr(prediction), mine=_decimals(prediction),
                                 tolerance=f"{_tolerance(q):g}"))
    if right is None:
        if q.get("hint"):
            raise CheckFailure(_("{key}: not what the experiment shows. Hint: {hint} Think again and run this cell "
                                 "with a new answer; the experiment that follows measures it.").format(
                                     key=key, hint=tr(q["hint"])))
        raise CheckFailure(_("{key}: not what the experiment shows. Think again and run this cell with a new answer; "
                             "the experiment that follows measures it.").format(key=key))
    box = f"box_{i18n.language()}"  # the explanation in the language in force, else English
    return _seal.unseal(key, right, sealed[box], box) if box in sealed else _seal.unseal(key, right, sealed["box"])
