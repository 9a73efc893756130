"""Chapter 6 checkers pass the canonical implementation and reject broken ones with a hint."""
import math

import pytest
import torch

from beforeqkv import checks
from beforeqkv.checks import CheckFailure


def canonical(x, W_Q, W_K, W_V, W_O, n_heads):
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, n_heads, -1).transpose(1, 2)  # (B, H, T, d_head)
    q, k, v = split(x @ W_Q.T), split(x @ W_K.T), split(x @ W_V.T)
    a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)  # (B, H, T, T)
    return (a @ v).transpose(1, 2).reshape(B, T, -1) @ W_O.T  # (B, T, d_model)


def loop_over_heads(x, W_Q, W_K, W_V, W_O, n_heads):
    d_head = W_Q.shape[0] // n_heads
    y = 0
    for h in range(n_heads):
        rows = slice(h * d_head, (h + 1) * d_head)
        q, k, v = x @ W_Q[rows].T, x @ W_K[rows].T, x @ W_V[rows].T  # (B, T, d_head)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_head), dim=-1)  # (B, T, T)
        y = y + (a @ v) @ W_O[:, rows].T  # sum over heads of W_O^h (sum_j a_ij v_j)
    return y



def forgot_W_O(x, W_Q, W_K, W_V, W_O, n_heads):
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, n_heads, -1).transpose(1, 2)
    q, k, v = split(x @ W_Q.T), split(x @ W_K.T), split(x @ W_V.T)
    a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return (a @ v).transpose(1, 2).reshape(B, T, -1)


def no_scale(x, W_Q, W_K, W_V, W_O, n_heads):
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, n_heads, -1).transpose(1, 2)
    q, k, v = split(x @ W_Q.T), split(x @ W_K.T), split(x @ W_V.T)
    a = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
    return (a @ v).transpose(1, 2).reshape(B, T, -1) @ W_O.T


def wrong_split(x, W_Q, W_K, W_V, W_O, n_heads):
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, -1, n_heads).permute(0, 3, 1, 2)
    q, k, v = split(x @ W_Q.T), split(x @ W_K.T), split(x @ W_V.T)
    a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return (a @ v).transpose(1, 2).reshape(B, T, -1) @ W_O.T


def no_transpose(x, W_Q, W_K, W_V, W_O, n_heads):
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, n_heads, -1).transpose(1, 2)
    q, k, v = split(x @ W_Q.T), split(x @ W_K.T), split(x @ W_V.T)
    a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return (a @ v).reshape(B, T, -1) @ W_O.T


def in_place(x, W_Q, W_K, W_V, W_O, n_heads):
    x.mul_(1.0)
    x[..., 0] += 1
    return canonical(x, W_Q, W_K, W_V, W_O, n_heads)


@pytest.mark.parametrize("fn", [canonical, loop_over_heads])
def test_check_multihead_attention_accepts_correct_implementations(fn, capsys):
    assert checks.check_multihead_attention(fn)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [(forgot_W_O, "W_O is missing"), (no_scale, "not scaled"),
                                      (wrong_split, "wrong head split"), (no_transpose, "transpose")])
def test_check_multihead_attention_rejects_typical_mistakes_with_their_hint(fn, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_multihead_attention(fn)


def test_check_multihead_attention_rejects_in_place_edits():
    with pytest.raises(CheckFailure, match="in place"):
        checks.check_multihead_attention(in_place)


def test_check_multihead_attention_reports_not_implemented():
    def todo(*args):
        raise NotImplementedError()
    with pytest.raises(CheckFailure, match="not implemented"):
        checks.check_multihead_attention(todo)


@pytest.mark.parametrize("key, right, wrong", [("ch6_per_pair_numbers", "10^12", "10^9"),
                                               ("ch6_one_head_routings", "1", "2"),
                                               ("ch6_wide_head_both", "no", "yes"),
                                               ("ch6_sixteen_heads_both", "often", "almost always")])
def test_chapter_6_predictions_accept_the_answer_and_reject_others(key, right, wrong, capsys):
    assert checks.check_prediction(key, right)
    assert "\u2713" in capsys.readouterr().out
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction(key, wrong)
    with pytest.raises(CheckFailure, match="one of"):
        checks.check_prediction(key, "lots")


def untransposed_weights(x, W_Q, W_K, W_V, W_O, n_heads):
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, n_heads, -1).transpose(1, 2)  # noqa: E731
    q, k, v = split(x @ W_Q), split(x @ W_K), split(x @ W_V)  # wrong: nn.Linear layout needs .T
    a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return (a @ v).transpose(1, 2).reshape(B, T, -1) @ W_O


def scaled_by_d_head(x, W_Q, W_K, W_V, W_O, n_heads):
    B, T, _ = x.shape
    split = lambda t: t.view(B, T, n_heads, -1).transpose(1, 2)  # noqa: E731
    q, k, v = split(x @ W_Q.T), split(x @ W_K.T), split(x @ W_V.T)
    a = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1], dim=-1)
    return (a @ v).transpose(1, 2).reshape(B, T, -1) @ W_O.T


@pytest.mark.parametrize("fn, hint", [(untransposed_weights, "nn.Linear layout"),
                                      (scaled_by_d_head, "divided the scores by d_head")])
def test_check_multihead_attention_names_layout_and_scale_mistakes(fn, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_multihead_attention(fn)


@pytest.mark.parametrize("answer", [1, "1", 1.0, " 1 "])
def test_chapter_6_accepts_the_routing_count_in_every_natural_form(answer, capsys):
    assert checks.check_prediction("ch6_one_head_routings", answer)
    assert "\u2713" in capsys.readouterr().out
