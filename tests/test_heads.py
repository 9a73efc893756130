"""Tests for models.heads: the ring model, the per-pair generator, the OV identity (chapter 6)."""
import pytest
import torch

from beforeqkv import models, tasks, train
from beforeqkv.measure import probes
from beforeqkv.attention import MultiHeadAttention, with_weights


def _batch(n=6, seed=0):
    return tasks.ring_routing(n, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_ring_heads_has_the_same_parameter_count_for_every_number_of_heads(n_heads):
    m = models.RingHeads(n_heads=n_heads)
    assert sum(p.numel() for p in m.parameters()) == 3936
    assert m.attn.d_head == 16 // n_heads


def test_ring_heads_uses_the_package_multihead_attention():
    assert isinstance(models.RingHeads().attn, MultiHeadAttention)


def test_ring_heads_output_and_weights_shapes(seed):
    (items, payloads), target = _batch()
    logits, (w,) = with_weights(models.RingHeads(n_heads=2), items, payloads)
    assert logits.shape == (6, 8, 2, 8)
    assert w.shape == (6, 2, 8, 8)
    assert train.cross_entropy(logits, target).isfinite()


def test_ring_heads_is_permutation_equivariant(seed):
    (items, payloads), _ = _batch()
    m = models.RingHeads(n_heads=2)
    perm = torch.randperm(8)
    torch.testing.assert_close(m(items[:, perm], payloads[:, perm]), m(items, payloads)[:, perm])


def test_per_pair_generator_shapes_and_parameter_count(seed):
    (items, payloads), _ = _batch()
    m = models.PerPairGenerator()
    assert m(items, payloads).shape == (6, 8, 2, 8)
    assert sum(p.numel() for p in m.parameters()) == 37680


def test_mix_per_pair_with_identity_matrices_sums_the_tokens():
    x = torch.randn(2, 3, 4)
    M = torch.eye(4).expand(2, 3, 3, 4, 4)
    torch.testing.assert_close(models.mix_per_pair(M, x), x.sum(1, keepdim=True).expand(2, 3, 4))


def test_ring_accuracy_of_a_perfect_model_is_one():
    class Oracle(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.Parameter(torch.zeros(1))

        def forward(self, items, payloads):
            (_, _), target = batch
            return torch.nn.functional.one_hot(target, 8).float() + self.p

    batch = _batch(10)
    assert probes.ring_accuracy(Oracle(), batch) == {"successor": 1.0, "predecessor": 1.0, "both": 1.0}


def test_routing_profile_columns_are_weights_on_successor_predecessor_self(seed):
    m = models.RingHeads(n_heads=4)
    prof = probes.routing_profile(m, _batch(20))
    assert prof.shape == (4, 3)
    assert (prof >= 0).all() and (prof.sum(-1) <= 1 + 1e-6).all()


def test_one_head_learns_at_most_one_routing_while_two_heads_learn_both():
    """The chapter's claim, in a shorter run (250 steps)."""
    test = _batch(1000, seed=1)
    acc = {}
    for h in (1, 2):
        torch.manual_seed(0)
        m = models.RingHeads(n_heads=h)
        train.train(m, lambda g: tasks.ring_routing(64, generator=g), steps=250, lr=5e-3, progress=False)
        acc[h] = probes.ring_accuracy(m, test)["both"]
    assert acc[1] <= 0.5 and acc[2] >= 0.95


@pytest.mark.parametrize("bad", [(torch.zeros(2, 8).long(), torch.zeros(2, 7).long()),
                                 (torch.full((2, 8), 32), torch.zeros(2, 8).long()),
                                 (torch.zeros(8).long(), torch.zeros(8).long())])
def test_ring_models_reject_bad_inputs(bad):
    for m in (models.RingHeads(), models.PerPairGenerator()):
        with pytest.raises(ValueError):
            m(*bad)


def test_ring_heads_rejects_width_not_divisible_by_heads():
    with pytest.raises(ValueError, match="divisible"):
        models.RingHeads(n_heads=3)


def test_ov_and_per_pair_helpers_reject_bad_arguments():
    with pytest.raises(ValueError):
        models.ov_matrices(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError):
        models.per_pair_matrices(MultiHeadAttention(8, 2), torch.randn(2, 5, 7))
    with pytest.raises(ValueError):
        models.mix_per_pair(torch.randn(2, 3, 3, 4, 4), torch.randn(2, 4, 4))
