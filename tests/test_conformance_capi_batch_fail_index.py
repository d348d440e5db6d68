"""aclrtMemcpyBatch / aclrtMemcpyBatchAsync from C: the code and which failIndex is written when, as hicann/runtime
681ef7610 writes it (docs/conformance/copy2d_batch_descriptors.md, rows B0-B24).

- failIndex null: 100000 before anything else, on any chip (src/acl/aclrt_impl/memory.cpp aclrtMemcpyBatchImpl,
  aclrtMemcpyBatchAsyncImpl: ACL_REQUIRES_NOT_NULL_WITH_INPUT_REPORT(failIndex) first);
- every size 0: 0 and failIndex SIZE_MAX (memory.cpp MemcpyBatchImpl, IsAllZeroSizeBatch);
- a failure of the ACL layer (memory.cpp MemcpyBatchImpl, ValidateMemcpyBatchParams: sizes null, numBatches 0, an
  array null, destMaxs[i] < sizes[i], an rsv byte set), of the chip gate or of the stream handle (api_c_memory.cc
  rtsMemcpyBatch / rtsMemcpyBatchAsync) writes no failIndex: the caller's value stays;
- from the runtime's parameter checks on (api_error.cc ApiErrorDecorator::MemcpyBatch / MemcpyBatchAsync call
  SetFailIndex(failIdx, SIZE_MAX) first) failIndex is SIZE_MAX, unless an entry fails its checks: then that entry
  (api_impl.cc ApiImpl::MemcpyBatch, LoopMemcpyAsync; api_impl_david.cc BatchMemcpyAsync); a failure after the
  entries' checks (no context, a stream of another context) leaves SIZE_MAX.
The library used to write failIndex on every failure (the entry i of destMaxs[i] < sizes[i] included) and to run a
batch whose failIndex was null.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig

import pytest

from emu.capi import commands

CC = shutil.which(os.environ.get("CC", "cc"))
pytestmark = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                                reason="needs a C compiler and a shared libpython")

KEPT = 777  # failIndex before each call
SIZE_MAX = 2 ** 64 - 1

PROGRAM = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "acl/acl.h"

#define KEPT 777
static void *d, *h, *h2;
static aclrtStream s;
static aclrtMemcpyBatchAttr h2d = {{0, ACL_MEM_LOCATION_TYPE_DEVICE}, {0, ACL_MEM_LOCATION_TYPE_HOST}, {0}};
static aclrtMemcpyBatchAttr h2h = {{0, ACL_MEM_LOCATION_TYPE_HOST}, {0, ACL_MEM_LOCATION_TYPE_HOST}, {0}};

/* one batch of n entries, entry i: h + 16 i -> d + 16 i, 16 bytes; then `change` alters an argument */
typedef struct {
    void *dsts[8], *srcs[8];
    size_t maxs[8], sizes[8], idx[2];
    aclrtMemcpyBatchAttr attrs[2];
} Batch;

static void make(Batch *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        b->dsts[i] = (char *)d + 16 * i;
        b->srcs[i] = (char *)h + 16 * i;
        b->maxs[i] = b->sizes[i] = 16;
    }
    b->attrs[0] = b->attrs[1] = h2d;
    b->idx[0] = 0;
    b->idx[1] = 1;
}

static void say(const char *name, aclError r, size_t fail) {
    if (fail == KEPT)
        printf("%s\t%d kept\n", name, (int)r);
    else if (fail == SIZE_MAX)
        printf("%s\t%d max\n", name, (int)r);
    else
        printf("%s\t%d %zu\n", name, (int)r, fail);
}

#define BOTH(name, b, n, nattrs, stream)                                                                            \
    do {                                                                                                            \
        size_t f = KEPT;                                                                                            \
        aclError r = aclrtMemcpyBatch((b).dsts, (b).maxs, (b).srcs, (b).sizes, n, (b).attrs, (b).idx, nattrs, &f);   \
        say("sync:" name, r, f);                                                                                    \
        f = KEPT;                                                                                                   \
        r = aclrtMemcpyBatchAsync((b).dsts, (b).maxs, (b).srcs, (b).sizes, n, (b).attrs, (b).idx, nattrs, &f,       \
                                  stream);                                                                          \
        say("async:" name, r, f);                                                                                   \
        aclrtSynchronizeStream(stream);                                                                             \
    } while (0)

static void *no_context(void *arg) {
    (void)arg;
    Batch b;
    make(&b, 1);
    size_t f = KEPT;
    aclError r = aclrtMemcpyBatchAsync(b.dsts, b.maxs, b.srcs, b.sizes, 1, b.attrs, b.idx, 1, &f, NULL);
    say("async:no context", r, f);
    return NULL;
}

int main(void) {
    aclrtSetDevice(0);
    aclrtMalloc(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMallocHost(&h, 4096);
    aclrtMallocHost(&h2, 4096);
    aclrtCreateStream(&s);
    Batch b;

    make(&b, 2);
    aclError r = aclrtMemcpyBatch(b.dsts, b.maxs, b.srcs, NULL, 2, b.attrs, b.idx, 1, NULL);
    printf("sync:failIndex null\t%d\n", (int)r);
    r = aclrtMemcpyBatchAsync(b.dsts, b.maxs, b.srcs, b.sizes, 2, b.attrs, b.idx, 1, NULL, s);
    printf("async:failIndex null\t%d\n", (int)r);

    make(&b, 2);
    BOTH("ok", b, 2, 1, s);
    make(&b, 2);
    b.sizes[0] = b.sizes[1] = 0;
    BOTH("all sizes 0", b, 2, 1, s);
    {
        size_t f = KEPT;
        make(&b, 2);
        r = aclrtMemcpyBatch(b.dsts, b.maxs, b.srcs, NULL, 2, b.attrs, b.idx, 1, &f);
        say("sync:sizes null", r, f);
    }
    make(&b, 2);
    BOTH("numBatches 0", b, 0, 1, s);
    {
        size_t f = KEPT;
        make(&b, 2);
        r = aclrtMemcpyBatch(NULL, b.maxs, b.srcs, b.sizes, 2, b.attrs, b.idx, 1, &f);
        say("sync:dsts null", r, f);
    }
    make(&b, 3);
    b.maxs[1] = 15;
    BOTH("destMax below size", b, 3, 1, s);
    make(&b, 2);
    b.attrs[0].rsv[3] = 1;
    BOTH("rsv set", b, 2, 1, s);
    make(&b, 2);
    BOTH("numAttrs 0", b, 2, 0, s);
    make(&b, 1);
    BOTH("numAttrs above numBatches", b, 1, 2, s);
    make(&b, 2);
    b.idx[0] = 1;
    BOTH("attrsIndexes[0] not 0", b, 2, 1, s);
    make(&b, 3);
    b.attrs[1] = h2h;  /* entries 1 and 2: both ends said HOST, the destination is DEVICE */
    BOTH("entry 1 wrong attribute", b, 3, 2, s);
    make(&b, 3);
    b.dsts[2] = (char *)h2 + 32;  /* entry 2: host to host, each end as its attribute says */
    b.attrs[1] = h2h;
    b.idx[1] = 2;
    BOTH("entry 2 host to host", b, 3, 2, s);
    {
        size_t f = KEPT;
        make(&b, 3);
        b.sizes[1] = 0;  /* a synchronous batch skips a size-0 entry; an asynchronous one refuses it */
        r = aclrtMemcpyBatchAsync(b.dsts, b.maxs, b.srcs, b.sizes, 3, b.attrs, b.idx, 1, &f, s);
        say("async:entry 1 size 0", r, f);
        aclrtSynchronizeStream(s);
    }
    {
        static void *dsts[4097], *srcs[4097];
        static size_t sizes[4097];
        size_t idx = 0, f = KEPT;
        for (int i = 0; i < 4097; i++) {
            dsts[i] = (char *)d + (i % 4096);
            srcs[i] = (char *)h + (i % 4096);
            sizes[i] = 0;
        }
        sizes[0] = 1;
        r = aclrtMemcpyBatch(dsts, sizes, srcs, sizes, 4097, &h2d, &idx, 1, &f);
        say("sync:4097 entries", r, f);
    }
    {
        aclrtStream gone;
        size_t f = KEPT;
        aclrtCreateStream(&gone);
        aclrtDestroyStream(gone);
        make(&b, 1);
        r = aclrtMemcpyBatchAsync(b.dsts, b.maxs, b.srcs, b.sizes, 1, b.attrs, b.idx, 1, &f, gone);
        say("async:destroyed stream", r, f);
    }
    {
        aclrtContext primary, other;
        aclrtStream theirs;
        size_t f = KEPT;
        aclrtGetCurrentContext(&primary);
        aclrtCreateContext(&other, 0);
        aclrtCreateStream(&theirs);
        aclrtSetCurrentContext(primary);
        make(&b, 2);
        r = aclrtMemcpyBatchAsync(b.dsts, b.maxs, b.srcs, b.sizes, 2, b.attrs, b.idx, 1, &f, theirs);
        say("async:stream of another context", r, f);
    }
    pthread_t t;
    pthread_create(&t, NULL, no_context, NULL);
    pthread_join(t, NULL);
    return 0;
}
"""

