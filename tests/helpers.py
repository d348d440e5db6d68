"""Helpers the test modules share."""
from __future__ import annotations

import numpy as np
import pytest

import emu
from emu import AclError, modeldecl

D2H = 2


def code(fn, *args, **kwargs) -> int:
    """The ACL code of a runtime call: 0 on success, AclError.code otherwise."""
    try:
        fn(*args, **kwargs)
        return 0
    except AclError as e:
        return e.code


def peek(rt, ptr: int, n: int) -> np.ndarray:
    """The bytes at an address now, without an API call (so without simulated time passing)."""
    r, off = rt.space.resolve(ptr, n)
    if not r.materialized:
        return np.zeros(n, dtype=np.uint8)
    return r.view(off, n).copy()


def read_device(rt, ptr: int, n: int) -> np.ndarray:
    """The bytes at a device address, read back with a synchronous D2H copy."""
    out = np.zeros(n, dtype=np.uint8)
    rt.memcpy(rt.register_host(out), n, ptr, n, D2H)
    return out


OLD = 0xEE  # what a buffer holds before a copy or fill lands
NORMAL_ONLY = 2
NPY_UINT8 = 2


def pinned(rt, n: int, fill: int = OLD):
    """Page-locked host memory (HOST) and its numpy view."""
    import emu.acl as acl

    h = rt.malloc_host(n)
    view = acl.util.ptr_to_numpy(h, (n,), NPY_UINT8)
    view[:] = fill
    return h, view


def pageable(n: int, fill: int = OLD):
    """Pageable host memory (UNREGISTERED): a numpy array shown through numpy_to_ptr."""
    import emu.acl as acl

    arr = np.empty(n, dtype=np.uint8)
    arr[:] = fill
    return acl.util.numpy_to_ptr(arr), arr


def device(rt, n: int, fill: int = OLD) -> int:
    """Device memory (normal pages) filled with `fill`."""
    d = rt.malloc(n, NORMAL_ONLY)
    rt.memset(d, n, fill, n)
    return d


@pytest.fixture
def no_declared_models(monkeypatch):
    """No models declared by $ACL_EMU_MODELS, and none kept after the test (emu.modeldecl)."""
    monkeypatch.delenv(modeldecl.MODELS_ENV, raising=False)
    yield
    modeldecl.forget_models()


def acl_on(product: str = "910B"):
    """pyACL on a fresh functional runtime of `product`, initialised, device 0 set."""
    emu.configure(product, functional=True)
    import emu.acl as acl
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    return acl
