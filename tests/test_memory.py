"""Tests for models.memory: the MLP as attention over learned slots (chapter 9)."""
import pytest
import torch
import torch.nn.functional as F

from beforeqkv import models, tasks, train


def test_slot_view_equals_the_mlp(seed):
    mlp = models.MLPMemory(d_model=8, d_mlp=12, d_out=5)
    x = torch.randn(4, 3, 8)
    keys, values, biases = mlp.as_slots()
    out, weights = models.slot_attention(x, keys, values, biases)
    torch.testing.assert_close(out + mlp.W_out.bias, mlp(x))
    assert weights.shape == (4, 3, 12) and (weights >= 0).all()


def test_slot_view_is_an_explicit_sum_over_slots(seed):
    mlp = models.MLPMemory(d_model=6, d_mlp=5, d_out=3)
    x = torch.randn(6)
    total = mlp.W_out.bias.clone()
    for u in range(5):
        k_u, b_u, v_u = mlp.W_in.weight[u], mlp.W_in.bias[u], mlp.W_out.weight[:, u]
        total = total + F.relu(k_u @ x + b_u) * v_u
    torch.testing.assert_close(total, mlp(x))


def test_softmax_slots_have_weights_that_sum_to_one(seed):
    mlp = models.MLPMemory(d_model=4, d_mlp=7, d_out=2, normalise="softmax")
    x = torch.randn(10, 4)
    torch.testing.assert_close(mlp.slot_weights(x).sum(-1), torch.ones(10))
    out, _ = models.slot_attention(x, *mlp.as_slots()[:2], mlp.W_in.bias, normalise="softmax")
    torch.testing.assert_close(out + mlp.W_out.bias, mlp(x))


def test_mlp_memory_has_the_transformer_parameter_names():
    names = set(dict(models.MLPMemory().named_parameters()))
    assert names == {"W_in.weight", "W_in.bias", "W_out.weight", "W_out.bias"}


def test_handwritten_memory_recalls_every_fact_up_to_one_per_slot():
    keys, target = tasks.random_facts(16, generator=torch.Generator().manual_seed(0))
    mem = models.handwritten_memory(keys, target, d_mlp=16)
    assert train.accuracy(mem, (keys, target)) == 1.0
    fired = mem.slot_weights(keys) > 0  # (N, m)
    assert torch.equal(fired, torch.eye(16, dtype=torch.bool))


def test_handwritten_memory_forgets_facts_without_a_slot():
    keys, target = tasks.random_facts(64, generator=torch.Generator().manual_seed(0))
    mem = models.handwritten_memory(keys, target, d_mlp=16)
    assert train.accuracy(mem, (keys, target)) <= 0.45


def test_a_trained_mlp_memorises_a_few_facts(seed):
    keys, target = tasks.random_facts(32, d_model=16, n_classes=4, generator=torch.Generator().manual_seed(0))
    mlp = models.MLPMemory(16, 8, 4)
    train.train(mlp, lambda g: (keys, target), steps=200, lr=1e-2, progress=False)
    assert train.accuracy(mlp, (keys, target)) == 1.0


def test_mlp_memory_runs_on_a_device(device, seed):
    mlp = models.MLPMemory(4, 3, 2).to(device)
    assert mlp(torch.randn(5, 4, device=device)).shape == (5, 2)


@pytest.mark.parametrize("kwargs", [{"d_mlp": 0}, {"d_model": -1}, {"d_out": 1.5}, {"normalise": "tanh"}])
def test_mlp_memory_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        models.MLPMemory(**kwargs)


def test_mlp_memory_rejects_inputs_of_the_wrong_width():
    with pytest.raises(ValueError, match="width"):
        models.MLPMemory(d_model=8)(torch.randn(3, 5))


def test_slot_attention_rejects_mismatched_shapes():
    x, keys, values = torch.randn(2, 4), torch.randn(3, 4), torch.randn(3, 5)
    with pytest.raises(ValueError, match="same m"):
        models.slot_attention(x, keys, torch.randn(2, 5))
    with pytest.raises(ValueError, match="width"):
        models.slot_attention(torch.randn(2, 6), keys, values)
    with pytest.raises(ValueError, match="biases"):
        models.slot_attention(x, keys, values, torch.randn(4))
    with pytest.raises(ValueError, match="normalise"):
        models.slot_attention(x, keys, values, normalise="sigmoid")


def test_handwritten_memory_rejects_bad_inputs():
    keys, target = tasks.random_facts(4, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError):
        models.handwritten_memory(keys, target[:3], d_mlp=4)
    with pytest.raises(ValueError, match="threshold"):
        models.handwritten_memory(keys, target, d_mlp=4, threshold=1.5)
    with pytest.raises(ValueError, match="classes"):
        models.handwritten_memory(keys, target + 16, d_mlp=4)
