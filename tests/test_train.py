"""The training loop: deterministic, model-agnostic, and loud about bad arguments."""
import os
import subprocess
import sys

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


def test_weight_decay_skips_biases_norms_and_embeddings():
    cfg = models.TransformerConfig(d_vocab=11, n_ctx=8, d_model=16, n_heads=2, n_layers=1, tie_embeddings=True)
    model = models.GPT(cfg)
    decay, no_decay = train.param_groups(model, 0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert decayed and all(n.endswith("weight") and "norm" not in n and "W_E" not in n and "W_pos" not in n
                           for n in decayed)
    assert "blocks.0.attn.W_Q.weight" in decayed
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_adamw_decays_an_unused_weight_matrix_but_not_an_unused_embedding():
    class Spare(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = nn.Linear(3, 2)
            self.W_spare = nn.Linear(3, 3, bias=False)  # zero gradient: only decay can move it
            self.E_spare = nn.Embedding(4, 3)

        def forward(self, x):
            spare = self.W_spare.weight.sum() + self.E_spare.weight.sum()
            return self.used(x) + 0.0 * spare

    torch.manual_seed(0)
    m = Spare()
    w0, e0 = m.W_spare.weight.detach().clone(), m.E_spare.weight.detach().clone()
    train.train(m, lambda g: (torch.randn(8, 3, generator=g), torch.randint(2, (8,), generator=g)), steps=3,
                lr=0.1, optimizer="adamw", weight_decay=0.5)
    torch.testing.assert_close(m.W_spare.weight, w0 * (1 - 0.1 * 0.5) ** 3)
    torch.testing.assert_close(m.E_spare.weight, e0)


def test_warmup_and_cosine_schedule():
    assert train.lr_factor(1, 100, warmup=10) == pytest.approx(0.1)
    assert train.lr_factor(10, 100, warmup=10) == pytest.approx(1.0)
    assert train.lr_factor(50, 100) == 1.0
    assert train.lr_factor(11, 100, warmup=10, schedule="cosine") == pytest.approx(1.0, abs=1e-3)
    assert train.lr_factor(100, 100, warmup=10, schedule="cosine") == pytest.approx(0.1)
    f = [train.lr_factor(s, 100, warmup=10, schedule="cosine") for s in range(10, 101)]
    assert all(a >= b for a, b in zip(f, f[1:]))


def test_eval_fn_is_recorded_in_eval_mode_and_the_mode_is_restored():
    modes = []

    def eval_fn(m):
        modes.append(m.training)
        return 0.5

    m = models.RecallAttention()
    m.eval()
    h = train.train(m, lambda g: tasks.associative_recall(8, 2, generator=g), steps=6, eval_fn=eval_fn,
                    eval_every=4, warmup=2, schedule="cosine")
    assert h.eval_steps == [4, 6] and h.eval_values == [0.5, 0.5]
    assert modes == [False, False]
    assert not m.training
    m.train()
    train.train(m, lambda g: tasks.associative_recall(8, 2, generator=g), steps=2)
    assert m.training


@pytest.mark.parametrize("bad", [lambda g: tasks.associative_recall(4, 2, generator=g)[0],
                                 lambda g: (1, 2, 3), lambda g: torch.zeros(3)])
def test_a_batch_fn_that_does_not_return_inputs_and_target_is_named(bad):
    with pytest.raises(ValueError, match=r"\(inputs, target\)|target must be a tensor"):
        train.train(models.RecallAttention(), bad, steps=1)


@pytest.mark.parametrize("kwargs", [dict(lr=float("nan")), dict(lr=-1.0), dict(weight_decay=float("inf")),
                                    dict(schedule="linear"), dict(warmup=5), dict(eval_every=2),
                                    dict(eval_fn=3)])
def test_bad_schedule_and_eval_arguments_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        train.train(models.RecallAttention(), lambda g: tasks.associative_recall(4, 2, generator=g), steps=2,
                    **kwargs)


def test_accuracy_refuses_nan_logits_instead_of_counting_them():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.Parameter(torch.zeros(16))

        def forward(self, keys, values, query):
            out = torch.zeros(keys.shape[0], 16) + self.p
            out[0, 3] = float("nan")
            return out

    batch = tasks.associative_recall(10, 2, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="NaN"):
        train.accuracy(Broken(), batch)


@pytest.mark.parametrize("grad_clip", [0.0, float("nan")])
def test_bad_grad_clip_raises(grad_clip):
    with pytest.raises(ValueError, match="grad_clip"):
        train.train(models.RecallAttention(), lambda g: tasks.associative_recall(4, 2, generator=g), steps=1,
                    grad_clip=grad_clip)


# ------------------------------------------------------------------ fit, map_runs, foreach
def _fit(n_pairs, steps=30):
    return train.fit(lambda: models.RecallLSTM(hidden=16),
                     lambda g: tasks.associative_recall(32, n_pairs, generator=g), steps, 1e-2,
                     test=tasks.associative_recall(200, n_pairs, generator=torch.Generator().manual_seed(9)),
                     device="cpu", progress=False)


def test_fit_seeds_builds_trains_and_scores_the_same_as_by_hand():
    fit = _fit(4)
    beforeqkv.seed_everything(0)
    model = models.RecallLSTM(hidden=16)
    hist = train.train(model, lambda g: tasks.associative_recall(32, 4, generator=g), 30, 1e-2, progress=False)
    test = tasks.associative_recall(200, 4, generator=torch.Generator().manual_seed(9))
    assert fit.history.loss == hist.loss and fit.accuracy == train.accuracy(model, test)
    assert all(torch.equal(a, b) for a, b in zip(fit.model.parameters(), model.parameters()))
    assert fit.cpu_seconds == fit.history.cpu_seconds > 0
    assert train.fit(lambda: models.RecallLSTM(hidden=16), lambda g: tasks.associative_recall(8, 2, generator=g),
                     2, device="cpu", progress=False).accuracy is None
    with pytest.raises(ValueError, match="make\\(\\) must return an nn.Module"):
        train.fit(lambda: 3, lambda g: None, 1)
    with pytest.raises(ValueError, match="fit needs make"):
        train.fit(models.RecallLSTM(), lambda g: None, 1)


@pytest.mark.skipif(not sys.platform.startswith("linux") or torch.cuda.is_available(),
                    reason="map_runs forks workers on a Linux CPU only")
def test_map_runs_on_two_workers_gives_the_numbers_of_a_plain_loop():
    plain = [_fit(n) for n in (2, 4, 8)]
    forked = train.map_runs(lambda n: _fit(n), (2, 4, 8), n_workers=2)
    assert [f.history.loss for f in forked] == [f.history.loss for f in plain]
    assert [f.accuracy for f in forked] == [f.accuracy for f in plain]
    assert all(torch.equal(a, b) for f, g in zip(forked, plain) for a, b in zip(f.model.parameters(),
                                                                                  g.model.parameters()))
    # the work really ran in other processes (a closure over a local works: nothing is pickled but results);
    # a barrier of two, not a sleep: a task returns only once another process runs one, however slow the start
    import multiprocessing as mp
    both = mp.get_context("fork").Barrier(2)

    def pid(_):
        both.wait(timeout=120)
        return os.getpid()
    pids = train.map_runs(pid, range(4), n_workers=2)
    assert os.getpid() not in pids and len(set(pids)) == 2


@pytest.mark.skipif(not sys.platform.startswith("linux") or torch.cuda.is_available(),
                    reason="map_runs forks workers on a Linux CPU only")
def test_map_runs_workers_inherit_what_a_first_optimizer_imports():
    """torch's first optimizer imports torch._dynamo (~1.3 s): map_runs imports it once, before
    forking, so no worker pays for it again. A fresh interpreter, where nothing imported it yet."""
    code = ("import sys; from beforeqkv import train; "
            "print(train.map_runs(lambda _: 'torch._dynamo' in sys.modules, [0, 1], n_workers=2))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[True, True]"


def test_workers_reads_beforeqkv_workers_and_refuses_nonsense(monkeypatch):
    monkeypatch.setenv("BEFOREQKV_WORKERS", "1")
    assert train.workers(8) == 1 and train.map_runs(lambda x: x * 2, [1, 2, 3]) == [2, 4, 6]
    monkeypatch.setenv("BEFOREQKV_WORKERS", "zero")
    with pytest.raises(ValueError, match="BEFOREQKV_WORKERS must be a positive integer, got 'zero'"):
        train.workers(2)
    monkeypatch.delenv("BEFOREQKV_WORKERS")
    assert 1 <= train.workers(1) == 1 <= train.workers(64)
    with pytest.raises(ValueError, match="map_runs needs a function"):
        train.map_runs([1, 2], [3])


@pytest.mark.skipif(not sys.platform.startswith("linux") or torch.cuda.is_available(), reason="forks on a Linux CPU")
def test_a_graded_run_never_forks(monkeypatch):
    """nbgrader's autograder and beforeqkv.grade run the student's notebook: no fork, no fork warning."""
    monkeypatch.setenv("BEFOREQKV_WORKERS", "2")
    assert train.workers(8) == 2
    for var, value in (("BEFOREQKV_GRADING", "1"), ("NBGRADER_EXECUTION", "autograde")):
        with monkeypatch.context() as m:
            m.setenv(var, value)
            assert train.workers(8) == 1
            assert train.map_runs(lambda x: os.getpid(), [1, 2]) == [os.getpid()] * 2
    monkeypatch.setenv("BEFOREQKV_GRADING", "0")
    assert train.workers(8) == 2


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd"])
def test_the_batched_optimizer_update_gives_the_numbers_of_the_per_parameter_loop(name, monkeypatch):
    """train() asks for foreach=True (faster on a CPU); the numbers are those of foreach=False."""
    def run():
        beforeqkv.seed_everything(0)
        model = models.RecallTransformer(d_model=16, n_heads=2, n_layers=2)
        train.train(model, lambda g: tasks.associative_recall(16, 4, generator=g), 20, 1e-2, optimizer=name,
                    weight_decay=0.1, progress=False)
        return [p.detach().clone() for p in model.parameters()]
    batched = run()
    original = train._optimizer
    monkeypatch.setattr(train, "_optimizer", lambda *a: _unbatched(original(*a)))
    assert all(torch.equal(a, b) for a, b in zip(batched, run()))


def _unbatched(opt):
    for group in opt.param_groups:
        assert group["foreach"] is True
        group["foreach"] = False
    return opt


def test_cpu_threads_sets_the_thread_count_for_a_block_and_restores_it(monkeypatch):
    before = torch.get_num_threads()
    with beforeqkv.cpu_threads(2) as n:
        assert n == 2 and torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    monkeypatch.setenv("BEFOREQKV_WORKERS", "1")
    with beforeqkv.cpu_threads() as n:
        assert n == 1 == torch.get_num_threads()
    with pytest.raises(ValueError):
        with beforeqkv.cpu_threads(0):
            pass
    assert torch.get_num_threads() == before


FORKS = pytest.mark.skipif(not sys.platform.startswith("linux") or torch.cuda.is_available(),
                           reason="map_runs forks workers on a Linux CPU only")


@FORKS
def test_a_worker_that_dies_never_leaves_map_runs_waiting(capsys):
    """multiprocessing.Pool waits forever for a task whose worker was killed; map_runs redoes it here."""
    parent = os.getpid()

    def work(x):
        if x == 1 and os.getpid() != parent:
            os.kill(os.getpid(), 9)  # as the kernel's OOM killer would
        return x * 10
    assert train.map_runs(work, range(4), n_workers=2) == [0, 10, 20, 30]
    assert "a worker process died" in capsys.readouterr().out


@FORKS
def test_map_runs_inside_a_jupyter_kernel_never_stalls_it(tmp_path):
    """Five cells in a row each fork workers from a live kernel (its ZeroMQ threads running) that
    print, warn and would draw progress widgets; each cell must finish within its timeout."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    setup = (
        "import os, warnings\n"
        "import torch, beforeqkv\n"
        "from beforeqkv import models, tasks, train\n"
        "beforeqkv.setup(quiet=True, plot_style=False)\n"
        "os.environ['BEFOREQKV_PROGRESS'] = '1'  # this kernel draws bars; its workers must not\n"
        "def run(n):\n"
        "    print('worker trains N =', n)\n"
        "    warnings.warn('a warning from a worker')\n"
        "    test = tasks.associative_recall(64, n, generator=torch.Generator().manual_seed(1))\n"
        "    return train.fit(models.RecallAttention, lambda g: tasks.associative_recall(16, n, generator=g),\n"
        "                     5, test=test, device='cpu').accuracy\n"
        "plain = [run(n) for n in (2, 4, 8)]\n")
    repeat = ("accs = train.map_runs(run, [2, 4, 8], n_workers=2)\n"
              "pids = train.map_runs(lambda _: os.getpid(), range(4), n_workers=2)\n"
              "assert accs == plain and os.getpid() not in pids, (accs, plain, pids)\n"
              "print('cell done')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup)]
                                  + [nbformat.v4.new_code_cell(repeat) for _ in range(5)])
    env = dict(os.environ, BEFOREQKV_WORKERS="2")
    env.pop("BEFOREQKV_GRADING", None)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    old = dict(os.environ)
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    outs = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells[1:]]
    assert all("cell done" in o for o in outs), outs
