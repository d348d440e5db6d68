"""Device code: the AscendC programming model of the Ascend/samples kernel-invocation samples (lesson_01
0_introduction), in kernels written for this project after their patterns, each naming the sample it follows and
checked against numpy on the same data, or against the documented semantics where numpy has no equivalent
(asc-devkit's docs: masks and repeats, GatherMask, ReduceRepeat, DataCopyPad)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emu.capi import commands

# One host program for every kernel here: argv[1] picks the launch (Launch, in the kernels' file), each further
# argument is a file whose bytes go to a device buffer of its size and come back into it after the launch. It
# prints the synchronize's code, and the error message when there is one.
HOST = r'''
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "acl/acl.h"
#define CHECK(call) do { aclError r_ = (call); if (r_ != ACL_SUCCESS) { \
    printf("%s failed: %d\n", #call, (int)r_); return 1; } } while (0)
void Launch(int which, void *stream, void **buffers);
int main(int argc, char **argv) {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    int n = argc - 2;
    std::vector<void *> dev(n);
    std::vector<std::vector<char>> host(n);
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(argv[i + 2], "rb"); fseek(f, 0, SEEK_END); long size = ftell(f); fseek(f, 0, SEEK_SET);
        host[i].resize(size); if (fread(host[i].data(), 1, size, f) != (size_t)size) return 1; fclose(f);
        CHECK(aclrtMalloc(&dev[i], size, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclrtMemcpy(dev[i], size, host[i].data(), size, ACL_MEMCPY_HOST_TO_DEVICE));
    }
    Launch(atoi(argv[1]), s, dev.data());
    int code = aclrtSynchronizeStream(s);
    if (code != 0) { printf("%d\n%s\n", code, aclGetRecentErrMsg()); return 0; }
    for (int i = 0; i < n; i++) {
        CHECK(aclrtMemcpy(host[i].data(), host[i].size(), dev[i], host[i].size(), ACL_MEMCPY_DEVICE_TO_HOST));
        FILE *f = fopen(argv[i + 2], "wb"); fwrite(host[i].data(), 1, host[i].size(), f); fclose(f);
    }
    printf("0\n");
    return 0;
}
'''


def build(tmp_path: Path, name: str, kernels: str) -> Path:
    (tmp_path / f"{name}_main.cpp").write_text(HOST)
    (tmp_path / f"{name}_kernels.cpp").write_text('#include "kernel_operator.h"\nusing namespace AscendC;\n' + kernels)
    exe = tmp_path / name
    code = commands.compile_command("c++", [str(tmp_path / f"{name}_main.cpp"), str(tmp_path / f"{name}_kernels.cpp"),
                                            "-o", str(exe), "-Wall"])
    assert code == 0, f"building {name} failed"
    return exe


def launch(exe: Path, which: int, *arrays: np.ndarray) -> tuple[list[np.ndarray], str]:
    """Run launch `which` on copies of `arrays` (each a device buffer); their contents after it, and the output."""
    files = []
    for i, a in enumerate(arrays):
        path = exe.parent / f"buf{which}_{i}.bin"
        np.ascontiguousarray(a).tofile(path)
        files.append(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    done = subprocess.run([str(exe), str(which), *map(str, files)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=exe.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    return [np.fromfile(p, dtype=a.dtype).reshape(a.shape) for p, a in zip(files, arrays)], done.stdout


def ok(out: str) -> None:
    assert out.splitlines()[0] == "0", out


def bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, rounded to nearest even (finite values)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


ABS_ROWS = r'''
/* 16_unaligned_abs_kernellaunch/AbsDuplicateKernelInvocation: 4 blocks, each 16 rows of 11 halves (22 bytes)
 * one after another in global memory; each row read as a whole block of 16 (5 of the next row's), the 5 cleared
 * with a bitwise-mask Duplicate, Abs, and added back into the output, zeroed first by Fill, with atomic adds
 * after a SyncAll over a workspace. */
constexpr int32_t ROW = 11, ROWS = 16, CEIL = 16, BLOCKS = 4, PER_BLOCK = ROW * ROWS;
extern "C" __global__ __aicore__ void abs_rows(GM_ADDR x, GM_ADDR z, GM_ADDR sync)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    TBuf<> syncBuf;
    GlobalTensor<half> xg, zg;
    GlobalTensor<int32_t> sg;
    uint32_t length = PER_BLOCK + (GetBlockIdx() == BLOCKS - 1 ? CEIL - ROW : 0);
    xg.SetGlobalBuffer((__gm__ half *)x + PER_BLOCK * GetBlockIdx(), PER_BLOCK);
    zg.SetGlobalBuffer((__gm__ half *)z + PER_BLOCK * GetBlockIdx(), length);
    sg.SetGlobalBuffer((__gm__ int32_t *)sync, BLOCKS * 8);
    Fill<half>(zg, length, 0);
    pipe.InitBuffer(inQ, 1, ROWS * CEIL * sizeof(half));
    pipe.InitBuffer(outQ, 1, ROWS * CEIL * sizeof(half));
    pipe.InitBuffer(syncBuf, BLOCKS * 8 * sizeof(int32_t));
    SyncAll(sg, syncBuf.Get<int32_t>(), BLOCKS);
    LocalTensor<half> in = inQ.AllocTensor<half>();
    for (int i = 0; i < ROWS; i++)
        DataCopy(in[i * CEIL], xg[i * ROW], CEIL);
    inQ.EnQue(in);
    in = inQ.DeQue<half>();
    LocalTensor<half> out = outQ.AllocTensor<half>();
    uint64_t mask[2] = {(1ul << CEIL) - (1ul << ROW), 0};
    for (int i = 0; i < ROWS; i++)
        Duplicate<half>(in[i * CEIL], static_cast<half>(0), mask, 1, 1, 1);
    Abs(out, in, ROWS * CEIL);
    outQ.EnQue(out);
    inQ.FreeTensor(in);
    out = outQ.DeQue<half>();
    SetAtomicAdd<half>();
    for (int i = 0; i < ROWS; i++)
        DataCopy<half>(zg[i * ROW], out[i * CEIL], CEIL);
    SetAtomicNone();
    outQ.FreeTensor(out);
}

/* Atomic max, min and add of every block's 64 values into the same 64 of global memory. */
extern "C" __global__ __aicore__ void atomics(GM_ADDR x, GM_ADDR most, GM_ADDR least, GM_ADDR sum)
{
    TPipe pipe;
    TBuf<> a, b;
    pipe.InitBuffer(a, 64 * 4);
    pipe.InitBuffer(b, 64 * 4);
    GlobalTensor<float> xg, mg, lg;
    GlobalTensor<int32_t> sg;
    xg.SetGlobalBuffer((__gm__ float *)x + 64 * GetBlockIdx(), 64);
    mg.SetGlobalBuffer((__gm__ float *)most, 64);
    lg.SetGlobalBuffer((__gm__ float *)least, 64);
    sg.SetGlobalBuffer((__gm__ int32_t *)sum, 64);
    LocalTensor<float> v = a.Get<float>();
    LocalTensor<int32_t> w = b.Get<int32_t>();
    DataCopy(v, xg, 64);
    Cast(w, v, RoundMode::CAST_TRUNC, 64);
    SetAtomicMax<float>();
    DataCopy(mg, v, 64);
    SetAtomicMin<float>();
    DataCopyPad(lg, v, DataCopyExtParams(1, 64 * 4, 0, 0, 0));
    SetAtomicAdd<int32_t>();
    DataCopy(sg, w, 64);
    SetAtomicNone();
}

void Launch(int which, void *stream, void **b)
{
    if (which == 0)
        abs_rows<<<4, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2]);
    else
        atomics<<<5, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2], (uint8_t *)b[3]);
}
'''


def test_a_bitwise_mask_duplicate_and_atomic_adds_rebuild_unaligned_rows(tmp_path):
    """After 16_unaligned_abs_kernellaunch/AbsDuplicateKernelInvocation: rows of 22 bytes read as whole 32-byte
    blocks, the 5 halves past each row cleared by Duplicate with mask {bits 11-15, 0} (one repeat), Abs of all,
    and each 16-half row added atomically over the output zeroed by Fill: the output is np.abs of the input, and
    the 5 halves past the end stay 0. SyncAll with a workspace leaves each block's word (32 bytes apart) at 1.
    Then SetAtomicMax / SetAtomicMin / SetAtomicAdd<int32_t> over 5 blocks: max, min and sum of their values."""
    exe = build(tmp_path, "absrows", ABS_ROWS)
    rng = np.random.default_rng(16)
    x = rng.uniform(-100, 100, 4 * 176 + 5).astype(np.float16)
    z = np.full(4 * 176 + 5, 7, np.float16)
    (x_, z, sync), out = launch(exe, 0, x, z, np.zeros(32, np.int32))
    ok(out)
    assert np.array_equal(z[:704], np.abs(x[:704])) and np.all(z[704:] == 0)
    assert list(sync) == [1, 0, 0, 0, 0, 0, 0, 0] * 4

    x = rng.uniform(-1000, 1000, (5, 64)).astype(np.float32)
    (_, most, least, total), out = launch(exe, 1, x, np.full(64, -np.inf, np.float32),
                                          np.full(64, np.inf, np.float32), np.full(64, 3, np.int32))
    ok(out)
    assert np.array_equal(most, x.max(axis=0)) and np.array_equal(least, x.min(axis=0))
    assert np.array_equal(total, 3 + np.trunc(x).astype(np.int32).sum(axis=0))


GATHER = r'''
/* 16_unaligned_abs_kernellaunch/AbsGatherMaskKernelInvocation: GatherMask of 256 halves (and 128 floats) by a
 * pattern: each case's kept elements packed into its 256-element row of out (the rest 0), and rsvdCnt. */
extern "C" __global__ __aicore__ void gather(GM_ADDR x, GM_ADDR pattern, GM_ADDR xf, GM_ADDR out, GM_ADDR outf,
                                             GM_ADDR counts)
{
    TPipe pipe;
    TBuf<> a, p, d, af, pf, df;
    pipe.InitBuffer(a, 512); pipe.InitBuffer(p, 128); pipe.InitBuffer(d, 512);
    pipe.InitBuffer(af, 512); pipe.InitBuffer(pf, 128); pipe.InitBuffer(df, 512);
    GlobalTensor<half> xg, og;
    GlobalTensor<uint16_t> pg;
    GlobalTensor<uint32_t> pg32;
    GlobalTensor<float> xfg, ofg;
    GlobalTensor<uint64_t> cg;
    xg.SetGlobalBuffer((__gm__ half *)x, 256);
    pg.SetGlobalBuffer((__gm__ uint16_t *)pattern, 64);
    pg32.SetGlobalBuffer((__gm__ uint32_t *)pattern, 32);
    xfg.SetGlobalBuffer((__gm__ float *)xf, 128);
    og.SetGlobalBuffer((__gm__ half *)out, 10 * 256);
    ofg.SetGlobalBuffer((__gm__ float *)outf, 2 * 128);
    cg.SetGlobalBuffer((__gm__ uint64_t *)counts, 12);
    LocalTensor<half> src = a.Get<half>(), dst = d.Get<half>();
    LocalTensor<uint16_t> bits = p.Get<uint16_t>();
    DataCopy(src, xg, 256);
    DataCopy(bits, pg, 64);
    uint64_t kept = 0;
    /* 0: as the sample: Counter mode, 32 elements, one repeat */
    Duplicate(dst, (half)0, 256);
    GatherMask(dst, src, bits, true, 32, {1, 1, 8, 8}, kept);
    DataCopy(og, dst, 256);
    cg.SetValue(0, kept);
    /* 1: Normal mode, 2 repeats of 128, the same 128 bits for both (src1RepeatStride 0) */
    Duplicate(dst, (half)0, 256);
    GatherMask(dst, src, bits, false, 0, {1, 2, 8, 0}, kept);
    DataCopy(og[256], dst, 256);
    cg.SetValue(1, kept);
    /* 2: Counter mode, 20 elements in each of 3 repeats 4 blocks apart, blocks 2 apart, pattern 1 block on */
    Duplicate(dst, (half)0, 256);
    GatherMask(dst, src, bits, true, 20, {2, 3, 4, 1}, kept);
    DataCopy(og[512], dst, 256);
    cg.SetValue(2, kept);
    /* 3-9: the fixed patterns 1 to 7, Normal mode, 2 repeats */
    for (uint8_t fixed = 1; fixed <= 7; fixed++) {
        Duplicate(dst, (half)0, 256);
        GatherMask(dst, src, fixed, false, 0, {1, 2, 8, 0}, kept);
        DataCopy(og[(fixed + 2) * 256], dst, 256);
        cg.SetValue(fixed + 2, kept);
    }
    /* 10-11: floats with a uint32_t pattern (Normal mode, 2 repeats of 64), and the fixed pattern 3 */
    LocalTensor<float> fsrc = af.Get<float>(), fdst = df.Get<float>();
    LocalTensor<uint32_t> fbits = pf.Get<uint32_t>();
    DataCopy(fsrc, xfg, 128);
    DataCopy(fbits, pg32, 32);
    Duplicate(fdst, 0.0f, 128);
    GatherMask(fdst, fsrc, fbits, false, 0, {1, 2, 8, 1}, kept);
    DataCopy(ofg, fdst, 128);
    cg.SetValue(10, kept);
    Duplicate(fdst, 0.0f, 128);
    GatherMask(fdst, fsrc, (uint8_t)3, false, 0, {1, 2, 8, 0}, kept);
    DataCopy(ofg[128], fdst, 128);
    cg.SetValue(11, (uint64_t)GetGatherMaskRemainCount());
}
void Launch(int, void *stream, void **b)
{
    gather<<<1, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2], (uint8_t *)b[3],
                                   (uint8_t *)b[4], (uint8_t *)b[5]);
}
'''


def _kept(x: np.ndarray, on) -> np.ndarray:
    return np.array([x[i] for i in on], dtype=x.dtype)


def test_gather_mask_packs_what_its_pattern_keeps(tmp_path):
    """After 16_unaligned_abs_kernellaunch/AbsGatherMaskKernelInvocation (asc-devkit docs: GatherMask): a uint16_t
    pattern's bits keep elements in Counter mode (`mask` elements a repeat) and in Normal mode (256 bytes a
    repeat), with block and repeat strides and the pattern's own repeat stride; the fixed patterns 1-7 (even,
    odd, and each fourth element from 0, 1, 2, 3, all); a uint32_t pattern on floats. The kept elements are
    packed at dst's start, in order, and rsvdCnt (and GetGatherMaskRemainCount) is their number."""
    exe = build(tmp_path, "gather", GATHER)
    rng = np.random.default_rng(5)
    x = rng.uniform(-50, 50, 256).astype(np.float16)
    pattern = rng.integers(0, 1 << 16, 64, dtype=np.uint16)
    pattern[0], pattern[1] = 0b1111111111111100, 0b0000000000000011  # (the sample's)
    xf = rng.uniform(-50, 50, 128).astype(np.float32)
    (_, _, _, out, outf, counts), done = launch(exe, 0, x, pattern, xf, np.ones((10, 256), np.float16),
                                                 np.ones((2, 128), np.float32), np.zeros(12, np.uint64))
    ok(done)
    bits = np.unpackbits(pattern.view(np.uint8), bitorder="little")
    cases = [
        [k for k in range(32) if bits[k]],
        [r * 128 + k for r in range(2) for k in range(128) if bits[k]],
        # element k of repeat r: block r*4 + (k // 16) * 2, pattern bits from block r of the pattern
        [(r * 4 + (k // 16) * 2) * 16 + k % 16 for r in range(3) for k in range(20) if bits[r * 256 + k]],
    ]
    fixed = {1: lambda k: k % 2 == 0, 2: lambda k: k % 2 == 1, 3: lambda k: k % 4 == 0, 4: lambda k: k % 4 == 1,
             5: lambda k: k % 4 == 2, 6: lambda k: k % 4 == 3, 7: lambda k: True}
    cases += [[r * 128 + k for r in range(2) for k in range(128) if fixed[p](k)] for p in range(1, 8)]
    assert cases[0] == list(range(2, 18))  # (the sample's pattern: the last 14 of 16 and the first 2 after)
    for row, on in enumerate(cases):
        want = _kept(x, on)
        assert counts[row] == len(on), row
        assert np.array_equal(out[row][:len(on)], want) and np.all(out[row][len(on):] == 0), row
    fbits = np.unpackbits(pattern.view(np.uint8), bitorder="little")
    on = [r * 64 + k for r in range(2) for k in range(64) if fbits[r * 256 + k]]
    assert counts[10] == len(on) and np.array_equal(outf[0][:len(on)], _kept(xf, on))
    on = [r * 64 + k for r in range(2) for k in range(64) if k % 4 == 0]
    assert counts[11] == len(on) and np.array_equal(outf[1][:len(on)], _kept(xf, on))


REDUCE = r'''
/* 17_unaligned_reducemin_kernellaunch/ReduceMinKernelInvocation: ReduceMin / ReduceMax / ReduceSum by repeats,
 * with a bitwise or a count mask, repeatTime and srcRepStride; each case's dst[0] (and its index, dst[1]) into
 * its 16-element row of out. */
extern "C" __global__ __aicore__ void reduce(GM_ADDR x, GM_ADDR out, GM_ADDR xf, GM_ADDR outf)
{
    TPipe pipe;
    TBuf<> a, w, d, af, df;
    pipe.InitBuffer(a, 1024 * 2); pipe.InitBuffer(w, 1024); pipe.InitBuffer(d, 32 * 8);
    pipe.InitBuffer(af, 256 * 4); pipe.InitBuffer(df, 32 * 4);
    GlobalTensor<half> xg, og;
    GlobalTensor<float> xfg, ofg;
    xg.SetGlobalBuffer((__gm__ half *)x, 1024);
    og.SetGlobalBuffer((__gm__ half *)out, 16 * 8);
    xfg.SetGlobalBuffer((__gm__ float *)xf, 256);
    ofg.SetGlobalBuffer((__gm__ float *)outf, 8 * 4);
    LocalTensor<half> src = a.Get<half>(), work = w.Get<half>(), dst = d.Get<half>();
    DataCopy(src, xg, 1024);
    Duplicate(dst, (half)0, 128);
    uint64_t mask[2] = {0x0f0f0f0f0f0f0f0full, 0xf0f0f0f0f0f0f0f0ull};
    ReduceMin<half>(dst, src, work, mask, 4, 8, true);
    ReduceMax<half>(dst[16], src, work, 100, 3, 8, true);
    ReduceMin<half>(dst[32], src, work, 128, 4, 16, true);  /* every other 256 bytes */
    uint64_t four[2] = {0xf, 0};
    for (int i = 0; i < 4; i++)  /* as the sample: the first 4 of each 16 */
        ReduceMin<half>(dst[48 + i * 16], src[i * 16], work, four, 1, 8, false);
    DataCopy(og, dst, 128);
    LocalTensor<float> fsrc = af.Get<float>(), fdst = df.Get<float>();
    DataCopy(fsrc, xfg, 256);
    Duplicate(fdst, 0.0f, 32);
    ReduceSum<float>(fdst, fsrc, fsrc, 64, 4, 8);
    uint64_t odd[2] = {0xaaaaaaaaaaaaaaaaull, 0};
    ReduceSum<float>(fdst[8], fsrc, fsrc, odd, 2, 16);
    ReduceMax<float>(fdst[16], fsrc, fsrc, 64, 4, 8, true);
    DataCopy(ofg, fdst, 32);
}
void Launch(int, void *stream, void **b)
{
    reduce<<<1, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2], (uint8_t *)b[3]);
}
'''


def test_reductions_by_repeats_take_the_masked_elements_and_index_them_in_the_source(tmp_path):
    """After 17_unaligned_reducemin_kernellaunch (asc-devkit docs: ReduceMin, ReduceSum): over every element the
    mask selects in each repeat (srcRepStride blocks apart), the minimum or maximum with the index of its first
    occurrence, counted in elements from the source's start; the sum as np.sum of those elements. A minimum that
    occurs twice gives the earlier index."""
    exe = build(tmp_path, "reduce", REDUCE)
    rng = np.random.default_rng(17)
    x = rng.permutation(np.arange(-500, 524)).astype(np.float16) / np.float16(4)
    x[128] = x[385] = np.float16(-200)  # a tie, both selected by the first case
    xf = rng.uniform(-10, 10, 256).astype(np.float32)
    (_, out, _, outf), done = launch(exe, 0, x, np.ones((8, 16), np.float16), xf, np.ones((4, 8), np.float32))
    ok(done)
    index = lambda row: int(out[row][1:2].view(np.uint16)[0])  # noqa: E731 (the index's bits)
    bits = [k for k in range(128) if (k < 64 and (0x0F0F0F0F0F0F0F0F >> k) & 1)
            or (k >= 64 and (0xF0F0F0F0F0F0F0F0 >> (k - 64)) & 1)]
    on = [r * 128 + k for r in range(4) for k in bits]
    at = min(on, key=lambda i: (x[i], i))
    assert at == 128 and (out[0][0], index(0)) == (x[at], at)
    on = [r * 128 + k for r in range(3) for k in range(100)]
    at = max(on, key=lambda i: (x[i], -i))
    assert (out[1][0], index(1)) == (x[at], at)
    on = [r * 256 + k for r in range(4) for k in range(128)]
    at = min(on, key=lambda i: (x[i], i))
    assert (out[2][0], index(2)) == (x[at], at)
    for i in range(4):
        assert out[3 + i][0] == x[i * 16:i * 16 + 4].min() and out[3 + i][1] == 0  # (no index asked: untouched)
    assert outf[0][0] == np.sum(xf)
    assert outf[1][0] == np.sum(xf[[r * 128 + k for r in range(2) for k in range(1, 64, 2)]])
    assert outf[2][0] == xf.max() and int(outf[2][1:2].view(np.uint32)[0]) == int(xf.argmax())


WHOLE = r'''
/* 19_unaligned_wholereduces_kernellaunch/WholeReduceSumKernelInvocation: rows of `cols` halves brought in by
 * DataCopyPad, each padded to a whole number of blocks, and reduced one row a repeat. */
struct Tiling { uint32_t rows, cols; };
extern "C" __global__ __aicore__ void whole(GM_ADDR x, GM_ADDR sums, GM_ADDR pairs, GM_ADDR rest, GM_ADDR tiling)
{
    Tiling t = *(__gm__ Tiling *)tiling;
    uint32_t aligned = (t.cols * 2 + 31) / 32 * 32;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, aligned * t.rows);
    pipe.InitBuffer(outQ, 1, 64 * 8);
    GlobalTensor<half> xg, sg, pg, rg;
    xg.SetGlobalBuffer((__gm__ half *)x, t.rows * t.cols);
    sg.SetGlobalBuffer((__gm__ half *)sums, 2 * t.rows);
    pg.SetGlobalBuffer((__gm__ half *)pairs, 4 * t.rows);
    rg.SetGlobalBuffer((__gm__ half *)rest, 4 * t.rows);
    LocalTensor<half> in = inQ.AllocTensor<half>();
    DataCopyExtParams copy = {(uint16_t)t.rows, t.cols * 2, 0, 0, 0};
    DataCopyPadExtParams<half> pad = {false, 0, (uint8_t)((aligned - t.cols * 2) / 2), 0};
    DataCopyPad(in, xg, copy, pad);
    inQ.EnQue(in);
    in = inQ.DeQue<half>();
    LocalTensor<half> y = outQ.AllocTensor<half>();
    int32_t stride = aligned / 32;
    WholeReduceSum<half, true>(y, in, t.cols, t.rows, 1, 1, stride);
    uint64_t even[2] = {0x5555555555555555ull, 0x0555555555555555ull};  /* even elements below 124 */
    WholeReduceSum<half>(y[t.rows], in, even, t.rows, 1, 1, stride);
    DataCopyPad(sg, y, DataCopyExtParams(1, 2 * t.rows * 2, 0, 0, 0));
    WholeReduceMax<half>(y, in, t.cols, t.rows, 1, 1, stride);
    WholeReduceMin<half>(y[2 * t.rows], in, t.cols, t.rows, 1, 1, stride, ReduceOrder::ORDER_INDEX_VALUE);
    DataCopyPad(pg, y, DataCopyExtParams(1, 4 * t.rows * 2, 0, 0, 0));
    WholeReduceMax<half>(y, in, t.cols, t.rows, 1, 1, stride, ReduceOrder::ORDER_ONLY_VALUE);
    WholeReduceMin<half>(y[2 * t.rows], in, t.cols, t.rows, 1, 1, stride, ReduceOrder::ORDER_ONLY_INDEX);
    DataCopyPad(rg, y, DataCopyExtParams(1, 4 * t.rows * 2, 0, 0, 0));
    outQ.FreeTensor(y);
    inQ.FreeTensor(in);
}

/* DataCopyPad's padding: rows of 7 halves into 16 (the dummy halves repeat the row's first), then with a
 * padding value on the right, then 3 on the left and the rest on the right. */
extern "C" __global__ __aicore__ void padding(GM_ADDR x, GM_ADDR out)
{
    TPipe pipe;
    TBuf<> b;
    pipe.InitBuffer(b, 3 * 4 * 16 * 2);
    GlobalTensor<half> xg, og;
    xg.SetGlobalBuffer((__gm__ half *)x, 28);
    og.SetGlobalBuffer((__gm__ half *)out, 3 * 64);
    LocalTensor<half> t = b.Get<half>();
    Duplicate(t, (half)-1, 3 * 64);
    DataCopyPad(t, xg, {4, 14, 0, 0, 0}, {false, 0, 0, 0});
    DataCopyPad(t[64], xg, {4, 14, 0, 0, 0}, {true, 0, 9, (half)5});
    DataCopyPad(t[128], xg, {4, 14, 0, 0, 0}, DataCopyPadExtParams<half>(true, 3, 6, (half)8));
    DataCopy(og, t, 3 * 64);
}
void Launch(int which, void *stream, void **b)
{
    if (which == 0)
        whole<<<1, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2], (uint8_t *)b[3],
                                      (uint8_t *)b[4]);
    else
        padding<<<1, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1]);
}
'''


def test_whole_reduce_gives_each_row_its_sum_extreme_and_index(tmp_path):
    """After 19_unaligned_wholereduces_kernellaunch (13 rows of 123 halves): WholeReduceSum of each row equals
    np.sum(axis=1) (float16), and with a bitwise mask the sum of the even columns; WholeReduceMax / Min (asc-devkit
    docs: ReduceRepeat) give the extreme and its index in the row in the order ReduceOrder says: [value, index],
    [index, value], the value alone, or the index alone as a uint32_t."""
    exe = build(tmp_path, "whole", WHOLE)
    rng = np.random.default_rng(19)
    rows, cols = 13, 123
    x = rng.uniform(1, 100, (rows, cols)).astype(np.float16)
    x[3, 7] = x[3, 90] = np.float16(150)  # a tie: the first index
    (_, sums, pairs, rest, _), done = launch(exe, 0, x, np.zeros(2 * rows, np.float16),
                                             np.zeros(4 * rows, np.float16), np.zeros(4 * rows, np.float16),
                                             np.array([rows, cols], np.uint32))
    ok(done)
    assert np.array_equal(sums[:rows], np.sum(x, axis=1))
    assert np.array_equal(sums[rows:], np.sum(x[:, 0:124:2], axis=1))
    u16 = lambda a: a.view(np.uint16).astype(int)  # noqa: E731
    assert np.array_equal(pairs[0:2 * rows:2], x.max(axis=1)) and list(u16(pairs[1:2 * rows:2])) == list(x.argmax(1))
    assert list(u16(pairs[2 * rows::2])) == list(x.argmin(axis=1)) and np.array_equal(pairs[2 * rows + 1::2],
                                                                                      x.min(axis=1))
    assert x.argmax(axis=1)[3] == 7
    assert np.array_equal(rest[:rows], x.max(axis=1))
    assert list(rest[2 * rows:].view(np.uint32)) == list(x.argmin(axis=1))


def test_data_copy_pad_fills_what_its_rows_do_not(tmp_path):
    """asc-devkit docs: DataCopyPad GMToUB. Rows of 14 bytes land on 32-byte blocks: without padding on either
    side the dummy halves repeat the row's first element; with isPad the padding and dummy halves take
    paddingValue, leftPadding halves before the row."""
    exe = build(tmp_path, "whole", WHOLE)
    x = np.arange(1, 29, dtype=np.float16)
    (_, out), done = launch(exe, 1, x, np.zeros((3, 4, 16), np.float16))
    ok(done)
    rows = x.reshape(4, 7)
    for r in range(4):
        assert list(out[0][r]) == list(rows[r]) + [rows[r][0]] * 9
        assert list(out[1][r]) == list(rows[r]) + [5] * 9
        assert list(out[2][r]) == [8] * 3 + list(rows[r]) + [8] * 6


VECTOR_ADD = r'''
/* 21_vectoradd_kernellaunch/VectorAddMultiCoreWithTiling: x + y over 7 blocks, the first `former` blocks one
 * element more than the rest; each block in tiles of up to TILE elements moved by DataCopyPad (any length),
 * bfloat16_t added in float (Cast, Add, Cast CAST_RINT), int8_t in half. */
constexpr uint32_t TILE = 96;
struct Tiling { uint32_t total; };
template <typename T> struct Wide { using type = T; };
template <> struct Wide<bfloat16_t> { using type = float; };
template <> struct Wide<int8_t> { using type = half; };
template <typename T> __aicore__ inline void add_tiles(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t total)
{
    using W = typename Wide<T>::type;
    uint32_t blocks = GetBlockNum(), i = GetBlockIdx(), base = total / blocks, former = total % blocks;
    uint32_t length = base + (i < former ? 1 : 0), start = i * base + Std::min(i, former);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> xq, yq;
    TQue<TPosition::VECOUT, 2> zq;
    TBuf<TPosition::VECCALC> t0, t1;
    uint32_t tile = Std::min(TILE, Std::max(length, 1u));
    pipe.InitBuffer(xq, 2, tile * sizeof(T)); pipe.InitBuffer(yq, 2, tile * sizeof(T));
    pipe.InitBuffer(zq, 2, tile * sizeof(T));
    pipe.InitBuffer(t0, tile * sizeof(W)); pipe.InitBuffer(t1, tile * sizeof(W));
    GlobalTensor<T> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ T *)x + start, length);
    yg.SetGlobalBuffer((__gm__ T *)y + start, length);
    zg.SetGlobalBuffer((__gm__ T *)z + start, length);
    for (uint32_t done = 0; done < length; done += tile) {
        uint32_t n = Std::min(tile, length - done);
        DataCopyExtParams copy = {1, (uint32_t)(n * sizeof(T)), 0, 0, 0};
        LocalTensor<T> xl = xq.AllocTensor<T>(), yl = yq.AllocTensor<T>();
        DataCopyPad(xl, xg[done], copy, DataCopyPadExtParams<T>{false, 0, 0, 0});
        DataCopyPad(yl, yg[done], copy, DataCopyPadExtParams<T>{false, 0, 0, 0});
        xq.EnQue(xl); yq.EnQue(yl);
        xl = xq.DeQue<T>(); yl = yq.DeQue<T>();
        LocalTensor<T> zl = zq.AllocTensor<T>();
        if constexpr (std::is_same<T, W>::value) {
            Add(zl, xl, yl, n);
        } else {
            LocalTensor<W> a = t0.Get<W>(), b = t1.Get<W>();
            Cast(a, xl, RoundMode::CAST_NONE, n);
            Cast(b, yl, RoundMode::CAST_NONE, n);
            Add(a, a, b, n);
            Cast(zl, a, std::is_same<T, int8_t>::value ? RoundMode::CAST_NONE : RoundMode::CAST_RINT, n);
        }
        zq.EnQue(zl);
        xq.FreeTensor(xl); yq.FreeTensor(yl);
        zl = zq.DeQue<T>();
        DataCopyPad(zg[done], zl, copy);
        zq.FreeTensor(zl);
    }
}
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling, uint32_t type)
{
    uint32_t total = ((__gm__ Tiling *)tiling)->total;
    switch (type) {
    case 0: add_tiles<bfloat16_t>(x, y, z, total); break;
    case 1: add_tiles<half>(x, y, z, total); break;
    case 2: add_tiles<float>(x, y, z, total); break;
    case 3: add_tiles<int8_t>(x, y, z, total); break;
    case 4: add_tiles<int16_t>(x, y, z, total); break;
    default: add_tiles<int32_t>(x, y, z, total); break;
    }
}

/* 21_vectoradd_kernellaunch/VectorAddMultiCoreWithTilingBroadcast: Broadcast of a [rows, 1] tensor to
 * [rows, cols] (axis 1), of a [1, cols] one (axis 0), and of one element to a row (1 dimension). */
template <typename T> __aicore__ inline void broadcasts(GM_ADDR col, GM_ADDR row, GM_ADDR out)
{
    constexpr uint32_t R = 6, C = 40;
    TPipe pipe;
    TBuf<> a, b, d;
    pipe.InitBuffer(a, 64 * sizeof(T)); pipe.InitBuffer(b, 64 * sizeof(T)); pipe.InitBuffer(d, 3 * R * C * sizeof(T));
    GlobalTensor<T> cg, rg, og;
    cg.SetGlobalBuffer((__gm__ T *)col, R); rg.SetGlobalBuffer((__gm__ T *)row, C);
    og.SetGlobalBuffer((__gm__ T *)out, 3 * R * C);
    LocalTensor<T> cl = a.Get<T>(), rl = b.Get<T>(), dl = d.Get<T>();
    DataCopyPad(cl, cg, DataCopyExtParams(1, R * sizeof(T), 0, 0, 0));
    DataCopyPad(rl, rg, DataCopyExtParams(1, C * sizeof(T), 0, 0, 0));
    uint32_t dst[2] = {R, C}, byRow[2] = {R, 1}, byCol[2] = {1, C}, one[1] = {1}, all[1] = {R * C};
    Broadcast<T, 2, 1>(dl, cl, dst, byRow);
    Broadcast<T, 2, 0>(dl[R * C], rl, dst, byCol);
    Broadcast<T, 1, 0>(dl[2 * R * C], rl, all, one);
    DataCopyPad(og, dl, DataCopyExtParams(1, 3 * R * C * sizeof(T), 0, 0, 0));
}
extern "C" __global__ __aicore__ void broadcast_custom(GM_ADDR col, GM_ADDR row, GM_ADDR out, uint32_t type)
{
    if (type == 0) broadcasts<int8_t>(col, row, out); else broadcasts<float>(col, row, out);
}
void Launch(int which, void *stream, void **b)
{
    if (which < 6)
        add_custom<<<7, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2], (uint8_t *)b[3],
                                           (uint32_t)which);
    else
        broadcast_custom<<<1, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2],
                                                 (uint32_t)(which - 6));
}
'''


@pytest.fixture(scope="module")
def vector_add(tmp_path_factory):
    return build(tmp_path_factory.mktemp("vadd"), "vadd", VECTOR_ADD)


@pytest.mark.parametrize("kind", ["bfloat16", "float16", "float32", "int8", "int16", "int32"])
def test_a_vector_add_of_each_type_equals_numpy(vector_add, kind):
    """After 21_vectoradd_kernellaunch/VectorAddMultiCoreWithTiling (17 x 1023 elements over blocks that do not
    share them evenly, tiles moved by DataCopyPad): bfloat16 through float (Cast, Add, Cast CAST_RINT) equals
    float32's sum rounded once to bfloat16; int8 through half equals the int8 sum; the rest as numpy adds."""
    which = ["bfloat16", "float16", "float32", "int8", "int16", "int32"].index(kind)
    rng = np.random.default_rng(21 + which)
    n = 17 * 1023
    if kind == "bfloat16":
        x, y = bf16(rng.uniform(-50, 50, n)), bf16(rng.uniform(-50, 50, n))
        want = bf16(from_bf16(x) + from_bf16(y))
    else:
        dtype = np.dtype(kind)
        x = rng.uniform(-50, 50, n).astype(dtype)
        y = rng.uniform(-50, 50, n).astype(dtype)
        want = x + y
    (_, _, z, _), out = launch(vector_add, which, x, y, np.zeros_like(x), np.array([n], np.uint32))
    ok(out)
    assert np.array_equal(z, want)


@pytest.mark.parametrize("kind", ["int8", "float32"])
def test_broadcast_widens_a_column_a_row_and_an_element(vector_add, kind):
    """After 21_vectoradd_kernellaunch/VectorAddMultiCoreWithTilingBroadcast (asc-devkit docs: Broadcast):
    [6, 1] to [6, 40] along axis 1, [1, 40] to [6, 40] along axis 0, [1] to [240]: np.broadcast_to of each."""
    rng = np.random.default_rng(7)
    col = rng.integers(-100, 100, 6).astype(kind)
    row = rng.integers(-100, 100, 40).astype(kind)
    (_, _, out), done = launch(vector_add, 6 + (kind == "float32"), col, row, np.zeros(3 * 240, kind))
    ok(done)
    assert np.array_equal(out[:240].reshape(6, 40), np.broadcast_to(col[:, None], (6, 40)))
    assert np.array_equal(out[240:480].reshape(6, 40), np.broadcast_to(row[None, :], (6, 40)))
    assert np.array_equal(out[480:], np.broadcast_to(row[:1], (240,)))


STATIC = r'''
/* 23_static_tensor_programming_kernellaunch (add_custom_v2 and v3): no TPipe; LocalTensors at addresses of the
 * Unified Buffer (ping and pong), or from a LocalMemAllocator, ordered by SetFlag / WaitFlag with event ids. */
constexpr uint32_t TILE = 1024;
extern "C" __global__ __aicore__ void add_static(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR addr, uint32_t n,
                                                 uint32_t allocator)
{
    InitSocState();
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float *)x + GetBlockIdx() * n, n);
    yg.SetGlobalBuffer((__gm__ float *)y + GetBlockIdx() * n, n);
    zg.SetGlobalBuffer((__gm__ float *)z + GetBlockIdx() * n, n);
    LocalTensor<float> xs[2], ys[2], zs[2];
    if (allocator) {
        LocalMemAllocator<Hardware::UB> ub;
        for (int i = 0; i < 2; i++) {
            xs[i] = ub.Alloc<float, TILE>(); ys[i] = ub.Alloc<float>(TILE); zs[i] = ub.Alloc<TPosition::VECOUT, float>(TILE);
        }
        ((__gm__ uint32_t *)addr)[GetBlockIdx()] = ub.GetCurAddr();
    } else {
        for (int i = 0; i < 2; i++) {
            xs[i] = LocalTensor<float>(TPosition::VECCALC, (3 * i) * TILE * 4, TILE);
            ys[i] = LocalTensor<float>(TPosition::VECCALC, (3 * i + 1) * TILE * 4 + 256, TILE);
            zs[i] = LocalTensor<float>(TPosition::VECCALC, 0x20000 + i * TILE * 4, TILE);
        }
    }
    SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID1);
    for (uint32_t i = 0; i < n / TILE; i++) {
        int32_t event = i % 2 == 0 ? EVENT_ID0 : EVENT_ID1;
        LocalTensor<float> &xl = xs[i % 2], &yl = ys[i % 2], &zl = zs[i % 2];
        WaitFlag<HardEvent::MTE3_MTE2>(event);
        DataCopy(xl, xg[i * TILE], TILE);
        DataCopy(yl, yg[i * TILE], TILE);
        SetFlag<HardEvent::MTE2_V>(event);
        WaitFlag<HardEvent::MTE2_V>(event);
        Add(zl, xl, yl, TILE);
        SetFlag<HardEvent::V_MTE3>(event);
        WaitFlag<HardEvent::V_MTE3>(event);
        DataCopy(zg[i * TILE], zl, TILE);
        SetFlag<HardEvent::MTE3_MTE2>(event);
    }
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID1);
    PipeBarrier<PIPE_ALL>();
}
extern "C" __global__ __aicore__ void past_the_buffer(uint32_t addr)
{
    LocalTensor<float> t(TPosition::VECCALC, addr, 64);
    Duplicate(t, 1.0f, 64);
}
void Launch(int which, void *stream, void **b)
{
    if (which < 2)
        add_static<<<4, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2], (uint8_t *)b[3],
                                           5 * TILE, (uint32_t)which);
    else
        past_the_buffer<<<1, nullptr, stream>>>(which == 2 ? 196608 - 256 : 196608 - 128);
}
'''


def test_static_tensors_at_unified_buffer_addresses_add_as_numpy(tmp_path):
    """After 23_static_tensor_programming_kernellaunch: LocalTensor(TPosition, addr, tileSize) at addresses of
    the Unified Buffer, or LocalMemAllocator's Alloc forms one after another (GetCurAddr: the bytes handed out),
    double-buffered with SetFlag / WaitFlag on EVENT_ID0 / EVENT_ID1: x + y equals numpy's. A tensor reaching
    past the 192 KiB of the 910B's Unified Buffer fails the launch (507035), saying so."""
    exe = build(tmp_path, "static", STATIC)
    rng = np.random.default_rng(23)
    x = rng.uniform(-1, 1, 4 * 5 * 1024).astype(np.float32)
    y = rng.uniform(-1, 1, 4 * 5 * 1024).astype(np.float32)
    for allocator in (0, 1):
        (_, _, z, addr), out = launch(exe, allocator, x, y, np.zeros_like(x), np.zeros(8, np.uint32))
        ok(out)
        assert np.array_equal(z, x + y)
        assert list(addr[:4]) == ([6 * 1024 * 4] * 4 if allocator else [0] * 4)
    _, out = launch(exe, 2)
    ok(out)
    _, out = launch(exe, 3)
    code, why = out.splitlines()[:2]
    assert code == "507035" and "past_the_buffer" in why and "Unified Buffer address 196480" in why, out


REPEATS = r'''
/* The repeat forms of the elementwise instructions (asc-devkit docs: 高维切分, 掩码), on 512 halves x, y and
 * 256 floats xf, yf; each case into its row of out (halves) or outf (floats), filled with -7 first. */
extern "C" __global__ __aicore__ void repeats(GM_ADDR x, GM_ADDR y, GM_ADDR xf, GM_ADDR yf, GM_ADDR out,
                                              GM_ADDR outf)
{
    TPipe pipe;
    TBuf<> a, b, c, af, bf, cf;
    pipe.InitBuffer(a, 1024); pipe.InitBuffer(b, 1024); pipe.InitBuffer(c, 2048);
    pipe.InitBuffer(af, 1024); pipe.InitBuffer(bf, 1024); pipe.InitBuffer(cf, 2048);
    GlobalTensor<half> xg, yg, og;
    GlobalTensor<float> xfg, yfg, ofg;
    xg.SetGlobalBuffer((__gm__ half *)x, 512); yg.SetGlobalBuffer((__gm__ half *)y, 512);
    og.SetGlobalBuffer((__gm__ half *)out, 8 * 1024);
    xfg.SetGlobalBuffer((__gm__ float *)xf, 256); yfg.SetGlobalBuffer((__gm__ float *)yf, 256);
    ofg.SetGlobalBuffer((__gm__ float *)outf, 4 * 512);
    LocalTensor<half> xl = a.Get<half>(), yl = b.Get<half>(), z = c.Get<half>();
    LocalTensor<float> xfl = af.Get<float>(), yfl = bf.Get<float>(), zf = cf.Get<float>();
    DataCopy(xl, xg, 512); DataCopy(yl, yg, 512); DataCopy(xfl, xfg, 256); DataCopy(yfl, yfg, 256);
    int row = 0;
    /* 0: Add, bits {0xAAAA.., 0x5555..}, 2 repeats */
    Duplicate(z, (half)-7, 1024);
    uint64_t bits[2] = {0xaaaaaaaaaaaaaaaaull, 0x5555555555555555ull};
    Add(z, xl, yl, bits, 2, {1, 1, 1, 8, 8, 8});
    DataCopy(og[1024 * row++], z, 1024);
    /* 1: Adds, the first 100 of each of 3 repeats, dst blocks 2 apart and repeats 16 blocks apart */
    Duplicate(z, (half)-7, 1024);
    Adds(z, xl, 2.5f, 100, 3, {2, 1, 16, 8});
    DataCopy(og[1024 * row++], z, 1024);
    /* 2: Abs with the mask register set before (isSetMask false): the first 8 of each of 2 repeats */
    Duplicate(z, (half)-7, 1024);
    SetVectorMask<half>(0, 0xff);
    Abs<half, false>(z, xl, MASK_PLACEHOLDER, 2, {1, 1, 8, 8});
    DataCopy(og[1024 * row++], z, 1024);
    /* 3: Counter mode, the register's count (200 elements; repeatTime ignored) */
    Duplicate(z, (half)-7, 1024);
    SetMaskCount();
    SetVectorMask<half, MaskMode::COUNTER>(0, 200);
    Muls<half, false>(z, xl, (half)3, MASK_PLACEHOLDER, 1, {1, 1, 8, 8});
    SetMaskNorm();
    DataCopy(og[1024 * row++], z, 1024);
    /* 4: Counter mode with the mask given: {130, 0} is 130 elements */
    Duplicate(z, (half)-7, 1024);
    SetMaskCount();
    uint64_t count[2] = {130, 0};
    Sub(z, xl, yl, count, 1, {1, 1, 1, 8, 8, 8});
    SetMaskNorm();
    DataCopy(og[1024 * row++], z, 1024);
    /* 5: a count form leaves every element in the mask: Relu<false> after it takes all 128 */
    Duplicate(z, (half)-7, 1024);
    SetVectorMask<half>(0, 1);
    Max(z, xl, yl, 16);
    Relu<half, false>(z[128], xl, MASK_PLACEHOLDER, 1, {1, 1, 8, 8});
    DataCopy(og[1024 * row++], z, 1024);
    /* 6: Duplicate, the first 10 of each of 3 repeats, blocks 1 apart, repeats 4 apart */
    Duplicate(z, (half)-7, 1024);
    Duplicate(z, (half)9, 10, 3, 1, 4);
    DataCopy(og[1024 * row++], z, 1024);
    /* 7: Exp of the odd elements of 2 repeats, sources 2 blocks apart within a repeat */
    Duplicate(z, (half)-7, 1024);
    uint64_t odd[2] = {0xaaaaaaaaaaaaaaaaull, 0xaaaaaaaaaaaaaaaaull};
    Exp(z, xl, odd, 1, {1, 2, 8, 16});
    DataCopy(og[1024 * row++], z, 1024);
    /* floats, 64 a repeat: Div by count mask, Min with src1 block stride 0 (its first block each time), Mul bits */
    row = 0;
    Duplicate(zf, -7.0f, 512);
    Div(zf, xfl, yfl, 64, 4, {1, 1, 1, 8, 8, 8});
    DataCopy(ofg[512 * row++], zf, 512);
    Duplicate(zf, -7.0f, 512);
    Min(zf, xfl, yfl, 40, 2, {1, 1, 0, 8, 8, 8});
    DataCopy(ofg[512 * row++], zf, 512);
    Duplicate(zf, -7.0f, 512);
    uint64_t fbits[2] = {0xf0f0f0f0f0f0f0f0ull, 0};
    Mul(zf, xfl, yfl, fbits, 2, {1, 1, 1, 8, 8, 8});
    DataCopy(ofg[512 * row++], zf, 512);
    Duplicate(zf, -7.0f, 512);
    Maxs(zf, xfl, 0.25f, 64, 2, {1, 1, 8, 8});
    Mins(zf[128], xfl, -0.25f, 64, 2, {1, 1, 8, 8});
    DataCopy(ofg[512 * row++], zf, 512);
}
void Launch(int, void *stream, void **b)
{
    repeats<<<1, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1], (uint8_t *)b[2], (uint8_t *)b[3],
                                    (uint8_t *)b[4], (uint8_t *)b[5]);
}
'''


def _at(r: int, k: int, blk: int, rep: int, per_block: int) -> int:
    """Element k of repeat r of an operand, in elements from its start (asc-devkit docs: 高维切分)."""
    return (r * rep + (k // per_block) * blk) * per_block + k % per_block


def test_repeat_forms_follow_their_masks_strides_and_the_mask_register(tmp_path):
    """asc-devkit docs (SIMD计算说明: 高维切分 and 掩码): 8 DataBlocks a repeat, element k of repeat r at r *
    repStride + (k / per block) * blkStride blocks; a bitwise mask ({low, high}) or a count of leading elements;
    isSetMask = false takes the register SetVectorMask set; in Counter mode the register's low 64 bits are a count
    of elements (repeatTime ignored); a count form leaves every element in the mask. Each computed element equals
    numpy's (half in float, rounded once); the others keep what they held."""
    exe = build(tmp_path, "repeats", REPEATS)
    rng = np.random.default_rng(8)
    x = rng.uniform(-4, 4, 512).astype(np.float16)
    y = rng.uniform(-4, 4, 512).astype(np.float16)
    xf = rng.uniform(-4, 4, 256).astype(np.float32)
    yf = rng.uniform(0.5, 4, 256).astype(np.float32)
    (_, _, _, _, out, outf), done = launch(exe, 0, x, y, xf, yf, np.zeros((8, 1024), np.float16),
                                           np.zeros((4, 512), np.float32))
    ok(done)
    half = np.float16

    def expect(cases, fill, size, dtype):
        want = np.full(size, fill, dtype)
        for dst, value in cases:
            want[dst] = value
        return want

    low, high = 0xAAAAAAAAAAAAAAAA, 0x5555555555555555
    on = lambda k: (low >> k) & 1 if k < 64 else (high >> (k - 64)) & 1  # noqa: E731
    rows = [
        [(r * 128 + k, x[r * 128 + k] + y[r * 128 + k]) for r in range(2) for k in range(128) if on(k)],
        [(_at(r, k, 2, 16, 16), half(np.float32(x[_at(r, k, 1, 8, 16)]) + np.float32(2.5)))
         for r in range(3) for k in range(100)],
        [(r * 128 + k, np.abs(x[r * 128 + k])) for r in range(2) for k in range(8)],
        [(i, x[i] * half(3)) for i in range(200)],
        [(i, x[i] - y[i]) for i in range(130)],
        [(i, np.maximum(x[i], y[i])) for i in range(16)] + [(128 + k, np.maximum(x[k], half(0))) for k in range(128)],
        [(_at(r, k, 1, 4, 16), half(9)) for r in range(3) for k in range(10)],
        [(k, np.exp(x[_at(0, k, 2, 16, 16)].astype(np.float32)).astype(np.float16)) for k in range(1, 128, 2)],
    ]
    for i, cases in enumerate(rows):
        assert np.array_equal(out[i], expect(cases, -7, 1024, np.float16)), i
    frows = [
        [(i, xf[i] / yf[i]) for i in range(256)],
        [(r * 64 + k, min(xf[r * 64 + k], yf[r * 64 + k % 8])) for r in range(2) for k in range(40)],
        [(r * 64 + k, xf[r * 64 + k] * yf[r * 64 + k]) for r in range(2) for k in range(64) if (0xF0F0F0F0F0F0F0F0 >> k) & 1],
        [(i, max(xf[i], np.float32(0.25))) for i in range(128)] + [(128 + i, min(xf[i], np.float32(-0.25)))
                                                                    for i in range(128)],
    ]
    for i, cases in enumerate(frows):
        assert np.array_equal(outf[i], expect(cases, -7, 512, np.float32)), i


REGISTERS = r'''
/* Each block's own registers across SyncAll: a mask and an atomic mode set before it are its own after it, and
 * so is its block index. */
extern "C" __global__ __aicore__ void registers(GM_ADDR out, GM_ADDR ids)
{
    TPipe pipe;
    TBuf<> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<half> t = b.Get<half>();
    GlobalTensor<half> og;
    og.SetGlobalBuffer((__gm__ half *)out + 128 * GetBlockIdx(), 128);
    uint32_t i = GetBlockIdx();
    SetVectorMask<half>(0, (1ull << (i + 1)) - 1);   /* block i: its first i + 1 elements */
    if (i == 0)
        SetAtomicAdd<half>();
    SyncAll();
    Duplicate(t, (half)1, 128);                    /* (a count form: the mask register is all ones after) */
    SetVectorMask<half>(0, (1ull << (i + 1)) - 1);
    SyncAll();
    Duplicate<half, false>(t, (half)5, MASK_PLACEHOLDER, 1, 1, 8);
    DataCopy(og, t, 128);                          /* block 0 adds, the others store */
    ((__gm__ uint32_t *)ids)[i] = (uint32_t)GetBlockIdx();
}
void Launch(int, void *stream, void **b)
{
    registers<<<3, nullptr, stream>>>((uint8_t *)b[0], (uint8_t *)b[1]);
}
'''


def test_each_block_keeps_its_own_registers_and_index_across_sync_all(tmp_path):
    """Blocks run one at a time on one thread: a block's vector mask, atomic mode and GetBlockIdx after SyncAll
    are the ones it had, whatever the blocks run in between set."""
    exe = build(tmp_path, "registers", REGISTERS)
    (out, ids), done = launch(exe, 0, np.full((3, 128), 2, np.float16), np.zeros(3, np.uint32))
    ok(done)
    assert list(ids) == [0, 1, 2]
    for i in range(3):
        want = np.ones(128, np.float16)
        want[:i + 1] = 5
        assert np.array_equal(out[i], want + (2 if i == 0 else 0)), i


@pytest.mark.parametrize("source, says", [
    ('#include "kernel_operator.h"\n#include "kernel_operator_list_tensor_intf.h"\n'
     'extern "C" __global__ __aicore__ void k() {}\n', "ListTensorDesc and TensorDesc"),
    ('#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void k()\n{\n'
     '    AscendC::LocalMemAllocator<AscendC::Hardware::L1> l1;\n}\n', "LocalMemAllocator of L1"),
    ('#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void k()\n{\n'
     '    AscendC::LocalTensor<int8_t> t;\n    uint64_t m[2] = {1, 0};\n'
     '    AscendC::Duplicate<int8_t>(t, (int8_t)1, m, 1, 1, 8);\n}\n', "16-, 32- or 64-bit elements"),
])
def test_what_is_not_emulated_fails_to_build_naming_itself(tmp_path, capfd, source, says):
    """ListTensorDesc (device addresses read from global memory), the Cube unit's buffers through
    LocalMemAllocator, and the repeat forms on 8-bit elements stop the build with a message naming them."""
    (tmp_path / "k.cpp").write_text(source)
    code = commands.compile_command("c++", [str(tmp_path / "k.cpp"), "-c", "-o", str(tmp_path / "k.o")])
    err = capfd.readouterr().err
    assert code != 0 and says in err, err
