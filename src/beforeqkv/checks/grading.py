"""Grading that the student's kernel cannot talk round.

The hidden test of every graded cell (``tools/editions/assignments.py``, otter's tests) ends with ::

    from beforeqkv.checks import grading
    assert grading.verify("check_causal_mask", my_causal_mask)
    assert grading.verify("check_prediction", "ch5_weights_symmetric", my_prediction)

:func:`verify` runs the named checker from a fresh copy of ``beforeqkv.checks``, loaded
anew from the package's files for this one call: patching ``checks._core.mode``, a
``check_*`` function or ``_report`` in the notebook, or setting ``BEFOREQKV_GRADING`` or
``BEFOREQKV_CHECKS``, changes nothing, because the fresh copy never reads them: a failed
check raises. It returns True or raises ``AssertionError`` with the checker's message
(which never holds a prediction's answer).

What it does not stop: code in the same kernel that rewrites Python's import machinery
or the checked function's own behaviour under test. Grade in a fresh kernel (nbgrader,
otter and ``python -m beforeqkv.grade`` all do) and read suspicious submissions.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

from ..i18n import _

__all__ = ["verify"]

_HERE = Path(__file__).resolve().parent
_NAME = "beforeqkv._graded_checks"  # a private name: the student's `checks` is untouched


def _fresh():
    """A new ``beforeqkv.checks`` package object, executed from its files."""
    spec = importlib.util.spec_from_file_location(_NAME, _HERE / "__init__.py",
                                                  submodule_search_locations=[str(_HERE)])
    module = importlib.util.module_from_spec(spec)
    stale = {k: sys.modules.pop(k) for k in list(sys.modules) if k == _NAME or k.startswith(_NAME + ".")}
    sys.modules[_NAME] = module
    try:
        spec.loader.exec_module(module)
        module._core.mode = lambda fn=None: "graded"  # the fresh copy's own switch, not the student's
    except BaseException:
        _forget()
        sys.modules.update(stale)
        raise
    return module


def _forget():
    for k in [k for k in sys.modules if k == _NAME or k.startswith(_NAME + ".")]:
        del sys.modules[k]


def verify(check: str, *args, **kwargs) -> bool:
    """Run checker ``check`` (e.g. ``"check_causal_mask"``) from a fresh copy, graded.

    True when it passes; ``AssertionError`` with the checker's message otherwise.
    """
    __tracebackhide__ = True
    if not (check.startswith("check_") and check.isidentifier()):
        raise ValueError(f"verify needs a checker's name such as 'check_causal_mask', got {check!r}")
    fresh = _fresh()
    try:
        fn = getattr(fresh, check, None)
        if fn is None:
            raise ValueError(f"no checker named {check!r} in beforeqkv.checks")
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the visible check already printed
                result = fn(*args, **kwargs)
        except AssertionError as err:  # the fresh CheckFailure, or an assert in a checker
            raise AssertionError(str(err)) from None
        if not result:
            raise AssertionError(_("{check} did not pass: {message}").format(
                check=check, message=getattr(result, "message", "") or repr(result)))
        return True
    finally:
        _forget()
