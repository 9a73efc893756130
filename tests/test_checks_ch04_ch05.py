"""Checkers of chapters 4 and 5 pass the canonical answers and reject typical mistakes with a hint."""
import pytest
import torch

from beforeqkv import checks
from beforeqkv.checks import CheckFailure


def good_content_weights(x_q, x_k, f):
    s = f(x_q[..., :, None, :], x_k[..., None, :, :])  # (..., T_q, T_k)
    return s.softmax(dim=-1)


def test_check_content_weights_passes_the_canonical_answer(capsys):
    assert checks.check_content_weights(good_content_weights)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda x_q, x_k, f: f(x_q[..., :, None, :], x_k[..., None, :, :]).softmax(dim=-2), "over the keys"),
    (lambda x_q, x_k, f: f(x_q[..., :, None, :], x_k[..., None, :, :]), "raw scores"),
    (lambda x_q, x_k, f: f(x_k[..., None, :, :], x_q[..., :, None, :]).softmax(dim=-1), "query first"),
    (lambda x_q, x_k, f: f(x_q[..., :, None, :], x_k[..., None, :, :]).exp(), "row sum"),
])
def test_check_content_weights_rejects_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_content_weights(wrong)


def test_check_content_weights_rejects_in_place_edits():
    def sneaky(x_q, x_k, f):
        out = good_content_weights(x_q, x_k, f)
        x_q.zero_()
        return out

    with pytest.raises(CheckFailure, match="in place"):
        checks.check_content_weights(sneaky)


def test_check_bilinear_scores_passes_the_canonical_answer(capsys):
    assert checks.check_bilinear_scores(lambda x_q, x_k, A: torch.einsum("...id,de,...je->...ij", x_q, A, x_k))
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda x_q, x_k, A: x_q @ A.T @ x_k.transpose(-2, -1), "A\\^T"),
    (lambda x_q, x_k, A: x_q @ (A + A.T) @ x_k.transpose(-2, -1) / 2, "symmetrised"),
    (lambda x_q, x_k, A: x_q @ x_k.transpose(-2, -1), "A is missing"),
    (lambda x_q, x_k, A: (x_q @ A @ x_k.transpose(-2, -1)).transpose(-2, -1), "s_ji"),
    (lambda x_q, x_k, A: x_k @ A @ x_q.transpose(-2, -1), "query goes on the left"),
])
def test_check_bilinear_scores_rejects_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_bilinear_scores(wrong)


@pytest.mark.parametrize("key, right, wrong", [
    ("ch4_fixed_no_positions", "near the bag-of-tokens guess", "near 1.00"),
    ("ch4_salient_no_positions", "well above the bag-of-tokens guess", "near the bag-of-tokens guess"),
    ("ch5_weights_symmetric", "no", "yes"),
    ("ch5_rank_qk", 32, 64),
])
def test_predictions_accept_the_answer_and_reject_others(key, right, wrong, capsys):
    assert checks.check_prediction(key, right)
    assert "right" in capsys.readouterr().out
    with pytest.raises(CheckFailure):
        checks.check_prediction(key, wrong)


def good_triad_qk():
    angle = torch.tensor([0.0, 2.0, 4.0]) * torch.pi / 3
    keys = torch.stack([angle.cos(), angle.sin()])  # (2, 3)
    return 4 * keys[:, [1, 2, 0]], keys


def test_check_triad_qk_passes_the_canonical_answer(capsys):
    assert checks.check_triad_qk(good_triad_qk)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda: (4 * good_triad_qk()[1][:, [2, 0, 1]], good_triad_qk()[1]), "backwards"),   # points at its predecessor
    (lambda: (4 * good_triad_qk()[1], good_triad_qk()[1]), "itself highest"),          # W_Q = W_K: symmetric
    (lambda: (good_triad_qk()[0] / 4, good_triad_qk()[1]), "scale W_Q"),                # right but too soft
    (lambda: (torch.zeros(3, 3), torch.zeros(3, 3)), "shape \\(2, 3\\)"),              # full rank, wrong shape
    (lambda: good_triad_qk()[0], "pair"),                                               # returns one matrix
])
def test_check_triad_qk_rejects_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_triad_qk(wrong)


def test_check_triad_qk_reports_an_unfinished_answer():
    def unfinished():
        raise NotImplementedError()

    with pytest.raises(CheckFailure, match="not implemented yet"):
        checks.check_triad_qk(unfinished)
