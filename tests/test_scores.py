"""Score functions of chapter 5: symmetry, rank, agreement with the bilinear form."""
import pytest
import torch

from beforeqkv.models import scores

SYMMETRIC = ["raw dot", "shared projection", "symmetric bilinear", "cosine"]
DIRECTIONAL = ["full bilinear", "QK rank 4", "QK rank 2", "QK rank 1"]


@pytest.mark.parametrize("name", SYMMETRIC)
def test_symmetric_scores_are_symmetric(name, seed):
    s = scores.make_score(name, 8)
    assert s.symmetric
    x = torch.randn(3, 5, 8)
    out = s(x)
    assert out.shape == (3, 5, 5)
    torch.testing.assert_close(out, out.transpose(-2, -1))


@pytest.mark.parametrize("name", DIRECTIONAL)
def test_directional_scores_are_not_symmetric(name, seed):
    s = scores.make_score(name, 8)
    assert not s.symmetric
    out = s(torch.randn(5, 8))
    assert (out - out.T).abs().max() > 1e-3


@pytest.mark.parametrize("name", SYMMETRIC[:3] + DIRECTIONAL)
def test_every_score_is_the_bilinear_form_of_its_matrix(name, seed):
    s = scores.make_score(name, 6)
    x_q, x_k = torch.randn(2, 4, 6), torch.randn(2, 3, 6)
    want = scores.bilinear_scores(x_q, x_k, s.matrix()) * s.scale
    torch.testing.assert_close(s(x_q, x_k), want)


@pytest.mark.parametrize("rank", [1, 2, 4])
def test_rank_of_wq_transpose_wk_is_at_most_r(rank, seed):
    s = scores.QKScore(16, d_head=rank)
    A = s.matrix()
    assert A.shape == (16, 16)
    assert torch.linalg.matrix_rank(A).item() == rank
    assert s.n_params() == 2 * rank * 16


def test_raw_dot_scores_prefer_self_when_norms_are_equal(seed):
    x = torch.nn.functional.normalize(torch.randn(7, 5), dim=-1)
    s = scores.dot_scores(x)
    assert torch.equal(s.argmax(-1), torch.arange(7))


def test_bilinear_scores_match_explicit_sum(seed):
    x_q, x_k, A = torch.randn(3, 4), torch.randn(5, 4), torch.randn(4, 4)
    s = scores.bilinear_scores(x_q, x_k, A)
    assert torch.isclose(s[1, 2], x_q[1] @ A @ x_k[2])


def test_cosine_score_is_invariant_to_token_norms(seed):
    s = scores.CosineScore(4, temperature=-2.0)
    x = torch.randn(5, 4)
    torch.testing.assert_close(s(x * (0.1 + 10 * torch.rand(5, 1))), s(x), atol=1e-5, rtol=1e-4)


def test_self_weight_is_the_mean_diagonal():
    w = torch.tensor([[0.9, 0.1], [0.3, 0.7]])
    assert abs(scores.self_weight(w) - 0.8) < 1e-6


@pytest.mark.parametrize("call", [
    lambda: scores.make_score("nope"),
    lambda: scores.QKScore(8, 0),
    lambda: scores.DotScore(0),
    lambda: scores.DotScore(4)(torch.randn(3, 5)),
    lambda: scores.bilinear_scores(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 3)),
    lambda: scores.dot_scores(torch.randn(3, 4), torch.randn(3, 5)),
    lambda: scores.dot_scores(torch.ones(3, 4, dtype=torch.int64)),
    lambda: scores.self_weight(torch.rand(2, 3)),
])
def test_bad_score_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()
