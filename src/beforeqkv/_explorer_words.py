"""The words the chapters' explorers show, marked for the package's catalog.

A chapter passes its explorer English words: a control is named after ``plot_fn``'s
argument (or a widget's ``description``), a dropdown's options and the explorer's
``description`` (the figure's alt text) are literals of the notebook.
:class:`~beforeqkv._explorer_static.StaticExplorer` shows each through
:func:`~beforeqkv.i18n.tr`, so the Chinese site (``BEFOREQKV_LANG=zh_CN``) draws them in
Chinese; the catalog gets them from here (``make i18n-package`` extracts ``N_``).
``tests/test_i18n_package.py`` holds this list to the notebooks: every description,
control and option of a chapter's explorer is here, translated. The options of
``DATA_CONTROLS`` (the sentences and prompts a model reads) stay as the model reads them.
"""
from __future__ import annotations

from .i18n import N_

__all__ = ["CONTROLS", "OPTIONS", "DESCRIPTIONS", "DATA_CONTROLS"]

DATA_CONTROLS = ("sentence", "prompt")

CONTROLS = (N_("n_pairs"), N_("n_examples"), N_("seed"), N_("scale"), N_("tokens"), N_("layers"),
            N_("query"), N_("example"), N_("variant"), N_("n_heads"), N_("log2_d"), N_("scaled"),
            N_("temperature"), N_("fact"), N_("memory"), N_("head"), N_("sentence"), N_("prompt"))

OPTIONS = (N_("raw dot"), N_("shared projection"), N_("symmetric bilinear"), N_("cosine"),
           N_("full bilinear"), N_("QK rank 4"), N_("QK rank 2"), N_("QK rank 1"),
           N_("trained"), N_("by hand"),
           N_("layer 0, head 2: previous token"), N_("layer 1, head 8: leans to the next token"),
           N_("layer 2, head 9: mostly on [CLS]"), N_("layer 3, head 1: 'it' -> 'animal'"))

DESCRIPTIONS = (
    N_("Heatmap of a trained attention model's weights over the N stored pairs, one "
       "row per held-out example, a red frame on the pair whose key matches the query."),
    N_("A line plot of the fraction of reads that return the right value against the "
       "number of stored pairs N, 1 to 64 on a log scale: the softmax read at the "
       "chosen scale and the fixed memory with keys of width d_k; a dotted line marks "
       "N = d_k and a dashed one chance, 1/16."),
    N_("Two diagrams of the chosen number of layers over the chosen number of tokens, "
       "each unit labelled with the first step at which it can run: left, with the "
       "left-to-right links; right, with the all-to-all links only."),
    N_("A line plot of the weight each of the three trained mixers puts on the 16 "
       "positions of a held-out sequence, labelled by their tokens, for the query "
       "'read position p', with position p shaded and each mixer's answer in the "
       "legend."),
    N_("Two heatmaps of attention weights on one held-out sequence of two triads, a "
       "red frame on each token's target: left, the chosen model; right, the full "
       "bilinear model."),
    N_("One heatmap per head of a trained model: its attention weights on one held-out "
       "ring, queries and keys in ring order, the successor and predecessor of each "
       "query marked s and p."),
    N_("Bar chart of the 32 softmax weights of one random query over 32 random keys at "
       "width d, scaled or not; the title gives the largest weight and the gradient "
       "the row passes back."),
    N_("Left, a bar chart of the 12 likeliest characters after 'What sh' at the chosen "
       "temperature; right, a sample at that temperature with its share of real and of "
       "distinct words."),
    N_("Two bar charts over the 16 slots for the chosen fact in the chosen memory: "
       "left, how strongly each slot fires; right, what each slot adds to the logit of "
       "the fact's class, green bars helping and red bars hurting."),
    N_("A token-by-token heatmap of the chosen head's attention weights on the chosen "
       "sentence (rows: queries, columns: keys), the head's asymmetry ratio in the "
       "title."),
)
