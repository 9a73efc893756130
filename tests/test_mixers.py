"""Mixers of chapters 4 and 5: shapes, weights, permutation equivariance, validation."""
import pytest
import torch

from beforeqkv import models, tasks, train
from beforeqkv.attention import with_weights
from beforeqkv.models import scores


@pytest.mark.parametrize("cls", [models.StaticMixer, models.ContentMixer])
def test_mixers_map_tokens_and_query_to_logits_and_keep_weights(cls, gen, seed):
    m = cls()
    (tokens, query), _ = tasks.pointer(5, generator=gen)
    out, (w,) = with_weights(m, tokens, query)
    assert out.shape == (5, 16)
    assert w.shape == (5, 16)
    torch.testing.assert_close(w.sum(-1), torch.ones(5))
    torch.testing.assert_close(m(tokens, query), out)


def test_static_weights_are_the_same_for_every_input(gen, seed):
    m = models.StaticMixer()
    with torch.no_grad():
        m.w.normal_()
    (tokens, query), _ = tasks.pointer(4, generator=gen)
    _, (w,) = with_weights(m, tokens, query)
    assert torch.equal(w[0], w[3])


def test_content_weights_depend_on_the_query(gen, seed):
    m = models.ContentMixer()
    (tokens, _), _ = tasks.pointer(1, generator=gen)
    _, (w,) = with_weights(m, tokens.expand(2, -1), torch.tensor([0, 7]))
    assert not torch.allclose(w[0], w[1])


def test_content_attention_without_positions_is_permutation_equivariant(gen, seed):
    m = models.ContentMixer(positions=False)
    (tokens, query), _ = tasks.pointer(8, generator=gen)
    perm = torch.randperm(16)
    out, (w,) = with_weights(m, tokens, query)
    out_p, (w_p,) = with_weights(m, tokens[:, perm], query)
    torch.testing.assert_close(w_p, w[:, perm])  # weights move with their tokens
    torch.testing.assert_close(out_p, out)  # the read (a weighted sum) does not change


def test_learned_positions_break_permutation_equivariance(gen, seed):
    m = models.ContentMixer(positions=True)
    (tokens, query), _ = tasks.pointer(8, generator=gen)
    perm = torch.roll(torch.arange(16), 1)
    out = m(tokens, query)
    assert not torch.allclose(m(tokens[:, perm], query), out)


def test_content_mixer_without_positions_reads_any_length_static_mixer_does_not(seed):
    tokens, query = torch.randint(16, (2, 20)), torch.randint(16, (2,))
    assert models.ContentMixer(positions=False)(tokens, query).shape == (2, 16)
    with pytest.raises(ValueError, match="static mixer"):
        models.StaticMixer()(tokens, query)
    with pytest.raises(ValueError, match="learned positions"):
        models.ContentMixer()(tokens, query)


@pytest.mark.parametrize("name", list(scores.SCORES))
def test_triad_model_gives_logits_per_position_for_every_score(name, gen, seed):
    m = models.TriadModel(name)
    (items, payloads), target = tasks.triads(3, generator=gen)
    out, (w,) = with_weights(m, items, payloads)
    assert out.shape == (3, 6, 8)
    assert w.shape == (3, 6, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 6))
    train.cross_entropy(out, target).backward()


def test_triad_model_with_bilinear_score_learns_a_little(device, seed):
    m = models.TriadModel("full bilinear").to(device)
    test = tasks.triads(500, generator=torch.Generator().manual_seed(9))
    h = train.train(m, lambda g: tasks.triads(64, generator=g), steps=150, lr=1e-2, progress=False)
    assert h.loss[-1] < h.loss[0]
    assert train.accuracy(m, test) > 0.2  # chance is 1/8


@pytest.mark.parametrize("call", [
    lambda: models.StaticMixer(n_ctx=0),
    lambda: models.ContentMixer(d_model=-1),
    lambda: models.ContentMixer()(torch.randint(16, (2, 8)), torch.randint(16, (3,))),
    lambda: models.ContentMixer()(torch.randint(16, (2, 8)) + 16, torch.randint(16, (2,))),
    lambda: models.ContentMixer()(torch.rand(2, 8), torch.randint(16, (2,))),
    lambda: models.TriadModel("nope"),
    lambda: models.TriadModel(scores.DotScore(8), d_model=32),
    lambda: models.TriadModel()(torch.randint(24, (2, 6)), torch.randint(8, (2, 5))),
])
def test_bad_mixer_inputs_raise_value_error(call, seed):
    with pytest.raises(ValueError):
        call()
