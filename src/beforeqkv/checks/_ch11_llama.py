"""Chapter 11's capstone checkers: the reader's Llama-style GPT, on random and real weights.

The reader's ``MyLlama(config)`` holds ``W_E`` (an ``nn.Embedding``), ``blocks[i]``
with ``W_Q, W_K, W_V, W_O, W_gate, W_in, W_out`` (``nn.Linear``, no bias) and the
RMSNorm gains ``norm_attn``, ``norm_mlp`` (``nn.Parameter``), and the gain
``norm_final``; no ``W_U`` (it is tied to ``W_E``). :func:`llama_weights` renames a
package model's state dict to those names.
"""
from __future__ import annotations

import re

import torch
import torch.nn.functional as F

from . import _core, _record
from ..attention import apply_rotary, rotary_tables
from ..i18n import N_, _
from ..models import GPT, TransformerConfig
from .ch08 import _randomise
from ._earlier import earlier_parts, used_the_package
from ._core import CheckFailure, checker

__all__ = ["check_llama", "check_smollm2", "llama_weights", "llama_config"]


def llama_weights(model: torch.nn.Module) -> dict:
    """A package Llama-style GPT's tensors under the names of the reader's ``MyLlama``.

    ``attn.`` and ``mlp.`` are dropped, a norm's ``.weight`` becomes the gain itself, and
    ``W_U.weight`` is left out: it is the same tensor as ``W_E.weight``. No copy is made.
    """
    if not isinstance(model, GPT):
        raise ValueError(f"llama_weights needs a package GPT, got {type(model).__name__}")
    out = {}
    for name, w in model.state_dict(keep_vars=True).items():
        if name == "W_U.weight":
            continue
        name = re.sub(r"(^|\.)(attn|mlp)\.", r"\1", name)
        out[re.sub(r"(norm_\w+)\.weight$", r"\1", name)] = w.detach()
    return out


def llama_config(d_vocab=13, n_ctx=16, d_model=16, n_heads=4, n_kv_heads=2, n_layers=2, d_mlp=24,
                 norm_eps=1e-5, rope_base=100.0) -> TransformerConfig:
    """A small configuration of SmolLM2's kind (RMSNorm, rotary, GQA, SwiGLU, tied, no bias)."""
    return TransformerConfig(d_vocab=d_vocab, n_ctx=n_ctx, d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                     d_mlp=d_mlp, n_kv_heads=n_kv_heads, norm="rmsnorm", norm_eps=norm_eps,
                     activation="swiglu", bias=False, positions="rotary", rope_base=rope_base,
                     tie_embeddings=True)


