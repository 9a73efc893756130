"""The attention primitives: teaching and fast paths agree, masks behave, bad input is named."""
import math

import pytest
import torch
import torch.nn.functional as F

from beforeqkv import attention as A
from beforeqkv.attention import with_weights


def qkv(b=2, tq=5, tk=7, d=8, dv=6, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, tq, d, generator=g)
    k = torch.randn(b, tk, d, generator=g)
    v = torch.randn(b, tk, dv, generator=g)
    return q.to(device), k.to(device), v.to(device)


def test_scores_are_scaled_dot_products():
    q, k, _ = qkv()
    s = A.attention_scores(q, k)
    torch.testing.assert_close(s, q @ k.transpose(-1, -2) / math.sqrt(8))
    torch.testing.assert_close(A.attention_scores(q, k, scale=1.0), q @ k.transpose(-1, -2))


def test_attention_weights_rows_sum_to_one():
    q, k, _ = qkv()
    w = A.attention_weights(A.attention_scores(q, k))
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 5))
    assert (w >= 0).all()


def test_teaching_path_equals_fast_path(device):
    q, k, v = qkv(device=device)
    slow = A.scaled_dot_product_attention(q, k, v, fast=False)
    fast = A.scaled_dot_product_attention(q, k, v, fast=True)
    torch.testing.assert_close(slow, fast, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_attend_matches_torch_sdpa(causal, device):
    q, k, v = qkv(tq=6, tk=6, device=device)
    ours = A.scaled_dot_product_attention(q, k, v, causal=causal, fast=False)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-4)


def test_causal_mask_is_lower_triangular_and_handles_a_cache():
    torch.testing.assert_close(A.causal_mask(4), torch.ones(4, 4).tril().bool())
    m = A.causal_mask(2, 5)  # the last 2 of 5 positions
    assert m.tolist() == [[True, True, True, True, False], [True] * 5]


def test_causal_attention_ignores_future_tokens():
    q, k, v = qkv(tq=6, tk=6)
    out = A.scaled_dot_product_attention(q, k, v, causal=True)
    k2, v2 = k.clone(), v.clone()
    k2[:, 4:] += 10.0
    v2[:, 4:] -= 10.0
    out2 = A.scaled_dot_product_attention(q, k2, v2, causal=True)
    torch.testing.assert_close(out[:, :4], out2[:, :4])
    assert not torch.allclose(out[:, 4:], out2[:, 4:])


def test_fully_masked_row_reads_zeros_in_both_paths():
    q, k, v = qkv(tq=3, tk=4)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    for fast in (False, True):
        out = A.scaled_dot_product_attention(q, k, v, mask=mask, fast=fast)
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out[:, 1], torch.zeros(2, 6))
    w = A.attention_weights(A.attention_scores(q, k), mask)
    torch.testing.assert_close(w[:, 1], torch.zeros(2, 4))


def test_masked_keys_get_zero_weight():
    q, k, v = qkv(tq=3, tk=4)
    mask = torch.tensor([True, False, True, True]).expand(3, 4)
    _, w = A.attend(q, k, v, mask=mask)
    assert (w[..., 1] == 0).all()


def test_single_query_single_key_reads_that_value():
    q, k, v = qkv(tq=1, tk=1)
    out, w = A.attend(q, k, v)
    torch.testing.assert_close(w, torch.ones(2, 1, 1))
    torch.testing.assert_close(out, v)


def test_linear_attention_teaching_equals_fast_weight_read(device):
    q, k, v = qkv(device=device)
    torch.testing.assert_close(A.linear_attention(q, k, v), A.linear_attention(q, k, v, via_memory=True),
                               atol=1e-4, rtol=1e-4)


def test_fast_weight_memory_has_fixed_size_whatever_the_length():
    for t in (1, 10, 1000):
        _, k, v = qkv(tk=t, d=4, dv=3)
        assert A.fast_weight_memory(k, v).shape == (2, 3, 4)


def test_rotary_preserves_norms_and_makes_scores_depend_on_offset_only():
    cos, sin = A.rotary_tables(16, 8)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 16, 8, generator=g)
    y = A.apply_rotary(x, cos, sin)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    q = torch.randn(8, generator=g).expand(1, 16, 8)
    k = torch.randn(8, generator=g).expand(1, 16, 8)
    s = A.apply_rotary(q, cos, sin) @ A.apply_rotary(k, cos, sin).transpose(-1, -2)  # (1, 16, 16)
    torch.testing.assert_close(s[0, 3, 1], s[0, 9, 7])  # same offset i - j = 2


