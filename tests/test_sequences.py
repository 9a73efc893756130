"""Tests for the token-sequence tasks (chapter 8)."""
import pytest
import torch

from beforeqkv import tasks


def test_random_tokens_target_is_input_shifted_by_one(gen):
    tokens, target = tasks.random_tokens(4, T=16, d_vocab=16, generator=gen)
    assert tokens.shape == target.shape == (4, 16)
    assert tokens.dtype == target.dtype == torch.int64
    assert torch.equal(tokens[:, 1:], target[:, :-1])


def test_random_tokens_are_uniform_over_the_vocabulary(gen):
    tokens, _ = tasks.random_tokens(2000, T=16, d_vocab=16, generator=gen)
    freq = torch.bincount(tokens.flatten(), minlength=16).float() / tokens.numel()
    assert tokens.min() >= 0 and tokens.max() < 16
    assert (freq - 1 / 16).abs().max() < 0.01


def test_random_tokens_same_generator_seed_same_data():
    a = tasks.random_tokens(3, generator=torch.Generator().manual_seed(7))
    b = tasks.random_tokens(3, generator=torch.Generator().manual_seed(7))
    c = tasks.random_tokens(3, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[0], c[0])


def test_random_tokens_bad_arguments_raise():
    with pytest.raises(ValueError, match="^T must be a positive int"):
        tasks.random_tokens(2, T=0)
    with pytest.raises(ValueError, match="d_vocab"):
        tasks.random_tokens(2, d_vocab=1.5)
    with pytest.raises(ValueError, match="generator"):
        tasks.random_tokens(2, generator=0)


GENERATED = [name for name in dir(tasks) if not name.startswith("_") and callable(getattr(tasks, name))
             and "generator" in __import__("inspect").signature(getattr(tasks, name)).parameters]


@pytest.mark.parametrize("name", GENERATED)
def test_a_task_without_a_generator_follows_the_global_seed_and_never_reseeds_it(name):
    """Called without ``generator=``, a task draws from a generator of its own seeded from
    torch's global stream: after ``seed_everything(s)`` the same data twice, and the global
    stream goes on as if seeded (a task used to call ``torch.seed()``, which reseeds it at random
    and so undid ``seed_everything``)."""
    import beforeqkv
    assert len(GENERATED) >= 8
    task = getattr(tasks, name)
    runs = []
    for _ in range(2):
        beforeqkv.seed_everything(3)
        data = task(6, 2) if name == "associative_recall" else task(6)
        runs.append((data, torch.rand(4)))
    flat = [torch.utils._pytree.tree_flatten(d)[0] for d, __ in runs]
    assert all(torch.equal(a, b) for a, b in zip(*flat))
    assert torch.equal(runs[0][1], runs[1][1])
    beforeqkv.seed_everything(4)
    other = torch.utils._pytree.tree_flatten(task(6, 2) if name == "associative_recall" else task(6))[0]
    assert not all(torch.equal(a, b) for a, b in zip(flat[0], other))
