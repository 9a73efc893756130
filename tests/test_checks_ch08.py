"""The chapter 8 checkers accept the canonical answers and reject typical mistakes with a hint."""
import math

import pytest
import torch

from beforeqkv import attention, checks
from beforeqkv.checks import CheckFailure


def test_check_causal_mask_passes_canonical(capsys):
    checks.check_causal_mask(lambda t: torch.ones(t, t).tril().bool())
    checks.check_causal_mask(attention.causal_mask)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda t: torch.ones(t, t).triu().bool(), "FUTURE"),
    (lambda t: torch.ones(t, t).tril(-1).bool(), "diagonal"),
    (lambda t: torch.ones(t, t).tril(), "boolean"),
    (lambda t: torch.ones(t, t, dtype=torch.bool), "nothing is masked"),
])
def test_check_causal_mask_rejects_mistakes_with_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_causal_mask(wrong)


def test_check_causal_mask_reports_not_implemented():
    def todo(t):
        raise NotImplementedError()
    with pytest.raises(CheckFailure, match="not implemented"):
        checks.check_causal_mask(todo)


def _causal_attention(q, k, v):
    t = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T, T)
    scores = scores.masked_fill(~torch.ones(t, t).tril().bool(), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # (..., T, d_v)


def test_check_causal_attention_passes_canonical(capsys):
    checks.check_causal_attention(_causal_attention)
    assert "\u2713" in capsys.readouterr().out


def _after_softmax(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return (w * torch.ones(q.shape[-2], q.shape[-2]).tril()) @ v


def _in_place(q, k, v):
    q.mul_(1.0)
    q[..., 0, 0] += 1.0
    return _causal_attention(q, k, v)


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ v, "not masked"),
    (_after_softmax, "after the softmax"),
    (lambda q, k, v: _causal_attention(q * math.sqrt(q.shape[-1]), k, v), "scale"),
    (lambda q, k, v: _causal_attention(q.flip(-2), k.flip(-2), v.flip(-2)).flip(-2), "flipped"),
    (_in_place, "in place"),
])
def test_check_causal_attention_rejects_mistakes_with_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_causal_attention(wrong)


def test_chapter8_predictions_are_registered_and_checked(capsys):
    checks.check_prediction("ch8_iid_floor", 2.77)
    checks.check_prediction("ch8_residual_no_norm", "Above")
    with pytest.raises(CheckFailure, match="ln 16"):
        checks.check_prediction("ch8_iid_floor", 0.2)
    with pytest.raises(CheckFailure, match="heavy lifting"):
        checks.check_prediction("ch8_residual_no_norm", "below")
