"""Property tests of attention.MultiHeadAttention (chapter 6)."""
import pytest
import torch
import torch.nn as nn

from beforeqkv import attention, models
from beforeqkv.attention import MultiHeadAttention, with_weights


def _x(b=2, t=5, d=8, seed=0):
    return torch.randn(b, t, d, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("fast", [True, False])
def test_attention_weights_rows_sum_to_one(seed, fast):
    mha = MultiHeadAttention(8, 2, fast=fast)
    _, (w,) = with_weights(mha, _x())
    assert w.shape == (2, 2, 5, 5)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 5))
    assert (w >= 0).all()


@pytest.mark.parametrize("fast", [True, False])
def test_multihead_attention_without_positions_is_permutation_equivariant(seed, fast):
    mha = MultiHeadAttention(8, 4, fast=fast)
    x, perm = _x(), torch.tensor([3, 0, 4, 1, 2])
    torch.testing.assert_close(mha(x[:, perm]), mha(x)[:, perm])


def test_one_head_of_full_width_equals_single_head_attention(seed):
    mha = MultiHeadAttention(8, 1)
    x = _x()
    q, k, v = mha.W_Q(x), mha.W_K(x), mha.W_V(x)  # (B, T, d)
    want = mha.W_O(attention.attend(q, k, v)[0])
    torch.testing.assert_close(mha(x), want)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("n_kv_heads", [None, 2])
def test_output_is_sum_over_heads_of_weighted_ov_matrices(seed, bias, n_kv_heads):
    mha = MultiHeadAttention(8, 4, n_kv_heads=n_kv_heads, bias=bias)
    x = _x()
    M, offset = models.per_pair_matrices(mha, x)  # (B, T, T, d, d)
    torch.testing.assert_close(models.mix_per_pair(M, x) + offset, mha(x).detach(), atol=1e-5, rtol=1e-4)


def test_ov_matrices_have_rank_at_most_d_head(seed):
    mha = MultiHeadAttention(16, 4)
    U = models.ov_matrices(mha)
    assert U.shape == (4, 16, 16)
    assert (torch.linalg.matrix_rank(U.detach()) == 4).all()


def _torch_mha(mha: MultiHeadAttention, bias: bool) -> nn.MultiheadAttention:
    ref = nn.MultiheadAttention(mha.d_model, mha.n_heads, bias=bias, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mha.W_Q.weight, mha.W_K.weight, mha.W_V.weight]))
        ref.out_proj.weight.copy_(mha.W_O.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([mha.W_Q.bias, mha.W_K.bias, mha.W_V.bias]))
            ref.out_proj.bias.copy_(mha.W_O.bias)
    return ref


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("fast", [True, False])
def test_matches_torch_multihead_attention_with_copied_weights(seed, bias, fast):
    mha = MultiHeadAttention(8, 2, bias=bias, fast=fast)
    x = _x()
    ref = _torch_mha(mha, bias)
    want, want_w = ref(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(mha(x), want, atol=1e-5, rtol=1e-4)
    _, (w,) = with_weights(mha, x)
    torch.testing.assert_close(w, want_w, atol=1e-5, rtol=1e-4)


def test_matches_torch_multihead_attention_with_a_causal_mask(seed):
    mha = MultiHeadAttention(8, 2)
    x = _x()
    ref = _torch_mha(mha, False)
    blocked = ~attention.causal_mask(5)  # torch: True = blocked
    want, _ = ref(x, x, x, attn_mask=blocked)
    torch.testing.assert_close(mha(x, causal=True), want, atol=1e-5, rtol=1e-4)


def test_fast_and_teaching_paths_agree(seed):
    fast = MultiHeadAttention(8, 2, fast=True)
    slow = MultiHeadAttention(8, 2, fast=False)
    slow.load_state_dict(fast.state_dict())
    x = _x()
    torch.testing.assert_close(fast(x), slow(x), atol=1e-6, rtol=1e-5)


def test_grouped_kv_heads_equal_explicit_repetition(seed):
    grouped = MultiHeadAttention(8, 4, d_head=2, n_kv_heads=2)
    full = MultiHeadAttention(8, 4, d_head=2)
    sd = grouped.state_dict()
    rep = lambda W: W.view(2, 2, 8).repeat_interleave(2, dim=0).reshape(8, 8)  # (H*d_head, d_model)
    full.load_state_dict({**sd, "W_K.weight": rep(sd["W_K.weight"]), "W_V.weight": rep(sd["W_V.weight"])})
    x = _x()
    torch.testing.assert_close(grouped(x), full(x))


def test_d_model_not_divisible_by_n_heads_raises_a_clear_error():
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(10, 3)


@pytest.mark.parametrize("bad", [torch.randn(5, 8), torch.randn(2, 5, 7), "x"])
def test_x_of_the_wrong_shape_raises_a_clear_error(bad):
    with pytest.raises(ValueError, match="shape"):
        MultiHeadAttention(8, 2)(bad)


def test_mask_of_the_wrong_shape_raises_a_clear_error():
    with pytest.raises(ValueError, match="mask"):
        MultiHeadAttention(8, 2)(_x(), mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask"):
        MultiHeadAttention(8, 2)(_x(), mask=torch.ones(5, 5))  # not boolean


def test_multihead_attention_runs_on_each_device(device, seed):
    mha = MultiHeadAttention(8, 2).to(device)
    assert mha(_x().to(device)).shape == (2, 5, 8)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_module_matches_the_teaching_path_with_masks_and_a_cache(seed, causal):
    mha = MultiHeadAttention(8, 2)
    x = _x(t=6)
    _, (w,) = with_weights(mha, x, causal=causal)  # the teaching path
    full = mha(x, causal=causal)  # the fused path
    torch.testing.assert_close(full, with_weights(mha, x, causal=causal)[0], atol=1e-6, rtol=1e-5)
    assert mha.fast  # the recorder gave the fused path back
    if causal:  # token by token through a cache equals the parallel pass
        cache = attention.KVCache()
        steps = [mha(x[:, t:t + 1], causal=True, kv_cache=cache) for t in range(6)]
        torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-6, rtol=1e-5)
        assert (w.triu(diagonal=1) == 0).all()
