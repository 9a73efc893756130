"""Checkers for chapter 8: the causal mask, causal attention, the reader's block and GPT, predictions."""
from __future__ import annotations

import re

import torch
import torch.nn.functional as F

from . import _core, _record
from ..attention import attend, causal_mask
from ..i18n import N_, _
from ..models import GPT, TransformerConfig, TransformerBlock
from ._ch08_mistakes import ATTENTION_MISTAKES, HEAD_MISTAKES, _filled, _merge, _split
from ._earlier import earlier_parts, used_the_package
from ._core import CheckFailure, checker, compare, register_question

__all__ = ["check_causal_mask", "check_causal_attention", "check_transformer_block", "check_gpt",
           "reader_weights"]


@checker
def check_causal_mask(fn):
    """Check ``fn(T) -> (T, T)`` boolean mask with ``mask[i, j] = (j <= i)`` (True = may attend)."""
    for t in (1, 2, 5):  # a float 0/1 mask would pass the value comparison: catch it first
        try:
            got = _record.call("causal mask dtype", fn, t)[0]
        except Exception:  # compare() below reports it, with the reader's line
            break
        if isinstance(got, torch.Tensor) and got.dtype != torch.bool:
            raise CheckFailure(_("causal mask: return a boolean tensor (True = may attend), got dtype {dtype}. "
                                 "Hint: `.bool()` or a comparison such as `j <= i` gives one.").format(dtype=got.dtype))
    return compare(fn, lambda t: causal_mask(t), [(t,) for t in (1, 2, 3, 5, 16)], N_("causal mask"),
            mistakes={
                N_("your mask marks the BLOCKED positions (True = j > i). In this book True means "
                   "'may attend': keep j <= i, the lower triangle with its diagonal."):
                    lambda t: torch.ones(t, t).triu(1).bool(),
                N_("that mask lets each token see the FUTURE (j >= i): keep the lower triangle, tril, not triu."):
                    lambda t: torch.ones(t, t).triu().bool(),
                N_("a token may attend to itself: the diagonal (j = i) must be True; use tril() with diagonal=0."):
                    lambda t: torch.ones(t, t).tril(-1).bool(),
                N_("every token may see every other: nothing is masked yet."):
                    lambda t: torch.ones(t, t, dtype=torch.bool),
            },
            describe=lambda args: f"T={args[0]}")


# ---------------------------------------------------------------- causal attention
def _hint(name: str, d: str) -> str:
    """The hint of ``ATTENTION_MISTAKES[name]`` in the reader's language, ``{d}`` filled in."""
    return _core.tr(ATTENTION_MISTAKES[name][0]).format(d=d)


def _canonical(q, k, v):
    return attend(q, k, v, mask=causal_mask(q.shape[-2], k.shape[-2]))[0]


def _cases():
    g = torch.Generator().manual_seed(8)
    shapes = [(1, 4, 8), (5, 3, 4), (2, 6, 1), (2, 3, 7, 5)]  # (..., T, d); T = 1 and d = 1 included
    for shape in shapes:
        q, k, v = (torch.randn(*shape, generator=g) for _ in range(3))
        yield q, k, v


ATTENTION_ERRORS = {
    r"Expected size for first two dimensions of batch2 tensor|mat1 and mat2 shapes cannot be multiplied":
        N_("the scores are q @ k.transpose(-2, -1): each query (a row of q) meets every key (a row of k), "
           "so swap the last two axes of k, not of q."),
}


def check_causal_attention(fn):
    """Check ``fn(q, k, v) -> (..., T, d_v)``: softmax(q k^T / sqrt(d)) v with the future masked out."""
    return compare(fn, _canonical, list(_cases()), N_("causal attention"),
                   mistakes={_hint(name, "d"): wrong for name, (__, wrong) in ATTENTION_MISTAKES.items()},
                   describe=lambda args: _("q, k, v of shape {shape}").format(shape=tuple(args[0].shape)),
                   errors=ATTENTION_ERRORS)


# ---------------------------------------------------------------- the reader's block and GPT
def reader_weights(model: torch.nn.Module) -> dict:
    """The state_dict of a package block or GPT under the reader's names.

    The package nests the weights one level deeper (``attn.W_Q``, ``mlp.W_in``); the
    reader's block holds them directly (``W_Q``, ``W_in``): drop those two prefixes.
    """
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"reader_weights needs a package module, got {type(model).__name__}")
    return {re.sub(r"(^|\.)(attn|mlp)\.", r"\1", k): v for k, v in model.state_dict().items()}


def _randomise(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Seeded weights of order 1 (norm gains around 1), so every part changes the output."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            p.copy_(1 + 0.2 * noise if name.endswith("norm_attn.weight") or name.endswith("norm_mlp.weight")
                    or name.endswith("norm_final.weight") else 0.3 * noise)
    return model.eval()