# (code, failIndex: "kept", "max" or the entry) on 910B, each row's source in the module's docstring
EXPECTED = {
    "sync:failIndex null": "100000", "async:failIndex null": "100000",
    "sync:ok": "0 max", "async:ok": "0 max",
    "sync:all sizes 0": "0 max", "async:all sizes 0": "0 max",
    "sync:sizes null": "100000 kept",
    "sync:numBatches 0": "100000 kept", "async:numBatches 0": "100000 kept",
    "sync:dsts null": "100000 kept",
    "sync:destMax below size": "100000 kept", "async:destMax below size": "100000 kept",
    "sync:rsv set": "100000 kept", "async:rsv set": "100000 kept",
    "sync:numAttrs 0": "107000 max", "async:numAttrs 0": "107000 max",
    "sync:numAttrs above numBatches": "107000 max", "async:numAttrs above numBatches": "107000 max",
    "sync:attrsIndexes[0] not 0": "107000 max", "async:attrsIndexes[0] not 0": "107000 max",
    "sync:entry 1 wrong attribute": "107000 1", "async:entry 1 wrong attribute": "107000 1",
    "sync:entry 2 host to host": "107000 2", "async:entry 2 host to host": "107000 2",
    "async:entry 1 size 0": "107000 1",
    "sync:4097 entries": "107000 max",
    "async:destroyed stream": "107017 kept",
    "async:stream of another context": "107003 max",
    "async:no context": "107002 max",
}

