"""Handles and addresses that are still ints, and also context managers.

The Pythonic runtime returns these from the calls that create something: a stream, an event, device or
page-locked host memory. Each is the int pyACL would give (usable wherever the int is: comparisons, dict
keys, arithmetic, the facade), and `with` releases it at the end of the block, even when the block raises:

    with rt.malloc(n) as dev, rt.malloc_host(n) as host, rt.create_stream() as s:
        rt.memcpy_async(dev, n, host, n, rt.MemcpyKind.HOST_TO_DEVICE, s)
    # the stream was synchronized and destroyed, then both allocations freed

Blocks end in reverse order, as the runtime's own rules want: name the stream last, so its queued work is
done before the memory it uses is freed (aclrtFree frees at once; the emulator warns when queued work
then finds its memory gone).

A handle releases itself on the runtime that made it (not whichever is current at the end of the block).
When the block raised and the release fails too, the block's exception propagates with a note saying what
could not be released; when the block succeeded, the release's AclError propagates.
"""
from __future__ import annotations

from ..errors import AclError


class _Releasing(int):
    """An int that releases the thing it names when a `with` block over it ends; `what` names it in notes."""

    what = "handle"

    def __new__(cls, value: int, runtime):
        self = super().__new__(cls, value)
        self._runtime = runtime
        return self

    def release(self) -> None:  # pragma: no cover - every subclass fills it in
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            self.release()
            return False
        try:
            self.release()
        except AclError as failed:
            exc.add_note(f"and releasing {self.what} 0x{int(self):x} at the end of the with block failed: {failed}")
        return False

    def __repr__(self) -> str:
        return int.__repr__(self)

    def __reduce__(self):  # pickles (and copies) as the plain int: the runtime does not travel with it
        return (int, (int(self),))


class StreamHandle(_Releasing):
    """An aclrtStream handle; `with` waits for its queued work and destroys it (aclrtSynchronizeStream,
    aclrtDestroyStream)."""

    what = "stream"

    def release(self) -> None:
        self._runtime.synchronize_stream(self)
        self._runtime.destroy_stream(self)


class EventHandle(_Releasing):
    """An aclrtEvent handle; `with` destroys it (aclrtDestroyEvent)."""

    what = "event"

    def release(self) -> None:
        self._runtime.destroy_event(self)


class DevicePointer(_Releasing):
    """The address of a device allocation; `with` frees it (aclrtFree)."""

    what = "device memory"

    def release(self) -> None:
        self._runtime.free(self)


class HostPointer(_Releasing):
    """The address of page-locked host memory from aclrtMallocHost; `with` frees it (aclrtFreeHost)."""

    what = "host memory"

    def release(self) -> None:
        self._runtime.free_host(self)
