"""One configurable Transformer block and a small GPT built from it (chapter 8).

The block is attention + MLP, each wrapped in a residual connection and a norm:

    pre-norm  (GPT-2, Llama):  x = x + attn(norm(x));  x = x + mlp(norm(x))
    post-norm (2017, BERT):    x = norm(x + attn(x));  x = norm(x + mlp(x))

Every option a real model of Part IV needs is a constructor argument, so MiniLM
(post-LN, GELU, biases, learned positions) and SmolLM2 (RMSNorm, rotary positions,
grouped key/value heads, SwiGLU, no biases, tied embeddings) load into this code.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from ..attention import KVCache, MultiHeadAttention, rotary_tables
from .embeddings import Embedding
from .blocks import ACTIVATIONS, MLP, NORMS, RMSNorm, make_norm
from .._validate import check_finite, check_finite_number, check_ids, check_positive

__all__ = ["TransformerBlock", "TransformerConfig", "Transformer", "GPT", "RMSNorm", "MLP"]

POSITIONS = ("learned", "rotary", "none")


class TransformerBlock(nn.Module):
    """Attention then MLP, each with a residual connection and a norm (pre- or post-norm).

    x: (B, T, d_model) -> (B, T, d_model). ``residual=False`` drops both skip
    connections (the residual experiment of chapter 8); ``norm="none"`` drops the norms.
    """

    def __init__(self, d_model: int, n_heads: int, *, d_mlp: int | None = None, d_head: int | None = None,
                 n_kv_heads: int | None = None, norm: str = "layernorm", norm_eps: float = 1e-5,
                 prenorm: bool = True, activation: str = "gelu", bias: bool = True, residual: bool = True,
                 fast: bool = True):
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"unknown norm {norm!r}: choose one of {NORMS}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown MLP activation {activation!r}: choose one of {ACTIVATIONS}")
        self.prenorm, self.residual = prenorm, residual
        self.attn = MultiHeadAttention(d_model, n_heads, d_head=d_head, n_kv_heads=n_kv_heads, bias=bias, fast=fast)
        self.mlp = MLP(d_model, 4 * d_model if d_mlp is None else d_mlp, activation=activation, bias=bias)
        self.norm_attn = make_norm(norm, d_model, norm_eps, bias)
        self.norm_mlp = make_norm(norm, d_model, norm_eps, bias)

    def _sublayer(self, x, fn, norm):
        if self.prenorm:
            out = fn(norm(x))
            return x + out if self.residual else out
        return norm(x + fn(x)) if self.residual else norm(fn(x))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, causal: bool = True, rope=None,
                kv_cache: KVCache | None = None, layer: int = 0):
        """mask: bool broadcastable to (B, H, T, T_k), True = may attend; rope: (cos, sin) (T, d_head)."""
        def attn(h):
            return self.attn(h, mask=mask, causal=causal, rope=rope, kv_cache=kv_cache, layer=layer)

        x = self._sublayer(x, attn, self.norm_attn)  # (B, T, d_model)
        return self._sublayer(x, self.mlp, self.norm_mlp)  # (B, T, d_model)


@dataclass
class TransformerConfig:
    """Sizes and options of a :class:`Transformer`; the defaults are a small pre-LN GPT-2-style model.

    ``causal=False`` makes an encoder (BERT, MiniLM).
    """

    d_vocab: int
    n_ctx: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_mlp: int | None = None  # default 4 * d_model
    d_head: int | None = None  # default d_model // n_heads
    n_kv_heads: int | None = None  # < n_heads: grouped key/value heads
    norm: str = "layernorm"  # "layernorm" | "rmsnorm" | "none"
    norm_eps: float = 1e-5
    prenorm: bool = True
    activation: str = "gelu"  # the MLP's: "relu" | "gelu" | "gelu_tanh" | "swiglu"
    bias: bool = True
    positions: str = "learned"  # "learned" | "rotary" | "none"
    rope_base: float = 10000.0
    causal: bool = True  # False: an encoder (or the unmasked model of the mask experiment)
    residual: bool = True
    embed_norm: bool = False  # a norm right after the embeddings (BERT)
    final_norm: bool | None = None  # a norm before the unembedding; default: = prenorm
    tie_embeddings: bool = False  # W_U = W_E^T
    fast: bool = True  # torch's fused attention kernel (False: the explicit teaching path)
    init_std: float = 0.02  # N(0, init_std^2) weights; residual projections / sqrt(2 n_layers)

    def __post_init__(self):
        check_positive(**{f"TransformerConfig.{name}": getattr(self, name)
                          for name in ("d_vocab", "n_ctx", "d_model", "n_heads", "n_layers")})
        if self.d_head is None and self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.norm not in NORMS:
            raise ValueError(f"unknown norm {self.norm!r}: choose one of {NORMS}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown MLP activation {self.activation!r}: choose one of {ACTIVATIONS}")
        if self.positions not in POSITIONS:
            raise ValueError(f"unknown positions {self.positions!r}: choose one of {POSITIONS}")
        check_finite_number("TransformerConfig.init_std", self.init_std, low=0, strict=True)
        if self.final_norm is None:
            self.final_norm = self.prenorm

    def block_options(self) -> dict:
        """The keyword arguments of one :class:`TransformerBlock` of this model."""
        return dict(d_model=self.d_model, n_heads=self.n_heads, d_mlp=self.d_mlp, d_head=self.d_head,
                    n_kv_heads=self.n_kv_heads, norm=self.norm, norm_eps=self.norm_eps, prenorm=self.prenorm,
                    activation=self.activation, bias=self.bias, residual=self.residual, fast=self.fast)


class Transformer(nn.Module):
    """A stack of blocks between an embedding and an unembedding (chapter 8).

    ``forward(tokens)``: (B, T) ints -> logits (B, T, d_vocab). With ``kv_cache=`` the
    tokens continue the cached ones (positions are offset by the cache length). An
    encoder is a ``Transformer`` with ``causal=False``; a decoder is a :class:`GPT`.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise ValueError(f"{type(self).__name__} needs a TransformerConfig, got {type(config).__name__}")
        self.config = c = config
        self.W_E = Embedding(c.d_vocab, c.d_model)
        self.W_pos = Embedding(c.n_ctx, c.d_model) if c.positions == "learned" else None
        self.norm_embed = make_norm(c.norm, c.d_model, c.norm_eps, c.bias) if c.embed_norm else nn.Identity()
        self.blocks = nn.ModuleList([TransformerBlock(**c.block_options()) for _ in range(c.n_layers)])
        self.norm_final = make_norm(c.norm, c.d_model, c.norm_eps, c.bias) if c.final_norm else nn.Identity()
        self.W_U = nn.Linear(c.d_model, c.d_vocab, bias=False)
        self.reset_buffers()
        if c.tie_embeddings:
            self.W_U.weight = self.W_E.weight  # (d_vocab, d_model), shared
        self.reset_parameters()

    def reset_buffers(self, device=None) -> None:
        """Compute the buffers that are not in the ``state_dict``: the rotary cos/sin tables.

        They follow from the config alone, so a checkpoint does not store them; a model
        built on the meta device and loaded with ``load_state_dict(assign=True)`` gets
        them here (``device``: where to put them; default torch's current device).
        """
        c = self.config
        if c.positions == "rotary":
            d_head = self.blocks[0].attn.d_head
            if torch.empty(0, device=device).is_meta:  # (also under torch.device("meta")) shapes only
                cos = sin = torch.empty(c.n_ctx, d_head, device=device)
            else:
                cos, sin = rotary_tables(c.n_ctx, d_head, base=c.rope_base, device=device)
            self.register_buffer("rope_cos", cos, persistent=False)  # (n_ctx, d_head)
            self.register_buffer("rope_sin", sin, persistent=False)

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """GPT-2's init: weights and embeddings ~ N(0, init_std^2), biases 0, norms 1.

        The two projections that write into the residual stream (``attn.W_O`` and
        ``mlp.W_out``) get ``init_std / sqrt(2 n_layers)``, so the stream's variance at
        init does not grow with depth. A tied ``W_E = W_U^T`` gets ``init_std`` too,
        not ``nn.Embedding``'s N(0, 1).
        """
        std = self.config.init_std
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, (nn.LayerNorm, RMSNorm)):
                nn.init.ones_(module.weight)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
        for block in self.blocks:
            for proj in (block.attn.W_O, block.mlp.W_out):
                nn.init.normal_(proj.weight, mean=0.0, std=std / (2 * self.config.n_layers) ** 0.5)

    def hidden_states(self, tokens: torch.Tensor, mask: torch.Tensor | None = None,
                      kv_cache: KVCache | None = None):
        """The residual stream after the last block (and final norm): (B, T) -> (B, T, d_model).

        The attention weights of every layer: :func:`beforeqkv.attention.with_weights`.
        """
        c = self.config
        check_ids("tokens", tokens, c.d_vocab, dim=2)
        offset = 0 if kv_cache is None else kv_cache.length(0)
        t = tokens.shape[1]
        if offset + t > c.n_ctx:
            raise ValueError(f"{offset + t} tokens (cache {offset} + new {t}) exceed the context n_ctx={c.n_ctx}")
        x = self.W_E(tokens)  # (B, T, d_model)
        if self.W_pos is not None:
            x = x + self.W_pos(torch.arange(offset, offset + t, device=tokens.device))  # (B, T, d_model)
        if c.positions == "rotary":  # rows offset .. offset + T of the tables
            rope = (self.rope_cos[offset:offset + t], self.rope_sin[offset:offset + t])  # (T, d_head)
        else:
            rope = None
        x = self.norm_embed(x)
        for i, block in enumerate(self.blocks):
            x = block(x, mask=mask, causal=c.causal, rope=rope, kv_cache=kv_cache, layer=i)
        return self.norm_final(x)  # (B, T, d_model)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None,
                kv_cache: KVCache | None = None):
        """tokens: (B, T) ints -> logits (B, T, d_vocab)."""
        return self.W_U(self.hidden_states(tokens, mask, kv_cache))  # (B, T, d_vocab)


