"""The sanitizer on device code: a launch is checked on the bytes its blocks really read and wrote (the AscendC copies
and the kernel's own loads and stores of global memory, which the build has the compiler report), not on the whole
of each allocation it is given; a kernel's access past the bytes a program asked for is reported with its block.
The programs follow hicann/runtime example/kernel_func/easy_OP.cpp (one word per block) and the Ascend/samples
add_custom kernel (DataCopy in, Add, DataCopy out)."""
from __future__ import annotations

import pytest

from test_device_code import EASY_DECLS, EASY_KERNELS, build, sanitized

pytestmark = pytest.mark.skipif(__import__("shutil").which("c++") is None, reason="no C++ compiler")


def _race_program(copy_offset: int, copy_bytes: int) -> str:
    return EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream a, b; CHECK(aclrtCreateStream(&a)); CHECK(aclrtCreateStream(&b));
    void *host, *dev;
    CHECK(aclrtMallocHost(&host, 4096)); CHECK(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(dev, 4096, 0, 4096));
    EasyOP(8, a, (uint32_t *)dev);
    CHECK(aclrtMemcpyAsync((char *)dev + %d, %d, host, %d, ACL_MEMCPY_HOST_TO_DEVICE, b));
    CHECK(aclrtSynchronizeStream(a)); CHECK(aclrtSynchronizeStream(b));
    return 0;
}
''' % (copy_offset, copy_bytes, copy_bytes)


def test_a_copy_into_other_bytes_of_the_kernels_allocation_is_no_race(tmp_path):
    """EasyOP's 8 blocks touch words 0-7 (32 bytes); a copy on another stream writes bytes 1024-4095 of the same
    allocation with no event between: they share no byte, so nothing is reported (a launch taken to touch its whole
    allocation reported a race here)."""
    exe = build(tmp_path, "apart", _race_program(1024, 3072), EASY_KERNELS)
    done, found = sanitized(exe)
    assert done.returncode == 0, done.stdout + done.stderr
    assert found == [], found


def test_a_race_with_a_kernel_names_the_bytes_its_blocks_touched(tmp_path):
    """The copy writes the whole allocation: the race is over the 32 bytes the kernel read and wrote, named by the
    kernel at the program's line of the launch."""
    exe = build(tmp_path, "meet", _race_program(0, 4096), EASY_KERNELS, ("-g",))
    done, found = sanitized(exe)
    assert len(found) == 1, found
    f = found[0]
    assert f["kind"] == "race" and f["memory"]["offset"] == 0 and f["memory"]["bytes"] == 32, f
    kernel = next(c for c in f["calls"] if "EasyOPf<<<8>>>" in c["api"])
    assert kernel["access"] == "read-write", kernel
    assert kernel["file"].endswith("meet_kernels.cpp") and kernel["line"] == 10, kernel


ADD_KERNELS = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t TILE = 256;
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t per)
{
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qy;
    TQue<QuePosition::VECOUT, 1> qz;
    GlobalTensor<float> xg, yg, zg;
    uint32_t base = per * GetBlockIdx();
    xg.SetGlobalBuffer((__gm__ float *)x + base, per);
    yg.SetGlobalBuffer((__gm__ float *)y + base, per);
    zg.SetGlobalBuffer((__gm__ float *)z + base, per);
    pipe.InitBuffer(qx, 1, TILE * sizeof(float)); pipe.InitBuffer(qy, 1, TILE * sizeof(float));
    pipe.InitBuffer(qz, 1, TILE * sizeof(float));
    for (uint32_t at = 0; at < per; at += TILE) {
        LocalTensor<float> a = qx.AllocTensor<float>(), b = qy.AllocTensor<float>();
        DataCopy(a, xg[at], TILE); DataCopy(b, yg[at], TILE);
        qx.EnQue(a); qy.EnQue(b); a = qx.DeQue<float>(); b = qy.DeQue<float>();
        LocalTensor<float> c = qz.AllocTensor<float>();
        Add(c, a, b, TILE);
        qz.EnQue(c); qx.FreeTensor(a); qy.FreeTensor(b); c = qz.DeQue<float>();
        DataCopy(zg[at], c, TILE);
        qz.FreeTensor(c);
    }
}
void AddCustom(uint32_t blocks, void *s, void *x, void *y, void *z, uint32_t per)
{ add_custom<<<blocks, nullptr, s>>>((uint8_t *)x, (uint8_t *)y, (uint8_t *)z, per); }
'''

