"""Tests for the Transformer block and the GPT (chapter 8)."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from beforeqkv import attention, models
from beforeqkv.attention import KVCache, with_weights
from beforeqkv.models import GPT, TransformerConfig, MLP, TransformerBlock

TINY = dict(d_vocab=11, n_ctx=12, d_model=16, n_heads=4, n_layers=2)
VARIANTS = {
    "gpt2-like": dict(),
    "rotary+gqa": dict(positions="rotary", n_kv_heads=2, norm="rmsnorm", activation="swiglu", bias=False,
                       tie_embeddings=True),
    "post-norm": dict(prenorm=False, embed_norm=True, activation="relu"),
}


def _gpt(seed=0, **overrides):
    torch.manual_seed(seed)
    return GPT(TransformerConfig(**{**TINY, **overrides})).eval()


def _tokens(gen, b=3, t=12, v=11):
    return torch.randint(v, (b, t), generator=gen)


# ------------------------------------------------------------------ reference parity
@pytest.mark.parametrize("causal", [False, True])
def test_package_attention_matches_torch_sdpa(seed, causal):
    q, k, v = (torch.randn(2, 3, 7, 5) for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for fast in (True, False):
        got = attention.scaled_dot_product_attention(q, k, v, causal=causal, fast=fast)
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_block_attention_matches_nn_multihead_attention_with_copied_weights(seed, causal):
    block = TransformerBlock(d_model=12, n_heads=3, bias=True)
    for p in block.parameters():  # non-zero biases too
        nn.init.normal_(p, std=0.3)
    attn = block.attn
    ref = nn.MultiheadAttention(12, 3, bias=True, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([attn.W_Q.weight, attn.W_K.weight, attn.W_V.weight]))  # (3d, d)
        ref.in_proj_bias.copy_(torch.cat([attn.W_Q.bias, attn.W_K.bias, attn.W_V.bias]))
        ref.out_proj.weight.copy_(attn.W_O.weight)
        ref.out_proj.bias.copy_(attn.W_O.bias)
    x = torch.randn(2, 6, 12)
    blocked = ~attention.causal_mask(6) if causal else None  # nn.MultiheadAttention: True = blocked
    want, _ = ref(x, x, x, attn_mask=blocked, need_weights=False)
    torch.testing.assert_close(attn(x, causal=causal), want, atol=1e-5, rtol=1e-4)


def test_prenorm_block_is_x_plus_attn_then_x_plus_mlp(seed):
    block = TransformerBlock(d_model=8, n_heads=2).eval()
    x = torch.randn(2, 5, 8)
    h = x + block.attn(block.norm_attn(x), causal=True)
    want = h + block.mlp(block.norm_mlp(h))
    torch.testing.assert_close(block(x), want)


def test_postnorm_block_output_is_layer_normalised(seed):
    block = TransformerBlock(d_model=8, n_heads=2, prenorm=False).eval()
    y = block(torch.randn(2, 5, 8) * 3)
    torch.testing.assert_close(y.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)


def test_block_without_residual_forgets_its_input(seed):
    block = TransformerBlock(d_model=8, n_heads=2, residual=False, norm="none").eval()
    for lin in (block.mlp.W_out,):
        nn.init.zeros_(lin.weight)
        nn.init.zeros_(lin.bias)
    assert block(torch.randn(1, 4, 8)).abs().max() == 0  # nothing of x survives a zero MLP
    block.residual = True
    x = torch.randn(1, 4, 8)
    assert not torch.allclose(block(x), torch.zeros_like(x))


# ------------------------------------------------------------------ GPT
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_parallel_forward_equals_token_by_token_with_kv_cache(gen, variant):
    model = _gpt(**VARIANTS[variant])
    x = _tokens(gen)
    with torch.no_grad():
        full = model(x)  # (B, T, V)
        cache = KVCache()
        steps = torch.cat([model(x[:, t:t + 1], kv_cache=cache) for t in range(x.shape[1])], dim=1)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=0)
    assert cache.length(0) == x.shape[1]


def test_kv_cache_prefill_then_single_tokens_equals_parallel(gen):
    model = _gpt(positions="rotary")
    x = _tokens(gen)
    with torch.no_grad():
        cache = KVCache()
        out = torch.cat([model(x[:, :7], kv_cache=cache)] + [model(x[:, t:t + 1], kv_cache=cache)
                                                             for t in range(7, 12)], dim=1)
        torch.testing.assert_close(out, model(x), atol=1e-5, rtol=0)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_causal_gpt_ignores_perturbed_future_tokens(gen, variant):
    model = _gpt(**VARIANTS[variant])
    x = _tokens(gen)
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 1) % TINY["d_vocab"]  # change every token from position 6 on
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :6], b[:, :6])
    assert (a[:, 6:] - b[:, 6:]).abs().max() > 1e-3


def test_unmasked_gpt_sees_future_tokens(gen):
    model = _gpt(causal=False)
    x = _tokens(gen)
    y = x.clone()
    y[:, -1] = (y[:, -1] + 1) % TINY["d_vocab"]
    with torch.no_grad():
        assert (model(x)[:, 0] - model(y)[:, 0]).abs().max() > 1e-4


def test_gpt_runs_on_device(device, gen):
    model = _gpt().to(device)
    out = model(_tokens(gen).to(device))
    assert out.shape == (3, 12, TINY["d_vocab"]) and out.device.type == device.type
    assert model.generate(torch.tensor([1, 2], device=device), 3).shape == (5,)


def test_tied_embeddings_share_one_matrix():
    model = _gpt(tie_embeddings=True)
    assert model.W_U.weight is model.W_E.weight
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in _gpt().parameters())


def test_rotary_gpt_has_no_position_table_and_no_rotary_in_state_dict():
    model = _gpt(positions="rotary")
    assert model.W_pos is None
    assert not any("rope" in k for k in model.state_dict())


# ------------------------------------------------------------------ generation
def test_generate_same_seed_gives_same_text():
    model = _gpt()
    prompt = torch.tensor([[1, 2, 3]])
    a = model.generate(prompt, 20, generator=torch.Generator().manual_seed(5))
    b = model.generate(prompt, 20, generator=torch.Generator().manual_seed(5))
    c = model.generate(prompt, 20, generator=torch.Generator().manual_seed(6))
    assert a.shape == (1, 23) and torch.equal(a, b) and not torch.equal(a, c)
    assert torch.equal(a[:, :3], prompt)


def test_greedy_generation_follows_argmax_of_parallel_forward():
    model = _gpt(positions="rotary", n_kv_heads=1)
    out = model.generate(torch.tensor([4, 5]), 6, temperature=0)  # (8,)
    with torch.no_grad():
        logits = model(out.unsqueeze(0))[0]  # (8, V)
    assert torch.equal(logits[1:-1].argmax(-1), out[2:])


def test_generate_beyond_context_keeps_going_with_a_window():
    model = _gpt()
    out = model.generate(torch.tensor([1]), 30, temperature=0)  # n_ctx = 12
    assert out.shape == (31,)
    with torch.no_grad():
        last = model(out[-13:-1].unsqueeze(0))[0, -1].argmax()  # (the last 12 tokens predict the next)
    assert last == out[-1]


def test_top_k_one_is_greedy():
    model = _gpt()
    a = model.generate(torch.tensor([3]), 8, top_k=1, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a, model.generate(torch.tensor([3]), 8, temperature=0))


def test_generate_without_the_cache_writes_the_same_tokens():
    model = _gpt(**VARIANTS["rotary+gqa"])
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    cached = model.generate(prompt, 15, temperature=0)  # runs past n_ctx = 12: a sliding window
    assert torch.equal(model.generate(prompt, 15, temperature=0, use_cache=False), cached)


def test_generate_stops_at_the_stop_token_and_keeps_it():
    model = _gpt()
    free = model.generate(torch.tensor([3]), 8, temperature=0)  # (9,)
    stop = int(free[4])  # the 4th new token
    first = next(i for i in range(1, 9) if free[i] == stop)
    out = model.generate(torch.tensor([3]), 8, temperature=0, stop_token=stop)
    assert torch.equal(out, free[:first + 1]) and out[-1] == stop


def test_a_batch_stops_once_every_sequence_has_written_the_stop_token():
    model = _gpt()
    prompt = torch.tensor([[3], [7]])
    free = model.generate(prompt, 8, temperature=0)  # (2, 9)
    stop = int(free[0, 2])
    out = model.generate(prompt, 8, temperature=0, stop_token=stop)
    ends = [next((t for t in range(1, 9) if free[r, t] == stop), 8) for r in range(2)]  # where each row stops
    assert out.shape == (2, max(ends) + 1)
    for r, end in enumerate(ends):
        assert torch.equal(out[r, :end + 1], free[r, :end + 1])
        assert (out[r, end + 1:] == stop).all()  # a finished row repeats the stop token


def test_generate_runs_one_forward_pass_per_new_token_but_the_last():
    model = _gpt(positions="rotary")
    calls = []
    model.blocks[0].register_forward_hook(lambda module, args, out: calls.append(args[0].shape[1]))
    model.generate(torch.tensor([[1, 2, 3]]), 5, temperature=0)
    assert calls == [3, 1, 1, 1, 1]  # the prompt once, then one token at a time; none after the 5th
    calls.clear()
    assert model.generate(torch.tensor([1, 2]), 0).tolist() == [1, 2] and calls == []


def test_reset_buffers_computes_the_rotary_tables_of_a_model_built_on_meta():
    config = TransformerConfig(**{**TINY, "positions": "rotary"})
    with torch.device("meta"):
        model = GPT(config)
    assert model.rope_cos.is_meta
    model.reset_buffers(device="cpu")
    cos, sin = attention.rotary_tables(config.n_ctx, config.d_model // config.n_heads)
    assert torch.equal(model.rope_cos, cos) and torch.equal(model.rope_sin, sin)


# ------------------------------------------------------------------ errors
def test_tokens_beyond_context_raise():
    model = _gpt()
    with pytest.raises(ValueError, match="n_ctx"):
        model(torch.zeros(1, 13, dtype=torch.long))
    cache = KVCache()
    model(torch.zeros(1, 10, dtype=torch.long), kv_cache=cache)
    with pytest.raises(ValueError, match="cache 10"):
        model(torch.zeros(1, 3, dtype=torch.long), kv_cache=cache)


@pytest.mark.parametrize("overrides, match", [
    (dict(d_model=10, n_heads=4), "divisible"),
    (dict(norm="batchnorm"), "unknown norm"),
    (dict(activation="tanh"), "unknown MLP"),
    (dict(positions="sinusoidal"), "unknown positions"),
    (dict(n_layers=0), "n_layers"),
    (dict(n_kv_heads=3), "multiple of n_kv_heads"),
])
def test_bad_config_raises_a_clear_error(overrides, match):
    with pytest.raises(ValueError, match=match):
        GPT(TransformerConfig(**{**TINY, **overrides}))


def test_bad_inputs_raise_clear_errors():
    model = _gpt()
    with pytest.raises(ValueError, match="integer"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"\[0, 11\)"):
        model(torch.tensor([[0, 11]]))
    with pytest.raises(ValueError, match="temperature"):
        model.generate(torch.tensor([1]), 3, temperature=-1)
    with pytest.raises(ValueError, match="top_k"):
        model.generate(torch.tensor([1]), 3, top_k=0)
    with pytest.raises(ValueError, match="causal"):
        _gpt(causal=False).generate(torch.tensor([1]), 3)
    with pytest.raises(ValueError, match="stop_token"):
        model.generate(torch.tensor([1]), 3, stop_token=11)
    with pytest.raises(ValueError, match="unknown norm"):
        TransformerBlock(8, 2, norm="layer")
    with pytest.raises(ValueError, match="unknown MLP"):
        MLP(8, 16, activation="swish")
    with pytest.raises(ValueError, match="TransformerConfig"):
        GPT(dict(TINY))


def test_models_namespace_exports_the_transformer():
    for name in ("TransformerBlock", "TransformerConfig", "GPT", "RecallTransformer", "RMSNorm", "MLP"):
        assert hasattr(models, name)
    assert math.isclose(TransformerConfig(**TINY).final_norm, True)


def test_recorded_weights_are_one_row_stochastic_causal_map_per_layer():
    from beforeqkv.models import GPT, TransformerConfig

    torch.manual_seed(0)
    model = GPT(TransformerConfig(d_vocab=11, n_ctx=8, d_model=16, n_heads=2, n_layers=3)).eval()
    tokens = torch.randint(0, 11, (2, 5))
    logits, weights = with_weights(model, tokens)
    torch.testing.assert_close(logits, model(tokens))
    assert len(weights) == 3 and all(w.shape == (2, 2, 5, 5) for w in weights)
    for w in weights:
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 5))
        assert w.triu(1).abs().max() == 0  # nothing attends to the future


def test_an_encoder_is_a_transformer_that_is_not_causal():
    from beforeqkv.models import GPT, Transformer, TransformerConfig

    enc = Transformer(TransformerConfig(d_vocab=7, n_ctx=6, d_model=8, n_heads=2, n_layers=1, causal=False))
    assert not isinstance(enc, GPT)
    _, weights = with_weights(enc, torch.randint(0, 7, (1, 4)))
    assert weights[0].triu(1).abs().max() > 0  # an encoder reads the whole sentence


@pytest.mark.parametrize("temperature", [float("nan"), float("inf"), "1.0", None])
def test_generate_rejects_a_temperature_that_is_not_a_finite_number(temperature):
    with pytest.raises(ValueError, match="temperature"):
        _gpt().generate(torch.tensor([1]), 3, temperature=temperature)


@pytest.mark.parametrize("prompt", [[1, 2], torch.tensor([1.0, 2.0]), torch.zeros(1, 1, 2, dtype=torch.long)])
def test_generate_rejects_a_prompt_that_is_not_an_integer_tensor(prompt):
    with pytest.raises(ValueError, match="tokens"):
        _gpt().generate(prompt, 3)


def test_init_is_gpt2_style_small_normal_with_depth_scaled_residual_projections():
    torch.manual_seed(0)
    cfg = TransformerConfig(d_vocab=500, n_ctx=64, d_model=128, n_heads=4, n_layers=8, tie_embeddings=True)
    model = GPT(cfg)
    assert model.W_U.weight is model.W_E.weight
    assert abs(model.W_E.weight.std().item() - 0.02) < 0.002  # not nn.Embedding's N(0, 1)
    assert abs(model.W_pos.weight.std().item() - 0.02) < 0.002
    assert abs(model.blocks[0].attn.W_Q.weight.std().item() - 0.02) < 0.002
    resid = 0.02 / (2 * 8) ** 0.5
    for block in model.blocks:
        for proj in (block.attn.W_O, block.mlp.W_out):
            assert abs(proj.weight.std().item() - resid) < 0.1 * resid
            assert (proj.bias == 0).all()
        assert (block.norm_attn.weight == 1).all() and (block.norm_attn.bias == 0).all()


def test_init_std_is_a_config_option_and_is_checked():
    torch.manual_seed(0)
    model = GPT(TransformerConfig(**{**TINY, "init_std": 0.1}))
    assert 0.08 < model.blocks[0].attn.W_Q.weight.std().item() < 0.12
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="init_std"):
            TransformerConfig(**{**TINY, "init_std": bad})


def test_blocks_and_attention_take_their_options_by_keyword_only():
    with pytest.raises(TypeError):
        TransformerBlock(8, 2, 32)  # d_mlp must be named
    with pytest.raises(TypeError):
        attention.MultiHeadAttention(8, 2, 4)  # d_head must be named
    c = TransformerConfig(**{**TINY, "d_mlp": 24, "n_kv_heads": 1})
    block = GPT(c).blocks[0]
    assert block.mlp.W_in.out_features == 24 and block.attn.n_kv_heads == 1
