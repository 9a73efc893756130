"""One way to put a checkpoint into the book's models: rename, then load without an init.

A weight map says, once, which tensor of a checkpoint is which parameter of ours:
``{"checkpoint name": "package name"}``, where ``{i}`` stands for the layer number in
both names (the convention of gguf-py's tensor mapping). :func:`rename` expands it for
``n_layers`` layers and checks the checkpoint against it: a tensor the map expects and
the file lacks, or one the file has and the map does not know, is a ``ValueError``.

:func:`build` then makes the model on the *meta* device (shapes only: no memory, no
random initialisation), loads the renamed tensors with ``load_state_dict(strict=True,
assign=True)`` (the tensors themselves become the parameters, no copy), ties the
unembedding to the embedding again when the config says so, and computes the buffers a
checkpoint does not store (the rotary tables).
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from ..models.transformer import Transformer, TransformerConfig

__all__ = ["expand", "rename", "build"]


def expand(weight_map: Mapping[str, str], n_layers: int) -> dict[str, str]:
    """checkpoint name -> package name for every layer: ``{i}`` becomes 0 .. n_layers - 1."""
    names = {}
    for src, dst in weight_map.items():
        if ("{i}" in src) != ("{i}" in dst):
            raise ValueError(f"weight map entry {src!r} -> {dst!r}: {{i}} must be in both names or in neither")
        for i in range(n_layers) if "{i}" in src else [0]:  # a name without {i} once
            names[src.replace("{i}", str(i))] = dst.replace("{i}", str(i))
    return names


def rename(available: Iterable[str], weight_map: Mapping[str, str], n_layers: int, load: Callable,
           skip: Iterable[str] = (), what: str = "the checkpoint does not fit") -> dict[str, torch.Tensor]:
    """package name -> ``load(checkpoint name)`` for every entry of the expanded map.

    ``available``: the checkpoint's tensor names; ``skip``: names it may hold that the
    model does not use. Raises ``ValueError`` naming the missing and unexpected tensors
    before anything is loaded.
    """
    names = expand(weight_map, n_layers)
    available = set(available)
    missing = [src for src in names if src not in available]
    unexpected = sorted(available - set(names) - set(skip))
    if missing or unexpected:
        raise ValueError(f"{what}: {len(missing)} tensors missing {missing[:4]}, {len(unexpected)} unexpected "
                         f"{unexpected[:4]} (the weight map, for {n_layers} layers, names {len(names)})")
    return {dst: load(src) for src, dst in names.items()}


class _ShapesOnly(TorchFunctionMode):
    """While a model is built on the meta device, its initialisers leave meta tensors alone.

    A meta tensor has a shape and no numbers, so a random fill has nothing to do; but
    torch runs ``normal_`` on meta through Python code whose first use imports some 800
    modules (about 1.5 s and 80 MB, more than the rest of loading). Scoped to
    :func:`build`'s ``with`` block: nothing global changes.
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _INITS:
            tensor = kwargs.get("tensor", args[0] if args else None)
            if isinstance(tensor, torch.Tensor) and tensor.is_meta:
                return tensor
        return func(*args, **kwargs)


_INITS = {nn.init.normal_, nn.init.uniform_, nn.init.trunc_normal_, nn.init.kaiming_uniform_,
          nn.init.kaiming_normal_, nn.init.xavier_uniform_, nn.init.xavier_normal_, nn.init.zeros_, nn.init.ones_}


def build(cls: type[Transformer], config: TransformerConfig, state: dict, device=None,
          prepare: Callable[[nn.Module], None] | None = None) -> Transformer:
    """``cls(config)`` holding ``state``'s tensors, in eval mode and frozen, never randomly initialised.

    ``prepare(model)`` runs on the empty (meta) model before loading, e.g. to replace a
    module. A tied ``W_U`` is tied again after loading (``W_U.weight is W_E.weight``).
    """
    state = dict(state)
    with torch.device("meta"), _ShapesOnly():  # shapes only: every number comes from ``state``
        model = cls(config)
    if prepare is not None:
        prepare(model)
    tied = config.tie_embeddings
    if tied and "W_E.weight" in state:  # a state_dict lists a shared tensor under both names
        w_e, w_u = state["W_E.weight"], state.setdefault("W_U.weight", state["W_E.weight"])
        if w_u is not w_e and not (w_u.shape == w_e.shape and torch.equal(w_u, w_e)):
            raise ValueError("the config ties W_U to W_E, but the weights hold a W_U.weight of their own")
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as err:  # names or shapes that do not fit
        raise ValueError(f"the weights do not fit {cls.__name__}({type(config).__name__}(...)): {err}") from None
    if tied:
        model.W_U.weight = model.W_E.weight  # assign=True made two Parameters of one tensor: one again
    model.reset_buffers(device=model.W_E.weight.device)
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise ValueError(f"nothing was loaded into {left[:4]}: they are still on the meta device")
    model.eval().requires_grad_(False)  # for reading, not training
    return model if device is None else model.to(device)
