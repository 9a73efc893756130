"""The notebook runners' guard against a lost wake-up (beforeqkv._kernel_client): a reply that
has arrived is read within a slice, and a real timeout still ends the wait."""
import asyncio
import time
from pathlib import Path
from queue import Empty

import pytest

from beforeqkv import _kernel_client

ROOT = Path(__file__).resolve().parents[1]


class LostWakeUp:
    """A channel whose reply has arrived but whose poll was never woken: like pyzmq's asyncio
    poll after a consumed edge, only the end of a wait (its last check) finds the message."""

    def __init__(self, has_reply=True):
        self.has_reply, self.waits = has_reply, []

    async def get_msg(self, timeout=None):
        self.waits.append(timeout)
        await asyncio.sleep(3600 if timeout is None else timeout)
        if not self.has_reply:
            raise Empty
        return {"msg_type": "execute_reply"}


def _run(coro, limit):
    return asyncio.run(asyncio.wait_for(coro, limit))


def test_without_the_guard_the_reply_waits_for_the_whole_timeout():
    chan = LostWakeUp()
    with pytest.raises(asyncio.TimeoutError):  # 600 s of waiting, cut at 1 s here
        _run(LostWakeUp.get_msg(chan, timeout=600), 1.0)


@pytest.mark.parametrize("timeout", [600, None])
def test_with_the_guard_the_reply_is_read_within_one_slice(timeout):
    chan = LostWakeUp()
    t0 = time.monotonic()
    msg = _run(_kernel_client.sliced(LostWakeUp.get_msg)(chan, timeout=timeout), 5.0)
    assert msg == {"msg_type": "execute_reply"}
    assert time.monotonic() - t0 < 4 * _kernel_client.SLICE
    assert chan.waits == [_kernel_client.SLICE]


def test_the_guard_still_times_out_when_nothing_came():
    chan = LostWakeUp(has_reply=False)
    t0 = time.monotonic()
    with pytest.raises(Empty):
        _run(_kernel_client.sliced(LostWakeUp.get_msg)(chan, timeout=0.6), 5.0)
    assert 0.55 <= time.monotonic() - t0 < 2.0
    assert len(chan.waits) >= 3 and max(chan.waits) <= _kernel_client.SLICE
    assert sum(chan.waits) == pytest.approx(0.6, abs=0.05)


def test_the_guard_is_on_in_this_process_and_applies_once():
    import jupyter_client
    cls = _kernel_client.async_channel()
    assert cls is not None, f"no asyncio channel found in jupyter_client {jupyter_client.__version__}"
    assert getattr(cls.get_msg, "sliced", False)  # tests/conftest.py
    assert _kernel_client.guard() is False  # a second call wraps nothing twice


def test_the_guard_finds_the_asyncio_channel_of_jupyter_client_7_and_8(monkeypatch):
    """jupyter_client 8 names it AsyncZMQSocketChannel; 7 (Colab's 7.4.9) has only
    ZMQSocketChannel, whose get_msg is the coroutine; a blocking get_msg is never wrapped."""
    import types

    import jupyter_client

    async def coroutine_get_msg(self, timeout=None):
        pass

    def blocking_get_msg(self, timeout=None):
        pass

    def channels_of(get_msg):  # a jupyter_client 7 channels module
        module = types.SimpleNamespace(ZMQSocketChannel=type("ZMQSocketChannel", (), {"get_msg": get_msg}))
        monkeypatch.setattr(jupyter_client, "channels", module)  # what `from jupyter_client import channels` reads
        return module

    seven = channels_of(coroutine_get_msg)
    assert _kernel_client.async_channel() is seven.ZMQSocketChannel
    channels_of(blocking_get_msg)
    assert _kernel_client.async_channel() is None and _kernel_client.guard() is False


@pytest.mark.parametrize("runner", ["book/conftest.py", "tests/conftest.py", "tools/bench.py", "tools/gpu_check.py"])
def test_every_notebook_runner_turns_the_guard_on(runner):
    text = (ROOT / runner).read_text(encoding="utf-8")
    assert "from beforeqkv._kernel_client import guard" in text and "guard()" in text
