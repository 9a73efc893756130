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
