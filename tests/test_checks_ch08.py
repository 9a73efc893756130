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


# ---------------------------------------------------------------- the reader's block and GPT
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from beforeqkv import models  # noqa: E402


class Block(nn.Module):
    """The chapter's solution; the flags build the typical broken variants."""

    def __init__(self, d_model, n_heads, prenorm=True, residual=True, causal=True, scale=None, act=F.gelu):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_Q, self.W_K = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_V, self.W_O = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_in, self.W_out = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)
        self.norm_attn, self.norm_mlp = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.prenorm, self.residual, self.causal, self.act = prenorm, residual, causal, act
        self.scale = self.d_head ** -0.5 if scale is None else scale

    def attn(self, x):
        B, T, _ = x.shape
        q, k, v = (W(x).view(B, T, self.n_heads, self.d_head).transpose(1, 2)
                   for W in (self.W_Q, self.W_K, self.W_V))  # (B, H, T, d_head)
        s = q @ k.transpose(-2, -1) * self.scale  # (B, H, T, T)
        if self.causal:
            s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        z = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, -1)  # (B, T, d_model)
        return self.W_O(z)

    def mlp(self, x):
        return self.W_out(self.act(self.W_in(x)))

    def forward(self, x):
        for f, norm in ((self.attn, self.norm_attn), (self.mlp, self.norm_mlp)):
            if self.prenorm:
                x = x + f(norm(x)) if self.residual else f(norm(x))
            else:
                x = norm(x + f(x)) if self.residual else norm(f(x))
        return x


def _variant(**flags):
    return type("Broken", (Block,), {"__init__": lambda self, d, h: Block.__init__(self, d, h, **flags)})


def test_check_transformer_block_passes_the_solution(capsys):
    assert checks.check_transformer_block(Block)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("flags, hint", [
    (dict(prenorm=False), "post-norm"),
    (dict(residual=False), "residual connections are missing"),
    (dict(causal=False), "reads the future"),
    (dict(scale=1.0), "1/sqrt\\(d_head\\)"),
    (dict(act=F.relu), "GELU"),
])
def test_check_transformer_block_rejects_broken_blocks_with_hint(flags, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_transformer_block(_variant(**flags))


def test_check_transformer_block_names_the_d_model_scale():
    class ByDModel(Block):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads, scale=d_model ** -0.5)
    with pytest.raises(CheckFailure, match="not 1/sqrt\\(d_model\\)"):
        checks.check_transformer_block(ByDModel)


def test_check_transformer_block_reports_not_implemented_and_wrong_names():
    class Todo(Block):
        def forward(self, x):
            raise NotImplementedError()

    class Renamed(Block):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.q_proj = self.W_Q
            del self.W_Q
    with pytest.raises(CheckFailure, match="not implemented"):
        checks.check_transformer_block(Todo)
    with pytest.raises(CheckFailure, match="do not load"):
        checks.check_transformer_block(Renamed)


class GPT(nn.Module):
    def __init__(self, d_vocab, n_ctx, d_model, n_heads, n_layers, positions=True, final_norm=True):
        super().__init__()
        self.W_E, self.W_pos = nn.Embedding(d_vocab, d_model), nn.Embedding(n_ctx, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.norm_final = nn.LayerNorm(d_model)
        self.W_U = nn.Linear(d_model, d_vocab, bias=False)
        self.positions, self.final_norm = positions, final_norm

    def forward(self, tokens):
        x = self.W_E(tokens)  # (B, T, d_model)
        if self.positions:
            x = x + self.W_pos(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.W_U(self.norm_final(x) if self.final_norm else x)  # (B, T, d_vocab)


def test_check_gpt_passes_the_solution_and_package_weights_load(capsys):
    assert checks.check_gpt(GPT)
    assert "\u2713" in capsys.readouterr().out
    package = models.GPT(models.GPTConfig(d_vocab=7, n_ctx=5, d_model=8, n_heads=2, n_layers=2))
    assert "blocks.1.W_in.weight" in checks.reader_weights(package)
    GPT(7, 5, 8, 2, 2).load_state_dict(checks.reader_weights(package))  # strict: every name matches


@pytest.mark.parametrize("flags, hint", [
    (dict(positions=False), "W_pos"),
    (dict(final_norm=False), "final LayerNorm"),
])
def test_check_gpt_rejects_broken_models_with_hint(flags, hint):
    broken = type("Broken", (GPT,), {"__init__": lambda self, *sizes: GPT.__init__(self, *sizes, **flags)})
    with pytest.raises(CheckFailure, match=hint):
        checks.check_gpt(broken)


def test_check_gpt_fails_when_the_block_inside_is_wrong():
    class PostNormGPT(GPT):
        def __init__(self, *sizes):
            super().__init__(*sizes)
            self.blocks = nn.ModuleList(_variant(prenorm=False)(sizes[2], sizes[3]) for _ in range(sizes[4]))
    with pytest.raises(CheckFailure, match="wrong values"):
        checks.check_gpt(PostNormGPT)
