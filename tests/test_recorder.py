"""Attention weights read from outside the models (beforeqkv.recorder): hooks, not return branches."""
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from beforeqkv import models
from beforeqkv.attention import MultiHeadAttention, record_weights, with_weights
from beforeqkv.models import GPT, TransformerConfig

ROOT = Path(__file__).resolve().parents[1]


def _by_hand(mha, x, causal=False):
    """softmax(q k^T / sqrt(d_head)) per head, written out: (B, H, T, T)."""
    b, t, _ = x.shape
    q = mha.W_Q(x).view(b, t, mha.n_heads, mha.d_head).transpose(1, 2)
    k = mha.W_K(x).view(b, t, mha.n_heads, mha.d_head).transpose(1, 2)
    s = q @ k.transpose(-1, -2) / math.sqrt(mha.d_head)
    if causal:
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1)


@pytest.mark.parametrize("causal", [False, True])
def test_recorded_weights_are_the_softmax_of_the_scores_and_the_output_the_fused_one(seed, causal):
    mha = MultiHeadAttention(12, 3)  # fast=True: the fused kernel forms no weights
    x = torch.randn(2, 5, 12)
    with torch.no_grad():
        y, (a,) = with_weights(mha, x, causal=causal)
        torch.testing.assert_close(a, _by_hand(mha, x, causal))
        torch.testing.assert_close(y, mha(x, causal=causal), atol=1e-6, rtol=1e-5)
    assert mha.fast  # the fused path is back


def test_the_hooks_go_and_the_fast_setting_comes_back_also_after_an_error(seed):
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(1, 4, 8)
    with pytest.raises(RuntimeError, match="inside"):
        with record_weights(mha) as weights:
            mha(x)
            assert not mha.fast and len(weights) == 1
            raise RuntimeError("inside the block")
    assert mha.fast and not mha.tap._forward_hooks
    mha(x)
    assert len(weights) == 1  # nothing recorded after the block


def test_a_transformer_gives_one_map_per_layer_in_order(seed):
    model = GPT(TransformerConfig(d_vocab=11, n_ctx=8, d_model=16, n_heads=2, n_layers=3)).eval()
    tokens = torch.randint(0, 11, (2, 5))
    with torch.no_grad():
        logits, weights = with_weights(model, tokens)
        torch.testing.assert_close(logits, model(tokens), atol=1e-5, rtol=1e-5)
        x = model.W_E(tokens) + model.W_pos(torch.arange(5))
        for block, a in zip(model.blocks, weights):  # layer i's map is block i's own
            torch.testing.assert_close(a, _by_hand(block.attn, block.norm_attn(x), causal=True))
            x = block(x)
    assert len(weights) == 3


@pytest.mark.parametrize("make, inputs, shape", [
    (lambda: models.ContentMixer(), lambda g: (torch.randint(0, 16, (3, 16), generator=g),
                                                torch.randint(0, 16, (3,), generator=g)), (3, 16)),
    (lambda: models.StaticMixer(), lambda g: (torch.randint(0, 16, (3, 16), generator=g),
                                               torch.randint(0, 16, (3,), generator=g)), (3, 16)),
    (lambda: models.TriadModel(), lambda g: (torch.randint(0, 24, (3, 6), generator=g),
                                             torch.randint(0, 8, (3, 6), generator=g)), (3, 6, 6)),
    (lambda: models.RecallAttention(), lambda g: (torch.randint(0, 64, (3, 5), generator=g),
                                                  torch.randint(0, 16, (3, 5), generator=g),
                                                  torch.randint(0, 64, (3,), generator=g)), (3, 5)),
    (lambda: models.RingHeads(n_heads=2), lambda g: (torch.randint(0, 32, (3, 6), generator=g),
                                                     torch.randint(0, 8, (3, 6), generator=g)), (3, 2, 6, 6)),
])
def test_every_model_with_weights_hands_them_to_the_recorder_and_returns_only_its_output(make, inputs, shape, gen):
    model, args = make(), inputs(gen)
    out, (a,) = with_weights(model, *args)
    assert isinstance(out, torch.Tensor) and isinstance(model(*args), torch.Tensor)
    assert a.shape == shape
    torch.testing.assert_close(a.sum(-1), torch.ones(shape[:-1]))


def test_weights_recorded_with_gradients_on_let_the_loss_train(seed):
    model = models.RecallAttention()
    k, v, q = torch.randint(0, 64, (4, 6)), torch.randint(0, 16, (4, 6)), torch.randint(0, 64, (4,))
    logits, (a,) = with_weights(model, k, v, q)
    logits.sum().backward()
    assert a.grad_fn is not None and model.W_Q.weight.grad is not None


def test_a_module_without_weights_is_a_clear_error():
    with pytest.raises(ValueError, match="no attention weights"):
        with record_weights(nn.Linear(2, 2)):
            pass
    with pytest.raises(ValueError, match="torch module"):
        with record_weights(lambda x: x):
            pass
    with pytest.raises(ValueError, match="linear attention"):
        with_weights(models.RecallAttention(kind="linear", d_head=8), torch.randint(0, 64, (2, 3)),
                     torch.randint(0, 16, (2, 3)), torch.randint(0, 64, (2,)))


def test_no_model_returns_its_weights_through_a_keyword():
    """The models' forward returns one thing; the recorder is the one way to the weights."""
    found = []
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "tools").rglob("*.py"), *(ROOT / "book").glob("*.ipynb")]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"return_weights|need_weights=True", line):
                found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, found
