"""The C ABI under random call sequences from several threads at once, with a byte-level oracle.

tests/c/fuzz_capi.c is built once per session with `acl-emu cc ... -lpthread` and run, as a program of its own,
for several seeds, with 1, 3 and 8 pthreads sharing device 0 and one context, on 910B and A3
($ACL_EMU_PRODUCT), in both host-time modes ($ACL_EMU_HOST_TIME=calls and wall). Each thread draws its calls
from a generator seeded from the seed and its index: aclrtMalloc / Free, aclrtMallocHost / FreeHost, malloc'ed
and stack buffers, aclrtHostRegister / Unregister / GetDevicePointer, aclrtMemcpy and aclrtMemcpyAsync of every
kind (wrong ones and DEFAULT included) and aclrtMemcpyAsyncWithCondition on its own streams and the default one,
aclrtMemcpy2d / 2dAsync, aclrtMemset / MemsetAsync, aclrtMemsetD32 / D32Async, aclrtPointerGetAttributes, streams and
events (create, record, wait, reset, query, synchronize, destroy), aclrtSynchronizeStream / WithTimeout /
Device, aclrtMemcpyBatch / BatchV2 / BatchAsync / BatchAsyncV2 (a batch again after its buffers changed), with
plausible arguments (the thread's own live buffers, their interiors and ends) and absurd ones (NULL, memory the
thread freed, sizes past the end, SIZE_MAX, odd pitches, wrong attributes, destroyed and made-up handles).

The program is its own oracle (its header comment says how): it keeps a shadow of every byte its thread owns,
checks each return code against the code the reference's order of checks gives (docs/conformance), and after
every synchronize compares each buffer with its shadow (device memory read back with aclrtMemcpy) and each guard
(allocations and pads no call names) with its pattern. It prints one JSON line of counts and exits 0 only when
all are clean; a signal or any other exit is a crash.

Size. The default (CI) makes about CI_CALLS calls in all, in well under a minute. A longer run takes the pyACL
fuzzer's options (tests/test_fuzz_facade.py):

    pytest -q -s -p no:cacheprovider tests/test_fuzz_capi.py --fuzz-examples 200000 [--fuzz-seed 7]

or ACL_EMU_FUZZ_EXAMPLES / ACL_EMU_FUZZ_SEED: --fuzz-examples is the number of calls in all, shared by the runs.
A failure names its seed, product, mode and threads, and prints the command line that reruns it by hand.
Counts are printed, and written to fuzz_capi_counts.json in pytest's base temp directory.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import pytest

from emu.capi import commands
from test_fuzz_facade import fuzz_seed

SOURCE = Path(__file__).resolve().parent / "c" / "fuzz_capi.c"
CC = shutil.which(os.environ.get("CC", "cc"))
pytestmark = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                                reason="needs a C compiler and a shared libpython")

# product -> the bytes aclrtMalloc adds after rounding a size up to 32 (malloc_padding in configs/<product>.toml)
PRODUCTS = {"910B": 32, "A3": 32}
MODES = ("calls", "wall")
THREADS = (1, 3, 8)
SEEDS = 2  # per product, mode and thread count: the seed, and the seed + 1
CI_CALLS = 60000  # in all; about 1.1 calls per operation


def fuzz_calls(config) -> int:
    """--fuzz-examples / $ACL_EMU_FUZZ_EXAMPLES, as the pyACL fuzzer reads them; CI_CALLS without either."""
    n = config.getoption("--fuzz-examples", default=None) or os.environ.get("ACL_EMU_FUZZ_EXAMPLES")
    return int(n) if n else CI_CALLS


def _env(product: str, mode: str) -> dict:
    """This process's environment without its ACL_EMU_ settings, with the run's product and host-time mode."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.update(ACL_EMU_PRODUCT=product, ACL_EMU_HOST_TIME=mode)
    return env


def _build(folder: Path, name: str, *flags: str) -> Path:
    exe = folder / name
    code = commands.compile_command("cc", [str(SOURCE), "-o", str(exe), "-O1", "-g", "-Wall", "-Wextra", "-Werror",
                                           *flags, "-lpthread"])
    assert code == 0, f"building {SOURCE.name} {' '.join(flags)} failed"
    return exe