def _load(cls, args, model, what, weights=None, kwargs=None):
    kwargs = kwargs or {}
    try:
        mine = cls(*args, **kwargs)
    except NotImplementedError:
        raise
    except TypeError as err:
        if "unexpected keyword argument 'block'" in str(err):
            raise CheckFailure(_("{what}: {cls} takes no `block=` argument; keep the given __init__, "
                                 "`block=MyBlock` included: the check plugs the package's block in there, so "
                                 "only your forward is graded.").format(what=what, cls=cls.__name__)) from None
        raise CheckFailure(_("{what}: {call} raised {error}: {message}").format(
            what=what, call=f"{cls.__name__}{args}", error="TypeError", message=err)) from None
    except Exception as err:
        raise CheckFailure(_("{what}: {call} raised {error}: {message}").format(
            what=what, call=f"{cls.__name__}{args}", error=type(err).__name__, message=err)) from None
    try:
        mine.load_state_dict(reader_weights(model) if weights is None else weights)
    except RuntimeError as err:
        raise CheckFailure(_("{what}: the package's weights do not load into yours; keep the names of the given "
                             "__init__ (W_Q, ..., W_in, W_out, norm_attn, norm_mlp).").format(what=what)
                           + f"\n{err}") from None
    return mine.eval()


def _block(x, n_heads, seed, **options):
    return _randomise(TransformerBlock(d_model=x.shape[-1], n_heads=n_heads, bias=True, **options), seed)


def _block_cases():
    g = torch.Generator().manual_seed(81)
    for (b, t, d_model, n_heads) in [(2, 7, 16, 4), (1, 1, 8, 2), (3, 5, 12, 1)]:  # T = 1, one head
        yield torch.randn(b, t, d_model, generator=g), n_heads, 10 + t


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def _written_out(x, n_heads, seed, attention=_canonical, split=_split, merge=_merge, *, project=True,
                 shortcut="x", act=F.gelu, mlp_norm="norm_mlp", norms=True, parallel=False):
    """The reference block written out; the options do the attention, the heads or the block the reader's way.

    project: apply W_O; shortcut: "x" (right) or "normed" (the residual starts from LN(x));
    act: the MLP's nonlinearity; mlp_norm: the LayerNorm before the MLP; norms: False leaves
    both out; parallel: the MLP reads the block's input instead of the attention's output.
    """
    ref = _block(x, n_heads, seed)
    a, m = ref.attn, ref.mlp

    def norm(name, z):
        return getattr(ref, name)(z) if norms else z

    def sublayer(f, name, z):
        h = norm(name, z)
        return (h if shortcut == "normed" else z) + f(h)

    def attn(h):
        q, k, v = (split(W(h), n_heads) for W in (a.W_Q, a.W_K, a.W_V))  # (B, H, T, d_head)
        z = merge(attention(q, k, v))  # (B, T, d_model)
        return a.W_O(z) if project else z

    def mlp(h):
        return m.W_out(act(m.W_in(h)))

    y = sublayer(attn, "norm_attn", x)
    return y + mlp(norm(mlp_norm, x)) if parallel else sublayer(mlp, mlp_norm, y)


def _block_mistakes():
    def written_out(**how):
        return lambda x, n, s: _written_out(x, n, s, **how)

    def by_d_model(x, n, s):
        return _written_out(x, n, s, attention=lambda q, k, v: _filled(q, k, v, scale=x.shape[-1] ** -0.5))

    def one_head(x, n, s):
        if n == 1:
            raise ValueError("one head was asked for: not a mistake here")  # the mistake does not apply
        return _written_out(x, 1, s)

    mistakes = {
        N_("this is post-norm, x = LN(x + attn(x)); the block is pre-norm: x = x + attn(LN(x)), "
           "then x = x + mlp(LN(x))."): lambda x, n, s: _block(x, n, s, prenorm=False)(x),
        N_("the residual connections are missing: ADD each sublayer's output to its input, "
           "x + attn(LN(x)), instead of replacing x."): lambda x, n, s: _block(x, n, s, residual=False)(x),
        N_("the MLP's nonlinearity is GELU (F.gelu), not ReLU."):
            lambda x, n, s: _block(x, n, s, activation="relu")(x),
    }
    mistakes.update({_hint(name, "d_head"): written_out(attention=wrong)
                     for name, (__, wrong) in ATTENTION_MISTAKES.items()})
    mistakes[N_("the scale is 1/sqrt(d_head), the width of ONE head, not 1/sqrt(d_model).")] = by_d_model
    mistakes.update({hint: written_out(split=split, merge=merge) for hint, split, merge in HEAD_MISTAKES.values()})
    mistakes.update(_own_block_mistakes(written_out, one_head))
    return mistakes


