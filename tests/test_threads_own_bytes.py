"""A blocking copy's bytes have moved when its call returns, with any number of host threads, in both host-time
modes (issue: robustness, third round, item 1).

Under "calls" host time the threads' waits take turns: a blocking copy's task may complete inside another
thread's wait. Its bytes belong to the thread that made the call (`Core.later`, `transfer.unlocked`): moved by
that thread before its call returns, never by the thread whose wait completed the task, which may return first
(pyACL threads then read zeros after ret == 0; a C program's thread frees a buffer another thread still writes).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import threading
from pathlib import Path

import numpy as np
import pytest

import emu
from emu.capi import commands

H2D, D2H = 1, 2
KiB, MiB = 1 << 10, 1 << 20
NPY_UINT8 = 2
HERE = Path(__file__).resolve().parent / "c"
CC = shutil.which(os.environ.get("CC", "cc"))
SHARED = sysconfig.get_config_var("Py_ENABLE_SHARED")

# (threads, bytes, rounds): 3 to 16 threads, 4 KiB (moved under the lock) to 64 MiB (moved after it)
CASES = [(3, 4 * KiB, 12), (3, 64 * KiB, 12), (8, 256 * KiB, 8), (16, 1 * MiB, 4), (3, 64 * MiB, 2)]
IDS = [f"{n}threads-{b // MiB}MiB" if b >= MiB else f"{n}threads-{b // KiB}KiB" for n, b, _ in CASES]


def _pyacl_threads(acl, threads: int, nbytes: int, rounds: int, pinned: bool) -> list:
    """Each thread: blocking H2D from its own buffer, blocking D2H into another, compared after ret == 0.
    The failures, as (thread, round, H2D code, D2H code)."""
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ctx, ret = acl.rt.get_context()
    bad, lock = [], threading.Lock()

    def host(n):
        if pinned:
            ptr, ret = acl.rt.malloc_host(n)
            assert ret == 0
            return ptr, acl.util.ptr_to_numpy(ptr, (n,), NPY_UINT8)
        arr = np.zeros(n, np.uint8)
        return acl.util.numpy_to_ptr(arr), arr

    def work(i):
        acl.rt.set_context(ctx)
        rng = np.random.default_rng(i)
        dev, ret = acl.rt.malloc(nbytes, 0)
        for k in range(rounds):
            (src, sv), (dst, dv) = host(nbytes), host(nbytes)
            sv[:] = rng.integers(1, 256, nbytes, dtype=np.uint8)
            r1 = acl.rt.memcpy(dev, nbytes, src, nbytes, H2D)
            r2 = acl.rt.memcpy(dst, nbytes, dev, nbytes, D2H)
            if r1 or r2 or not np.array_equal(sv, dv):
                with lock:
                    bad.append((i, k, r1, r2))
            if pinned:
                acl.rt.free_host(src), acl.rt.free_host(dst)
        acl.rt.free(dev)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return bad


@pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated")
@pytest.mark.parametrize("mode", ["calls", "wall"])
@pytest.mark.parametrize("pinned", [False, True], ids=["pageable", "pinned"])
@pytest.mark.parametrize("threads,nbytes,rounds", CASES, ids=IDS)
def test_pyacl_threads_read_back_what_they_copied(threads, nbytes, rounds, pinned, mode):
    emu.configure(product="910B", functional=True, host_time=mode)
    import emu.acl as acl
    assert _pyacl_threads(acl, threads, nbytes, rounds, pinned) == []


def test_a_move_is_the_callers_even_when_another_threads_wait_completes_its_task():
    """The rule itself: a blocking task's bytes go to the thread that made the call (`Core.later` takes the
    owner), and to no one once that call is over (moved at once by whoever completes the task)."""
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    owner = rt.caller
    other = type(owner)()
    ran = []
    rt.caller = other
    try:
        owner.until = lambda: 1.0  # the owner waits in its call while `other` runs the devices
        assert rt.later(owner, ran.append, "moved") is True
        assert owner.moves == [(ran.append, ("moved",))] and other.moves == []
        owner.until = None  # the owner's call is over: nothing is kept for it
        owner.moves.clear()
        assert rt.later(owner, ran.append, "late") is False and owner.moves == []
    finally:
        owner.until, rt.caller = None, owner


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    if not CC or not SHARED:
        pytest.skip("needs a C compiler and a shared libpython")
    out = tmp_path_factory.mktemp("threads") / "thread_copies"
    assert commands.compile_command("cc", [str(HERE / "thread_copies.c"), "-o", str(out), "-O1", "-Wall",
                                           "-Werror", "-lpthread"]) == 0
    return out


@pytest.mark.parametrize("mode", ["calls", "wall"])
@pytest.mark.parametrize("memory", ["malloc", "pinned"])
@pytest.mark.parametrize("threads,nbytes,rounds", CASES, ids=IDS)
def test_c_threads_read_back_what_they_copied_and_free_at_once(program, threads, nbytes, rounds, memory, mode):
    """Each round frees its buffers as soon as the copies have returned: a move left to another thread
    would write into freed memory (SIGSEGV) or read zeros."""
    if memory == "pinned" and nbytes >= 64 * MiB:
        pytest.skip("one 64 MiB case is enough: the malloc'ed one")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env["ACL_EMU_HOST_TIME"] = mode
    args = [str(program), str(threads), str(nbytes), str(rounds)] + (["p"] if memory == "pinned" else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert (done.returncode, done.stdout.strip()) == (0, "bad 0"), done.stdout + done.stderr
