"""Exercise checkers: ``check_*`` functions that teach when an answer is wrong.

Each chapter's checkers live in ``chNN.py``; all are importable from here::

    from beforeqkv import checks
    checks.check_attention_read(my_attention_read)
    checks.check_prediction("ch1_lstm_n32", "below")
"""
from ._core import (CheckFailure, CheckResult, QUESTIONS, check_prediction, checker, compare,  # noqa: F401
                    configure, explain, mode, register_question)
from .ch01 import *  # noqa: F401,F403
from .ch02 import *  # noqa: F401,F403
from .ch03 import *  # noqa: F401,F403
from .ch04 import *  # noqa: F401,F403
from .ch05 import *  # noqa: F401,F403
from .ch06 import *  # noqa: F401,F403
from .ch07 import *  # noqa: F401,F403
from .ch08 import *  # noqa: F401,F403
from .ch09 import *  # noqa: F401,F403
from .ch10 import *  # noqa: F401,F403
from .ch11 import *  # noqa: F401,F403


def _stdout_only(check):
    """``check`` writing to stdout alone: while it runs, what the reader's code sends to stderr (a
    warning, a progress bar) goes to stdout. nbgrader gives 0 points to a test cell with any
    stderr output, however right the answer; the other graders and a reader's kernel see the
    same text, on stdout."""
    import contextlib
    import functools
    import sys

    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        __tracebackhide__ = True
        with contextlib.redirect_stderr(sys.stdout):
            return check(*args, **kwargs)
    return wrapper


for _name in [n for n in dir() if n.startswith("check_") and callable(globals()[n])]:
    globals()[_name] = _stdout_only(globals()[_name])
del _name
