"""The chapter 10 checkers pass the canonical answers and reject typical mistakes with a hint."""
import pytest
import torch
import torch.nn.functional as F

from beforeqkv import checks
from beforeqkv.checks import CheckFailure
from beforeqkv.pretrained.minilm import mean_pool


# ------------------------------------------------------------------ mean pooling
def test_check_mean_pool_passes_the_package_version(capsys):
    checks.check_mean_pool(mean_pool)
    assert "\u2713" in capsys.readouterr().out


def test_check_mean_pool_passes_a_loop_version():
    def loop(h, mask):
        return torch.stack([h[b][mask[b]].mean(0) for b in range(h.shape[0])])  # (B, d)

    checks.check_mean_pool(loop)


@pytest.mark.parametrize("wrong, hint", [
    (lambda h, m: h.mean(1), "padding included"),
    (lambda h, m: (h * m.unsqueeze(-1)).sum(1) / h.shape[1], "padded length T"),
    (lambda h, m: (h * m.unsqueeze(-1)).sum(1), "did not divide"),
    (lambda h, m: (h * (~m).unsqueeze(-1)).sum(1) / (~m).sum(1, keepdim=True), "wrong way round"),
    (lambda h, m: F.normalize(mean_pool(h, m), dim=-1), "does not normalise"),
])
def test_check_mean_pool_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_mean_pool(wrong)


def test_check_mean_pool_catches_in_place_changes():
    def zeroes_pads_in_place(h, mask):
        h[~mask] = 0
        return h.sum(1) / mask.sum(1, keepdim=True)

    with pytest.raises(CheckFailure, match="in place"):
        checks.check_mean_pool(zeroes_pads_in_place)


# ------------------------------------------------------------------ post-norm sublayer
def test_check_post_norm_passes_torch_layer_norm():
    checks.check_post_norm(lambda x, fx, w, b, eps: F.layer_norm(x + fx, x.shape[-1:], w, b, eps))


def test_check_post_norm_passes_an_explicit_version():
    def explicit(x, fx, w, b, eps):
        z = x + fx
        mu = z.mean(-1, keepdim=True)
        var = ((z - mu) ** 2).mean(-1, keepdim=True)
        return (z - mu) / torch.sqrt(var + eps) * w + b

    checks.check_post_norm(explicit)


def _ln(z, w, b, eps):
    return F.layer_norm(z, z.shape[-1:], w, b, eps)


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, fx, w, b, e: x + _ln(fx, w, b, e), "pre-norm"),
    (lambda x, fx, w, b, e: _ln(fx, w, b, e), "residual is missing"),
    (lambda x, fx, w, b, e: (x + fx - (x + fx).mean(-1, keepdim=True)) / ((x + fx).var(-1, keepdim=True) + e).sqrt()
     * w + b, "biased"),
    (lambda x, fx, w, b, e: (x + fx - (x + fx).mean(-1, keepdim=True))
     / ((x + fx).var(-1, unbiased=False, keepdim=True).sqrt() + e) * w + b, "inside the square root"),
    (lambda x, fx, w, b, e: F.layer_norm(x + fx, x.shape[-1:], eps=e), "gain"),
])
def test_check_post_norm_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_post_norm(wrong)


def test_check_post_norm_reports_an_unrecognised_mistake():
    with pytest.raises(CheckFailure, match="wrong values"):
        checks.check_post_norm(lambda x, fx, w, b, e: _ln(x + fx, w, b, e) * 2)


# ------------------------------------------------------------------ prediction
def test_ch10_prediction_is_registered_and_checked():
    checks.check_prediction("ch10_token_type", "more than 0.1")
    with pytest.raises(CheckFailure, match="not what the experiment shows") as wrong:
        checks.check_prediction("ch10_token_type", "less than 0.01")
    assert "0.46" not in str(wrong.value)  # a wrong answer is not told the right one
    with pytest.raises(CheckFailure, match="one of"):
        checks.check_prediction("ch10_token_type", "0.4")
