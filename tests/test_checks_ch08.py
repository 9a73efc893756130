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
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction("ch8_iid_floor", 0.2)
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction("ch8_residual_no_norm", "below")


def test_check_causal_mask_names_the_true_means_blocked_convention():
    with pytest.raises(CheckFailure, match="BLOCKED"):
        checks.check_causal_mask(lambda t: torch.ones(t, t).triu(1).bool())


def _filled(q, k, v, where_allowed=False, value=float("-inf"), scale=None):
    t = q.shape[-2]
    allowed = torch.ones(t, t).tril().bool()
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale  # (..., T, T)
    s = s.masked_fill(allowed if where_allowed else ~allowed, value)
    return torch.softmax(s, dim=-1) @ v


def _one_batch_dim(q, k, v):
    t = q.shape[1]  # assumes (B, T, d)
    s = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])  # (B, T, T)
    s = s.masked_fill(~torch.ones(t, t).tril().bool(), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k, v: _filled(q, k, v, where_allowed=True), "MAY be attended"),
    (lambda q, k, v: _filled(q, k, v, value=0.0), "exp\\(0\\) = 1"),
    (lambda q, k, v: _filled(q, k, v, scale=1 / q.shape[-1]), "divided the scores by d"),
    (_one_batch_dim, "contract is \\(\\.\\.\\., T, d\\)"),
])
def test_check_causal_attention_names_nan_zero_fill_scale_and_batch_mistakes(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_causal_attention(wrong)


def test_a_nan_output_outside_the_known_mistakes_gets_the_nan_hint():
    def nan_rows(q, k, v):
        out = _filled(q, k, v)
        return out.masked_fill(torch.zeros_like(out, dtype=torch.bool).index_fill(-2, torch.tensor([0]), True),
                               float("nan"))
    with pytest.raises(CheckFailure, match="NaN"):
        checks.check_causal_attention(nan_rows)
