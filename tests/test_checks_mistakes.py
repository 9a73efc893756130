"""Typical mistakes of the coding exercises of chapters 1-7, 9 and 10, each written as a reader would.

Each exercise gets at least five broken implementations, written here independently of the
checkers' own mistake models; each must be rejected with the hint that names it (its start
is given), and at least nine in ten of an exercise's mistakes must be named at all.
(Chapters 8 and 11: tests/test_checks_ch08.py, tests/test_checks_ch11.py.)
"""
import math

import pytest
import torch
import torch.nn.functional as F

from beforeqkv import checks
from beforeqkv.checks import CheckFailure


def _softmax_read(q, keys, values, scale=None, dim=-1, weights=None):
    s = torch.einsum("bd,bnd->bn", q, keys) * (q.shape[-1] ** -0.5 if scale is None else scale)  # (B, N)
    a = torch.softmax(s, dim=dim) if weights is None else weights(s)
    return torch.einsum("bn,bnv->bv", a, values)  # (B, d_v)


def _window_mix(x, k, size=None, divide="held", future=0):
    T = x.shape[-2]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    w = ((j <= i + future) & (j > i - (k if size is None else size))).float()  # (T, T)
    w = w / (w.sum(-1, keepdim=True) if divide == "held" else k)
    return w @ x  # (..., T, d)


def _mha(x, W_Q, W_K, W_V, W_O, n, scale=None, out=True, merge="right", dim=-1, one_head=False, causal=False):
    n = 1 if one_head else n
    B, T, _ = x.shape

    def heads(W):
        return (x @ W.T).view(B, T, n, -1).transpose(1, 2)  # (B, H, T, d_head)
    q, k, v = heads(W_Q), heads(W_K), heads(W_V)
    s = q @ k.transpose(-1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale(q))  # (B, H, T, T)
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    z = torch.softmax(s, dim=dim) @ v  # (B, H, T, d_head)
    z = z.transpose(1, 2).reshape(B, T, -1) if merge == "right" else z.reshape(B, T, -1)
    return z @ W_O.T if out else z


def _window_mask(T, w, lo=0, hi=0, blocked=False):
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    m = (j <= i + hi) & (j > i - w - lo)
    return ~m if blocked else m


def _layer_norm(z, w, b, eps, correction=0, eps_out=False, centre=True):
    mu = z.mean(-1, keepdim=True) if centre else 0
    var = z.var(-1, correction=correction, keepdim=True)
    return (z - mu) / ((var.sqrt() + eps) if eps_out else (var + eps).sqrt()) * w + b


