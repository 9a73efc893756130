"""Tests for beforeqkv.models.rnn: the loop RNN and the one-layer attention mixer."""
import pytest
import torch
import torch.nn as nn

from beforeqkv import models


def test_loop_rnn_matches_torch_rnn_with_the_same_weights(seed, device):
    rnn = models.LoopRNN(6, hidden=5).to(device)
    ref = nn.RNN(6, 5, batch_first=True).to(device)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(rnn.cell.weight_ih)
        ref.weight_hh_l0.copy_(rnn.cell.weight_hh)
        ref.bias_ih_l0.copy_(rnn.cell.bias_ih)
        ref.bias_hh_l0.copy_(rnn.cell.bias_hh)
    x = torch.randn(3, 7, 6, device=device)
    torch.testing.assert_close(rnn(x), ref(x)[0])


def test_loop_rnn_output_t_ignores_later_inputs(seed):
    rnn = models.LoopRNN(4)
    x = torch.randn(1, 5, 4)
    y = x.clone()
    y[:, 3:] = torch.randn(1, 2, 4)
    torch.testing.assert_close(rnn(x)[:, :3], rnn(y)[:, :3])


def test_causal_mixer_teaching_and_fast_paths_agree(seed, device):
    slow = models.AttentionMixer(8).to(device)
    fast = models.AttentionMixer(8, fast=True).to(device)
    fast.load_state_dict(slow.state_dict())
    x = torch.randn(2, 6, 8, device=device)
    torch.testing.assert_close(slow(x), fast(x), atol=1e-5, rtol=1e-4)


def test_causal_mixer_output_i_ignores_later_inputs(seed):
    mix = models.AttentionMixer(4)
    x = torch.randn(1, 5, 4)
    y = x.clone()
    y[:, 3:] = torch.randn(1, 2, 4)
    torch.testing.assert_close(mix(x)[:, :3], mix(y)[:, :3])


def test_mixer_without_mask_is_permutation_equivariant(seed):
    mix = models.AttentionMixer(4, causal=False)
    x = torch.randn(1, 6, 4)
    perm = torch.randperm(6)
    torch.testing.assert_close(mix(x)[:, perm], mix(x[:, perm]))


@pytest.mark.parametrize("cls", [models.LoopRNN, models.AttentionMixer])
def test_models_reject_inputs_of_the_wrong_shape(cls):
    m = cls(4)
    with pytest.raises(ValueError, match="d_model=4"):
        m(torch.randn(2, 3, 5))
    with pytest.raises(ValueError, match="B, T"):
        m(torch.randn(3, 4))
    with pytest.raises(ValueError, match="d_model"):
        cls(0)
