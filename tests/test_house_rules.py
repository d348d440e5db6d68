"""Things said once: each rule names the one place that says it, and the test shows the others follow it."""
from __future__ import annotations

import emu
from emu.memory import FREED_KEPT


def _sanitized():
    rt = emu.configure("910B", functional=True, sanitize=True, host_time="calls")
    rt.set_device(0)
    return rt


def test_the_sanitizer_remembers_as_many_frees_as_the_address_space_one_limit_freed_kept():
    """emu.memory.FREED_KEPT bounds both records: the oldest free the address space still knows is one the
    sanitizer can name, so a use of that memory is reported with its free."""
    rt = _sanitized()
    assert rt.sanitizer._frees.maxlen == rt.space.freed_recently.maxlen == FREED_KEPT
    ptrs = [rt.malloc(64) for _ in range(FREED_KEPT + 10)]  # all live at once: no address is used twice
    for p in ptrs:
        rt.free(p)
    oldest = rt.space.freed_recently[0][0]
    assert oldest == int(ptrs[10])
    try:
        rt.free(oldest)
    except emu.AclError:
        pass
    assert [f.kind for f in rt.sanitizer.findings] == ["double-free"]
