"""Tests for the token-sequence tasks (chapter 8)."""
import pytest
import torch

from beforeqkv import tasks


def test_random_tokens_target_is_input_shifted_by_one(gen):
    tokens, target = tasks.random_tokens(4, seq_len=16, d_vocab=16, generator=gen)
    assert tokens.shape == target.shape == (4, 16)
    assert tokens.dtype == target.dtype == torch.int64
    assert torch.equal(tokens[:, 1:], target[:, :-1])


def test_random_tokens_are_uniform_over_the_vocabulary(gen):
    tokens, _ = tasks.random_tokens(2000, seq_len=16, d_vocab=16, generator=gen)
    freq = torch.bincount(tokens.flatten(), minlength=16).float() / tokens.numel()
    assert tokens.min() >= 0 and tokens.max() < 16
    assert (freq - 1 / 16).abs().max() < 0.01


def test_random_tokens_same_generator_seed_same_data():
    a = tasks.random_tokens(3, generator=torch.Generator().manual_seed(7))
    b = tasks.random_tokens(3, generator=torch.Generator().manual_seed(7))
    c = tasks.random_tokens(3, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[0], c[0])


def test_random_tokens_bad_arguments_raise():
    with pytest.raises(ValueError, match="seq_len"):
        tasks.random_tokens(2, seq_len=0)
    with pytest.raises(ValueError, match="d_vocab"):
        tasks.random_tokens(2, d_vocab=1.5)
    with pytest.raises(ValueError, match="generator"):
        tasks.random_tokens(2, generator=0)