def _own_block_mistakes(written_out, one_head):
    """The block's own typical mistakes: hint -> wrong block (x, n_heads, seed)."""
    return {
        N_("the heads' concatenation goes through the output projection: return W_O(z), not z."):
            written_out(project=False),
        N_("the residual connection adds the sublayer's output to x itself, not to LN(x): "
           "x = x + attn(LN(x)), not LN(x) + attn(LN(x))."): written_out(shortcut="normed"),
        N_("split q, k and v into n_heads heads of width d_head = d_model / n_heads, each with its own "
           "softmax: you computed one head over all of d_model."): one_head,
        N_("the MLP's GELU is the exact one, F.gelu(x), not the tanh approximation (approximate='tanh')."):
            written_out(act=_gelu_tanh),
        N_("the MLP needs its nonlinearity between W_in and W_out, W_out(GELU(W_in x)): without it the "
           "two layers are one linear map."): written_out(act=lambda h: h),
        N_("each sublayer has its own LayerNorm: norm_attn before the attention, norm_mlp before the MLP."):
            written_out(mlp_norm="norm_attn"),
        N_("the LayerNorms are missing: x = x + attn(norm_attn(x)), then x = x + mlp(norm_mlp(x))."):
            written_out(norms=False),
        N_("the MLP reads the attention step's result: first x = x + attn(LN(x)), then x = x + mlp(LN(x)) "
           "with that new x, not both from the block's input."): written_out(parallel=True),
    }


def _report(cls, name, run, reference, cases, mistakes, describe, errors=None):
    """compare(), reported in the mode of the reader's ``forward`` (strict where it holds the solution)."""
    __tracebackhide__ = True
    try:
        _core._compare(run, reference, list(cases), name, mistakes, 1e-5, 1e-4, describe, errors or {})
    except CheckFailure as err:
        return _core._report(name, err, getattr(cls, "forward", None))
    _core.matches_everywhere(name)
    return _core.CheckResult(name, True)


# Exercise 8.3 may call the reader's functions of Exercises 8.1 and 8.2: the check calls the package's.
EARLIER_PARTS = {"my_causal_mask": lambda t: causal_mask(t), "my_causal_attention": _canonical}


def check_transformer_block(block_cls):
    """Check a pre-norm block class ``block_cls(d_model, n_heads)``, x (B, T, d_model) -> same.

    On each case the checker builds a ``models.TransformerBlock`` with seeded random weights,
    copies them into the reader's block with ``load_state_dict(reader_weights(package_block))``
    and compares the two outputs. Where the block calls ``my_causal_mask`` or
    ``my_causal_attention`` (Exercises 8.1, 8.2), the package's versions stand in for them
    (``EARLIER_PARTS``), so only the block is graded. A wrong block is compared with the mistakes of causal
    attention (``ATTENTION_MISTAKES``, per head), of the heads' split and merge
    (``HEAD_MISTAKES``) and of the block itself.
    """
    __tracebackhide__ = True

    def run(x, n_heads, seed):
        with torch.no_grad():
            return _load(block_cls, (x.shape[-1], n_heads), _block(x, n_heads, seed), _("your block"))(x)

    def reference(x, n_heads, seed):
        with torch.no_grad():
            return _block(x, n_heads, seed)(x)

    def mistake(wrong):
        def run_wrong(x, n_heads, seed):
            with torch.no_grad():
                return wrong(x, n_heads, seed)
        return run_wrong

    with earlier_parts(block_cls, EARLIER_PARTS) as replaced:
        result = _report(block_cls, N_("Transformer block"), run, reference, _block_cases(),
                         {hint: mistake(wrong) for hint, wrong in _block_mistakes().items()},
                         lambda a: _("x of shape {shape}, n_heads={n_heads}").format(
                             shape=tuple(a[0].shape), n_heads=a[1]))
    used_the_package(replaced)
    return result


GPT_SIZES = ("d_vocab", "n_ctx", "d_model", "n_heads", "n_layers")


def reference_block(d_model: int, n_heads: int) -> TransformerBlock:
    """The block ``check_gpt`` passes as ``block=``: the package's pre-norm block with biases."""
    return TransformerBlock(d_model, n_heads, bias=True)


def _gpt(sizes, seed, **options):
    return _randomise(GPT(TransformerConfig(**dict(zip(GPT_SIZES, sizes)), **options)), seed)


def _gpt_cases():
    g = torch.Generator().manual_seed(82)
    for sizes, (b, t) in [((11, 8, 16, 4, 2), (2, 8)), ((5, 6, 8, 2, 1), (1, 1)), ((7, 9, 12, 3, 3), (3, 4))]:
        yield torch.randint(0, sizes[0], (b, t), generator=g), sizes, 20 + t


