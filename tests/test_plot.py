"""Every plotting function returns a Figure and checks its inputs."""
import pytest
import torch
from matplotlib.figure import Figure

from beforeqkv import figures, plot, train


def test_plot_functions_return_figures():
    h = train.History(steps=[1, 2], loss=[1.0, 0.5])
    figs = [
        plot.lines([1, 2, 4], {"a": [0.1, 0.5, 0.9]}, logx=True, chance=0.1),
        plot.bars(["x", "a long label"], [0.2, 0.9], chance=0.5),
        plot.bars(["x", "y"], [0.2, 0.9], horizontal=True),
        plot.heatmap(torch.rand(3, 4), xlabels=list("abcd"), ylabels=list("xyz"), annotate=True),
        plot.loss_curves({"run": h}, floor=0.3),
    ]
    assert all(isinstance(f, Figure) for f in figs)


def test_plot_inputs_are_checked():
    with pytest.raises(ValueError):
        plot.lines([1, 2], {"a": [1.0]})
    with pytest.raises(ValueError):
        plot.bars(["a"], [1.0, 2.0])
    with pytest.raises(ValueError):
        plot.heatmap(torch.rand(2, 2, 2))
    with pytest.raises(ValueError):
        plot.lines([1], {})


def test_figures_render_as_png_in_ipython():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        assert plot.enable_notebook_display() is True
        data, _ = shell.display_formatter.format(plot.bars(["a"], [1.0]))
        assert data["image/png"][:4] == b"\x89PNG"
    finally:
        InteractiveShell.clear_instance()


def test_enable_notebook_display_is_harmless_outside_ipython():
    assert plot.enable_notebook_display() is False


def test_steps_figure_draws_one_panel_per_kind_with_the_step_counts():
    fig = figures.ch03.steps_figure(n_layers=2, T=4)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["with recurrence: 5 steps", "red connections only: 2 steps"]


def test_ring_head_weights_sorts_rows_into_ring_order_and_checks_shapes():
    items = torch.tensor([3, 1, 2, 0])
    w = torch.eye(4).expand(2, 4, 4)  # each position reads itself
    fig = figures.ch06.ring_head_weights(w, items, torch.tensor([[0.1, 0.2, 0.7]] * 2), label="H=2")
    assert [ax.get_title() for ax in fig.axes] == ["H=2, head 1\nsucc 0.10 | pred 0.20",
                                                   "H=2, head 2\nsucc 0.10 | pred 0.20"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["0", "1", "2", "3"]
    with pytest.raises(ValueError, match="weights"):
        figures.ch06.ring_head_weights(torch.ones(2, 4, 3), items)



def _hand_memory():
    from beforeqkv import models, tasks
    keys, target = tasks.random_facts(8, generator=torch.Generator().manual_seed(0))
    return models.handwritten_memory(keys, target, d_mlp=4), keys, target


def _heights(ax):
    return [p.get_height() for p in ax.patches]


def test_slot_votes_plots_the_facts_own_slot_weights_and_votes():
    memory, keys, target = _hand_memory()
    for fact in (2, 6):  # one fact with a slot, one without
        fig = figures.ch09.slot_votes(memory, keys, target, fact)
        ax1, ax2 = fig.axes
        a = memory.slot_weights(keys[fact]).detach()
        vote = a * memory.W_out.weight[target[fact]].detach()
        assert torch.allclose(torch.tensor(_heights(ax1), dtype=torch.float32), a)
        assert torch.allclose(torch.tensor(_heights(ax2), dtype=torch.float32), vote)
        assert ax1.get_title().startswith(f"fact {fact}")


def test_slot_votes_never_shows_another_fact_in_place_of_the_one_asked_for():
    memory, keys, target = _hand_memory()
    fig = figures.ch09.slot_votes(memory, keys, target, 7)  # no slot fires for a fact beyond m
    assert _heights(fig.axes[0]) == [0.0] * 4
    last_stored = figures.ch09.slot_votes(memory, keys, target, 3)
    assert _heights(last_stored.axes[0]) != _heights(fig.axes[0])
    for bad in (8, -1, 2.0, True):
        with pytest.raises(ValueError, match="fact"):
            figures.ch09.slot_votes(memory, keys, target, bad)