def test_rotary_with_smollm2s_sizes_turns_fast_pairs_every_few_tokens_and_slow_ones_barely():
    """The numbers of exercise 11.5's model answer: base 100,000, d_head 64, 8,192 positions."""
    cos, sin = A.rotary_tables(8192, 64, base=100_000.0, dtype=torch.float64)  # (8192, 64)
    angle = torch.atan2(sin, cos)  # (8192, 64), wrapped to (-pi, pi]
    assert abs(angle[1, 0].item() - 1.0) < 1e-6  # pair 0: one radian a token, a circle in 2 pi
    assert 6.2 < 2 * math.pi / angle[1, 0].item() < 6.4
    theta_31 = angle[1, 31].item()  # the slowest pair (31 = d_head/2 - 1)
    assert 1.3e-5 < theta_31 < 1.5e-5 and 4.3e5 < 2 * math.pi / theta_31 < 4.5e5
    assert 0.11 < angle[8191, 31].item() < 0.13  # ~7 degrees over the whole context
    torch.testing.assert_close(angle[:, 31], angle[:, 63])  # c and c + d_head/2 turn together


@pytest.mark.parametrize("bad", [
    lambda: A.attention_scores(torch.randn(2, 3, 4), torch.randn(2, 3, 5)),
    lambda: A.attend(torch.randn(2, 3, 4), torch.randn(2, 3, 4), torch.randn(2, 5, 4)),
    lambda: A.attend(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4), mask=torch.ones(3, 3)),
    lambda: A.attend(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4),
                     mask=torch.ones(2, 3, dtype=torch.bool)),
    lambda: A.attention_scores(torch.arange(6).view(2, 3), torch.arange(6).view(2, 3)),
    lambda: A.attention_scores([1, 2], [3, 4]),
    lambda: A.causal_mask(0),
    lambda: A.causal_mask(4, 2),
    lambda: A.rotary_tables(4, 7),
])
def test_bad_inputs_raise_value_error_naming_the_problem(bad):
    with pytest.raises(ValueError):
        bad()


def test_multihead_rejects_indivisible_width_with_a_clear_message():
    with pytest.raises(ValueError, match="not divisible by n_heads"):
        A.MultiHeadAttention(30, 4)


