"""The chapter 7 and 9 checkers pass the canonical answers and reject typical mistakes with a hint."""
import math

import pytest
import torch
import torch.nn.functional as F

from beforeqkv import attention, checks
from beforeqkv.measure import saturation
from beforeqkv.checks import CheckFailure


# ------------------------------------------------------------------ chapter 7
def test_check_scaled_scores_passes_the_package_version(capsys):
    assert checks.check_scaled_scores(lambda q, k: attention.attention_scores(q, k))
    assert "\u2713" in capsys.readouterr().out


def test_check_scaled_scores_passes_an_einsum_version():
    assert checks.check_scaled_scores(lambda q, k: torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.shape[-1]))


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k: q @ k.transpose(-1, -2), "not scaled"),
    (lambda q, k: q @ k.transpose(-1, -2) / q.shape[-1], "square root"),
    (lambda q, k: q @ k.transpose(-1, -2) / math.sqrt(k.shape[-2]), "width d_head"),
])
def test_check_scaled_scores_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_scaled_scores(wrong)


def test_check_scaled_scores_catches_in_place_changes():
    def scales_q_in_place(q, k):
        q /= math.sqrt(q.shape[-1])
        return q @ k.transpose(-1, -2)

    with pytest.raises(CheckFailure, match="in place"):
        checks.check_scaled_scores(scales_q_in_place)


def test_check_scaled_scores_sigma_passes_correct_versions(capsys):
    assert checks.check_scaled_scores_sigma(
        lambda q, k, sigma: q @ k.transpose(-1, -2) / (sigma ** 2 * math.sqrt(q.shape[-1])))
    assert checks.check_scaled_scores_sigma(
        lambda q, k, sigma: attention.attention_scores(q / sigma, k / sigma))
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k, s: q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), "sigma is ignored"),
    (lambda q, k, s: q @ k.transpose(-1, -2) / (s * math.sqrt(q.shape[-1])), "sigma sqrt"),
    (lambda q, k, s: q @ k.transpose(-1, -2) / (s ** 4 * q.shape[-1]), "the variance d_head"),
    (lambda q, k, s: q @ k.transpose(-1, -2) / (s ** 4 * math.sqrt(q.shape[-1])), "sigma\\^4 sqrt"),
    (lambda q, k, s: q @ k.transpose(-1, -2) / (s ** 2 * q.shape[-1]), "sigma\\^2 d_head"),
])
def test_check_scaled_scores_sigma_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_scaled_scores_sigma(wrong)


def test_scaled_scores_sigma_have_unit_variance():
    sigma, d = 2.0, 64
    g = torch.Generator().manual_seed(0)
    q, k = sigma * torch.randn(2000, 1, d, generator=g), sigma * torch.randn(2000, 32, d, generator=g)
    s = attention.attention_scores(q, k) / sigma ** 2
    assert 0.9 < s.var().item() < 1.1


def test_check_softmax_jacobian_passes_the_package_version():
    assert checks.check_softmax_jacobian(saturation.softmax_jacobian)


def test_check_softmax_jacobian_passes_an_explicit_version():
    assert checks.check_softmax_jacobian(lambda a: torch.diag_embed(a) - torch.einsum("...i,...j->...ij", a, a))


@pytest.mark.parametrize("wrong, hint", [
    (lambda a: -a.unsqueeze(-1) * a.unsqueeze(-2), "diagonal is missing"),
    (lambda a: torch.diag_embed(a * (1 - a)), "off-diagonal"),
    (lambda a: a.unsqueeze(-1) * a.unsqueeze(-2) - torch.diag_embed(a), "sign"),
])
def test_check_softmax_jacobian_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_softmax_jacobian(wrong)


def test_check_softmax_jacobian_reports_an_unrecognised_mistake():
    with pytest.raises(CheckFailure, match="wrong values"):
        checks.check_softmax_jacobian(lambda a: torch.diag_embed(a) - 2 * a.unsqueeze(-1) * a.unsqueeze(-2))


