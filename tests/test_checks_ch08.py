"""The chapter 8 checkers accept the canonical answers and reject typical mistakes with a hint."""
import math
import re
import sys

import pytest
import torch

from beforeqkv import attention, checks
from beforeqkv.checks import CheckFailure, ch08


def test_check_causal_mask_passes_canonical(capsys):
    assert checks.check_causal_mask(lambda t: torch.ones(t, t).tril().bool())
    assert checks.check_causal_mask(attention.causal_mask)
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
    assert checks.check_causal_attention(_causal_attention)
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
    assert checks.check_prediction("ch8_iid_floor", 2.77)
    assert checks.check_prediction("ch8_residual_no_norm", "Above")
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


def _attend(q, k, v, scale=None, fill=float("-inf"), mask=None, blocked_given=False, dim=-1):
    """A reader's causal attention per head, (..., T, d) -> (..., T, d); the options break it."""
    t = q.shape[-2]
    allowed = torch.ones(t, t, dtype=torch.bool).tril() if mask is None else mask  # (T, T)
    s = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5 if scale is None else scale)  # (..., T, T)
    s = s.masked_fill(allowed if blocked_given else ~allowed, fill)
    return torch.softmax(s, dim=dim) @ v


# A reader's version of every mistake in ch08.ATTENTION_MISTAKES, written independently of it.
BROKEN_ATTENTION = {
    "no_mask": lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), -1) @ v,
    "mask_after_softmax": lambda q, k, v: _after_softmax(q, k, v),
    "no_scale": lambda q, k, v: _attend(q, k, v, scale=1.0),
    "fill_allowed": lambda q, k, v: _attend(q, k, v, blocked_given=True),
    "fill_zero": lambda q, k, v: _attend(q, k, v, fill=0.0),
    "scale_by_d": lambda q, k, v: _attend(q, k, v, scale=1 / q.shape[-1]),
    "flipped_mask": lambda q, k, v: _attend(q, k, v, mask=torch.ones(q.shape[-2], q.shape[-2]).triu().bool()),
    "no_diagonal": lambda q, k, v: _attend(q, k, v, mask=torch.ones(q.shape[-2], q.shape[-2]).tril(-1).bool()),
    "softmax_over_queries": lambda q, k, v: _attend(q, k, v, dim=-2),
    "scale_multiplied": lambda q, k, v: _attend(q, k, v, scale=math.sqrt(q.shape[-1])),
}


def test_every_shared_attention_mistake_has_a_broken_implementation_here():
    assert set(BROKEN_ATTENTION) == set(ch08.ATTENTION_MISTAKES)


def _hint(name, d):
    return re.escape(ch08.ATTENTION_MISTAKES[name][0].format(d=d)[:60])


@pytest.mark.parametrize("name", sorted(BROKEN_ATTENTION))
def test_check_causal_attention_names_every_shared_mistake(name):
    with pytest.raises(CheckFailure, match=_hint(name, "d")):
        checks.check_causal_attention(BROKEN_ATTENTION[name])