class GPT(Transformer):
    """A decoder-only Transformer (causal attention) that can :meth:`generate` text (chapter 8)."""

    @torch.no_grad()
    def generate(self, tokens: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, generator: torch.Generator | None = None, *,
                 stop_token: int | None = None, use_cache: bool = True) -> torch.Tensor:
        """Sample ``max_new_tokens`` tokens after ``tokens`` (B, T0) or (T0,); returns prompt + new.

        Uses a KV cache: each new token runs through the model alone and attends to the
        cached keys and values. Once the sequence outgrows ``n_ctx`` each step re-reads
        the last ``n_ctx`` tokens without a cache (learned positions cannot slide);
        ``use_cache=False`` re-reads them every step (same tokens, slower).
        ``temperature=0`` picks the most likely token; ``top_k`` keeps the k best.
        ``stop_token``: stop once every sequence has written it (it is kept; a sequence
        that stopped early repeats it while the others go on), so fewer tokens may come back.
        """
        seq, squeeze = self._check_generate_args(tokens, max_new_tokens, temperature, top_k, stop_token)
        n_ctx = self.config.n_ctx
        was_training = self.training
        self.eval()
        cache = KVCache(capacity=min(n_ctx, seq.shape[1] + max_new_tokens)) if use_cache else None
        done = torch.zeros(seq.shape[0], dtype=torch.bool)  # (B,) wrote stop_token
        logits = self._last_logits(seq[:, -n_ctx:], cache) if max_new_tokens else None  # (B, d_vocab)
        for step in range(max_new_tokens):
            nxt = _sample(logits, temperature, top_k, generator)  # (B, 1) on the CPU
            if stop_token is not None:
                nxt[done] = stop_token
                done |= nxt[:, 0] == stop_token
            seq = torch.cat([seq, nxt.to(seq.device)], dim=1)  # (B, T + 1)
            if step == max_new_tokens - 1 or (stop_token is not None and done.all()):
                break  # no forward pass for a token nobody reads
            if cache is not None and cache.length(0) < n_ctx:
                logits = self._last_logits(seq[:, -1:], cache)  # (B, d_vocab)
            else:
                cache = None
                logits = self._last_logits(seq[:, -n_ctx:], None)
        self.train(was_training)
        return seq[0] if squeeze else seq

    def _check_generate_args(self, tokens, max_new_tokens, temperature, top_k, stop_token):
        """(prompt as (B, T0), whether it came as (T0,)), after checking every argument of :meth:`generate`."""
        if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
        check_finite_number("temperature", temperature, low=0)
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
            raise ValueError(f"top_k must be a positive int or None, got {top_k!r}")
        if stop_token is not None and (not isinstance(stop_token, int) or isinstance(stop_token, bool)
                                       or not 0 <= stop_token < self.config.d_vocab):
            raise ValueError(f"stop_token must be a token id in [0, {self.config.d_vocab}) or None, "
                             f"got {stop_token!r}")
        if not self.config.causal:
            raise ValueError("generate() needs a causal model (config.causal=True)")
        if not isinstance(tokens, torch.Tensor) or tokens.dim() not in (1, 2) or tokens.is_floating_point():
            got = getattr(tokens, "shape", tokens)
            raise ValueError(f"tokens must be a (B, T0) or (T0,) integer tensor, got {got!r}")
        if tokens.shape[-1] < 1:
            raise ValueError("generate() needs at least one prompt token")
        return (tokens.unsqueeze(0), True) if tokens.dim() == 1 else (tokens, False)

    def _last_logits(self, tokens: torch.Tensor, kv_cache: KVCache | None) -> torch.Tensor:
        """Logits at the last position only: (B, T) -> (B, d_vocab); ``W_U`` skips the rest."""
        return self.W_U(self.hidden_states(tokens, kv_cache=kv_cache)[:, -1])  # (B, d_vocab)


def _sample(logits, temperature, top_k, generator):
    """Next token (B, 1) from logits (B, V); sampled on the CPU so any generator works."""
    logits = logits.float().cpu()
    check_finite("the model's logits", logits)  # on the CPU already: no extra device sync
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)  # (B, 1)
