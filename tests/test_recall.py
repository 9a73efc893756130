"""Associative recall: the data is what the docstring says, reproducible, and validated."""
import pytest
import torch

from beforeqkv import tasks


def test_recall_target_is_the_value_of_the_queried_key(gen):
    (keys, values, query), target = tasks.associative_recall(64, 8, generator=gen)
    assert keys.shape == values.shape == (64, 8) and query.shape == target.shape == (64,)
    for b in range(64):
        pos = (keys[b] == query[b]).nonzero()
        assert len(pos) == 1
        assert values[b, pos[0, 0]] == target[b]


def test_recall_keys_are_distinct_within_an_example(gen):
    (keys, _, _), _ = tasks.associative_recall(32, 64, generator=gen)
    assert all(len(set(row.tolist())) == 64 for row in keys)


def test_recall_same_seed_same_data():
    a = tasks.associative_recall(8, 4, generator=torch.Generator().manual_seed(3))
    b = tasks.associative_recall(8, 4, generator=torch.Generator().manual_seed(3))
    for x, y in zip(a[0] + (a[1],), b[0] + (b[1],)):
        assert torch.equal(x, y)


@pytest.mark.parametrize("kwargs", [dict(batch_size=0, n_pairs=2), dict(batch_size=4, n_pairs=65),
                                    dict(batch_size=4, n_pairs=2, n_values=0),
                                    dict(batch_size=4, n_pairs=2.5), dict(batch_size=4, n_pairs=2, generator=3)])
def test_recall_bad_arguments_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        tasks.associative_recall(**kwargs)
