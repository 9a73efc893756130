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
                  untied=False, rope="qk", causal=True, scale="d_head", softmax_dim=-1, act=F.silu,
                  share_kv=True):
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

            q, k = heads(self.W_Q, c.n_heads), heads(self.W_K, c.n_kv_heads)
            v, group = heads(self.W_V, c.n_kv_heads), c.n_heads // c.n_kv_heads
            q = _rotate(q, c.rope_base, pairs) if "q" in rope else q
            k = _rotate(k, c.rope_base, pairs) if "k" in rope else k
            v = _rotate(v, c.rope_base, pairs) if "v" in rope else v
            if share_kv:
                k, v = ((z.repeat(1, group, 1, 1) if repeat else z.repeat_interleave(group, 1)) for z in (k, v))
            s = q @ k.transpose(-2, -1) / (self.d_head if scale == "d_head" else c.d_model) ** 0.5
            if causal:
                s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            x = x + self.W_O((s.softmax(softmax_dim) @ v).transpose(1, 2).reshape(b, t, -1))
            h = _rms(x, self.norm_mlp, c.norm_eps, eps, gain)
            gate, up = (self.W_in(h), self.W_gate(h)) if swap else (self.W_gate(h), self.W_in(h))
            return x + self.W_out(act(gate) * up)

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

    MyLlama.Block = Block
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
    result = checks.check_smollm2(_reader_llama(), lm, new_tokens=2)
    assert result
    assert "Paris" in capsys.readouterr().out
    assert result.measured["max_diff"] <= 1e-3 and result.measured["text"].startswith(" Paris")
    assert max(result.measured["top"], key=result.measured["top"].get) == " Paris"
    assert not hasattr(checks.ch11, "LAST_RUN")  # what a check measured comes back with it, not in a global


def test_check_smollm2_rejects_an_untied_unembedding(lm):
    with pytest.raises(CheckFailure, match="tied"):
        checks.check_smollm2(_reader_llama(untied=True), lm)


def test_check_smollm2_reports_an_unwritten_forward_instead_of_stopping(lm, monkeypatch, capsys):
    monkeypatch.setenv("BEFOREQKV_CHECKS", "lenient")
    cls = _reader_llama()
    cls.forward = lambda self, tokens: (_ for _ in ()).throw(NotImplementedError())
    assert not checks.check_smollm2(cls, lm)
    assert "not implemented yet" in capsys.readouterr().out


BROKEN_LLAMAS = {  # the issue's mistakes and more, each with the start of the hint that must name it
    "rotary on the queries only": (dict(rope="q"), "you rotated the queries only"),
    "rotary on q, k and v": (dict(rope="qkv"), "not the values: the values are read as they are"),
    "rotary on q and v": (dict(rope="qv"), "apply my_rotary to q and k, and leave v"),
    "no rotary": (dict(rope=""), "the rotary positions are missing"),
    "no causal mask": (dict(causal=False), "SmolLM2 is a decoder"),
    "scale by d_model": (dict(scale="d_model"), "not 1/sqrt(d_model)"),
    "softmax over the queries": (dict(softmax_dim=-2), "softmax runs over the keys"),
    "GELU gate": (dict(act=F.gelu), "not GELU"),
    "key/value heads not repeated": (dict(share_kv=False), "fewer key/value heads than query heads"),
    "untied W_U": (dict(untied=True), "tied to the embedding"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_LLAMAS))
def test_check_llama_names_the_rotary_mask_scale_and_head_mistakes(name):
    flags, hint = BROKEN_LLAMAS[name]
    with pytest.raises(CheckFailure, match=re.escape(hint)):
        checks.check_llama(_reader_llama(**flags))


BROKEN_RMSNORMS = {
    "sum, not mean": (lambda x, w, e: x / (x.pow(2).sum(-1, keepdim=True) + e).sqrt() * w, "MEAN of the squares"),
    "variance": (lambda x, w, e: x / (x.var(-1, keepdim=True, correction=0) + e).sqrt() * w, "not their variance"),
    "no eps": (lambda x, w, e: x / x.pow(2).mean(-1, keepdim=True).sqrt() * w, "add eps"),
    "mean over everything": (lambda x, w, e: x * (x.pow(2).mean() + e).rsqrt() * w, "over the last axis"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_RMSNORMS))
def test_check_rmsnorm_names_more_mistakes(name):
    wrong, hint = BROKEN_RMSNORMS[name]
    with pytest.raises(CheckFailure, match=re.escape(hint)):
        checks.check_rmsnorm(wrong)