def test_ch7_prediction_is_registered_and_checked():
    assert checks.check_prediction("ch7_one_over_d", "near-uniform")
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch7_one_over_d", "saturated")
    with pytest.raises(CheckFailure, match="one of"):
        checks.check_prediction("ch7_one_over_d", "maybe")


def test_ch7_prediction_answer_is_what_the_measurement_shows():
    s = saturation.random_scores(1024, n_queries=500, generator=torch.Generator().manual_seed(0)) / 1024
    stats = saturation.saturation_stats(s)
    assert stats["frac_saturated"] == 0 and stats["median_max_weight"] < 1.25 / 32  # the chapter: barely above 1/32


def test_ch7_adam_prediction_is_registered_and_checked():
    assert checks.check_prediction("ch7_adam_unscaled", "in between")
    with pytest.raises(CheckFailure, match="not what the experiment shows"):
        checks.check_prediction("ch7_adam_unscaled", "as good as scaled")


def window_by_comparison(T, w):
    i, j = torch.arange(T).unsqueeze(1), torch.arange(T).unsqueeze(0)
    return (j <= i) & (i - j < w)


def window_by_bands(T, w):
    return torch.ones(T, T).tril().triu(-(w - 1)).bool()


def window_by_loop(T, w):
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        mask[i, max(0, i - w + 1):i + 1] = True
    return mask


@pytest.mark.parametrize("fn", [window_by_comparison, window_by_bands, window_by_loop,
                                checks.sliding_window_mask])
def test_check_sliding_window_mask_passes_correct_versions(fn, capsys):
    assert checks.check_sliding_window_mask(fn)
    assert "\u2713" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda T, w: ~window_by_bands(T, w), "BLOCKED"),                            # True/False swapped
    (lambda T, w: torch.ones(T, T).tril().triu(-w).bool(), "w \\+ 1 tokens"),   # off by one: too wide
    (lambda T, w: torch.ones(T, T).tril().triu(-(w - 2)).bool(), "only w - 1"),  # off by one: too narrow
    (lambda T, w: torch.ones(T, T).triu(-(w - 1)).bool(), "future"),             # not causal
    (lambda T, w: torch.ones(T, T).tril().bool(), "plain causal"),               # ignores w
    (lambda T, w: torch.ones(T, T).triu().tril(w - 1).bool(), "wrong way"),      # window ahead of i
])
def test_check_sliding_window_mask_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_sliding_window_mask(wrong)


def test_check_sliding_window_mask_rejects_a_float_mask():
    with pytest.raises(CheckFailure, match="boolean"):
        checks.check_sliding_window_mask(lambda T, w: window_by_bands(T, w).float())


def test_check_sliding_window_mask_reports_not_implemented():
    def todo(T, w):
        raise NotImplementedError()
    with pytest.raises(CheckFailure, match="not implemented"):
        checks.check_sliding_window_mask(todo)


def test_sliding_window_mask_is_the_causal_mask_for_a_wide_window_and_validates():
    torch.testing.assert_close(checks.sliding_window_mask(6, 6), attention.causal_mask(6))
    assert checks.sliding_window_mask(4, 1).equal(torch.eye(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="w >= 1"):
        checks.sliding_window_mask(4, 0)


# ------------------------------------------------------------------ chapter 9
def ffn_as_slots(x, W_in, b_in, W_out, b_out):
    out = b_out.expand(*x.shape[:-1], -1).clone()
    for u in range(W_in.shape[0]):
        out = out + F.relu(x @ W_in[u] + b_in[u]).unsqueeze(-1) * W_out[:, u]
    return out


def test_check_ffn_as_slots_passes_a_loop_over_slots(capsys):
    assert checks.check_ffn_as_slots(ffn_as_slots)
    assert "\u2713" in capsys.readouterr().out


def test_check_ffn_as_slots_passes_the_plain_mlp():
    assert checks.check_ffn_as_slots(lambda x, Wi, bi, Wo, bo: F.linear(F.relu(F.linear(x, Wi, bi)), Wo, bo))


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, Wi, bi, Wo, bo: torch.softmax(x @ Wi.T + bi, -1) @ Wo.T + bo, "softmax"),
    (lambda x, Wi, bi, Wo, bo: F.relu(x @ Wi.T) @ Wo.T + bo, "slot biases"),
    (lambda x, Wi, bi, Wo, bo: F.relu(x @ Wi.T + bi) @ Wo.T, "output bias"),
    (lambda x, Wi, bi, Wo, bo: (x @ Wi.T + bi) @ Wo.T + bo, "ReLU is missing"),
])
def test_check_ffn_as_slots_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_ffn_as_slots(wrong)


