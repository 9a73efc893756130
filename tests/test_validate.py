"""The package's shared input checks (_validate): ids, numbers, finiteness, moving batches."""
import pytest
import torch

from beforeqkv import _validate as V
from beforeqkv import models, tasks


def test_check_ids_accepts_ids_in_range_and_names_what_is_wrong():
    V.check_ids("tokens", torch.tensor([[0, 4]]), 5, dim=2)
    with pytest.raises(ValueError, match=r"tokens ids must lie in \[0, 5\), got range \[0, 5\]"):
        V.check_ids("tokens", torch.tensor([[0, 5]]), 5)
    with pytest.raises(ValueError, match=r"got range \[-1, 2\]"):
        V.check_ids("tokens", torch.tensor([-1, 2]), 5)
    with pytest.raises(ValueError, match="2 dims"):
        V.check_ids("tokens", torch.tensor([1, 2]), 5, dim=2)
    for bad in (torch.tensor([1.0]), torch.tensor([True]), [1, 2]):
        with pytest.raises(ValueError, match="integer"):
            V.check_ids("tokens", bad, 5)


def test_every_embedding_model_rejects_negative_ids():
    (keys, values, query), _ = tasks.associative_recall(2, 3, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="keys ids"):
        models.RecallAttention()(keys - 100, values, query)
    (tokens, q), _ = tasks.pointer(2, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="tokens ids"):
        models.ContentMixer()(tokens - 100, q)


@pytest.mark.parametrize("val", [float("nan"), float("inf"), -1.0, True, "1"])
def test_check_finite_number_rejects_nan_inf_bools_strings_and_values_below_the_bound(val):
    with pytest.raises(ValueError, match="x must be a finite number"):
        V.check_finite_number("x", val, low=0)


def test_check_finite_counts_the_bad_values():
    V.check_finite("x", torch.ones(3))
    V.check_finite("ids", torch.tensor([1, 2]))  # integers are always finite
    with pytest.raises(ValueError, match="2 NaN/inf"):
        V.check_finite("x", torch.tensor([1.0, float("nan"), float("inf")]))


def test_move_keeps_structure_and_rejects_other_things():
    x = (torch.ones(1), (torch.zeros(2), torch.ones(3)))
    moved = V.move(x, "cpu")
    assert isinstance(moved, tuple) and isinstance(moved[1], tuple) and moved[1][1].shape == (3,)
    assert V.move(x, None) is x
    with pytest.raises(ValueError, match="tensor"):
        V.move({"a": torch.ones(1)}, "cpu")