def _rotary_by_hand(q, base, *, reverse=False, first_half_only=False, swap_cos_sin=False, exponent=-2):
    t, d = q.shape[-2], q.shape[-1]
    c = torch.arange(d // 2).float()
    theta = base ** (exponent * (c.flip(0) if reverse else c) / d)  # (d/2,)
    phi = torch.arange(t).float()[:, None] * theta  # (T, d/2)
    cos, sin = (phi.sin(), phi.cos()) if swap_cos_sin else (phi.cos(), phi.sin())
    a, b = q[..., : d // 2], q[..., d // 2:]
    return torch.cat([a * cos - b * sin, b if first_half_only else a * sin + b * cos], -1)


BROKEN_ROTARIES = {
    "frequencies reversed": (dict(reverse=True), "theta_0 = 1 is the fastest"),
    "only a rotated": (dict(first_half_only=True), "both coordinates of a pair change"),
    "cos and sin swapped": (dict(swap_cos_sin=True), "cos multiplies the coordinate itself"),
    "positive exponent": (dict(exponent=2), "the exponent is negative"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_ROTARIES))
def test_check_rotary_names_more_mistakes(name):
    flags, hint = BROKEN_ROTARIES[name]
    with pytest.raises(CheckFailure, match=re.escape(hint)):
        checks.check_rotary(lambda q, b: _rotary_by_hand(q, b, **flags))


def _q4_1_by_hand(block, signed=False, scale_m=False):
    d, m = block[:4].view(torch.float16).float()
    packed = (block[4:].view(torch.int8) if signed else block[4:]).long()
    q = torch.cat([packed & 0xF, packed >> 4]).float()
    return d * (q + m) if scale_m else d * q + m


@pytest.mark.parametrize("flags, hint", [
    (dict(signed=True), "unsigned"), (dict(scale_m=True), "m is added after the scaling"),
])
def test_check_q4_1_block_names_more_mistakes(flags, hint):
    with pytest.raises(CheckFailure, match=re.escape(hint)):
        checks.check_q4_1_block(lambda b: _q4_1_by_hand(b, **flags))


def _named(check, broken) -> bool:
    """Whether the check rejects ``broken`` with a hint that names the mistake."""
    try:
        check(broken)
    except CheckFailure as err:
        text = str(err)
        return "Hint:" in text or "in place" in text or "tied" in text or any(h in text for h in MISTAKES)
    return False


def test_at_least_nine_in_ten_typical_mistakes_of_each_exercise_are_named():
    from beforeqkv.checks.ch11 import _rotary_wrong
    rotary = [dict(pairs=True), dict(sign=-1.0), dict(start=1), dict(step=1)]
    q4 = [dict(order="hilo"), dict(order="interleaved"), dict(with_m=False), dict(zero=8), dict(swap=True)]
    cases = {
        "11.1": (checks.check_rmsnorm, [w for w, __ in BROKEN_RMSNORMS.values()]
                 + [lambda x, w, e: x / (x.pow(2).mean(-1, keepdim=True) + e) * w,
                    lambda x, w, e: x * (x.pow(2).mean(-1, keepdim=True) + e).rsqrt(),
                    lambda x, w, e: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=e) * w]),
        "11.2": (checks.check_rotary, [lambda q, b, f=f: _rotary_by_hand(q, b, **f) for f, __ in
                                       BROKEN_ROTARIES.values()]
                 + [lambda q, b, f=f: _rotary_wrong(q, b, **f) for f in rotary]),
        "11.3": (checks.check_q4_1_block, [lambda b, f=f: _q4_1_by_hand(b, **f)
                                           for f in (dict(signed=True), dict(scale_m=True))]
                 + [lambda b, f=f: _q4_1_wrong(b, **f) for f in q4]),
        "11.6": (checks.check_llama, [_reader_llama(**f) for f, __ in BROKEN_LLAMAS.values()]
                 + [_reader_llama(**how) for how in MISTAKES.values()]),
    }
    for exercise, (check, broken) in cases.items():
        named = sum(_named(check, b) for b in broken)
        assert len(broken) >= 5 and named >= 0.9 * len(broken), (exercise, named, len(broken))


# ------------------------------------------------------------------ Exercise 11.6 graded on its own
def my_rmsnorm(x, weight, eps):  # the reader's Exercise 11.1, wrong: LayerNorm
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=eps) * weight


def my_rotary(q, base):  # the reader's Exercise 11.2, wrong: adjacent pairs
    return _rotate(q, base, pairs=True)


def _llama_on_my_functions(rope_keys=True):
    """Exercise 11.6 written on the reader's my_rmsnorm and my_rotary, as the chapter asks."""
    base = _reader_llama()

    class Block(base.Block):
        def forward(self, x):
            c, (b, t, _) = self.c, x.shape
            h = my_rmsnorm(x, self.norm_attn, c.norm_eps)

            def heads(W, n):
                return W(h).view(b, t, n, self.d_head).transpose(1, 2)

            q = my_rotary(heads(self.W_Q, c.n_heads), c.rope_base)
            k = heads(self.W_K, c.n_kv_heads)
            k = my_rotary(k, c.rope_base) if rope_keys else k
            group = c.n_heads // c.n_kv_heads
            k, v = (z.repeat_interleave(group, 1) for z in (k, heads(self.W_V, c.n_kv_heads)))
            s = (q @ k.transpose(-2, -1) / self.d_head ** 0.5).masked_fill(
                torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            x = x + self.W_O((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1))
            h = my_rmsnorm(x, self.norm_mlp, c.norm_eps)
            return x + self.W_out(F.silu(self.W_gate(h)) * self.W_in(h))

    class MyLlama(base):
        def __init__(self, c):
            super().__init__(c)
            self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layers)])

        def forward(self, tokens):
            x = self.W_E(tokens)
            for block in self.blocks:
                x = block(x)
            return my_rmsnorm(x, self.norm_final, self.c.norm_eps) @ self.W_E.weight.T

    return MyLlama


def test_wrong_rmsnorm_and_rotary_do_not_fail_the_llama_that_calls_them(capsys):
    with pytest.raises(CheckFailure, match="LayerNorm"):
        checks.check_rmsnorm(my_rmsnorm)
    with pytest.raises(CheckFailure, match="rotate-half"):
        checks.check_rotary(my_rotary)
    assert checks.check_llama(_llama_on_my_functions())
    out = capsys.readouterr().out
    assert "my_rmsnorm, my_rotary" in out and "in place of yours" in out
    assert globals()["my_rotary"] is my_rotary and globals()["my_rmsnorm"] is my_rmsnorm
    from beforeqkv.checks import grading
    assert grading.verify("check_llama", _llama_on_my_functions())


def test_a_wrong_llama_on_the_readers_functions_still_fails():
    with pytest.raises(CheckFailure, match="you rotated the queries only"):
        checks.check_llama(_llama_on_my_functions(rope_keys=False))
    assert globals()["my_rotary"] is my_rotary