@pytest.fixture(scope="module")
def fuzz_bin(tmp_path_factory) -> Path:
    """The fuzzer, built as a user builds a program (`acl-emu cc fuzz_capi.c -o fuzz_capi -lpthread`)."""
    return _build(tmp_path_factory.mktemp("fuzz_capi"), "fuzz_capi")


def rerun_line(exe: Path, product: str, mode: str, args: list[str]) -> str:
    return (f"ACL_EMU_PRODUCT={product} ACL_EMU_HOST_TIME={mode} {shlex.quote(str(exe))} "
            f"{' '.join(shlex.quote(a) for a in args)}    # built by: acl-emu cc {SOURCE} -o fuzz_capi -lpthread")


def run(exe: Path, product: str, mode: str, seed: int, threads: int, ops: int, *extra: str):
    """(completed process, counts or None, the command line that reruns it)."""
    args = [str(seed), str(threads), str(ops), str(PRODUCTS[product]), *extra]
    timeout = 120 + ops * threads * 0.01
    done = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout,
                          env=_env(product, mode))
    counts = None
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            counts = json.loads(line)
    return done, counts, rerun_line(exe, product, mode, args)


_LOCK = threading.Lock()
TOTALS = ("calls", "check_calls", "checks", "queued_calls", "queued_in_order", "forced_drains", "host_writes",
          "freed_pointers_named", "freed_ranges_reused", "wrong_codes", "mismatches",
          "guard_changes")


def record(tmp_root: Path, key: str, counts: dict) -> dict:
    """Merge this run's counts into fuzz_capi_counts.json; return the totals so far."""
    path = tmp_root / "fuzz_capi_counts.json"
    with _LOCK:
        data = json.loads(path.read_text()) if path.exists() else {"runs": {}}
        data["runs"][key] = counts
        data["total"] = {k: sum(r.get(k, 0) for r in data["runs"].values()) for k in TOTALS}
        data["total"]["crashes"] = sum(1 for r in data["runs"].values() if r.get("crash"))
        path.write_text(json.dumps(data, indent=2))
    return data