def test_check_ffn_as_slots_explains_rows_versus_columns_of_w_out():
    with pytest.raises(CheckFailure, match="columns"):
        checks.check_ffn_as_slots(lambda x, Wi, bi, Wo, bo: F.relu(x @ Wi.T + bi) @ Wo + bo)


def test_ch9_prediction_accepts_numbers_within_its_tolerance():
    assert checks.check_prediction("ch9_handwritten_3m_4c", 0.5)
    assert checks.check_prediction("ch9_handwritten_3m_4c", 0.46)
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch9_handwritten_3m_4c", 1 / 3)  # forgot the lucky guesses
    with pytest.raises(CheckFailure, match="number"):
        checks.check_prediction("ch9_handwritten_3m_4c", "a half")


def test_ch9_wider_keys_question_takes_one_of_its_choices():
    assert checks.check_prediction("ch9_wider_keys", "Higher")
    with pytest.raises(CheckFailure):
        checks.check_prediction("ch9_wider_keys", "about the same")
    with pytest.raises(CheckFailure, match="one of"):
        checks.check_prediction("ch9_wider_keys", "double")


def swiglu_slot_weights(x, W_gate, W_in):
    gate = x @ W_gate.T                                        # (..., m)
    return gate * torch.sigmoid(gate) * (x @ W_in.T)           # silu(gate) * linear


def test_check_swiglu_slot_weights_passes_a_written_out_silu(capsys):
    assert checks.check_swiglu_slot_weights(swiglu_slot_weights)
    assert "\u2713" in capsys.readouterr().out


def test_swiglu_slot_weights_rebuild_the_packages_gated_mlp():
    from beforeqkv import models
    mlp = models.MLP(d_model=6, d_mlp=10, activation="swiglu", bias=False)
    x = torch.randn(3, 6)
    a = swiglu_slot_weights(x, mlp.W_gate.weight, mlp.W_in.weight)  # (3, m)
    torch.testing.assert_close(a @ mlp.W_out.weight.T, mlp(x))       # sum_u a_u v_u
    assert (a < 0).any() and (a > 0).any()                           # signed, unlike relu


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, Wg, Wi: swiglu_slot_weights(x, Wi, Wg), "swapped"),
    (lambda x, Wg, Wi: torch.sigmoid(x @ Wg.T) * (x @ Wi.T), "sigmoid"),
    (lambda x, Wg, Wi: F.relu(x @ Wg.T) * (x @ Wi.T), "not a ReLU"),
    (lambda x, Wg, Wi: F.silu(x @ Wg.T), "linear factor"),
    (lambda x, Wg, Wi: F.silu((x @ Wg.T) * (x @ Wi.T)), "product"),
    (lambda x, Wg, Wi: F.silu(x @ Wg) * (x @ Wi), "x @ W.T"),
])
def test_check_swiglu_slot_weights_rejects_typical_mistakes_with_a_hint(wrong, hint):
    with pytest.raises(CheckFailure, match=hint):
        checks.check_swiglu_slot_weights(wrong)


def test_check_swiglu_slot_weights_rejects_a_wrong_answer_without_a_known_mistake():
    with pytest.raises(CheckFailure, match="wrong"):
        checks.check_swiglu_slot_weights(lambda x, Wg, Wi: x @ Wg.T)
