"""The MLP as a key-value memory (chapter 9).

    FFN(x) = W_out relu(W_in x + b_in) + b_out = sum_u relu(k_u . x + b_u) v_u + b_out

Row u of ``W_in`` is a key ``k_u``, column u of ``W_out`` is a value ``v_u``: the MLP
is attention over ``d_mlp`` persistent, learned slots whose weights are *not*
normalised (ReLU instead of softmax). Derived in chapter 9, book/09_mlp_memory.ipynb.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from .._validate import check_positive

__all__ = ["slot_attention", "MLPMemory", "handwritten_memory", "SLOT_NORMALISATIONS"]

SLOT_NORMALISATIONS = ("relu", "softmax")


def slot_attention(x: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, biases: torch.Tensor | None = None,
                   normalise: str = "relu"):
    """Read ``m`` fixed slots: ``out = sum_u a_u v_u`` with ``a_u = relu(k_u . x + b_u)`` (or softmax over u).

    x: (..., d), keys: (m, d), values: (m, d_out), biases: (m,) or None
    -> out (..., d_out), weights (..., m). With ``normalise="relu"`` this *is* an MLP
    (plus its output bias); with ``"softmax"`` it is attention over learned slots.
    Derived in chapter 9.
    """
    if normalise not in SLOT_NORMALISATIONS:
        raise ValueError(f"normalise must be one of {SLOT_NORMALISATIONS}, got {normalise!r}")
    for name, t in (("x", x), ("keys", keys), ("values", values)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor")
    if keys.dim() != 2 or values.dim() != 2 or keys.shape[0] != values.shape[0]:
        raise ValueError(f"keys (m, d) and values (m, d_out) need the same m, got {tuple(keys.shape)} "
                         f"and {tuple(values.shape)}")
    if x.shape[-1] != keys.shape[1]:
        raise ValueError(f"x has width {x.shape[-1]} but the keys have width {keys.shape[1]}")
    scores = x @ keys.T  # (..., d) @ (d, m) -> (..., m)
    if biases is not None:
        if biases.shape != keys.shape[:1]:
            raise ValueError(f"biases must have shape ({keys.shape[0]},), got {tuple(biases.shape)}")
        scores = scores + biases  # (..., m)
    weights = F.relu(scores) if normalise == "relu" else torch.softmax(scores, dim=-1)  # (..., m)
    return weights @ values, weights  # (..., m) @ (m, d_out) -> (..., d_out)


class MLPMemory(nn.Module):
    """A one-hidden-layer MLP read as a memory of ``d_mlp`` slots: ``W_out act(W_in x + b_in) + b_out``.

    x: (..., d_model) -> logits (..., d_out). ``normalise="relu"`` is the usual MLP;
    ``"softmax"`` normalises the slot weights like attention (chapter 9 compares them).
    Same parameter names as the Transformer block's MLP (``W_in``, ``W_out``).
    """

    def __init__(self, d_model: int = 32, d_mlp: int = 16, d_out: int = 16, normalise: str = "relu"):
        super().__init__()
        check_positive(d_model=d_model, d_mlp=d_mlp, d_out=d_out)
        if normalise not in SLOT_NORMALISATIONS:
            raise ValueError(f"normalise must be one of {SLOT_NORMALISATIONS}, got {normalise!r}")
        self.normalise = normalise
        self.W_in = nn.Linear(d_model, d_mlp)
        self.W_out = nn.Linear(d_mlp, d_out)

    def slot_weights(self, x: torch.Tensor) -> torch.Tensor:
        """How strongly each slot fires for ``x``: (..., d_model) -> (..., d_mlp)."""
        if x.shape[-1] != self.W_in.in_features:
            raise ValueError(f"expected inputs of width {self.W_in.in_features}, got shape {tuple(x.shape)}")
        h = self.W_in(x)  # (..., d_mlp)
        return F.relu(h) if self.normalise == "relu" else torch.softmax(h, dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_out(self.slot_weights(x))  # (..., d_mlp) -> (..., d_out)

    def as_slots(self):
        """The same weights as slots: keys (m, d_model), values (m, d_out), biases (m,)."""
        return self.W_in.weight, self.W_out.weight.T, self.W_in.bias  # rows of W_in, columns of W_out


@torch.no_grad()
def handwritten_memory(keys: torch.Tensor, target: torch.Tensor, d_mlp: int, n_classes: int = 16,
                       threshold: float = 0.5) -> MLPMemory:
    """An :class:`MLPMemory` written by hand, one fact per slot (no training).

    Slot u stores fact u for ``u < min(N, d_mlp)``: key ``k_u`` = the fact's (unit) key,
    bias ``-threshold`` (it fires only for keys closer than that), value = one-hot of
    the fact's class. Facts beyond ``d_mlp`` have no slot. keys: (N, d), target: (N,).
    """
    if keys.dim() != 2 or target.shape != keys.shape[:1]:
        raise ValueError(f"expected keys (N, d) and target (N,), got {tuple(keys.shape)}, {tuple(target.shape)}")
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must lie in [0, 1) for unit keys, got {threshold!r}")
    if target.numel() and (target.min() < 0 or target.max() >= n_classes):
        raise ValueError(f"target classes must lie in [0, {n_classes})")
    model = MLPMemory(keys.shape[1], d_mlp, n_classes).to(keys.device)
    for p in model.parameters():
        p.zero_()
    n = min(keys.shape[0], d_mlp)
    model.W_in.weight[:n] = keys[:n]  # (n, d): slot u's key is fact u's key
    model.W_in.bias[:n] = -threshold
    model.W_out.weight[target[:n], torch.arange(n)] = 1.0  # column u = one-hot(target_u)
    return model
