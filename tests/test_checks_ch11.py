"""The chapter 11 checkers pass canonical answers and reject typical mistakes with a hint."""
import re

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
    assert checks.check_rmsnorm(_package_rmsnorm)
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

    assert checks.check_rotary(mine)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("options, hint", [
    ({"pairs": True}, "rotate-half"), ({"sign": -1.0}, "wrong way"), ({"start": 1}, "start at 0"),
    ({"step": 1}, "base\\^\\(-2c/d_head\\)"),
])
def test_check_rotary_rejects_typical_mistakes_with_a_hint(options, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_rotary(lambda q, b: _rotary_wrong(q, b, **options))


# ------------------------------------------------------------------ Q4_1
def test_check_q4_1_block_passes_the_gguf_reader(capsys):
    assert checks.check_q4_1_block(lambda block: dequantize(block.numpy(), 3, (32,)))
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


def test_the_cache_versus_weights_question_is_registered():
    assert checks.check_prediction("ch11_cache_vs_weights", "multi-head only")
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch11_cache_vs_weights", "multi-head and grouped-query")


# ------------------------------------------------------------------ the capstone: a Llama GPT
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from beforeqkv.checks._ch11_llama import MISTAKES, UNTIED, _model, _rotate, written_out  # noqa: E402


def _rms(x, w, eps, how="inside", gain=True):
    ms = x.pow(2).mean(-1, keepdim=True)
    rms = {"inside": (ms + eps).sqrt(), "outside": ms.sqrt() + eps, "none": ms.sqrt()}[how]
    return x / rms * (w if gain else 1.0)


def _reader_llama(pairs=False, repeat=False, final_norm=True, eps="inside", gain=True, swap=False,
                  untied=False):
    """A reader's MyLlama as the chapter asks for it; the options make one mistake each."""
    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c, self.d_head = c, c.d_model // c.n_heads
            d_kv = c.n_kv_heads * self.d_head
            self.norm_attn = nn.Parameter(torch.ones(c.d_model))
            self.norm_mlp = nn.Parameter(torch.ones(c.d_model))
            self.W_Q = nn.Linear(c.d_model, c.d_model, bias=False)
            self.W_K = nn.Linear(c.d_model, d_kv, bias=False)
            self.W_V = nn.Linear(c.d_model, d_kv, bias=False)
            self.W_O = nn.Linear(c.d_model, c.d_model, bias=False)
            self.W_gate = nn.Linear(c.d_model, c.d_mlp, bias=False)
            self.W_in = nn.Linear(c.d_model, c.d_mlp, bias=False)
            self.W_out = nn.Linear(c.d_mlp, c.d_model, bias=False)

        def forward(self, x):
            c, (b, t, _) = self.c, x.shape
            h = _rms(x, self.norm_attn, c.norm_eps, eps, gain)

            def heads(W, n):
                return W(h).view(b, t, n, self.d_head).transpose(1, 2)

            q = _rotate(heads(self.W_Q, c.n_heads), c.rope_base, pairs)
            k = _rotate(heads(self.W_K, c.n_kv_heads), c.rope_base, pairs)
            v, group = heads(self.W_V, c.n_kv_heads), c.n_heads // c.n_kv_heads
            k, v = ((z.repeat(1, group, 1, 1) if repeat else z.repeat_interleave(group, 1)) for z in (k, v))
            s = q @ k.transpose(-2, -1) / self.d_head ** 0.5
            s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            x = x + self.W_O((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1))
            h = _rms(x, self.norm_mlp, c.norm_eps, eps, gain)
            gate, up = (self.W_in(h), self.W_gate(h)) if swap else (self.W_gate(h), self.W_in(h))
            return x + self.W_out(F.silu(gate) * up)

    class MyLlama(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
            self.W_E = nn.Embedding(c.d_vocab, c.d_model)
            self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layers)])
            self.norm_final = nn.Parameter(torch.ones(c.d_model))
            if untied:
                self.W_U = nn.Linear(c.d_model, c.d_vocab, bias=False)

        def forward(self, tokens):
            x = self.W_E(tokens)
            for block in self.blocks:
                x = block(x)
            if final_norm:
                x = _rms(x, self.norm_final, self.c.norm_eps, eps, gain)
            return self.W_U(x) if untied else x @ self.W_E.weight.T

    return MyLlama


def test_the_written_out_llama_forward_is_the_package_gpt():
    model = _model((("n_layers", 2),), 5)
    tokens = torch.randint(0, model.config.d_vocab, (2, 6))
    with torch.no_grad():
        torch.testing.assert_close(written_out(model, tokens), model(tokens), atol=1e-5, rtol=1e-5)


def test_llama_weights_share_the_package_tensors_and_leave_out_the_tied_w_u():
    model = _model((), 1)
    weights = checks.llama_weights(model)
    assert "W_U.weight" not in weights and "norm_final" in weights and "blocks.0.W_gate.weight" in weights
    assert weights["W_E.weight"].data_ptr() == model.W_E.weight.data_ptr()


def test_check_llama_passes_a_written_out_reader_model(capsys):
    assert checks.check_llama(_reader_llama())
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("hint", list(MISTAKES))
def test_check_llama_names_each_typical_mistake(hint):
    with pytest.raises(CheckFailure, match=re.escape(hint)):
        checks.check_llama(_reader_llama(**MISTAKES[hint]))


def test_check_llama_says_w_u_is_tied_when_the_reader_adds_one():
    with pytest.raises(CheckFailure, match=re.escape(UNTIED)):
        checks.check_llama(_reader_llama(untied=True))


def test_check_smollm2_runs_the_reader_model_on_the_real_weights(lm, capsys):
    assert checks.check_smollm2(_reader_llama(), lm, new_tokens=2)
    assert "Paris" in capsys.readouterr().out
    assert checks.ch11.LAST_RUN["max_diff"] <= 1e-3 and checks.ch11.LAST_RUN["text"].startswith(" Paris")


def test_check_smollm2_rejects_an_untied_unembedding(lm):
    with pytest.raises(CheckFailure, match="tied"):
        checks.check_smollm2(_reader_llama(untied=True), lm)


def test_check_smollm2_reports_an_unwritten_forward_instead_of_stopping(lm, monkeypatch, capsys):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "lenient")
    cls = _reader_llama()
    cls.forward = lambda self, tokens: (_ for _ in ()).throw(NotImplementedError())
    assert not checks.check_smollm2(cls, lm)
    assert "not implemented yet" in capsys.readouterr().out
