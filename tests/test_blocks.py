"""Tests for the norms and the MLP of the Transformer block (chapter 8)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from beforeqkv.models.blocks import MLP, RMSNorm, make_norm


def test_rmsnorm_matches_formula(seed):
    norm = RMSNorm(6, eps=1e-5)
    nn.init.normal_(norm.weight)
    x = torch.randn(3, 6)
    want = x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-5) * norm.weight
    torch.testing.assert_close(norm(x), want)
    half = x.to(torch.bfloat16)  # bf16 in, bf16 out: the mean of squares in float32
    want = (half.float() / torch.sqrt((half.float() ** 2).mean(-1, keepdim=True) + 1e-5)).to(torch.bfloat16)
    torch.testing.assert_close(norm.to(torch.bfloat16)(half), want * norm.weight)


def test_make_norm_builds_layernorm_rmsnorm_or_identity():
    assert isinstance(make_norm("layernorm", 4), nn.LayerNorm)
    assert make_norm("layernorm", 4, bias=False).bias is None
    assert isinstance(make_norm("rmsnorm", 4), RMSNorm)
    x = torch.randn(2, 4)
    assert torch.equal(make_norm("none", 4)(x), x)
    with pytest.raises(ValueError, match="unknown norm"):
        make_norm("batchnorm", 4)


@pytest.mark.parametrize("activation, act", [("relu", F.relu), ("gelu", F.gelu),
                                             ("gelu_tanh", lambda h: F.gelu(h, approximate="tanh"))])
def test_mlp_is_w_out_of_activation_of_w_in(seed, activation, act):
    mlp = MLP(6, 10, activation=activation)
    x = torch.randn(2, 6)
    torch.testing.assert_close(mlp(x), mlp.W_out(act(mlp.W_in(x))))
    assert mlp.W_gate is None


def test_swiglu_mlp_is_w_out_of_silu_gate_times_w_in(seed):
    mlp = MLP(6, 10, activation="swiglu", bias=False)
    x = torch.randn(2, 6)
    torch.testing.assert_close(mlp(x), mlp.W_out(F.silu(mlp.W_gate(x)) * mlp.W_in(x)))
    assert mlp.W_in.bias is None


def test_mlp_bad_arguments_raise():
    with pytest.raises(ValueError, match="unknown MLP"):
        MLP(4, 8, activation="swish")
    with pytest.raises(ValueError, match="d_mlp"):
        MLP(4, 0)
