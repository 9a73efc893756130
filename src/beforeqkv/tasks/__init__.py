"""Synthetic data sets. Each takes a ``generator=`` (a ``torch.Generator``) so data
is reproducible and independent of how many random numbers a model drew.

Every task returns ``(inputs, target)`` where ``inputs`` is a tensor or a tuple of
tensors that the matching model takes as ``model(*inputs)``.
"""
from .recall import associative_recall  # noqa: F401  (chapters 1, 2, 7)
from .routing import *  # noqa: F401,F403  (chapters 4, 5, 6: pointer/fixed/salient, triads, ring)
from .ring import *  # noqa: F401,F403  (chapter 6: items on a ring)
from .sequences import *  # noqa: F401,F403  (chapter 8: random tokens)
from .facts import *  # noqa: F401,F403  (chapter 9: random facts)