ADD_MAIN = r'''
void AddCustom(uint32_t blocks, void *s, void *x, void *y, void *z, uint32_t per);
int main(int argc, char **argv) {
    const char *other = argv[1];  /* what the other stream does to x, unordered with the kernel */
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream a, b; CHECK(aclrtCreateStream(&a)); CHECK(aclrtCreateStream(&b));
    const size_t n = 4 * 1024, bytes = n * sizeof(float);
    float *host; void *x, *y, *z;
    CHECK(aclrtMallocHost((void **)&host, bytes));
    CHECK(aclrtMalloc(&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST)); CHECK(aclrtMalloc(&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&z, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    for (size_t i = 0; i < n; i++) host[i] = (float)i;
    CHECK(aclrtMemcpy(x, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(y, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    AddCustom(4, a, x, y, z, (uint32_t)(n / 8));  /* 4 blocks of n / 8: the first half of each buffer */
    if (other[0] == 'r')  /* read all of x back */
        CHECK(aclrtMemcpyAsync(host, bytes, x, bytes, ACL_MEMCPY_DEVICE_TO_HOST, b));
    else if (other[0] == 'w')  /* write all of x */
        CHECK(aclrtMemcpyAsync(x, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE, b));
    else  /* write the second half of z, which the kernel leaves alone */
        CHECK(aclrtMemcpyAsync((char *)z + bytes / 2, bytes / 2, host, bytes / 2, ACL_MEMCPY_HOST_TO_DEVICE, b));
    CHECK(aclrtSynchronizeStream(a)); CHECK(aclrtSynchronizeStream(b));
    float out[4];
    CHECK(aclrtMemcpy(out, sizeof out, z, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("%g %g %g %g\n", out[0], out[1], out[2], out[3]);
    return 0;
}
'''


@pytest.fixture(scope="module")
def add_program(tmp_path_factory):
    return build(tmp_path_factory.mktemp("add"), "add", ADD_MAIN, ADD_KERNELS)


def test_a_kernel_that_only_reads_a_buffer_does_not_race_with_a_copy_reading_it(add_program):
    """The kernel reads x with DataCopy (global memory to the Unified Buffer); a copy out of x on another stream
    reads it too: two reads are no race."""
    done, found = sanitized(add_program, "read")
    assert done.stdout.split() == ["0", "2", "4", "6"], done.stdout + done.stderr
    assert found == [], found


def test_a_copy_writing_what_a_kernel_reads_races_over_the_bytes_it_read(add_program):
    """A copy into x on another stream, unordered with the kernel: a race between the kernel's read (its 4 blocks'
    DataCopy of the first half of x) and the copy's write, over exactly those bytes."""
    done, found = sanitized(add_program, "write")
    races = [f for f in found if f["kind"] == "race"]
    assert len(races) == 1, found
    f = races[0]
    kernel = next(c for c in f["calls"] if "add_custom<<<4>>>" in c["api"])
    assert kernel["access"] == "read", kernel
    assert (f["memory"]["offset"], f["memory"]["bytes"]) == (0, 4 * 1024 * 4 // 2), f["memory"]


def test_a_copy_into_what_the_kernel_leaves_alone_is_no_race(add_program):
    """The kernel writes the first half of z (DataCopy out of the Unified Buffer); a copy into the second half on
    another stream shares no byte with it."""
    done, found = sanitized(add_program, "apart")
    assert done.stdout.split() == ["0", "2", "4", "6"], done.stdout + done.stderr
    assert found == [], found


def test_a_kernel_writing_past_the_bytes_asked_for_is_reported_with_its_block(tmp_path):
    """100 bytes asked for (aclrtMalloc rounds to 128 and pads): EasyOP's 32 blocks write words 0-31, bytes 0-127;
    blocks 25-31 write past the 100 bytes, inside what the allocator gave, which an NPU does without error, so the
    program goes on with its bytes; `--sanitize` reports each block's access past the end, naming the kernel."""
    exe = build(tmp_path, "past", EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    void *dev; CHECK(aclrtMalloc(&dev, 100, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(dev, 100, 0, 100));
    EasyOP(32, s, (uint32_t *)dev);
    CHECK(aclrtSynchronizeStream(s));
    uint32_t words[25]; CHECK(aclrtMemcpy(words, 100, dev, 100, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("%u %u\n", words[0], words[24]);
    return 0;
}
''', EASY_KERNELS)
    done, found = sanitized(exe)
    assert done.stdout.split()[:2] == ["1", "1"], done.stdout + done.stderr
    past = [f for f in found if f["kind"] == "kernel-out-of-bounds"]
    assert len(past) == 1 and past[0]["count"] == 7, found  # one finding, seen for each of the 7 blocks
    f = past[0]
    assert f["memory"]["asked"] == 100 and f["memory"]["in_allocation"] and f["block"] == 25, f
    assert (f["memory"]["offset"], f["memory"]["bytes"]) == (100, 4), f["memory"]
    assert "EasyOPf<<<32>>>" in f["calls"][0]["api"] and f["calls"][0]["access"] == "read-write", f
    assert not [f for f in found if f["kind"] != "kernel-out-of-bounds"], found
