"""Checkers of chapters 2 and 3 pass the canonical answers and reject broken ones with a hint."""
import math

import pytest
import torch

from beforeqkv import attention, checks
from beforeqkv.checks import CheckFailure


# ----------------------------------------------------------------- chapter 2
def test_fast_weight_memory_checker_accepts_the_package_and_an_explicit_loop(capsys):
    assert checks.check_fast_weight_memory(attention.fast_weight_memory)

    def loop(k, v):  # one outer product v_j k_j^T per pair, added up
        return sum(v[..., j, :, None] * k[..., j, None, :] for j in range(k.shape[-2]))

    assert checks.check_fast_weight_memory(loop)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("broken, hint", [
    (lambda k, v: torch.einsum("...jk,...jv->...kv", k, v), "You built k v"),
    (lambda k, v: attention.fast_weight_memory(k, v) / k.shape[-2], "do not average"),
    (lambda k, v: torch.einsum("...v,...k->...vk", v.sum(-2), k.sum(-2)), "outer product of each pair"),
])
def test_fast_weight_memory_checker_rejects_typical_mistakes_with_a_hint(broken, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_fast_weight_memory(broken)


def test_fast_weight_memory_checker_rejects_in_place_edits():
    def sneaky(k, v):
        k.mul_(1.0)
        k[..., 0, :] += 1.0
        return attention.fast_weight_memory(k, v)

    with pytest.raises(CheckFailure, match="in place"):
        checks.check_fast_weight_memory(sneaky)


def test_linear_attention_checker_accepts_both_package_paths():
    assert checks.check_linear_attention(lambda q, k, v: attention.linear_attention(q, k, v))
    assert checks.check_linear_attention(lambda q, k, v: attention.linear_attention(q, k, v, via_memory=True))


@pytest.mark.parametrize("broken, hint", [
    (lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v, "no softmax"),
    (lambda q, k, v: (q @ k.transpose(-1, -2)) @ v / math.sqrt(q.shape[-1]), "sqrt"),
    (lambda q, k, v: (q @ k.transpose(-1, -2)) @ v / (q @ k.transpose(-1, -2)).sum(-1, keepdim=True),
     "normalise"),
    (lambda q, k, v: torch.einsum("...vk,...iv->...ik", attention.fast_weight_memory(k, v), q), "M\\^T q"),
])
def test_linear_attention_checker_rejects_typical_mistakes_with_a_hint(broken, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_linear_attention(broken)


def test_chapter2_predictions_are_registered_with_answers():
    assert checks.check_prediction("ch2_memory_numbers", 288)
    assert checks.check_prediction("ch2_bigger_memory", "64")
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction("ch2_memory_numbers", 180000)
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction("ch2_bigger_memory", 256)
    with pytest.raises(CheckFailure, match="one of"):
        checks.check_prediction("ch2_bigger_memory", "maybe")


# ----------------------------------------------------------------- chapter 3
def test_all_to_all_mix_checker_accepts_a_matmul_and_a_loop():
    assert checks.check_all_to_all_mix(lambda x, w: w @ x)

    def loop(x, w):
        return torch.stack([sum(w[..., i, j, None] * x[..., j, :] for j in range(x.shape[-2]))
                            for i in range(x.shape[-2])], dim=-2)

    assert checks.check_all_to_all_mix(loop)


@pytest.mark.parametrize("broken, hint", [
    (lambda x, w: w.transpose(-1, -2) @ x, "transposed"),
    (lambda x, w: torch.diagonal(w, dim1=-2, dim2=-1).unsqueeze(-1) * x, "diagonal"),
    (lambda x, w: x.sum(-2, keepdim=True).expand_as(x).clone(), "weighted"),
    (lambda x, w: torch.softmax(w, dim=-1) @ x, "softmax"),
])
def test_all_to_all_mix_checker_rejects_typical_mistakes_with_a_hint(broken, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_all_to_all_mix(broken)


def test_all_to_all_mix_checker_reports_a_wrong_shape():
    with pytest.raises(CheckFailure, match="wrong shape"):
        checks.check_all_to_all_mix(lambda x, w: (w @ x).sum(-1))


def test_chapter3_predictions_are_registered_with_answers():
    assert checks.check_prediction("ch3_steps_picture", 105)
    assert checks.check_prediction("ch3_depth_stack", 4)
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction("ch3_steps_picture", 10)
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction("ch3_depth_stack", 2 * 2048)


def good_window_mix(x, k):
    T = x.shape[-2]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    w = ((j <= i) & (j > i - k)).float()  # (T, T)
    return (w / w.sum(-1, keepdim=True)) @ x


def test_window_mix_checker_passes_the_canonical_answer(capsys):
    assert checks.check_window_mix(good_window_mix)
    assert "\u2713" in capsys.readouterr().out


def _cumsum_window(x, k):  # a different correct route: running sums
    c = torch.cat([torch.zeros_like(x[..., :1, :]), x.cumsum(-2)], dim=-2)
    T = x.shape[-2]
    hi = torch.arange(1, T + 1)
    lo = (hi - k).clamp(min=0)
    return (c[..., hi, :] - c[..., lo, :]) / (hi - lo)[:, None]


def test_window_mix_checker_passes_another_correct_route(capsys):
    assert checks.check_window_mix(_cumsum_window)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, k: good_window_mix(x, k + 1), "holds k \\+ 1"),
    (lambda x, k: good_window_mix(x, x.shape[-2]), "use only the last k"),
    (lambda x, k: _cumsum_window(x, k) * (torch.arange(1, x.shape[-2] + 1).clamp(max=k) / k)[:, None],
     "fewer than k"),
    (lambda x, k: x, "wrong values"),
])
def test_window_mix_checker_rejects_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_window_mix(wrong)