@pytest.mark.parametrize("seed_offset", range(SEEDS))
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("product", sorted(PRODUCTS))
def test_random_c_call_sequences_from_threads_keep_every_code_and_byte(fuzz_bin, product, mode, threads, seed_offset,
                                                                       request, tmp_path_factory):
    runs = len(PRODUCTS) * len(MODES) * len(THREADS) * SEEDS
    ops = max(50, fuzz_calls(request.config) // runs // threads)
    seed = fuzz_seed(request.config) + seed_offset
    done, counts, again = run(fuzz_bin, product, mode, seed, threads, ops)
    where = f"{product}, host time {mode}, {threads} threads, seed {seed}, {ops} operations a thread"
    crashed = done.returncode < 0 or counts is None or done.returncode not in (0, 1)
    key = f"{product}/{mode}/{threads}/{seed}"
    data = record(tmp_path_factory.getbasetemp(), key, {**(counts or {}), "crash": crashed})
    if counts:
        shown = {k: counts[k] for k in TOTALS}
        print(f"\nfuzz C {key}: {json.dumps(shown)}\nfuzz C total so far: {json.dumps(data['total'])}")
    if crashed:
        how = (f"signal {signal.Signals(-done.returncode).name}" if done.returncode < 0 else
               f"exit {done.returncode}")
        pytest.fail(f"CRASH ({how}) {where}\nrerun: {again}\n{done.stderr[-4000:]}")
    assert done.returncode == 0 and not (counts["wrong_codes"] or counts["mismatches"] or counts["guard_changes"]), (
        f"{where}: {counts['wrong_codes']} wrong codes, {counts['mismatches']} byte mismatches, "
        f"{counts['guard_changes']} guard changes\nrerun: {again}\n{done.stderr[-6000:]}")
    assert counts["calls"] >= ops * threads // 2  # (an operation whose pointers another thread holds is skipped)


# ---------------------------------------------------------------------------------- the oracle can fail

@pytest.mark.parametrize("mutation,report,count", [(1, "FUZZ-MISMATCH", "mismatches"),
                                                   (2, "FUZZ-WRONG-CODE", "wrong_codes"),
                                                   (3, "FUZZ-GUARD", "guard_changes")])
def test_the_oracle_reports_a_wrong_byte_a_wrong_code_and_a_changed_guard(mutation, report, count, tmp_path):
    """Built with -DFUZZ_MUTATE=1 the program corrupts one shadow byte of each buffer at thread 0's third check,
    with 2 it expects 0 from a copy to NULL, with 3 it flips a bit of a guard: each run must fail, name the
    seed and thread, and count it."""
    exe = _build(tmp_path, f"fuzz_mutant_{mutation}", f"-DFUZZ_MUTATE={mutation}")
    done, counts, _ = run(exe, "910B", "calls", 1, 3, 300)
    assert done.returncode == 1, done.stderr
    assert counts[count] >= 1
    assert f"{report} seed 1 thread 0 op" in done.stderr
    assert "last calls of the thread:" in done.stderr


# --------------------------------------------------------------------------------- under the sanitizer

# What the fuzzer does on purpose that the sanitizer reports: memory the thread freed passed again, a stream
# destroyed with work queued (aclrtDestroyStream waits for it), a stream waiting on an event never recorded, a
# call reaching past the end of its buffer (refused with 100000, and reported: emu.runtime.transfer.overrun).
ON_PURPOSE = {"use-after-free", "double-free", "destroy-with-pending-work", "wait-unrecorded-event", "out-of-bounds"}


def test_under_the_sanitizer_the_fuzzers_calls_have_no_race(fuzz_bin, tmp_path):
    """`acl-emu run --sanitize`: the program synchronizes before any call that would race with queued work, so
    the sanitizer finds no race (nor any hazard but those the fuzzer makes on purpose), and finds the uses of
    freed memory it makes; the oracle stays clean under the sanitizer's hooks."""
    findings = tmp_path / "findings.json"
    args = ["1", "3", "1500", str(PRODUCTS["910B"])]
    done = subprocess.run([sys.executable, "-m", "emu", "run", "--sanitize", "--sanitize-json", str(findings),
                           "--out", str(tmp_path), str(fuzz_bin), *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=_env("910B", "calls"))
    counts = next(json.loads(line) for line in done.stdout.splitlines() if line.startswith("{"))
    assert (counts["wrong_codes"], counts["mismatches"], counts["guard_changes"]) == (0, 0, 0), done.stderr[-4000:]
    kinds = {f["kind"] for f in json.loads(findings.read_text())["findings"]}
    assert kinds <= ON_PURPOSE, done.stderr[-4000:]
    assert {"use-after-free", "double-free"} <= kinds


# ------------------------------------------------------------------------- defects the fuzzer found, fixed

def _build_and_run(tmp_path: Path, name: str, source: str):
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    code = commands.compile_command("cc", [str(src), "-o", str(tmp_path / name), "-Wall", "-Werror", "-lpthread"])
    assert code == 0
    return subprocess.run([str(tmp_path / name)], capture_output=True, text=True, timeout=120,
                          env=_env("910B", "calls"))


def test_timed_sync_waits_for_the_task_queued_when_it_began(tmp_path):
    """Two threads of one context, in "calls" host time: one queues a copy on the default stream and waits for
    it with a timeout of a minute of simulated time, while the other keeps queuing 64 MiB copies on the same
    stream (all of it done in milliseconds): the wait returns 0. (Each thread's first call waits for the
    other's, so both are known to the runtime before the wait starts.)"""
    done = _build_and_run(tmp_path, "timed", r'''
#include <pthread.h>
#include <stdio.h>
#include "acl/acl.h"
static aclrtContext ctx;
static const size_t n = 64 << 20;
static int waited = -1, queuer_in, waiter_in;
static void *waiter(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&queuer_in, __ATOMIC_SEQ_CST));
    aclrtSetCurrentContext(ctx);
    __atomic_store_n(&waiter_in, 1, __ATOMIC_SEQ_CST);
    void *a, *b;
    aclrtMalloc(&a, n, ACL_MEM_MALLOC_HUGE_FIRST); aclrtMalloc(&b, n, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, NULL);
    waited = aclrtSynchronizeStreamWithTimeout(NULL, 60000);
    return NULL;
}
static void *queuer(void *arg) {
    (void)arg;
    aclrtSetCurrentContext(ctx);
    void *a, *b;
    aclrtMalloc(&a, n, ACL_MEM_MALLOC_HUGE_FIRST); aclrtMalloc(&b, n, ACL_MEM_MALLOC_HUGE_FIRST);
    __atomic_store_n(&queuer_in, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&waiter_in, __ATOMIC_SEQ_CST));
    for (int i = 0; i < 400; i++)
        aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, NULL);
    aclrtSynchronizeStream(NULL);
    return NULL;
}
static void *setup(void *arg) {
    (void)arg; aclInit(NULL); aclrtSetDevice(0); aclrtGetCurrentContext(&ctx); return NULL;
}
int main(void) {
    pthread_t s, w, q;
    pthread_create(&s, NULL, setup, NULL); pthread_join(s, NULL);
    pthread_create(&q, NULL, queuer, NULL);
    pthread_create(&w, NULL, waiter, NULL);
    pthread_join(w, NULL); pthread_join(q, NULL);
    printf("%d\n", waited);
    return 0;
}
''')
    assert done.stdout.split() == ["0"], done.stdout + done.stderr


# Memory the program gives back (munmap of all but the head of a mapping it had named whole) is where the
# process's allocator puts the next large allocation: the page-locked memory of aclrtMallocHost.
DROPPED_RANGE_SETUP = r'''
#include <stdio.h>
#include <sys/mman.h>
#include "acl/acl.h"
static const size_t whole = 1 << 20, keep = 64 << 10;
static unsigned char *x;
static void *dev, *alias, *pin;
static void setup(void) {
    aclInit(NULL); aclrtSetDevice(0);
    aclrtMalloc(&dev, whole, ACL_MEM_MALLOC_NORMAL_ONLY);
    x = mmap(NULL, whole, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    aclrtMemcpy(dev, whole, x, whole, ACL_MEMCPY_HOST_TO_DEVICE); /* the program names all of x */
    munmap(x + keep, whole - keep);                                /* and gives back all but its head */
    aclrtHostRegister(x, 4096, ACL_HOST_REGISTER_MAPPED, &alias);
}
static int landed(void) { /* the page-locked memory is where the program's memory was */
    return (unsigned char *)pin >= x + keep && (unsigned char *)pin < x + whole;
}
'''


def test_registered_memory_stays_host_after_page_locked_memory_lands_beside_it(tmp_path):
    """aclrtPointerGetAttributes of registered host memory is HOST (memory_copies_fills.md, row 5), also after
    aclrtMallocHost's memory lands where the program gave back memory next to it."""
    done = _build_and_run(tmp_path, "attributes", DROPPED_RANGE_SETUP + r'''
int main(void) {
    setup();
    aclrtPtrAttributes at;
    aclError before = aclrtPointerGetAttributes(x + 100, &at);
    int type_before = (int)at.location.type;
    aclrtMallocHost(&pin, whole - keep - 4096);
    if (!landed()) { printf("skip\n"); return 0; }
    aclError after = aclrtPointerGetAttributes(x + 100, &at);
    printf("%d %d %d %d\n", before, type_before, after, (int)at.location.type);
    return 0;
}
''')
    if done.stdout.strip() == "skip":
        pytest.skip("the page-locked memory did not land in the memory the program gave back")
    assert done.stdout.split() == ["0", "0", "0", "0"], done.stdout + done.stderr


def test_a_queued_copy_keeps_its_bytes_after_page_locked_memory_lands_beside_it(tmp_path):
    """A D2H copy queued into registered host memory lands when the stream is synchronized, also when
    aclrtMallocHost's memory meanwhile lands where the program gave back memory next to it."""
    done = _build_and_run(tmp_path, "queued", DROPPED_RANGE_SETUP + r'''
int main(void) {
    setup();
    aclrtStream s; aclrtCreateStream(&s);
    aclrtMemset(dev, 4096, 0x5a, 4096);
    aclError queued = aclrtMemcpyAsync(x, 4096, dev, 4096, ACL_MEMCPY_DEVICE_TO_HOST, s);
    aclrtMallocHost(&pin, whole - keep - 4096);
    if (!landed()) { printf("skip\n"); return 0; }
    aclError synced = aclrtSynchronizeStream(s);
    printf("%d %d 0x%02x 0x%02x\n", queued, synced, x[0], x[4095]);
    return 0;
}
''')
    if done.stdout.strip() == "skip":
        pytest.skip("the page-locked memory did not land in the memory the program gave back")
    assert done.stdout.split() == ["0", "0", "0x5a", "0x5a"], done.stdout + done.stderr
