"""Routing tasks of chapters 4 and 5: shapes, targets, determinism, validation."""
import pytest
import torch

from beforeqkv import tasks


@pytest.mark.parametrize("name", ["fixed", "salient", "pointer"])
def test_routing_tasks_return_tokens_query_and_target_of_the_right_shapes(name, gen):
    (tokens, query), target = tasks.ROUTING_TASKS[name](32, generator=gen)
    assert tokens.shape == (32, 16) and query.shape == (32,) and target.shape == (32,)
    assert tokens.dtype == query.dtype == target.dtype == torch.int64
    assert tokens.min() >= 0 and tokens.max() < 16 and query.max() < 16


@pytest.mark.parametrize("name", ["fixed", "salient", "pointer", "triads"])
def test_same_generator_seed_gives_the_same_batch(name):
    fn = tasks.triads if name == "triads" else tasks.ROUTING_TASKS[name]
    a = fn(8, generator=torch.Generator().manual_seed(3))
    b = fn(8, generator=torch.Generator().manual_seed(3))
    for x, y in zip(a[0] + (a[1],), b[0] + (b[1],)):
        assert torch.equal(x, y)


def test_fixed_position_target_is_the_token_at_that_position(gen):
    (tokens, _), target = tasks.fixed_position(64, position=5, generator=gen)
    assert torch.equal(target, tokens[:, 5])


def test_pointer_target_is_the_token_the_query_names(gen):
    (tokens, query), target = tasks.pointer(64, generator=gen)
    assert torch.equal(target, tokens[torch.arange(64), query])


def test_salient_sequences_hold_exactly_one_marked_token_which_is_the_target(gen):
    (tokens, _), target = tasks.salient_token(64, generator=gen)
    marked = tokens >= 8
    assert torch.equal(marked.sum(1), torch.ones(64, dtype=torch.int64))
    assert torch.equal(tokens[marked], target)


def test_triads_target_is_the_payload_of_the_item_each_token_beats(gen):
    (items, payloads), target = tasks.triads(32, generator=gen)
    assert items.shape == payloads.shape == target.shape == (32, 6)
    succ = tasks.triad_successor(items)
    for b in range(32):
        for i in range(6):
            j = (items[b] == succ[b, i]).nonzero().item()
            assert target[b, i] == payloads[b, j]


def test_triads_sequences_hold_whole_distinct_triads(gen):
    (items, _), _ = tasks.triads(32, generator=gen)
    for row in items:
        assert len(set(row.tolist())) == 6
        triad_ids = (row // 3).tolist()
        assert all(triad_ids.count(t) == 3 for t in set(triad_ids))


def test_triad_successor_is_a_three_cycle():
    items = torch.arange(24)
    s = tasks.triad_successor(items)
    assert torch.equal(tasks.triad_successor(tasks.triad_successor(s)), items)
    assert not torch.equal(s, items)
    assert torch.equal(s[:3], torch.tensor([1, 2, 0]))


@pytest.mark.parametrize("call", [
    lambda: tasks.pointer(0),
    lambda: tasks.fixed_position(4, position=16),
    lambda: tasks.salient_token(4, d_vocab=15),
    lambda: tasks.pointer(4, generator=3),
    lambda: tasks.triads(4, n_triads=1, per_sequence=2),
    lambda: tasks.triads(4, n_payloads=0),
    lambda: tasks.triad_successor(torch.zeros(3)),
])
def test_bad_task_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()
