"""The happens-before edges of the program's own threads, which no ACL call shows: a thread's start and join,
and a thread pool task's submission and result.

While a sanitizer is live (`watch`), these methods are wrapped, process-wide, once (they call the original
first or last and pass everything through; with no live sanitizer they only test that):
- `threading.Thread.start` (of every subclass, whatever its `run`): the new thread starts after what the
  starting thread did so far (`Sanitizer.thread_starting`);
- `threading.Thread.join`: once the thread has ended (not a join that timed out), the joining thread knows
  everything it did (`Sanitizer.thread_joined`). `ThreadPoolExecutor.shutdown(wait=True)` joins its workers
  this way;
- `concurrent.futures.ThreadPoolExecutor.submit`: the task starts after what the submitting thread did so
  far (its worker thread may be older than the submission);
- `concurrent.futures.Future.result` and `Future.exception`: once they give the task's value or exception (not
  a timeout, not a cancellation), the caller knows everything the task did.
Any other synchronization (locks, queues, `threading.Event`, polling `is_alive`) is no edge here: the
sanitizer reports what only such an edge orders.
"""
from __future__ import annotations

import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

_live: weakref.WeakSet = weakref.WeakSet()  # the sanitizers the edges go to
_lock = threading.Lock()  # (guards _live and _original)
_original: dict[str, object] = {}  # "start", "join", "submit", "result", "exception" -> the method wrapped
_handoffs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Future -> Handoff of its task


class Handoff:
    """The clocks a pool task passes on: `start`, the submitting thread's; `end`, the task's when it returned
    (each: Sanitizer -> (agent, n, base))."""

    __slots__ = ("start", "end")

    def __init__(self):
        self.start: dict = {}
        self.end: dict = {}


def watch(sanitizer) -> None:
    """Send the threads' edges to `sanitizer` from now on (until it is garbage)."""
    with _lock:
        _live.add(sanitizer)
        if not _original:
            _install()


def _install() -> None:
    _original.update(start=threading.Thread.start, join=threading.Thread.join, submit=ThreadPoolExecutor.submit,
                     result=Future.result, exception=Future.exception)
    threading.Thread.start = _start
    threading.Thread.join = _join
    ThreadPoolExecutor.submit = _submit
    Future.result = _result
    Future.exception = _exception


def _each(hook: str, *args) -> None:
    """Call `hook` of each live sanitizer, under its runtime's (re-entrant) lock."""
    with _lock:
        sanitizers = list(_live)
    for san in sanitizers:
        with san.rt.lock:
            getattr(san, hook)(*args)


def _start(self) -> None:
    if _live:
        _each("thread_starting", self)
    _original["start"](self)


_start.__doc__ = threading.Thread.start.__doc__


def _join(self, timeout=None) -> None:
    _original["join"](self, timeout)
    if _live and not self.is_alive():
        _each("thread_joined", self)


_join.__doc__ = threading.Thread.join.__doc__


def _submit(self, fn, /, *args, **kwargs):
    if not _live:
        return _original["submit"](self, fn, *args, **kwargs)
    hand = Handoff()
    _each("handing_over", hand.start)
    future = _original["submit"](self, _task, hand, fn, *args, **kwargs)
    _handoffs[future] = hand
    return future


_submit.__doc__ = ThreadPoolExecutor.submit.__doc__


def _task(hand: Handoff, fn, *args, **kwargs):
    """A submitted task, in its worker thread: after its submission; its end handed to whoever takes its
    result."""
    _each("taking_over", hand.start)
    try:
        return fn(*args, **kwargs)
    finally:
        _each("handing_over", hand.end)


def _result(self, timeout=None):
    try:
        value = _original["result"](self, timeout)
    except BaseException as exc:  # the task's own exception is its end too; a timeout or a cancellation is not
        if self.done() and not self.cancelled() and _original["exception"](self, 0) is exc:
            _took(self)
        raise
    _took(self)
    return value


_result.__doc__ = Future.result.__doc__


def _exception(self, timeout=None):
    exc = _original["exception"](self, timeout)
    _took(self)
    return exc


_exception.__doc__ = Future.exception.__doc__


def _took(future) -> None:
    hand = _handoffs.get(future)
    if hand is not None and hand.end:
        _each("taking_over", hand.end)
