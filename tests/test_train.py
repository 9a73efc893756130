"""The training loop: deterministic, model-agnostic, and loud about bad arguments."""
import pytest
import torch
import torch.nn as nn

import beforeqkv
from beforeqkv import models, tasks, train


def run(seed):
    beforeqkv.seed_everything(seed)
    m = models.RecallAttention()
    return train.train(m, lambda g: tasks.associative_recall(32, 4, generator=g), steps=30, seed=seed,
                       log_every=5)


def test_same_seed_gives_identical_history():
    assert run(1).as_dict() == run(1).as_dict()


def test_different_seed_gives_a_different_history():
    assert run(1).loss != run(2).loss


def test_history_logs_every_n_steps_and_the_last():
    h = run(0)
    assert h.steps == [5, 10, 15, 20, 25, 30]
    assert h.seconds > 0 and h.cpu_seconds >= 0


def test_train_accepts_plain_tensor_inputs_and_custom_loss():
    torch.manual_seed(0)
    lin = nn.Linear(3, 1)
    w = torch.tensor([[1.0, -2.0, 0.5]])

    def batch(g):
        x = torch.randn(64, 3, generator=g)
        return x, x @ w.T

    h = train.train(lin, batch, steps=200, lr=0.05, loss_fn=lambda m, x, y: ((m(x) - y) ** 2).mean(),
                    optimizer="sgd", momentum=0.0)
    assert h.final_loss < 1e-3
    torch.testing.assert_close(lin.weight.data, w, atol=0.02, rtol=0)


def test_accuracy_and_loss_on_a_fixed_batch():
    class Oracle(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(torch.zeros(1))

        def forward(self, keys, values, query):
            hit = (keys == query[:, None]).float()  # (B, N)
            idx = (hit * values).sum(-1).long()
            return torch.nn.functional.one_hot(idx, 16).float() * 50 + self.p

    batch = tasks.associative_recall(300, 5, generator=torch.Generator().manual_seed(0))
    assert train.accuracy(Oracle(), batch, batch_size=64) == 1.0
    assert train.evaluate_loss(Oracle(), batch) < 1e-6


@pytest.mark.parametrize("kwargs", [dict(steps=0), dict(steps=2.5), dict(optimizer="rmsprop"), dict(batch_fn=3)])
def test_bad_arguments_raise_value_error(kwargs):
    args = dict(model=models.RecallAttention(), batch_fn=lambda g: tasks.associative_recall(4, 2, generator=g),
                steps=2)
    args.update(kwargs)
    with pytest.raises(ValueError):
        train.train(**args)


def test_diverging_loss_is_reported():
    with pytest.raises(ValueError, match="learning rate"):
        train.train(models.RecallAttention(), lambda g: tasks.associative_recall(8, 2, generator=g), steps=50,
                    lr=1e12, optimizer="sgd")


def test_cross_entropy_checks_shapes():
    with pytest.raises(ValueError):
        train.cross_entropy(torch.zeros(4, 16), torch.zeros(5, dtype=torch.long))
