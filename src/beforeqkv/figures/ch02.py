"""Figures of chapter 2: a fixed-size memory fills up, a growing one does not."""
from __future__ import annotations

from ..i18n import _
from ..plot import bars, lines

__all__ = ["fill_up_figure", "crosstalk_figure", "memory_size_figure"]


def fill_up_figure(n_pairs, acc_softmax, acc_linear):
    """Held-out accuracy against N of the softmax read (memory N x 32) and the linear read
    (a fixed 16 x 16 memory); ``acc_*``: {N: accuracy} (chapter 2)."""
    return lines(
        n_pairs,
        {_("softmax read (memory grows: N x 32)"): [acc_softmax[n] for n in n_pairs],
         _("linear read (memory fixed: 16 x 16)"): [acc_linear[n] for n in n_pairs]},
        logx=True, chance=1 / 16, ylim=(0, 1.05), xlabel=_("number of facts N"),
        ylabel=_("accuracy on held-out examples"), title=_("A fixed-size memory fills up"))


def crosstalk_figure(n_sweep, soft, fixed, d_k: int, sharpness: float):
    """Untrained recall against the number of stored pairs: a softmax read at scale
    ``sharpness`` vs a fixed memory with keys of width ``d_k`` (chapter 2)."""
    fig = lines(
        n_sweep,
        {_("softmax read, scale {s:g} (keeps all pairs)").format(s=sharpness): soft,
         _("fixed memory M ({d_k} x 16)").format(d_k=d_k): fixed},
        logx=True, chance=1 / 16, ylim=(0, 1.05), xlabel=_("number of stored pairs N"),
        ylabel=_("reads that return the right value"),
        title=_("Crosstalk, no training (d_k = {d_k})").format(d_k=d_k))
    fig.axes[0].axvline(d_k, color="gray", ls=":", lw=1)
    return fig


def memory_size_figure(acc_linear16, acc_linear64, acc_window, acc_softmax, window: int, n_pairs: int = 64):
    """Accuracy at N = ``n_pairs`` of the linear read with d_k = 16 and 64, a softmax read
    over the last ``window`` pairs and over all of them (chapter 2)."""
    return bars([_("linear\nd_k = 16"), _("linear\nd_k = 64"),
                 _("softmax\nlast {w}").format(w=window), _("softmax\nall {n}").format(n=n_pairs)],
                [acc_linear16, acc_linear64, acc_window, acc_softmax],
                ylabel=_("accuracy at N = {n}").format(n=n_pairs), chance=1 / 16, ylim=(0, 1.1),
                title=_("Memory size decides; the softmax alone does not"))