def _gpt_written(tokens, sizes, seed, *, positions=True, final_norm=True, order=1, chain=True,
                 extra_residual=False, softmax=False, embed_scale=1.0, tied=False):
    """The reference GPT forward written out; the options make the typical mistakes.

    order: -1 runs the blocks backwards; chain: False gives every block the embeddings
    (only the last one counts); extra_residual: x = x + block(x); softmax: returns
    probabilities; embed_scale: multiplies W_E[token]; tied: W_E^T instead of W_U.
    """
    model = _gpt(sizes, seed)
    with torch.no_grad():
        x = model.W_E(tokens) * embed_scale  # (B, T, d_model)
        if positions:
            x = x + model.W_pos(torch.arange(tokens.shape[1]))
        h = x
        for block in list(model.blocks)[::order]:
            y = block(h if chain else x)
            h = h + y if extra_residual else y
        h = model.norm_final(h) if final_norm else h
        logits = h @ model.W_E.weight.T if tied else model.W_U(h)  # (B, T, d_vocab)
        return logits.softmax(-1) if softmax else logits


def _gpt_mistake(**how):
    return lambda tokens, sizes, seed: _gpt_written(tokens, sizes, seed, **how)


def _sqrt_d_model(tokens, sizes, seed):
    return _gpt_written(tokens, sizes, seed, embed_scale=sizes[2] ** 0.5)


GPT_MISTAKES = {
    N_("add the position vectors: x_t = W_E[token_t] + W_pos[t]."): _gpt_mistake(positions=False),
    N_("the final LayerNorm is missing: norm_final before W_U."): _gpt_mistake(final_norm=False),
    N_("run the blocks in order, blocks[0] first: for block in self.blocks: x = block(x)."): _gpt_mistake(order=-1),
    N_("each block reads the previous block's output: x = block(x) inside the loop, so that the blocks "
       "are stacked; yours gives every block the embeddings, and only the last one counts."):
        _gpt_mistake(chain=False),
    N_("the block already adds its residual connections: x = block(x), not x = x + block(x)."):
        _gpt_mistake(extra_residual=True),
    N_("forward returns the logits, the scores before any softmax (the loss applies it): no softmax at the end."):
        _gpt_mistake(softmax=True),
    N_("this GPT does not scale the token embedding by sqrt(d_model): x_t = W_E[token_t] + W_pos[t]."):
        _sqrt_d_model,
    N_("MyGPT has its own unembedding: logits = W_U(norm_final(x)), not x @ W_E.weight.T."):
        _gpt_mistake(tied=True),
}

GPT_ERRORS = {
    r"index out of range":
        N_("an index is out of range: W_pos is indexed by the positions, torch.arange(T), and W_E by the "
           "token ids."),
}


def check_gpt(gpt_cls):
    """Check a GPT class ``gpt_cls(d_vocab, n_ctx, d_model, n_heads, n_layers, block=...)``: ids -> logits.

    The checker builds the reader's GPT with ``block=reference_block`` (the package's
    block), so only the reader's forward is graded: a wrong block of Exercise 8.3 does
    not fail this check too. A ``models.GPT`` with seeded random weights, copied into the
    reader's model, must give the same logits (B, T, d_vocab).
    """
    __tracebackhide__ = True

    def run(tokens, sizes, seed):
        with torch.no_grad():
            package = _gpt(sizes, seed)
            mine = _load(gpt_cls, sizes, package, _("your GPT"), weights=package.state_dict(),
                         kwargs={"block": reference_block})
            return mine(tokens)

    def reference(tokens, sizes, seed):
        with torch.no_grad():
            return _gpt(sizes, seed)(tokens)

    return _report(gpt_cls, N_("GPT forward"), run, reference, _gpt_cases(), GPT_MISTAKES,
                   lambda a: _("tokens of shape {shape}, sizes {sizes}").format(
                       shape=tuple(a[0].shape), sizes=dict(zip(GPT_SIZES, a[1]))), GPT_ERRORS)


register_question(
    "ch8_iid_floor",
    digits=2,
    tolerance=0.05,  # the question says "to within 0.05"
    hint=N_("what is the best guess when the next token does not depend on the past, and what "
            "loss does it get?"),
    reveals=["ch8_ln16", "ch8_mask_parallel", "ch8_mask_prefix"],
)

register_question(
    "ch8_residual_no_norm",
    choices=["above", "below"],
    hint=N_("which path lets a block's input reach the next block unchanged, and does it need "
            "LayerNorm to exist?"),
    reveals=["ch8_acc_nonorm"],
)