def _split(W, x, n_heads, transpose=True):  # (B, T, d_model) -> (B, n_heads, T, d_head)
    B, T, d_model = x.shape
    if not transpose:
        return W(x).view(B, n_heads, T, d_model // n_heads)
    return W(x).view(B, T, n_heads, d_model // n_heads).transpose(1, 2)


def _merge(z, order="right"):  # (B, n_heads, T, d_head) -> (B, T, d_model)
    B, H, T, d_head = z.shape
    if order == "no_transpose":
        return z.reshape(B, T, H * d_head)
    if order == "interleaved":
        return z.permute(0, 2, 3, 1).reshape(B, T, H * d_head)
    return z.transpose(1, 2).reshape(B, T, H * d_head)


class Block(nn.Module):
    """The chapter's solution; the flags build the typical broken variants."""

    def __init__(self, d_model, n_heads, prenorm=True, residual=True, causal=True, scale=None, act=F.gelu,
                 attention=None, split_transpose=True, merge="right", out_proj=True, residual_from="x",
                 one_head=False, mlp_norm="norm_mlp", norms=True, parallel=False):
        super().__init__()
        n_heads = 1 if one_head else n_heads
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.out_proj, self.residual_from, self.mlp_norm = out_proj, residual_from, mlp_norm
        self.norms, self.parallel = norms, parallel
        self.W_Q, self.W_K = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_V, self.W_O = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_in, self.W_out = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)
        self.norm_attn, self.norm_mlp = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.prenorm, self.residual, self.causal, self.act = prenorm, residual, causal, act
        self.scale = self.d_head ** -0.5 if scale is None else scale
        self.attention, self.split_transpose, self.merge = attention, split_transpose, merge

    def attn(self, x):
        B, T, _ = x.shape
        q, k, v = (_split(W, x, self.n_heads, self.split_transpose)
                   for W in (self.W_Q, self.W_K, self.W_V))  # (B, H, T, d_head)
        if self.attention is not None:
            z = _merge(self.attention(q, k, v), self.merge)
        else:
            s = q @ k.transpose(-2, -1) * self.scale  # (B, H, T, T)
            if self.causal:
                s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
            z = _merge(torch.softmax(s, dim=-1) @ v, self.merge)  # (B, T, d_model)
        return self.W_O(z) if self.out_proj else z

    def mlp(self, x):
        return self.W_out(self.act(self.W_in(x)))

    def forward(self, x):
        if self.residual_from != "x" or not self.norms or self.parallel or self.mlp_norm != "norm_mlp":
            return self._broken_forward(x)
        for f, norm in ((self.attn, self.norm_attn), (self.mlp, self.norm_mlp)):
            if self.prenorm:
                x = x + f(norm(x)) if self.residual else f(norm(x))
            else:
                x = norm(x + f(x)) if self.residual else norm(f(x))
        return x

    def _broken_forward(self, x):
        def norm(layer, z):
            return layer(z) if self.norms else z
        h = norm(self.norm_attn, x)
        y = (h if self.residual_from == "normed" else x) + self.attn(h)
        if self.parallel:
            return y + self.mlp(norm(self.norm_mlp, x))
        h = norm(getattr(self, self.mlp_norm), y)
        return (h if self.residual_from == "normed" else y) + self.mlp(h)


def _variant(**flags):
    return type("Broken", (Block,), {"__init__": lambda self, d, h: Block.__init__(self, d, h, **flags)})


@pytest.mark.parametrize("name", sorted(BROKEN_ATTENTION))
def test_check_transformer_block_names_every_shared_attention_mistake(name):
    with pytest.raises(CheckFailure, match=_hint(name, "d_head")):
        checks.check_transformer_block(_variant(attention=BROKEN_ATTENTION[name]))


@pytest.mark.parametrize("name, flags", [
    ("split_no_transpose", dict(split_transpose=False)),
    ("merge_no_transpose", dict(merge="no_transpose")),
    ("split_and_merge_no_transpose", dict(split_transpose=False, merge="no_transpose")),
    ("merge_interleaved", dict(merge="interleaved")),
])
def test_check_transformer_block_names_head_split_and_merge_mistakes(name, flags):
    assert name in ch08.HEAD_MISTAKES
    with pytest.raises(CheckFailure, match=re.escape(ch08.HEAD_MISTAKES[name][0][:60])):
        checks.check_transformer_block(_variant(**flags))


def test_check_transformer_block_passes_the_solution(capsys):
    assert checks.check_transformer_block(Block)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("flags, hint", [
    (dict(prenorm=False), "post-norm"),
    (dict(residual=False), "residual connections are missing"),
    (dict(causal=False), "future is not masked"),
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
    def __init__(self, d_vocab, n_ctx, d_model, n_heads, n_layers, block=Block, positions=True, final_norm=True,
                 **broken):
        super().__init__()
        self.broken = broken  # reversed, unchained, extra_residual, softmax, sqrt_d, tied, pos_by_token
        self.W_E, self.W_pos = nn.Embedding(d_vocab, d_model), nn.Embedding(n_ctx, d_model)
        self.blocks = nn.ModuleList(block(d_model, n_heads) for _ in range(n_layers))
        self.norm_final = nn.LayerNorm(d_model)
        self.W_U = nn.Linear(d_model, d_vocab, bias=False)
        self.positions, self.final_norm = positions, final_norm

    def forward(self, tokens):
        if self.broken:
            return self._broken_forward(tokens, **self.broken)
        x = self.W_E(tokens)  # (B, T, d_model)
        if self.positions:
            x = x + self.W_pos(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.W_U(self.norm_final(x) if self.final_norm else x)  # (B, T, d_vocab)

    def _broken_forward(self, tokens, reversed=False, unchained=False, extra_residual=False, softmax=False,
                        sqrt_d=False, tied=False, pos_by_token=False):
        x = self.W_E(tokens) * (self.W_E.weight.shape[1] ** 0.5 if sqrt_d else 1.0)
        x = x + self.W_pos(tokens if pos_by_token else torch.arange(tokens.shape[1]))
        h = x
        for block in (self.blocks[::-1] if reversed else self.blocks):
            h = block(x) if unchained else h + block(h) if extra_residual else block(h)
        h = self.norm_final(h)
        logits = h @ self.W_E.weight.T if tied else self.W_U(h)
        return logits.softmax(-1) if softmax else logits


def _gpt_variant(**flags):
    return type("Broken", (GPT,), {"__init__": lambda self, *sizes, block=Block: GPT.__init__(
        self, *sizes, block=block, **flags)})


def test_check_gpt_passes_the_solution_and_package_weights_load(capsys):
    assert checks.check_gpt(GPT)
    assert "\u2713" in capsys.readouterr().out
    package = models.GPT(models.TransformerConfig(d_vocab=7, n_ctx=5, d_model=8, n_heads=2, n_layers=2))
    assert "blocks.1.W_in.weight" in checks.reader_weights(package)
    GPT(7, 5, 8, 2, 2).load_state_dict(checks.reader_weights(package))  # strict: every name matches


@pytest.mark.parametrize("flags, hint", [
    (dict(positions=False), "W_pos"),
    (dict(final_norm=False), "final LayerNorm"),
])
def test_check_gpt_rejects_broken_models_with_hint(flags, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_gpt(_gpt_variant(**flags))


def test_grades_of_the_block_and_the_gpt_are_independent(capsys):
    """A wrong block (Exercise 8.3) does not fail the GPT check (8.4): it plugs in the package's block."""
    post_norm = _variant(prenorm=False)
    with pytest.raises(CheckFailure, match="post-norm"):
        checks.check_transformer_block(post_norm)
    # the reader's right GPT holding the broken block by default, as MyGPT holds MyBlock: passes
    assert checks.check_gpt(type("WithBrokenBlock", (GPT,), {
        "__init__": lambda self, *sizes, block=post_norm: GPT.__init__(self, *sizes, block=block)}))
    assert checks.check_transformer_block(Block)
    with pytest.raises(CheckFailure, match="W_pos"):  # right block, broken GPT: fails
        checks.check_gpt(_gpt_variant(positions=False))


def test_check_gpt_asks_for_the_block_argument():
    class NoBlockArgument(nn.Module):
        def __init__(self, d_vocab, n_ctx, d_model, n_heads, n_layers):
            super().__init__()
            self.inner = GPT(d_vocab, n_ctx, d_model, n_heads, n_layers)
    with pytest.raises(CheckFailure, match="block="):
        checks.check_gpt(NoBlockArgument)


# ---------------------------------------------------------------- every typical mistake, named
def _no_transpose(q, k, v):
    t = q.shape[-2]
    s = (q @ k / math.sqrt(q.shape[-1])).masked_fill(~torch.ones(t, t).tril().bool(), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k, v: _attend(q, k, v, dim=-2), "the softmax runs over the keys j"),
    (lambda q, k, v: _attend(q, k, v, scale=math.sqrt(q.shape[-1])), "multiplied the scores by sqrt\\(d\\)"),
    (_no_transpose, "k.transpose\\(-2, -1\\)"),
])
def test_check_causal_attention_names_the_softmax_axis_the_multiplied_scale_and_k_untransposed(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_causal_attention(wrong)


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


BROKEN_BLOCKS = {  # a reader's broken block -> the start of the hint that must name it
    "no output projection": (dict(out_proj=False), "output projection: return W_O"),
    "residual around LN(x)": (dict(residual_from="normed"), "adds the sublayer's output to x itself"),
    "one head": (dict(one_head=True), "you computed one head over all of d_model"),
    "tanh GELU": (dict(act=_gelu_tanh), "not the tanh approximation"),
    "no nonlinearity": (dict(act=lambda h: h), "needs its nonlinearity between W_in and W_out"),
    "norm_attn twice": (dict(mlp_norm="norm_attn"), "each sublayer has its own LayerNorm"),
    "no LayerNorm": (dict(norms=False), "the LayerNorms are missing"),
    "parallel attention and MLP": (dict(parallel=True), "the MLP reads the attention step's result"),
    "softmax over the queries": (dict(attention=BROKEN_ATTENTION["softmax_over_queries"]),
                                 "the softmax runs over the keys j"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_BLOCKS))
def test_check_transformer_block_names_the_block_mistakes(name):
    flags, hint = BROKEN_BLOCKS[name]
    with pytest.raises(CheckFailure, match=re.escape(hint)):
        checks.check_transformer_block(_variant(**flags))


BROKEN_GPTS = {
    "blocks backwards": (dict(reversed=True), "run the blocks in order"),
    "blocks not chained": (dict(unchained=True), "each block reads the previous block's output"),
    "residual around the block": (dict(extra_residual=True), "the block already adds its residual"),
    "softmax at the end": (dict(softmax=True), "forward returns the logits"),
    "embedding scaled by sqrt(d_model)": (dict(sqrt_d=True), "does not scale the token embedding"),
    "W_E tied in place of W_U": (dict(tied=True), "MyGPT has its own unembedding"),
    "W_pos indexed by token": (dict(pos_by_token=True), "W_pos is indexed by the positions"),
}


@pytest.mark.parametrize("name", sorted(BROKEN_GPTS))
def test_check_gpt_names_the_gpt_mistakes(name):
    flags, hint = BROKEN_GPTS[name]
    with pytest.raises(CheckFailure, match=re.escape(hint)):
        checks.check_gpt(_gpt_variant(**flags))


def _named(check, broken) -> bool:
    """Whether the check rejects ``broken`` with a hint (not only 'wrong values')."""
    try:
        check(broken)
    except CheckFailure as err:
        return "Hint:" in str(err) or "in place" in str(err)
    return False


def test_at_least_nine_in_ten_typical_mistakes_of_each_exercise_are_named():
    cases = {
        "8.2": (checks.check_causal_attention, [*BROKEN_ATTENTION.values(), _one_batch_dim, _no_transpose,
                                                _in_place]),
        "8.3": (checks.check_transformer_block, [_variant(**f) for f, __ in BROKEN_BLOCKS.values()]
                + [_variant(prenorm=False), _variant(residual=False), _variant(act=F.relu),
                   _variant(scale=1.0), _variant(merge="interleaved"), _variant(split_transpose=False)]),
        "8.4": (checks.check_gpt, [_gpt_variant(**f) for f, __ in BROKEN_GPTS.values()]
                + [_gpt_variant(positions=False), _gpt_variant(final_norm=False)]),
    }
    for exercise, (check, broken) in cases.items():
        named = sum(_named(check, b) for b in broken)
        assert len(broken) >= 5 and named >= 0.9 * len(broken), (exercise, named, len(broken))


def test_a_mistake_the_check_does_not_know_gets_an_honest_message():
    with pytest.raises(CheckFailure) as err:
        checks.check_causal_attention(lambda q, k, v: _causal_attention(q, k, v) + 0.5)
    assert "derivation" not in str(err.value)
    assert "typical mistakes this check knows" in str(err.value)


# ---------------------------------------------------------------- each exercise graded on its own
def my_causal_attention(q, k, v):  # the reader's Exercise 8.2, wrong: no scale
    return _attend(q, k, v, scale=1.0)


class BlockOnMyAttention(Block):
    """Exercise 8.3 written on the reader's own causal attention, as the chapter suggests."""

    def __init__(self, d_model, n_heads, prenorm=True):
        super().__init__(d_model, n_heads, prenorm=prenorm)

    def attn(self, x):
        B, T, _ = x.shape
        q, k, v = (_split(W, x, self.n_heads) for W in (self.W_Q, self.W_K, self.W_V))  # (B, H, T, d_head)
        return self.W_O(_merge(my_causal_attention(q, k, v)))


def test_a_wrong_causal_attention_does_not_fail_the_block_that_calls_it(capsys):
    with pytest.raises(CheckFailure, match="scale"):
        checks.check_causal_attention(my_causal_attention)
    assert checks.check_transformer_block(BlockOnMyAttention)
    assert "in place of yours" in capsys.readouterr().out
    assert globals()["my_causal_attention"] is my_causal_attention  # put back after the check
    from beforeqkv.checks import grading
    assert grading.verify("check_transformer_block", BlockOnMyAttention)


def test_a_wrong_block_on_the_readers_attention_still_fails():
    post_norm = type("PostNorm", (BlockOnMyAttention,), {
        "__init__": lambda self, d, h: BlockOnMyAttention.__init__(self, d, h, prenorm=False)})
    with pytest.raises(CheckFailure, match="post-norm"):
        checks.check_transformer_block(post_norm)
    from beforeqkv.checks import grading
    with pytest.raises(AssertionError, match="post-norm"):
        grading.verify("check_transformer_block", post_norm)
    assert globals()["my_causal_attention"] is my_causal_attention


def test_the_solution_block_gets_no_note_about_replaced_functions(capsys):
    assert checks.check_transformer_block(Block)
    assert "in place of yours" not in capsys.readouterr().out


def test_the_swap_reaches_a_notebooks_code_and_leaves_installed_code_alone():
    import json
    import types

    from beforeqkv.checks import _earlier
    main = types.FunctionType(compile("def f(): pass", "<cell>", "exec").co_consts[0], {"__name__": "__main__"})
    main.__module__ = "__main__"
    assert _earlier._readers_own(main) and _earlier._readers_own(BlockOnMyAttention)
    assert not _earlier._readers_own(json.dumps) and not _earlier._readers_own(torch.nn.Linear)


def test_the_standard_library_is_not_the_readers_on_python_3_9(monkeypatch):
    """Python 3.9 has no sys.stdlib_module_names: the standard library is known by its folder
    (the versions row on 3.9 found json.dumps taken for the reader's own code)."""
    import json
    import textwrap

    from beforeqkv.checks import _earlier
    monkeypatch.delattr(sys, "stdlib_module_names", raising=False)
    assert not _earlier._readers_own(json.dumps) and not _earlier._readers_own(textwrap.dedent)
    assert _earlier._readers_own(BlockOnMyAttention)
    monkeypatch.setattr(_earlier, "_STDLIB", "/nowhere/")  # no folder test: what 3.9 did before
    assert _earlier._readers_own(json.dumps) and _earlier._readers_own(textwrap.dedent)


def test_the_package_note_is_said_once_per_notebook_cell(monkeypatch, capsys):
    """Chapter 11's last cell runs two checks that both replace my_rmsnorm and my_rotary:
    one note under the cell, not two; a new cell says it again; outside a notebook, every time."""
    from beforeqkv.checks import _earlier
    cell = {"n": 7}
    monkeypatch.setattr(_earlier, "_cell", lambda: cell["n"])
    monkeypatch.setitem(_earlier._SAID, "last", None)
    _earlier.used_the_package(["my_rmsnorm", "my_rotary"])
    _earlier.used_the_package(["my_rmsnorm", "my_rotary"])
    assert capsys.readouterr().out.count("my_rmsnorm, my_rotary") == 1
    _earlier.used_the_package(["my_rotary"])  # other names: said
    cell["n"] = 8
    _earlier.used_the_package(["my_rotary"])  # a new cell: said
    assert capsys.readouterr().out.count("(this check") == 2
    cell["n"] = None
    _earlier.used_the_package(["my_rotary"])
    _earlier.used_the_package(["my_rotary"])
    _earlier.used_the_package([])
    assert capsys.readouterr().out.count("(this check") == 2
