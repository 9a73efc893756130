"""Chapter 1 checkers pass the canonical answer and reject typical mistakes with their hint."""
import math

import pytest
import torch

from beforeqkv import attention, checks
from beforeqkv.checks import CheckFailure


def canonical(q, keys, values):
    out, _ = attention.attend(q.unsqueeze(1), keys, values)  # (B, 1, d_v)
    return out[:, 0]


def test_check_attention_read_accepts_the_package_attention(capsys):
    assert checks.check_attention_read(canonical)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("broken, hint", [
    (lambda q, k, v: torch.einsum("bn,bnv->bv", torch.softmax(torch.einsum("bd,bnd->bn", q, k), -1), v), "1/sqrt"),
    (lambda q, k, v: torch.einsum("bn,bnv->bv", torch.einsum("bd,bnd->bn", q, k) / math.sqrt(q.shape[-1]), v),
     "softmax"),
    (lambda q, k, v: canonical(q, k, k), "values, not the keys"),
    (lambda q, k, v: canonical(q, k, v)[:, :1], "wrong shape"),
    (lambda q, k, v: canonical(q, k, v) + 0.1, "wrong values"),
])
def test_check_attention_read_rejects_broken_versions_with_a_hint(broken, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_attention_read(broken)


def test_check_attention_read_rejects_in_place_mutation():
    def mutating(q, k, v):
        q.mul_(2)
        return canonical(q / 2, k, v)

    with pytest.raises(CheckFailure, match="in place"):
        checks.check_attention_read(mutating)


def test_check_attention_read_reports_a_stub():
    def stub(q, k, v):
        raise NotImplementedError()

    with pytest.raises(CheckFailure, match="not implemented"):
        checks.check_attention_read(stub)


def test_predictions_accept_the_answer_and_reject_others(capsys):
    assert checks.check_prediction("ch1_lstm_state_size", 192)
    assert checks.check_prediction("ch1_lstm_n32", "Chance")
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch1_lstm_state_size", 96)
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch1_lstm_state_size", 128)
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch1_lstm_n32", "near perfect")
    with pytest.raises(CheckFailure, match="one of"):
        checks.check_prediction("ch1_lstm_n32", "great")
    with pytest.raises(CheckFailure, match="prediction first"):
        checks.check_prediction("ch1_lstm_n32", ...)
    with pytest.raises(ValueError):
        checks.check_prediction("no_such_question", 1)
