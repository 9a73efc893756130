"""Tests for beforeqkv.measure.steps: sequential depth, compute steps, timing."""
import pytest
import torch
import torch.nn as nn

from beforeqkv import models
from beforeqkv.measure import steps


def test_depth_counts_operations_on_the_longest_chain():
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    assert steps.sequential_depth(a * b) == 1
    assert steps.sequential_depth((a * b).sum()) == 2
    # a long chain next to a short one: the longest wins
    assert steps.sequential_depth(a.exp().exp().exp() + b) == 4


def test_depth_of_a_shared_subgraph_is_not_double_counted():
    a = torch.randn(3, requires_grad=True)
    h = a.tanh()
    assert steps.sequential_depth(h + h * h) == 3  # tanh -> mul -> add


def test_depth_handles_a_ten_thousand_step_chain_without_recursion():
    x = torch.randn(2, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    assert steps.sequential_depth(y) == 10_000


@pytest.mark.parametrize("T", [1, 2, 7, 64])
def test_loop_rnn_depth_is_three_per_step_plus_two(T, seed):
    rnn = models.LoopRNN(8)
    assert steps.sequential_depth(rnn(torch.randn(2, T, 8))) == 3 * T + 2


def test_attention_depth_does_not_grow_with_sequence_length(seed):
    att = models.AttentionMixer(8)
    depths = {steps.sequential_depth(att(torch.randn(1, T, 8))) for T in (2, 16, 128, 512)}
    assert len(depths) == 1 and depths.pop() < 40


def test_depth_rejects_tensors_without_a_graph():
    with pytest.raises(ValueError, match="grad_fn"):
        steps.sequential_depth(torch.randn(3))
    with pytest.raises(ValueError, match="torch.Tensor"):
        steps.sequential_depth([1, 2])


def test_recurrent_steps_grow_with_tokens_and_all_to_all_steps_do_not():
    rec = steps.step_of_each_unit(2, 4, recurrent=True)
    flat = steps.step_of_each_unit(2, 4, recurrent=False)
    assert rec.tolist() == [[1, 2, 3, 4], [2, 3, 4, 5]]  # the article's 5 steps
    assert flat.tolist() == [[1, 1, 1, 1], [2, 2, 2, 2]]  # ... against 2
    assert steps.step_of_each_unit(3, 8, True).max().item() == 10
    assert steps.step_of_each_unit(3, 100, False).max().item() == 3


def test_step_of_each_unit_rejects_bad_sizes():
    with pytest.raises(ValueError, match="^T must be a positive int"):
        steps.step_of_each_unit(2, 0, True)
    with pytest.raises(ValueError, match="n_layers"):
        steps.step_of_each_unit(1.5, 3, False)


def test_timing_returns_a_positive_minimum_and_clears_gradients(seed):
    model = nn.Linear(4, 4)
    secs = steps.time_forward_backward(model, torch.randn(2, 4), repeats=2)
    assert 0 < secs < 5
    assert all(p.grad is None for p in model.parameters())
    assert steps.time_forward_backward(model, torch.randn(2, 4), repeats=1, warmup=0, clock="wall") > 0


def test_timing_rejects_bad_arguments():
    model = nn.Linear(4, 4)
    with pytest.raises(ValueError, match="repeats"):
        steps.time_forward_backward(model, torch.randn(2, 4), repeats=0)
    with pytest.raises(ValueError, match="clock"):
        steps.time_forward_backward(model, torch.randn(2, 4), clock="sundial")
    with pytest.raises(ValueError, match="torch.Tensor"):
        steps.time_forward_backward(model, [1.0])