BROKEN = {  # exercise -> (checker, [(broken implementation, start of the hint that names it), ...])
    "1.2 attention read": (checks.check_attention_read, [
        (lambda q, k, v: _softmax_read(q, k, v, scale=1.0), "did you scale the scores by 1/sqrt(d)"),
        (lambda q, k, v: _softmax_read(q, k, v, scale=1 / q.shape[-1]), "scale by 1/sqrt(d), not by 1/d"),
        (lambda q, k, v: _softmax_read(q, k, v, dim=0), "the softmax must run over the N stored pairs"),
        (lambda q, k, v: _softmax_read(q, k, v, weights=lambda s: s), "the weights need a softmax"),
        (lambda q, k, v: _softmax_read(q, k, k), "read the values, not the keys"),
        (lambda q, k, v: _softmax_read(q, k, v, scale=math.sqrt(q.shape[-1])), "you multiplied the scores by sqrt(d)"),
        (lambda q, k, v: v.mean(1), "a plain mean of the values ignores the query"),
    ]),
    "2.1 fast-weight memory": (checks.check_fast_weight_memory, [
        (lambda k, v: k.transpose(-1, -2) @ v, "M = sum_j v_j k_j^T has shape (d_v, d_k)"),
        (lambda k, v: (v.transpose(-1, -2) @ k) / k.shape[-2], "add the outer products, do not average"),
        (lambda k, v: v.sum(-2)[..., :, None] * k.sum(-2)[..., None, :], "take the outer product of each pair"),
        (lambda k, v: v[..., -1, :, None] * k[..., -1, None, :], "M sums the outer products of ALL the pairs"),
        (lambda k, v: (v.transpose(-1, -2) @ k) / math.sqrt(k.shape[-1]), "no scale in M"),
    ]),
    "2.2 linear attention": (checks.check_linear_attention, [
        (lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2), -1) @ v, "linear attention has no softmax"),
        (lambda q, k, v: (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) @ v, "no 1/sqrt(d_k) scale here"),
        (lambda q, k, v: (q @ k.transpose(-1, -2)) @ v / (q @ k.transpose(-1, -2)).sum(-1, keepdim=True),
         "do not normalise by the sum of the scores"),
        (lambda q, k, v: (q @ k.transpose(-1, -2)).masked_fill(
            torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).triu(1), 0) @ v, "no causal mask here"),
        (lambda q, k, v: (q @ k.transpose(-1, -2)).exp() @ v, "the weights are the raw scores"),
    ]),
    "3.1 window mix": (checks.check_window_mix, [
        (lambda x, k: _window_mix(x, k, future=k - 1), "the window must not reach into the future"),
        (lambda x, k: _window_mix(x, k, size=k + 1), "the window holds the last k inputs"),
        (lambda x, k: _window_mix(x, k, divide="k"), "near the start a window holds fewer than k inputs"),
        (lambda x, k: _window_mix(x, k, size=x.shape[-2]), "every output reads all the inputs before it"),
        (lambda x, k: _window_mix(x, k, size=k - 1) if k > 1 else x, "yours holds only k - 1"),
    ]),
    "4.1 content weights": (checks.check_content_weights, [
        (lambda xq, xk, f: torch.softmax(f(xq.unsqueeze(-2), xk.unsqueeze(-3)), -2), "the softmax must run over"),
        (lambda xq, xk, f: f(xq.unsqueeze(-2), xk.unsqueeze(-3)), "weights are scores passed through a softmax"),
        (lambda xq, xk, f: torch.softmax(f(xk.unsqueeze(-3), xq.unsqueeze(-2)), -1), "f(x_i, x_j) takes the query"),
        (lambda xq, xk, f: f(xq.unsqueeze(-2), xk.unsqueeze(-3)).exp(), "after exp, divide by the row sum"),
        (lambda xq, xk, f: torch.softmax(f(xq.unsqueeze(-2), xk.unsqueeze(-3)), -1).transpose(-1, -2),
         "rows are queries"),
        (lambda xq, xk, f: torch.sigmoid(f(xq.unsqueeze(-2), xk.unsqueeze(-3))), "a sigmoid does not make"),
    ]),
    "5.1 bilinear scores": (checks.check_bilinear_scores, [
        (lambda xq, xk, A: xq @ A.T @ xk.transpose(-2, -1), "you used A^T"),
        (lambda xq, xk, A: xq @ ((A + A.T) / 2) @ xk.transpose(-2, -1), "you symmetrised A"),
        (lambda xq, xk, A: (xq @ A @ xk.transpose(-2, -1)).transpose(-2, -1), "you returned s_ji instead of s_ij"),
        (lambda xq, xk, A: xk @ A @ xq.transpose(-2, -1), "the query goes on the left"),
        (lambda xq, xk, A: xq @ xk.transpose(-2, -1), "that is the plain dot product"),
        (lambda xq, xk, A: torch.softmax(xq @ A @ xk.transpose(-2, -1), -1), "not weights: no softmax"),
    ]),
    "6.1 multi-head attention": (checks.check_multihead_attention, [
        (lambda *a: _mha(*a, out=False), "W_O"),
        (lambda *a: _mha(*a, scale=lambda q: 1.0), "scale"),
        (lambda *a: _mha(*a, merge="no_transpose"), "transpose"),
        (lambda *a: _mha(*a, dim=-2), "softmax"),
        (lambda *a: _mha(*a, one_head=True), "one head over all of"),
        (lambda *a: _mha(*a, causal=True), "no causal mask"),
    ]),
    "7.1 scaled scores with sigma": (checks.check_scaled_scores_sigma, [
        (lambda q, k, s: q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), "sigma is ignored"),
        (lambda q, k, s: q @ k.transpose(-1, -2) / (s * math.sqrt(q.shape[-1])), "you divided by sigma sqrt"),
        (lambda q, k, s: q @ k.transpose(-1, -2) / (s ** 4 * math.sqrt(q.shape[-1])), "you divided by sigma^4"),
        (lambda q, k, s: q @ k.transpose(-1, -2) / (s ** 4 * q.shape[-1]), "you divided by the variance"),
        (lambda q, k, s: q @ k.transpose(-1, -2) / (s ** 2 * q.shape[-1]), "you divided by sigma^2 d_head"),
        (lambda q, k, s: k @ q.transpose(-1, -2) / (s ** 2 * math.sqrt(q.shape[-1])), "rows should be queries"),
        (lambda q, k, s: q @ k.transpose(-1, -2) * s ** 2 / math.sqrt(q.shape[-1]), "you multiplied by sigma^2"),
    ]),
    "7.2 sliding window mask": (checks.check_sliding_window_mask, [
        (lambda T, w: _window_mask(T, w, blocked=True), "your mask marks the BLOCKED positions"),
        (lambda T, w: _window_mask(T, w, lo=1), "your window holds w + 1 tokens"),
        (lambda T, w: _window_mask(T, w, lo=-1), "your window holds only w - 1 tokens"),
        (lambda T, w: _window_mask(T, w, hi=T), "your window also looks into the future"),
        (lambda T, w: _window_mask(T, T), "that is the plain causal mask"),
        (lambda T, w: _window_mask(T, w).float(), "return a boolean tensor"),
    ]),
    "7.6 softmax Jacobian": (checks.check_softmax_jacobian, [
        (lambda a: -a[..., :, None] * a[..., None, :], "the diagonal is missing"),
        (lambda a: torch.diag_embed(a - a * a), "the off-diagonal entries are missing"),
        (lambda a: a[..., :, None] * a[..., None, :] - torch.diag_embed(a), "the sign is flipped"),
        (lambda a: torch.diag_embed(a), "that is just diag(a)"),
        (lambda a: torch.diag_embed(a) - a[..., None, :] * a[..., None, :], "the outer product a a^T"),
    ]),
    "9.1 MLP as slots": (checks.check_ffn_as_slots, [
        (lambda x, Wi, bi, Wo, bo: torch.softmax(x @ Wi.T + bi, -1) @ Wo.T + bo, "the slot weights are a softmax"),
        (lambda x, Wi, bi, Wo, bo: F.relu(x @ Wi.T) @ Wo.T + bo, "you left out the slot biases"),
        (lambda x, Wi, bi, Wo, bo: F.relu(x @ Wi.T + bi) @ Wo.T, "you left out the output bias"),
        (lambda x, Wi, bi, Wo, bo: F.relu(x @ Wi.T + bi) @ Wo + bo, "the values are the *columns* of W_out"),
        (lambda x, Wi, bi, Wo, bo: (x @ Wi.T + bi) @ Wo.T + bo, "the ReLU is missing"),
        (lambda x, Wi, bi, Wo, bo: F.relu(x @ Wi.T + bi) @ Wo.T + bo + bo, "add the output bias b_out once"),
    ]),
    "9.5 SwiGLU slot weights": (checks.check_swiglu_slot_weights, [
        (lambda x, Wg, Wi: F.silu(x @ Wi.T) * (x @ Wg.T), "you swapped W_gate and W_in"),
        (lambda x, Wg, Wi: torch.sigmoid(x @ Wg.T) * (x @ Wi.T), "silu(z) is z * sigmoid(z)"),
        (lambda x, Wg, Wi: F.relu(x @ Wg.T) * (x @ Wi.T), "the gate is a silu, not a ReLU"),
        (lambda x, Wg, Wi: F.silu(x @ Wg.T), "the linear factor W_in x is missing"),
        (lambda x, Wg, Wi: F.silu((x @ Wg.T) * (x @ Wi.T)), "the silu is applied to the product"),
        (lambda x, Wg, Wi: F.silu(x @ Wg) * (x @ Wi), "use x @ W.T, not x @ W"),
        (lambda x, Wg, Wi: F.gelu(x @ Wg.T) * (x @ Wi.T), "the gate is a silu, not GELU"),
    ]),
    "10.1 mean pool": (checks.check_mean_pool, [
        (lambda h, m: h.mean(1), "you averaged over every position"),
        (lambda h, m: (h * m[..., None]).sum(1) / h.shape[1], "you divided by the padded length T"),
        (lambda h, m: (h * m[..., None]).sum(1), "you summed the real tokens but did not divide"),
        (lambda h, m: (h * (~m)[..., None]).sum(1) / (~m).sum(1, keepdim=True), "the mask is the wrong way round"),
        (lambda h, m: F.normalize((h * m[..., None]).sum(1) / m.sum(1, keepdim=True), dim=-1),
         "mean pooling alone does not normalise"),
        (lambda h, m: h[:, 0], "not the first ([CLS]) token's vector"),
    ]),
    "10.2 post-norm sublayer": (checks.check_post_norm, [
        (lambda x, fx, w, b, e: x + _layer_norm(fx, w, b, e), "that normalises only the sublayer's output"),
        (lambda x, fx, w, b, e: _layer_norm(fx, w, b, e), "the residual is missing"),
        (lambda x, fx, w, b, e: _layer_norm(x + fx, w, b, e, correction=1), "LayerNorm divides by the biased"),
        (lambda x, fx, w, b, e: _layer_norm(x + fx, w, b, e, eps_out=True), "eps goes inside the square root"),
        (lambda x, fx, w, b, e: _layer_norm(x + fx, 1.0, 0.0, e), "the LayerNorm's learned gain"),
        (lambda x, fx, w, b, e: _layer_norm(x + fx, w, b, e, centre=False), "LayerNorm first subtracts the mean"),
        (lambda x, fx, w, b, e: _layer_norm(x, w, b, e) + fx, "x + f(x) is normalised, then nothing is added"),
    ]),
}

CASES = [(name, i) for name, (__, broken) in BROKEN.items() for i in range(len(broken))]


@pytest.mark.parametrize("name, i", CASES, ids=[f"{n} #{i}" for n, i in CASES])
def test_each_typical_mistake_gets_the_hint_that_names_it(name, i):
    check, broken = BROKEN[name]
    wrong, hint = broken[i]
    with pytest.raises(CheckFailure) as err:
        check(wrong)
    assert hint in str(err.value), str(err.value)


@pytest.mark.parametrize("name", list(BROKEN))
def test_at_least_nine_in_ten_typical_mistakes_of_each_exercise_are_named(name):
    check, broken = BROKEN[name]
    named = 0
    for wrong, __ in broken:
        try:
            check(wrong)
        except CheckFailure as err:
            named += "Hint:" in str(err) or "boolean" in str(err)
    assert len(broken) >= 5 and named >= 0.9 * len(broken), (named, len(broken))
