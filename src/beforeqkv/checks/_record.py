"""The one door between a checker and the reader's code: live, recorded, or replayed.

Every place a checker runs the reader's code goes through :func:`call` (``compare`` does it
for every case). In a reader's notebook that is a plain call. For grading
(``beforeqkv.sandbox``) the same checker runs twice, in two processes:

* ``collect``, in a throwaway process that holds the student's definitions: :func:`call`
  runs the reader's code and records what came back (tensors, numbers, text; an error's
  type and message), keyed by the call's place and a digest of its inputs;
* ``replay``, in the grading process, which never holds the student's code: the reader's
  objects are :class:`Placeholder` names, and :func:`call` answers from the records. The
  comparison with the reference, the hints and the verdict are computed here, from data.

A record is looked up by the inputs the grading process computed itself: if the student's
process saw other inputs (its checker was tampered with), the lookup misses and the check
fails (:class:`ReplayMiss`).
"""
from __future__ import annotations

import hashlib
import struct
import traceback
from pathlib import Path

import torch

from ._failure import CheckFailure

__all__ = ["call", "build", "Placeholder", "ReplayMiss", "encode", "decode", "collecting", "replaying"]

STATE: dict = {"mode": "live", "records": {}}


class ReplayMiss(BaseException):
    """The grading process asked for a call the student's process never made."""


class Placeholder:
    """Stands for a reader's function, class or object in the grading process; never runs."""

    def __init__(self, name: str):
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args, **kwargs):  # only reached through a checker bug
        raise ReplayMiss(f"{self.__name__} was called outside the recorded calls")

    def __repr__(self) -> str:
        return self.__name__


def collecting(records: dict) -> None:
    STATE.update(mode="collect", records=records)


def replaying(records: dict) -> None:
    STATE.update(mode="replay", records=records)


def live() -> None:
    STATE.update(mode="live", records={})


# ---------------------------------------------------------------- data only
def clone(obj):
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, (tuple, list)):
        return type(obj)(clone(o) for o in obj)
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    return obj


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return True


def _digest(h, obj) -> None:
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        if t.device.type != "meta" and t.numel():
            h.update(t.cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, Placeholder):
        h.update(f"P{obj.__name__}".encode())
    elif isinstance(obj, (bool, int, str, type(None))) or obj is Ellipsis:
        h.update(f"{type(obj).__name__}{obj!r}".encode())
    elif isinstance(obj, float):
        h.update(b"f" + struct.pack("<d", obj))
    elif isinstance(obj, (tuple, list)):
        h.update(f"{type(obj).__name__}{len(obj)}(".encode())
        for o in obj:
            _digest(h, o)
        h.update(b")")
    elif isinstance(obj, dict):
        h.update(f"d{len(obj)}(".encode())
        for k in sorted(obj, key=repr):
            _digest(h, k)
            _digest(h, obj[k])
        h.update(b")")
    else:  # a module, a reader's object: its kind only (the reader's side may differ)
        h.update(b"O")


def key(site: str, args) -> str:
    h = hashlib.sha256(site.encode())
    _digest(h, tuple(args))
    return h.hexdigest()


def encode(obj, depth: int = 0):
    """``obj`` as data ``torch.load(weights_only=True)`` reads back: tagged tuples."""
    if depth > 20:
        return ("x", "nested")
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if type(t) is not torch.Tensor:
            t = t.as_subclass(torch.Tensor)
        return ("t", t.cpu().clone() if t.device.type != "meta" else torch.empty(t.shape, dtype=t.dtype))
    if obj is Ellipsis:
        return ("e",)
    if isinstance(obj, (bool, int, float, str, type(None))):
        return ("n", obj)
    if isinstance(obj, (tuple, list)):
        return ("u" if isinstance(obj, tuple) else "l", [encode(o, depth + 1) for o in obj])
    if isinstance(obj, dict) and all(isinstance(k, (str, int)) for k in obj):
        return ("d", [[k, encode(v, depth + 1)] for k, v in obj.items()])
    return ("x", type(obj).__name__)


def decode(data):
    tag = data[0]
    if tag == "t":
        return data[1]
    if tag == "e":
        return Ellipsis
    if tag == "n":
        return data[1]
    if tag in ("u", "l"):
        items = [decode(d) for d in data[1]]
        return tuple(items) if tag == "u" else items
    if tag == "d":
        return {k: decode(v) for k, v in data[1]}
    return type(str(data[1]), (), {"__repr__": lambda self: f"<{type(self).__name__}>"})()


# ---------------------------------------------------------------- the door
def call(site: str, fn, *args):
    """``(fn(*args), modified)``: the reader's result, and whether it changed its inputs."""
    mode = STATE["mode"]
    if mode == "replay":
        return _replay(site, args)
    pristine = clone(args)
    if mode == "live":
        got = fn(*args)
        return got, not same(args, pristine)
    k = key(site, pristine)
    try:
        got = fn(*args)
    except Exception as err:
        STATE["records"][k] = ("error", type(err).__name__, str(err)[:2000], your_frame(err))
        raise
    modified = not same(args, pristine)
    STATE["records"][k] = ("ok", encode(got), modified)
    return got, modified


_PACKAGE = str(Path(__file__).resolve().parents[1])  # .../beforeqkv


def your_frame(err: BaseException) -> tuple[int, str] | None:
    """(line number, code) of the innermost frame of ``err`` outside the package and torch: the
    reader's line; for an error replayed from the student's process, the line recorded there."""
    if hasattr(err, "_bqkv_where"):
        return err._bqkv_where
    for fs in reversed(traceback.extract_tb(err.__traceback__)):
        f = str(Path(fs.filename).resolve()) if not fs.filename.startswith("<") else fs.filename
        if not f.startswith(_PACKAGE) and "site-packages" not in f and "/torch/" not in f:
            line = (fs.line or "").strip()
            return (fs.lineno, line) if line else None
    return None


def _replay(site: str, args):
    record = STATE["records"].get(key(site, args))
    if record is None:
        raise ReplayMiss(f"{site}: the student's process never ran this case")
    if record[0] == "error":
        __, name, message, where = record
        kind = {"NotImplementedError": NotImplementedError, "CheckFailure": CheckFailure}.get(name)
        err = (kind or type(str(name), (Exception,), {}))(message)
        err._bqkv_where = tuple(where) if where else None
        raise err
    __, data, modified = record
    return decode(data), bool(modified)


def build(obj, make):
    """``make()``, the reader's object built from ``obj``; a placeholder while replaying."""
    if STATE["mode"] == "replay" and isinstance(obj, Placeholder):
        return Placeholder(f"{obj.__name__}()")
    return make()