def test_multihead_kv_cache_matches_full_causal_pass():
    torch.manual_seed(0)
    mha = A.MultiHeadAttention(16, 4, n_kv_heads=2)
    x = torch.randn(2, 6, 16)
    full = mha(x, causal=True)
    cache = A.KVCache()
    steps = [mha(x[:, t:t + 1], causal=True, kv_cache=cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache.length() == 6


def _record_sdpa(monkeypatch):
    """Record the keyword arguments every call to torch's fused kernel receives."""
    calls, real = [], F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(A.F, "scaled_dot_product_attention", spy)
    return calls


def test_plain_causal_attention_uses_is_causal_without_a_mask_tensor(monkeypatch):
    q, k, v = qkv(tq=6, tk=6)
    want = A.scaled_dot_product_attention(q, k, v, causal=True, fast=False)
    calls = _record_sdpa(monkeypatch)
    got = A.scaled_dot_product_attention(q, k, v, causal=True)
    assert calls == [{"is_causal": True, "scale": None}]
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_one_query_after_a_cache_needs_no_mask(monkeypatch):
    q, k, v = qkv(tq=1, tk=7)
    want = A.scaled_dot_product_attention(q, k, v, causal=True, fast=False)
    calls = _record_sdpa(monkeypatch)
    got = A.scaled_dot_product_attention(q, k, v, causal=True)
    assert calls == [{"scale": None}]
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("tq", [2, 5])
def test_several_queries_after_a_cache_match_the_teaching_path(tq):
    q, k, v = qkv(tq=tq, tk=7)
    torch.testing.assert_close(A.scaled_dot_product_attention(q, k, v, causal=True),
                               A.scaled_dot_product_attention(q, k, v, causal=True, fast=False),
                               atol=1e-5, rtol=1e-4)


def test_a_user_mask_with_causal_keeps_the_zero_row_fix(monkeypatch):
    q, k, v = qkv(tq=4, tk=4)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False  # query 2 may read nothing
    want = A.scaled_dot_product_attention(q, k, v, mask=mask, causal=True, fast=False)
    calls = _record_sdpa(monkeypatch)
    got = A.scaled_dot_product_attention(q, k, v, mask=mask, causal=True)
    assert "attn_mask" in calls[0] and "is_causal" not in calls[0]
    torch.testing.assert_close(got[:, 2], torch.zeros(2, 6))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


# ------------------------------------------------------------------ the KV cache's storage
def _kv(t, seed, b=2, h=3, d=4):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, h, t, d, generator=g), torch.randn(b, h, t, d, generator=g)


def test_kv_cache_writes_new_tokens_into_room_it_already_has():
    cache = A.KVCache(capacity=8)
    k0, v0 = _kv(3, 0)
    cache.update(0, k0, v0)
    start = cache.keys[0].data_ptr()
    steps = [_kv(1, s) for s in range(1, 4)]
    for k, v in steps:
        got_k, got_v = cache.update(0, k, v)
    assert cache.keys[0].data_ptr() == start, "the cache was copied instead of written in place"
    assert cache.keys[0].shape == (2, 3, 6, 4) and cache.length(0) == 6
    torch.testing.assert_close(got_k, torch.cat([k0] + [k for k, _ in steps], dim=-2), atol=0, rtol=0)
    torch.testing.assert_close(got_v, torch.cat([v0] + [v for _, v in steps], dim=-2), atol=0, rtol=0)


def test_kv_cache_without_a_capacity_grows_and_keeps_every_token():
    cache = A.KVCache()
    steps = [_kv(t, s) for s, t in enumerate([2, 1, 1, 3, 1, 5])]
    for layer in (0, 1):
        for k, v in steps:
            got_k, got_v = cache.update(layer, k, v)
        torch.testing.assert_close(got_k, torch.cat([k for k, _ in steps], dim=-2), atol=0, rtol=0)
        torch.testing.assert_close(got_v, torch.cat([v for _, v in steps], dim=-2), atol=0, rtol=0)
    assert cache.length(1) == 13 and cache.values[1].shape == (2, 3, 13, 4)


def test_kv_cache_under_autograd_appends_out_of_place_so_gradients_flow():
    cache = A.KVCache(capacity=4)
    k0, v0 = (t.requires_grad_() for t in _kv(2, 0))
    k1, v1 = (t.requires_grad_() for t in _kv(1, 1))
    cache.update(0, k0, v0)
    k, v = cache.update(0, k1, v1)
    (k.sum() + 2 * v.sum()).backward()
    torch.testing.assert_close(k0.grad, torch.ones_like(k0))
    torch.testing.assert_close(v1.grad, 2 * torch.ones_like(v1))


def test_kv_cache_rejects_keys_that_do_not_continue_it():
    cache = A.KVCache()
    cache.update(0, *_kv(2, 0, b=1))
    with pytest.raises(ValueError, match="do not continue"):
        cache.update(0, *_kv(1, 1, b=3))
    with pytest.raises(ValueError, match="capacity"):
        A.KVCache(capacity=0)


def test_grouped_heads_on_the_fused_path_match_the_teaching_path_with_a_cache():
    torch.manual_seed(0)
    mha = A.MultiHeadAttention(16, 4, n_kv_heads=2)
    x = torch.randn(2, 6, 16)
    mask = torch.ones(2, 1, 1, 6, dtype=torch.bool)
    mask[0, ..., :2] = False  # padded keys in the first sequence
    full, _ = with_weights(mha, x, mask=mask, causal=True)  # teaching path: explicit repetition
    torch.testing.assert_close(mha(x, mask=mask, causal=True), full, atol=1e-5, rtol=1e-5)
    cache = A.KVCache(capacity=6)
    first = mha(x[:, :4], causal=True, kv_cache=cache)
    rest = [mha(x[:, t:t + 1], causal=True, kv_cache=cache) for t in (4, 5)]
    torch.testing.assert_close(torch.cat([first] + rest, dim=1), mha(x, causal=True), atol=1e-5, rtol=1e-5)
