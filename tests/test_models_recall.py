"""Part I models: shapes, validation, and the attention read really is a softmax read."""
import pytest
import torch

from beforeqkv import models, tasks, train
from beforeqkv.attention import with_weights


def test_recall_models_output_one_logit_per_value(gen):
    inputs, target = tasks.associative_recall(5, 4, generator=gen)
    for m in (models.RecallLSTM(), models.RecallAttention(), models.RecallAttention(kind="linear", d_head=16)):
        assert m(*inputs).shape == (5, 16)


def test_recall_attention_weights_are_a_distribution_over_pairs(gen):
    m = models.RecallAttention()
    _, (w,) = with_weights(m, *tasks.associative_recall(5, 6, generator=gen)[0])
    assert w.shape == (5, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(5))
    with pytest.raises(ValueError, match="linear"):
        with_weights(models.RecallAttention(kind="linear"), *tasks.associative_recall(5, 6, generator=gen)[0])


def test_unscaled_attention_differs_from_scaled(gen):
    torch.manual_seed(0)
    a = models.RecallAttention(scaled=True)
    b = models.RecallAttention(scaled=False)
    b.load_state_dict(a.state_dict())
    x = tasks.associative_recall(5, 6, generator=gen)[0]
    assert not torch.allclose(a(*x), b(*x))


def test_attention_learns_recall_quickly():
    torch.manual_seed(0)
    m = models.RecallAttention()
    train.train(m, lambda g: tasks.associative_recall(128, 4, generator=g), steps=150)
    acc = train.accuracy(m, tasks.associative_recall(1000, 4, generator=torch.Generator().manual_seed(9)))
    assert acc > 0.9


def test_recall_models_reject_bad_inputs():
    m = models.RecallAttention()
    with pytest.raises(ValueError):
        m(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError):
        m(torch.full((2, 3), 99), torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError):
        models.RecallAttention(kind="quadratic")


def test_recall_transformer_gives_logits_per_value():
    model = models.RecallTransformer(d_model=8, n_heads=2, n_layers=2, residual=False)
    keys, values = torch.tensor([[1, 5, 9]]), torch.tensor([[2, 0, 3]])
    assert model(keys, values, torch.tensor([5])).shape == (1, 16)


def test_recall_transformer_residual_stream_is_what_forward_reads(gen):
    torch.manual_seed(0)
    model = models.RecallTransformer(d_model=8, n_heads=2, n_layers=3).eval()
    inputs, _ = tasks.associative_recall(4, 5, generator=gen)
    stream = model.residual_stream(*inputs)
    assert len(stream) == 4 and all(x.shape == (4, 6, 8) for x in stream)
    torch.testing.assert_close(model.blocks[1](stream[1], causal=False), stream[2])
    torch.testing.assert_close(model.readout(model.norm_final(stream[-1][:, -1])), model(*inputs))


def test_the_package_embedding_trains_bit_for_bit_like_torchs(monkeypatch):
    """models.Embedding looks rows up with index_select (a faster backward on a CPU): seeded
    runs of a recall model and a GPT give exactly the weights of nn.Embedding's lookup."""
    import torch.nn as nn

    from beforeqkv.models.embeddings import Embedding

    def runs():
        out = []
        for make, batches in (
                (lambda: models.RecallAttention(d_model=16, d_head=8),
                 lambda g: tasks.associative_recall(32, 16, generator=g)),
                (lambda: models.GPT(models.TransformerConfig(d_vocab=12, n_ctx=8, d_model=16, n_heads=2,
                                                             n_layers=1)),
                 lambda g: (lambda t: (t[:, :-1], t[:, 1:]))(torch.randint(0, 12, (8, 9), generator=g)))):
            fit = train.fit(make, batches, 30, 1e-2, device="cpu", progress=False)
            out += [p.detach().clone() for p in fit.model.parameters()]
        return out

    ours = runs()
    assert isinstance(models.RecallAttention().embed.E_k, Embedding)
    monkeypatch.setattr(Embedding, "forward", nn.Embedding.forward)
    theirs = runs()
    assert len(ours) == len(theirs) and all(torch.equal(a, b) for a, b in zip(ours, theirs))
    ids = torch.tensor([[1, 0], [2, 2]])
    table = Embedding(3, 4)
    assert torch.equal(table(ids), table.weight[ids]) and table(torch.tensor(2)).shape == (4,)
    with pytest.raises(IndexError):
        table(torch.tensor([3]))
