"""Tests for tasks.ring: items on a ring, two neighbours per token (chapter 6)."""
import pytest
import torch

from beforeqkv import tasks


def test_ring_routing_shapes_and_dtypes(gen):
    (items, payloads), target = tasks.ring_routing(5, generator=gen)
    assert items.shape == payloads.shape == (5, 8)
    assert target.shape == (5, 8, 2)
    assert items.dtype == payloads.dtype == target.dtype == torch.int64


def test_each_example_is_one_whole_ring_shuffled(gen):
    (items, _), _ = tasks.ring_routing(50, n_rings=4, ring_size=8, generator=gen)
    ring = items // 8
    assert (ring == ring[:, :1]).all()
    assert (items.sort(dim=-1).values % 8 == torch.arange(8)).all()
    assert items.min() >= 0 and items.max() < 32


def test_targets_are_the_successor_and_predecessor_payloads(gen):
    (items, payloads), target = tasks.ring_routing(20, generator=gen)
    succ, pred = tasks.ring_neighbors(items)
    for b in range(20):
        pay = {int(i): int(p) for i, p in zip(items[b], payloads[b])}
        assert target[b, :, 0].tolist() == [pay[int(s)] for s in succ[b]]
        assert target[b, :, 1].tolist() == [pay[int(p)] for p in pred[b]]


def test_docstring_example_holds():
    items, payloads = torch.tensor([[2, 0, 3, 1]]), torch.tensor([[5, 1, 7, 7]])
    succ, pred = tasks.ring_neighbors(items, ring_size=4)
    pay = dict(zip(items[0].tolist(), payloads[0].tolist()))
    got = [[pay[s], pay[p]] for s, p in zip(succ[0].tolist(), pred[0].tolist())]
    assert got == [[7, 7], [7, 7], [1, 5], [5, 1]]


def test_ring_neighbors_wrap_around_within_a_ring():
    succ, pred = tasks.ring_neighbors(torch.tensor([0, 7, 8, 15]), ring_size=8)
    assert succ.tolist() == [1, 0, 9, 8]
    assert pred.tolist() == [7, 6, 15, 14]


def test_ring_routing_is_deterministic_given_a_seed():
    a = tasks.ring_routing(4, generator=torch.Generator().manual_seed(3))
    b = tasks.ring_routing(4, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(x, y) for x, y in zip(a[0] + (a[1],), b[0] + (b[1],)))


def test_payloads_are_near_uniform(gen):
    _, target = tasks.ring_routing(2000, generator=gen)
    freq = torch.bincount(target.flatten(), minlength=8).float() / target.numel()
    assert (freq - 1 / 8).abs().max() < 0.01


@pytest.mark.parametrize("kwargs", [dict(batch_size=0), dict(batch_size=2, ring_size=2),
                                    dict(batch_size=2, n_payloads=0), dict(batch_size=2, generator=3)])
def test_ring_routing_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        tasks.ring_routing(**kwargs)


def test_ring_neighbors_rejects_float_ids():
    with pytest.raises(ValueError, match="integer"):
        tasks.ring_neighbors(torch.tensor([0.0, 1.0]))