# On 910 (no RT_FEATURE_TASK_MEMORY_BATCH_COPY) the chip gate refuses what passes the ACL layer, writing nothing.
ACL_LAYER = ("failIndex null", "all sizes 0", "sizes null", "numBatches 0", "dsts null", "destMax below size",
             "rsv set")
ON_910 = {name: want if name.split(":", 1)[1] in ACL_LAYER else "207000 kept" for name, want in EXPECTED.items()}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("batch_fail_index")
    (folder / "batch.c").write_text(PROGRAM)
    assert commands.compile_command("cc", [str(folder / "batch.c"), "-o", str(folder / "batch"), "-lpthread"]) == 0
    return folder / "batch"


def _lines(program, product: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env["ACL_EMU_PRODUCT"] = product
    done = subprocess.run([str(program)], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    return dict(line.split("\t") for line in done.stdout.splitlines())


def test_fail_index_as_the_reference_writes_it(program):
    """Each case's code and failIndex on 910B (the module's docstring gives each rule's source)."""
    assert _lines(program, "910B") == EXPECTED


def test_the_chip_gate_writes_no_fail_index(program):
    """api_c_memory.cc rtsMemcpyBatch / rtsMemcpyBatchAsync: on 910, whose chip lacks batch copies, what passes the
    ACL layer is 207000 with failIndex as it was (the gate comes before ApiErrorDecorator's SetFailIndex); the ACL
    layer's failures and the null failIndex come first, and all sizes 0 is still 0 with SIZE_MAX."""
    assert _lines(program, "910") == ON_910
