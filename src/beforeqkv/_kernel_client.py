"""A guard for the programs that execute the notebooks (nbmake, nbclient, the bench): a reply
that has arrived is read within a quarter of a second, not at the end of the cell's timeout.

jupyter_client waits for a kernel message with ``await socket.poll(timeout)``. pyzmq's asyncio
poll wakes on the socket's edge-triggered file descriptor; when that edge is consumed by another
operation on the socket (a send right as the reply comes in), nothing wakes the poll, and the
reply sits unread until the timeout fires, when pyzmq checks the socket once more and finds it.
Both sides then look idle: a chapter of seconds waited out a 600 s cell timeout, and under
``make execute``'s per-cell limit of an hour the same miss would stop CI. Waiting in slices of
:data:`SLICE` seconds ends each slice with that same final check, so a missed wake-up costs at
most one slice.
"""
from __future__ import annotations

import time

SLICE = 0.25  # seconds: the most a missed wake-up can cost


def sliced(get_msg):
    """``get_msg(self, timeout)`` waiting in slices of at most :data:`SLICE` seconds."""
    from queue import Empty

    async def get_msg_in_slices(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            step = SLICE if left is None else min(SLICE, left)
            try:
                return await get_msg(self, timeout=step)
            except Empty:
                if left is not None and left <= step:
                    raise

    get_msg_in_slices.sliced = True
    return get_msg_in_slices


def async_channel():
    """jupyter_client's asyncio channel class: ``AsyncZMQSocketChannel`` (jupyter_client 8), or
    ``ZMQSocketChannel``, whose ``get_msg`` is the coroutine in 7 (Colab's 7.4.9); None where
    jupyter_client is not installed (a reader's plain Python)."""
    import inspect
    try:
        from jupyter_client import channels
    except ImportError:
        return None
    for name in ("AsyncZMQSocketChannel", "ZMQSocketChannel"):
        cls = getattr(channels, name, None)
        get_msg = getattr(cls, "get_msg", None)
        if get_msg is not None and (getattr(get_msg, "sliced", False) or inspect.iscoroutinefunction(get_msg)):
            return cls
    return None


def guard() -> bool:
    """Make every asyncio kernel client of this process wait in slices; True if it applied now.
    Idempotent; does nothing where jupyter_client is not installed."""
    cls = async_channel()
    if cls is None or getattr(cls.get_msg, "sliced", False):
        return False
    cls.get_msg = sliced(cls.get_msg)
    return True
