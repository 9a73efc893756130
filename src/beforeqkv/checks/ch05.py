"""Checkers for chapter 5: bilinear scores and the symmetry problem."""
from __future__ import annotations

import torch

from ..i18n import N_, _
from . import _record
from ._core import CheckFailure, checker, compare, not_implemented, passed, register_question, tr

__all__ = ["check_bilinear_scores", "bilinear_scores_reference", "check_triad_qk"]


def bilinear_scores_reference(x_q: torch.Tensor, x_k: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """``s_ij = x_i^T A x_j``: x_q (..., T_q, d), x_k (..., T_k, d), A (d, d) -> (..., T_q, T_k)."""
    return x_q @ A @ x_k.transpose(-2, -1)  # (..., T_q, d) @ (d, d) @ (..., d, T_k)


def _cases():
    g = torch.Generator().manual_seed(5)
    for sq, sk in [((4, 6), (4, 6)), ((2, 5, 3), (2, 5, 3)), ((3, 4), (6, 4)), ((1, 2), (1, 2)), ((3, 1), (3, 1)),
                   ((2, 3, 4, 5), (2, 3, 6, 5))]:  # two batch dimensions
        d = sq[-1]
        x_q = torch.randn(*sq, generator=g)
        x_k = torch.randn(*sk, generator=g)
        A = torch.randn(d, d, generator=g)  # asymmetric
        yield x_q, x_k, A


def check_bilinear_scores(fn):
    """Check ``fn(x_q, x_k, A) == x_q A x_k^T`` for an asymmetric A (shape (..., T_q, T_k))."""
    mistakes = {
        N_("you used A^T: s_ij = x_i^T A x_j puts A between the query (left) and the key (right)"):
            lambda x_q, x_k, A: x_q @ A.T @ x_k.transpose(-2, -1),
        N_("you symmetrised A; the point of a bilinear form is that it need not be symmetric"):
            lambda x_q, x_k, A: x_q @ ((A + A.T) / 2) @ x_k.transpose(-2, -1),
        N_("you returned s_ji instead of s_ij: rows are queries, columns are keys"):
            lambda x_q, x_k, A: (x_q @ A @ x_k.transpose(-2, -1)).transpose(-2, -1),
        N_("the query goes on the left and the key on the right: you computed x_k A x_q^T"):
            lambda x_q, x_k, A: x_k @ A @ x_q.transpose(-2, -1),
        N_("that is the plain dot product x_i . x_j: A is missing"):
            lambda x_q, x_k, A: x_q @ x_k.transpose(-2, -1),
        N_("return the scores s_ij themselves, not weights: no softmax in this exercise"):
            lambda x_q, x_k, A: torch.softmax(x_q @ A @ x_k.transpose(-2, -1), dim=-1),
    }
    return compare(fn, bilinear_scores_reference, _cases(), "bilinear_scores", mistakes=mistakes,
            describe=lambda a: f"x_q {tuple(a[0].shape)}, x_k {tuple(a[1].shape)}")


TRIAD = (N_("rock"), N_("scissors"), N_("paper"))  # rock beats scissors beats paper beats rock


@checker
def check_triad_qk(fn, min_weight: float = 0.9):
    """Check ``fn() -> (W_Q, W_K)``, each (2, 3): rank-2 queries and keys for one triad.

    With one-hot items (columns of ``torch.eye(3)``: rock, scissors, paper), the scores
    ``s_ij = (W_Q x_i) . (W_K x_j)`` must give every item at least ``min_weight`` of its
    softmax weight on the item it beats (keys include the item itself).
    """
    if not callable(fn):
        raise CheckFailure(_("pass the function itself: check_triad_qk(my_triad_qk)"))
    try:
        out = _record.call("triad", fn)[0]
    except NotImplementedError:
        raise CheckFailure(not_implemented("triad_qk")) from None
    except Exception as err:  # the reader's own error, shown as a failed check
        raise CheckFailure(_("{name} raised {error}: {message}").format(
            name="triad_qk", error=type(err).__name__, message=err)) from None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise CheckFailure(_("return a pair (W_Q, W_K)"))
    W_Q, W_K = out
    for name, W in (("W_Q", W_Q), ("W_K", W_K)):
        if not isinstance(W, torch.Tensor) or tuple(W.shape) != (2, 3):
            shape = tuple(W.shape) if isinstance(W, torch.Tensor) else type(W).__name__
            raise CheckFailure(_("{name} must be a tensor of shape (2, 3) (d_head = 2 rows, one column per "
                                 "item), got {shape}").format(name=name, shape=shape))
        if not torch.isfinite(W).all():
            raise CheckFailure(_("{name} holds NaN or inf").format(name=name))
    x = torch.eye(3, dtype=torch.float64)  # (3, 3) one-hot items as rows
    S = (x @ W_Q.T.double()) @ (x @ W_K.T.double()).T  # (3, 2) @ (2, 3) -> (3, 3): s_ij
    a = torch.softmax(S, dim=-1)  # (3, 3)
    target = [1, 2, 0]  # the item each one beats
    reads = S.argmax(-1).tolist()
    if reads == [2, 0, 1]:
        raise CheckFailure(_("every item points at the item that beats it: the cycle runs backwards. "
                             "Rock beats scissors: rock's query must match scissors' key."))
    if reads == [0, 1, 2]:
        raise CheckFailure(_("every item scores itself highest: that is the self-preference of a "
                             "symmetric score. Point each query at the key of the item it beats."))
    for i, j in enumerate(target):
        if reads[i] != j:
            raise CheckFailure(_("{item}'s highest score is for {read}, but {item} beats {beaten}: scores of "
                                 "{item} = {scores}").format(item=tr(TRIAD[i]), read=tr(TRIAD[reads[i]]),
                                                             beaten=tr(TRIAD[j]), scores=S[i].tolist()))
    if (a[range(3), target] < min_weight).any():
        raise CheckFailure(_("the right keys win, but the weights on them are {weights}, below {min_weight}: "
                             "scale W_Q (or W_K) up to sharpen the softmax.").format(
                                 weights=[round(v, 3) for v in a[range(3), target].tolist()],
                                 min_weight=min_weight))
    passed(_("every item of the triad reads the item it beats, with rank 2"))


register_question(
    "ch5_weights_symmetric",
    choices=["yes", "no"],
    hint=N_("write a_ij and a_ji out with their denominators."),
    reveals=["ch5_weights_asym"],
)

register_question(
    "ch5_rank_qk",
    digits=0,
    hint=N_("the rank of a matrix is at most its number of rows, and at most the inner dimension "
            "of a product."),
    reveals=["ch5_rank_wide"],
)
