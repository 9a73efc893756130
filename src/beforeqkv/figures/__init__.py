"""Every figure of the book, one module per chapter: ``from beforeqkv.figures import ch06 as figs``.

``common`` holds what the diagrams share (colours, boxes, ``ALT_TEXT``, the size limits)
and the preface's argument map. Generic plots (lines, bars, heatmaps) stay in
:mod:`beforeqkv.plot`.
"""
from . import ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, common  # noqa: F401
from .common import ALT_TEXT, ARGUMENT, MAX_WIDTH, MIN_FONT, argument_map  # noqa: F401
