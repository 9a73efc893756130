"""The chapter 11 checkers pass canonical answers and reject typical mistakes with a hint."""
import pytest
import torch

from beforeqkv import checks
from beforeqkv.checks import CheckFailure
from beforeqkv.checks.ch11 import _q4_1_wrong, _rotary_wrong
from beforeqkv.models.blocks import RMSNorm
from beforeqkv.pretrained.gguf import dequantize


# ------------------------------------------------------------------ RMSNorm
def _package_rmsnorm(x, weight, eps):
    norm = RMSNorm(x.shape[-1], eps=eps)
    with torch.no_grad():
        norm.weight.copy_(weight)
        return norm(x)


def test_check_rmsnorm_passes_the_package_rmsnorm(capsys):
    checks.check_rmsnorm(_package_rmsnorm)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, w, e: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=e) * w, "LayerNorm"),
    (lambda x, w, e: x / (x.pow(2).mean(-1, keepdim=True) + e) * w, "root"),
    (lambda x, w, e: x * (x.pow(2).mean(-1, keepdim=True) + e).rsqrt(), "gain"),
    (lambda x, w, e: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + e) * w, "inside the square root"),
])
def test_check_rmsnorm_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_rmsnorm(wrong)


def test_check_rmsnorm_catches_in_place_changes():
    def in_place(x, w, e):
        x.mul_((x.pow(2).mean(-1, keepdim=True) + e).rsqrt())
        return x * w

    with pytest.raises(CheckFailure, match="in place"):
        checks.check_rmsnorm(in_place)


# ------------------------------------------------------------------ rotary
def test_check_rotary_passes_an_explicit_rotate_half(capsys):
    def mine(q, base):
        t, d = q.shape[-2], q.shape[-1]
        i = torch.arange(d // 2).float()
        angle = torch.arange(t).float()[:, None] * base ** (-2 * i / d)  # (T, d/2)
        a, b = q[..., : d // 2], q[..., d // 2:]
        return torch.cat([a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()], -1)

    checks.check_rotary(mine)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("options, hint", [
    ({"pairs": True}, "rotate-half"), ({"sign": -1.0}, "wrong way"), ({"start": 1}, "start at 0"),
    ({"step": 1}, "base\\^\\(-2i/d_head\\)"),
])
def test_check_rotary_rejects_typical_mistakes_with_a_hint(options, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_rotary(lambda q, b: _rotary_wrong(q, b, **options))


# ------------------------------------------------------------------ Q4_1
def test_check_q4_1_block_passes_the_gguf_reader(capsys):
    checks.check_q4_1_block(lambda block: dequantize(block.numpy(), 3, (32,)))
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("options, hint", [
    ({"order": "hilo"}, "low nibbles are elements 0-15"), ({"order": "interleaved"}, "not interleaved"),
    ({"with_m": False}, "adds the block minimum"), ({"zero": 8}, "Q4_0"), ({"swap": True}, "scale d comes first"),
])
def test_check_q4_1_block_rejects_typical_mistakes_with_a_hint(options, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_q4_1_block(lambda b: _q4_1_wrong(b, **options))


def test_check_q4_1_block_rejects_a_wrong_answer_without_a_known_mistake():
    with pytest.raises(CheckFailure, match="wrong values"):
        checks.check_q4_1_block(lambda b: torch.zeros(32))


def test_the_multi_query_question_is_registered():
    checks.check_prediction("ch11_mqa_cache", 9)
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch11_mqa_cache", 3)  # SmolLM2's own grouped factor
