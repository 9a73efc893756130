"""Tests for beforeqkv.measure.saturation: why attention divides by sqrt(d_head) (chapter 7)."""
import math

import pytest
import torch

from beforeqkv.measure import saturation


def test_softmax_jacobian_matches_autograd(seed):
    s = torch.randn(6, dtype=torch.float64)
    auto = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), s)
    torch.testing.assert_close(saturation.softmax_jacobian(torch.softmax(s, -1)), auto)


def test_softmax_jacobian_vanishes_for_a_one_hot_row():
    a = torch.tensor([0.0, 0.0, 1.0, 0.0])
    assert saturation.softmax_jacobian(a).abs().max() == 0


def test_softmax_jacobian_rows_sum_to_zero_for_a_batch(seed):
    a = torch.softmax(torch.randn(3, 2, 5), -1)
    jac = saturation.softmax_jacobian(a)
    assert jac.shape == (3, 2, 5, 5)
    torch.testing.assert_close(jac.sum(-1), torch.zeros(3, 2, 5))


def test_unscaled_score_variance_grows_like_d():
    g = torch.Generator().manual_seed(0)
    for d in (4, 64, 256):
        s = saturation.random_scores(d, n_queries=2000, T=16, generator=g)
        assert s.shape == (2000, 16)
        assert abs(s.var().item() / d - 1) < 0.15


def test_scaled_scores_have_unit_variance_at_any_d():
    for d in (4, 256):
        s = saturation.random_scores(d, n_queries=2000, T=16, scaled=True, generator=torch.Generator().manual_seed(1))
        assert abs(s.var().item() - 1) < 0.15


def test_random_scores_keeps_exactly_n_queries_rows():
    s = saturation.random_scores(3, n_queries=50, T=4, group=32, generator=torch.Generator().manual_seed(0))
    assert s.shape == (50, 4)


def test_unscaled_softmax_saturates_and_passes_no_gradient_at_large_d():
    rows = saturation.saturation_table((1024,), n_queries=500, generator=torch.Generator().manual_seed(0))
    unscaled, scaled = rows
    assert not unscaled["scaled"] and scaled["scaled"]
    assert unscaled["frac_saturated"] > 0.5 and unscaled["median_grad"] < 1e-3
    assert scaled["frac_saturated"] == 0 and scaled["median_grad"] > 0.1


def test_saturation_table_is_deterministic():
    a = saturation.saturation_table((4, 16), n_queries=100, generator=torch.Generator().manual_seed(2))
    b = saturation.saturation_table((4, 16), n_queries=100, generator=torch.Generator().manual_seed(2))
    assert a == b and len(a) == 4


def test_row_gradient_of_a_uniform_row_is_about_sqrt_t_over_t():
    a = torch.full((4000, 32), 1 / 32)
    grad = saturation.row_gradient(a, torch.Generator().manual_seed(0))
    assert abs(grad.median().item() - math.sqrt(31) / 32) < 0.02


def test_saturated_float32_softmax_makes_denormals_unless_flushed():
    scores = torch.tensor([[0.0, -90.0, -95.0, 0.0]])  # exp(-90) ~ 8e-40 < 1.2e-38
    previous = torch.set_flush_denormal(False)
    try:
        if not previous:  # flushing unsupported on this CPU: nothing to show
            pytest.skip("set_flush_denormal not supported")
        assert saturation.denormal_fraction(torch.softmax(scores, -1)) > 0
    finally:
        torch.set_flush_denormal(True)
    assert saturation.denormal_fraction(torch.softmax(scores, -1)) == 0


@pytest.mark.parametrize("call", [
    lambda: saturation.softmax_jacobian([0.5, 0.5]),
    lambda: saturation.random_scores(0),
    lambda: saturation.random_scores(4, std=-1.0),
    lambda: saturation.random_scores(4, std=float("inf")),
    lambda: saturation.saturation_stats(torch.tensor([[0.0, float("nan")], [1.0, 2.0]])),
    lambda: saturation.row_gradient(torch.ones(3)),
    lambda: saturation.saturation_stats(torch.ones(2, 3), threshold=1.5),
    lambda: saturation.saturation_stats(torch.ones(3)),
    lambda: saturation.saturation_table(()),
    lambda: saturation.denormal_fraction(torch.ones(2, dtype=torch.int64)),
])
def test_saturation_functions_reject_bad_inputs(call):
    with pytest.raises(ValueError):
        call()
