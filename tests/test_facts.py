"""Tests for tasks.random_facts (chapter 9)."""
import pytest
import torch

from beforeqkv import tasks


def test_random_facts_have_unit_keys_and_classes_in_range(gen):
    keys, target = tasks.random_facts(50, d_model=8, n_classes=5, generator=gen)
    assert keys.shape == (50, 8) and target.shape == (50,)
    assert keys.dtype == torch.float32 and target.dtype == torch.int64
    torch.testing.assert_close(keys.norm(dim=-1), torch.ones(50))
    assert target.min() >= 0 and target.max() < 5


def test_random_facts_are_reproducible_from_the_generator():
    a = tasks.random_facts(20, generator=torch.Generator().manual_seed(3))
    b = tasks.random_facts(20, generator=torch.Generator().manual_seed(3))
    c = tasks.random_facts(20, generator=torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_random_facts_use_every_class_for_many_facts(gen):
    _, target = tasks.random_facts(2000, generator=gen)
    assert target.unique().numel() == 16


def test_random_facts_can_be_placed_on_a_device(gen, device):
    keys, target = tasks.random_facts(4, generator=gen, device=device)
    assert keys.device.type == device.type and target.device.type == device.type


@pytest.mark.parametrize("kwargs", [{"n_facts": 0}, {"n_facts": 3, "d_model": 0},
                                    {"n_facts": 3, "n_classes": -1}, {"n_facts": 2.5}])
def test_random_facts_reject_bad_sizes(kwargs):
    with pytest.raises(ValueError):
        tasks.random_facts(**kwargs)


def test_random_facts_reject_a_non_generator():
    with pytest.raises(ValueError, match="generator"):
        tasks.random_facts(3, generator=0)