def _rotate(x, base, pairs=False):
    """Rotary positions 0..T-1 on x (..., T, d_head): rotate-half, or adjacent ``pairs``."""
    t, d = x.shape[-2], x.shape[-1]
    angle = torch.arange(t).float()[:, None] * base ** (-2 * torch.arange(d // 2).float() / d)  # (T, d/2)
    c, s = angle.cos(), angle.sin()
    if pairs:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2)  # (..., T, d)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([a * c - b * s, a * s + b * c], -1)  # (..., T, d)


def written_out(model, tokens, *, pairs=False, repeat=False, final_norm=True, eps="inside", gain=True,
                swap=False, rope="qk", causal=True, scale="d_head", softmax_dim=-1, act=F.silu):
    """The Llama forward of a package ``GPT``, written out; the options make the typical mistakes.

    rope: which of q, k, v are rotated ("qk" is right); scale: "d_head" or "d_model";
    softmax_dim: the axis of the attention's softmax; act: the gate's nonlinearity.
    """
    c = model.config
    n_h, n_kv, d_head = c.n_heads, c.n_kv_heads, c.d_model // c.n_heads

    def norm(x, w):
        ms = x.pow(2).mean(-1, keepdim=True)  # (B, T, 1)
        rms = {"inside": (ms + c.norm_eps).sqrt(), "outside": ms.sqrt() + c.norm_eps, "none": ms.sqrt()}[eps]
        return x / rms * (w if gain else 1.0)

    b, t = tokens.shape
    x = model.W_E(tokens)  # (B, T, d_model)
    future = torch.ones(t, t, dtype=torch.bool).triu(1)  # (T, T)
    for blk in model.blocks:
        h, a = norm(x, blk.norm_attn.weight), blk.attn
        q = a.W_Q(h).view(b, t, n_h, d_head).transpose(1, 2)  # (B, H, T, d_head)
        k = a.W_K(h).view(b, t, n_kv, d_head).transpose(1, 2)  # (B, H_kv, T, d_head)
        v = a.W_V(h).view(b, t, n_kv, d_head).transpose(1, 2)
        q, k, v = (_rotate(z, c.rope_base, pairs) if name in rope else z for name, z in zip("qkv", (q, k, v)))
        group = n_h // n_kv
        k, v = ((z.repeat(1, group, 1, 1) if repeat else z.repeat_interleave(group, 1)) for z in (k, v))
        scores = q @ k.transpose(-2, -1) / (d_head if scale == "d_head" else c.d_model) ** 0.5  # (B, H, T, T)
        scores = scores.masked_fill(future, float("-inf")) if causal else scores
        z = (scores.softmax(softmax_dim) @ v).transpose(1, 2).reshape(b, t, n_h * d_head)  # (B, T, d_model)
        x = x + a.W_O(z)
        h, m = norm(x, blk.norm_mlp.weight), blk.mlp
        gate, up = (m.W_in(h), m.W_gate(h)) if swap else (m.W_gate(h), m.W_in(h))  # (B, T, d_mlp)
        x = x + m.W_out(act(gate) * up)
    if final_norm:
        x = norm(x, model.norm_final.weight)
    return x @ model.W_E.weight.T  # (B, T, d_vocab): W_U = W_E


def reference_rmsnorm(x, weight, eps):
    """Exercise 11.1's answer, the package's way: x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    return x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * weight  # (..., d)


def reference_rotary(q, base):
    """Exercise 11.2's answer: q (..., T, d_head) turned by rotary positions 0..T-1 (rotate-half)."""
    cos, sin = rotary_tables(q.shape[-2], q.shape[-1], base=base, device=q.device, dtype=q.dtype)  # (T, d_head)
    return apply_rotary(q, cos, sin)


# Exercise 11.6 calls the reader's functions of Exercises 11.1 and 11.2: its checks call the package's.
EARLIER_PARTS = {"my_rmsnorm": reference_rmsnorm, "my_rotary": reference_rotary}


UNTIED = N_("SmolLM2 has no W_U of its own: the unembedding is tied to the embedding, "
            "logits = x @ W_E.weight.T. Drop your W_U (loading would leave it random).")


def _load(cls, model, meta=False):
    """The reader's model with ``model``'s weights (shared when ``meta``: no copy, no init)."""
    try:
        if meta:
            with torch.device("meta"):  # shapes only: every number comes from the package model
                mine = cls(model.config)
        else:
            mine = cls(model.config)
    except NotImplementedError:
        raise
    except Exception as err:
        raise CheckFailure(_("{name} raised {error}: {message}").format(
            name=f"{cls.__name__}(config)", error=type(err).__name__, message=err)) from None
    try:
        mine.load_state_dict(llama_weights(model), assign=meta)
    except RuntimeError as err:
        if "W_U" in str(err):
            raise CheckFailure(_("your model's weights do not load: {reason}").format(
                reason=_core.tr(UNTIED))) from None
        raise CheckFailure(_("the weights do not load into yours; keep the names of the given __init__ "
                             "(W_E, W_Q, ..., W_out, norm_attn, norm_mlp, norm_final).") + f"\n{err}") from None
    return mine.eval()


_CASES = [  # (config options, batch, T, seed)
    (dict(), 2, 7, 111),
    (dict(d_model=24, n_heads=6, n_kv_heads=2, n_layers=1, norm_eps=0.1, rope_base=10000.0), 1, 5, 112),
    (dict(d_model=8, n_heads=2, n_kv_heads=1, n_layers=1, d_mlp=12), 1, 1, 113),  # T = 1, one kv head
]


def _cases():
    for options, b, t, seed in _CASES:
        config = llama_config(**options)
        g = torch.Generator().manual_seed(seed)
        yield torch.randint(0, config.d_vocab, (b, t), generator=g), tuple(sorted(options.items())), seed


def _model(options, seed):
    return _randomise(GPT(llama_config(**dict(options))), seed)


MISTAKES = {
    N_("rotary pairs coordinate i with i + d_head/2 (rotate-half: the layout of Exercise 11.2 and of "
       "the un-permuted weights), not with its neighbour i + 1."): dict(pairs=True),
    N_("each key/value head serves n_heads / n_kv_heads CONSECUTIVE query heads: "
       "k.repeat_interleave(group, dim=1); k.repeat(...) deals them out in turn."): dict(repeat=True),
    N_("the final RMSNorm is missing: normalise with the gain norm_final before the unembedding."):
        dict(final_norm=False),
    N_("RMSNorm: eps goes inside the square root, sqrt(mean(x^2) + eps) (Exercise 11.1)."): dict(eps="outside"),
    N_("RMSNorm: add eps (config.norm_eps) to mean(x^2) before the square root."): dict(eps="none"),
    N_("RMSNorm: multiply by the learned gain (norm_attn, norm_mlp, norm_final)."): dict(gain=False),
    N_("SwiGLU: the silu acts on W_gate x and W_in x is the linear factor: "
       "W_out(silu(W_gate x) * W_in x)."): dict(swap=True),
    N_("rotary turns the queries AND the keys (my_rotary on both), so that a score q_i . k_j depends on "
       "i - j; you rotated the queries only."): dict(rope="q"),
    N_("rotary turns the queries and the keys, not the values: the values are read as they are."):
        dict(rope="qkv"),
    N_("rotary turns the queries and the KEYS, not the values: apply my_rotary to q and k, and leave v "
       "as it is."): dict(rope="qv"),
    N_("the rotary positions are missing: SmolLM2 has no position vectors, so apply my_rotary to each "
       "head's queries and keys."): dict(rope=""),
    N_("SmolLM2 is a decoder: mask the future, s_ij = -inf for j > i, before the softmax."): dict(causal=False),
    N_("the scale is 1/sqrt(d_head), the width of ONE head, not 1/sqrt(d_model)."): dict(scale="d_model"),
    N_("the attention's softmax runs over the keys, the last axis of the scores (dim=-1), not over the "
       "queries."): dict(softmax_dim=-2),
    N_("SwiGLU's gate goes through silu (F.silu), not GELU: W_out(silu(W_gate x) * W_in x)."): dict(act=F.gelu),
}

ERRORS = {
    r"size of tensor a \(\d+\) must match the size of tensor b|Expected size for first two dimensions":
        N_("there are fewer key/value heads than query heads: repeat each key/value head for its group, "
           "k.repeat_interleave(n_heads // n_kv_heads, dim=1), before the scores."),
}


def check_llama(cls):
    """Check ``cls(config)``, a Llama-style GPT: (B, T) ids -> (B, T, d_vocab) logits.

    On each case a small package ``GPT`` of SmolLM2's kind gets seeded random weights,
    :func:`llama_weights` copies them into the reader's model, and the logits must agree.
    Capstone of chapter 11 (the block and GPT of chapter 8).
    """
    __tracebackhide__ = True

    def run(tokens, options, seed):
        with torch.no_grad():
            return _load(cls, _model(options, seed))(tokens)

    def reference(tokens, options, seed):
        with torch.no_grad():
            return _model(options, seed)(tokens)

    def mistake(how):
        def wrong(tokens, options, seed):
            with torch.no_grad():
                return written_out(_model(options, seed), tokens, **how)
        return wrong

    mistakes = {hint: mistake(how) for hint, how in MISTAKES.items()}
    with earlier_parts(cls, EARLIER_PARTS) as replaced:
        try:
            _core._compare(run, reference, list(_cases()), "Llama GPT", mistakes, 1e-4, 1e-4,
                           lambda a: _("tokens {shape}, config {config}").format(
                               shape=tuple(a[0].shape), config=dict(a[1]) or _("default")), ERRORS)
        except CheckFailure as err:
            return _core._report("llama", err, getattr(cls, "forward", None))
    used_the_package(replaced)
    _core.passed(_("Llama GPT matches the package's on every case"))
    return _core.CheckResult("llama", True)


def _run(mine, tokens):
    """The reader's logits; their errors become a failed check, not a stopped notebook."""
    try:
        return _record.call("smollm2 run", lambda t: mine(t), tokens)[0]
    except NotImplementedError:
        raise CheckFailure(_core.not_implemented("smollm2")) from None
    except Exception as err:
        raise CheckFailure(_("with SmolLM2's weights your model raised {error}: {message}").format(
            error=type(err).__name__, message=err)) from None


@checker
def check_smollm2(cls, lm, new_tokens: int = 3):
    """Check ``cls(config)`` with SmolLM2's weights: the package model's logits and greedy tokens.

    lm: a :class:`beforeqkv.pretrained.smollm2.SmolLM2`. The reader's model is built on the
    meta device and takes the package model's tensors themselves (no copy); on "The capital
    of France is" its logits must agree with the package's to 1e-3 and its first
    ``new_tokens`` greedy tokens (each step re-reads the sequence) must be the package's.
    A pass returns what it measured in ``.measured``: ``max_diff``, the greedy ``text`` and the
    ``top`` three last-position logits by token (the chapter quotes them).
    """
    with earlier_parts(cls, EARLIER_PARTS) as replaced:
        result = _check_smollm2(cls, lm, new_tokens)
    used_the_package(replaced)
    return result


def _check_smollm2(cls, lm, new_tokens):
    mine = _record.call("smollm2 load", lambda: _load(cls, lm.model, meta=True))[0]
    ids = lm.tokenize("The capital of France is")
    tokens = torch.tensor([ids], device=lm.device)  # (1, T)
    with torch.no_grad():
        got = _run(mine, tokens)[0]  # (T, d_vocab)
        want = lm.logits(ids)  # (T, d_vocab)
        if got.shape != want.shape:
            raise CheckFailure(_("your logits have shape {got}, expected {want}").format(
                got=tuple(got.shape), want=tuple(want.shape)))
        diff = (got - want).abs().max().item()
        if not diff <= 1e-3:
            raise CheckFailure(_("with SmolLM2's weights your logits differ from the package's by up to {diff}, "
                                 "more than 1e-3; run check_llama first: on small models of SmolLM2's kind it "
                                 "names the typical mistakes it knows.").format(diff=f"{diff:.3g}"))
        seq = list(ids)
        for _step in range(new_tokens):
            seq.append(int(_run(mine, torch.tensor([seq], device=lm.device))[0, -1].argmax()))
    greedy = lm.generate_ids(ids, new_tokens, stop_at_eos=False)
    if seq[len(ids):] != greedy:
        raise CheckFailure(_("your greedy tokens {mine} are not the package's {package}").format(
            mine=repr(lm.decode(seq[len(ids):])), package=repr(lm.decode(greedy))))
    top = got[-1].topk(3)
    measured = dict(max_diff=diff, text=lm.decode(seq[len(ids):]),
                    top={lm.decode([i]): v for i, v in zip(top.indices.tolist(), top.values.tolist())})
    _core.passed(_("your GPT runs SmolLM2: logits within {diff} of the package's, greedy {text}, top logits "
                   "{top}").format(diff=f"{diff:.1e}", text=repr(measured["text"]),
                                   top=", ".join(f"{k!r} {v:.4f}" for k, v in measured["top"].items())))
    return _core.CheckResult("smollm2", True, measured=measured)
