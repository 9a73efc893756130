"""One exercise, graded on its own: the earlier exercises' functions a check meets are the package's.

An exercise that builds on an earlier one (Exercise 8.3's block on 8.2's causal attention,
11.6's Llama on 11.1's RMSNorm and 11.2's rotary, 10.6's encoder on 10.5's block) would
fail with the earlier mistake and cost its points twice. Its checker wraps the run in
:func:`earlier_parts`, which swaps the reader's earlier functions for the package's while
the check runs, and :func:`used_the_package` says so in one line.
"""
from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import types
from typing import Callable, Mapping

from ..i18n import _

__all__ = ["earlier_parts", "used_the_package"]


def _installed(module: str) -> bool:
    """Whether ``module`` comes from an installed distribution (site-packages) or the standard library."""
    if module == "__main__":  # a notebook's or a script's own code (a kernel's launcher may sit in site-packages)
        return False
    path = str(getattr(sys.modules.get(module), "__file__", "") or "")
    stdlib = getattr(sys, "stdlib_module_names", sys.builtin_module_names)  # the names: Python 3.10+
    return (any(part in path for part in ("site-packages", "dist-packages")) or module in stdlib
            or bool(path) and path.startswith(_STDLIB))  # Python 3.9: the standard library's folder


_STDLIB = sysconfig.get_path("stdlib") + os.sep  # the base Python's, in a venv too (lib-dynload is inside)


def _readers_own(obj) -> bool:
    """Whether ``obj`` is a function or class the reader wrote (not torch's, the package's or Python's)."""
    module = getattr(obj, "__module__", None) or ""
    return (isinstance(obj, (types.FunctionType, type)) and not _installed(module.split(".")[0])
            and not module.startswith(("torch", "beforeqkv", "builtins", "typing", "functools")))


def _functions(obj, seen=None) -> list:
    """The reader's functions ``obj`` may run: itself or a class's methods, and the reader's functions
    and classes those read by name (so ``MyLlama`` brings ``MyLlamaBlock`` and its methods)."""
    seen = set() if seen is None else seen
    if id(obj) in seen or not _readers_own(obj):
        return []
    seen.add(id(obj))
    own = [obj] if isinstance(obj, types.FunctionType) else [
        v for k in obj.__mro__ if _readers_own(k) for v in vars(k).values() if isinstance(v, types.FunctionType)]
    found = list(own)
    for fn in own:
        for name in _global_names(fn.__code__):
            found += _functions(fn.__globals__.get(name), seen)
        for cell in fn.__closure__ or ():  # classes and functions defined in an enclosing function
            with contextlib.suppress(ValueError):  # an empty cell
                found += _functions(cell.cell_contents, seen)
    return found


def _global_names(code) -> set:
    """The global names a code object (and the functions nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


@contextlib.contextmanager
def earlier_parts(obj, references: Mapping[str, Callable]):
    """While ``obj`` is checked, the earlier exercises' functions it calls are the package's.

    references: the reader's name of an earlier exercise's function (``"my_causal_attention"``)
    -> the package's version with the same signature. A name is replaced, in the namespace
    where ``obj``'s code looks it up, only where that code reads it; it is put back afterwards.
    So a mistake of an earlier exercise costs points once, in that exercise's own check.
    Yields the names replaced.
    """
    swapped, seen = [], set()
    for fn in _functions(obj):
        space = fn.__globals__
        if str(space.get("__name__", "")).startswith("beforeqkv"):
            continue
        for name in _global_names(fn.__code__) & set(references):
            if name in space and space[name] is not references[name] and (id(space), name) not in seen:
                seen.add((id(space), name))
                swapped.append((space, name, space[name]))
                space[name] = references[name]
    try:
        yield sorted({name for __, name, __ in swapped})
    finally:
        for space, name, mine in reversed(swapped):
            space[name] = mine


def _cell() -> int | None:
    """The number of the notebook cell running now (IPython's execution count), else None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return getattr(shell, "execution_count", None) if shell is not None else None


_SAID: dict = {"last": None}  # (cell, names) of the last note: one note per cell, not one per check


def used_the_package(names) -> None:
    """Say that a check used the package's versions of the earlier exercises named ``names``;
    once per notebook cell (two checks in one cell that replaced the same names say it once)."""
    if not names:
        return
    said = (_cell(), tuple(names))
    if said[0] is None or said != _SAID["last"]:
        _SAID["last"] = said
        print(_("(this check called the package's version of {names} in place of yours, so that a mistake "
                "there costs points once, in its own exercise)").format(names=", ".join(names)))
