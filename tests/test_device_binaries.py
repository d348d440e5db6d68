"""Kernel binaries: a kernel library built by the toolkit (`acl-emu c++ -shared`, ascendc_fatbin_library), loaded by a
C++ program (aclrtBinaryLoadFromFile / FromData, aclrtCreateBinary + aclrtBinaryLoad), its kernel looked up by
name, its arguments built (aclrtKernelArgs*) and launched (aclrtLaunchKernelWithConfig), after the runtime's
examples 2_advanced_features/kernel/0_launch_kernel (simple and placeholder modes) and
3_memory_advanced/host_register/0_simple_zero_copy (hicann/runtime example/). The programs are written for this
project; each rule's test names its reference source (hicann/runtime, files under src/)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emu.capi import commands
from test_device_code import CMAKE_HEAD, cmake_build

N = 8 * 2048  # halves: 8 blocks of 2048

# The vector add of the examples' kernel_func/add_custom.cpp (simple) and add_custom_tiling.cpp (placeholder: the
# total length and the tile count arrive as two `__gm__ int32_t *` placeholder arguments), double-buffered.
KERNEL_COMMON = r'''
#include "kernel_operator.h"
constexpr int32_t BUFFER_NUM = 2;
class VectorAdd {
public:
    __aicore__ inline VectorAdd() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, int32_t total, int32_t tiles)
    {
        int32_t perBlock = total / (int32_t)AscendC::GetBlockNum();
        tileLength = perBlock / tiles / BUFFER_NUM;
        steps = tiles * BUFFER_NUM;
        int32_t start = perBlock * (int32_t)AscendC::GetBlockIdx();
        xGm.SetGlobalBuffer((__gm__ half *)x + start, perBlock);
        yGm.SetGlobalBuffer((__gm__ half *)y + start, perBlock);
        zGm.SetGlobalBuffer((__gm__ half *)z + start, perBlock);
        pipe.InitBuffer(inX, BUFFER_NUM, tileLength * sizeof(half));
        pipe.InitBuffer(inY, BUFFER_NUM, tileLength * sizeof(half));
        pipe.InitBuffer(outZ, BUFFER_NUM, tileLength * sizeof(half));
    }
    __aicore__ inline void Process()
    {
        for (int32_t i = 0; i < steps; i++) {
            AscendC::LocalTensor<half> a = inX.AllocTensor<half>();
            AscendC::LocalTensor<half> b = inY.AllocTensor<half>();
            AscendC::DataCopy(a, xGm[i * tileLength], tileLength);
            AscendC::DataCopy(b, yGm[i * tileLength], tileLength);
            inX.EnQue(a);
            inY.EnQue(b);
            a = inX.DeQue<half>();
            b = inY.DeQue<half>();
            AscendC::LocalTensor<half> c = outZ.AllocTensor<half>();
            AscendC::Add(c, a, b, tileLength);
            outZ.EnQue<half>(c);
            inX.FreeTensor(a);
            inY.FreeTensor(b);
            c = outZ.DeQue<half>();
            AscendC::DataCopy(zGm[i * tileLength], c, tileLength);
            outZ.FreeTensor(c);
        }
    }
private:
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX, inY;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outZ;
    AscendC::GlobalTensor<half> xGm, yGm, zGm;
    int32_t tileLength = 0, steps = 0;
};
'''
SIMPLE_KERNEL = KERNEL_COMMON + r'''
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z)
{
    VectorAdd op;
    op.Init(x, y, z, 8 * 2048, 8);
    op.Process();
}
'''
TILING_KERNEL = KERNEL_COMMON + r'''
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, __gm__ int32_t *totalLength,
                                                 __gm__ int32_t *tileNum)
{
    if (*tileNum == 0) return;
    VectorAdd op;
    op.Init(x, y, z, *totalLength, *tileNum);
    op.Process();
}
'''

PRELUDE = r'''
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include "acl/acl.h"
#define CHECK(call) do { aclError r_ = (call); if (r_ != ACL_SUCCESS) { \
    printf("%s failed: %d %s\n", #call, (int)r_, aclGetRecentErrMsg()); return 1; } } while (0)
static size_t load(const char *path, void *to, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (f == nullptr) return 0;
    size_t got = fread(to, 1, n, f);
    fclose(f);
    return got;
}
static void *whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *data = malloc(*size);
    fread(data, 1, *size, f);
    fclose(f);
    return data;
}
'''

# 0_launch_kernel's main.cpp in four ways of loading: ./main MODE BINARY (file, placeholder, data, create)
ADD_MAIN = PRELUDE + r'''
int main(int argc, char **argv)
{
    const char *mode = argv[1];
    const char *path = argv[2];
    const uint32_t blocks = 8;
    const size_t bytes = 8 * 2048 * sizeof(uint16_t);
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    void *hx, *hy;
    CHECK(aclrtMallocHost(&hx, bytes));
    CHECK(aclrtMallocHost(&hy, bytes));
    if (load("x.bin", hx, bytes) != bytes || load("y.bin", hy, bytes) != bytes) { printf("no input\n"); return 1; }
    uint8_t *x, *y, *z;
    CHECK(aclrtMalloc((void **)&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc((void **)&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc((void **)&z, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(x, bytes, hx, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(y, bytes, hy, bytes, ACL_MEMCPY_HOST_TO_DEVICE));

    aclrtBinHandle bin = nullptr;
    aclrtBinary description = nullptr;
    void *image = nullptr;
    size_t size = 0;
    if (strcmp(mode, "data") == 0) {
        image = whole(path, &size);
        CHECK(aclrtBinaryLoadFromData(image, size, nullptr, &bin));
        free(image);  /* (the runtime took its copy) */
        image = nullptr;
    } else if (strcmp(mode, "create") == 0) {
        image = whole(path, &size);
        description = aclrtCreateBinary(image, size);
        if (description == nullptr) { printf("aclrtCreateBinary failed\n"); return 1; }
        CHECK(aclrtBinaryLoad(description, &bin));
    } else {
        CHECK(aclrtBinaryLoadFromFile(path, nullptr, &bin));
    }
    aclrtFuncHandle func;
    CHECK(aclrtBinaryGetFunction(bin, "add_custom", &func));
    aclrtArgsHandle args;
    CHECK(aclrtKernelArgsInit(func, &args));
    aclrtParamHandle p1, p2, p3;
    CHECK(aclrtKernelArgsAppend(args, (void **)&x, sizeof(uintptr_t), &p1));
    CHECK(aclrtKernelArgsAppend(args, (void **)&y, sizeof(uintptr_t), &p2));
    CHECK(aclrtKernelArgsAppend(args, (void **)&z, sizeof(uintptr_t), &p3));
    int32_t *length = nullptr, *tiles = nullptr;
    if (strcmp(mode, "placeholder") == 0) {
        aclrtParamHandle p4, p5;
        CHECK(aclrtKernelArgsAppendPlaceHolder(args, &p4));
        CHECK(aclrtKernelArgsAppendPlaceHolder(args, &p5));
        CHECK(aclrtKernelArgsGetPlaceHolderBuffer(args, p4, sizeof(int32_t), (void **)&length));
        CHECK(aclrtKernelArgsGetPlaceHolderBuffer(args, p5, sizeof(int32_t), (void **)&tiles));
        *length = 8 * 2048;
        *tiles = 8;
    }
    CHECK(aclrtKernelArgsFinalize(args));
    CHECK(aclrtLaunchKernelWithConfig(func, blocks, stream, nullptr, args, nullptr));
    if (length != nullptr) {
        *tiles = 0;  /* after the launch: it took the placeholders' bytes as they were (0 would make it return) */
    }
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtMemcpy(hx, bytes, z, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    FILE *f = fopen("z.bin", "wb");
    fwrite(hx, 1, bytes, f);
    fclose(f);
    CHECK(aclrtBinaryUnLoad(bin));
    if (description != nullptr) CHECK(aclrtDestroyBinary(description));
    free(image);
    CHECK(aclrtFree(x)); CHECK(aclrtFree(y)); CHECK(aclrtFree(z));
    CHECK(aclrtFreeHost(hx)); CHECK(aclrtFreeHost(hy));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDeviceForce(0));
    CHECK(aclFinalize());
    printf("done\n");
    return 0;
}
'''


def compile_cxx(*args: str) -> None:
    assert commands.compile_command("c++", list(args)) == 0, f"acl-emu c++ {' '.join(args)} failed"


def run(exe: Path, *args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    clean.update(env or {})
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120, env=clean,
                          cwd=cwd or exe.parent)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The two kernel binaries (`acl-emu c++ -shared -fPIC kernel.cpp -o k.o`), the host program and its data."""
    d = tmp_path_factory.mktemp("binaries")
    (d / "simple.cpp").write_text(SIMPLE_KERNEL)
    (d / "tiling.cpp").write_text(TILING_KERNEL)
    compile_cxx("-shared", "-fPIC", str(d / "simple.cpp"), "-o", str(d / "simple.o"))
    compile_cxx("-shared", "-fPIC", str(d / "tiling.cpp"), "-o", str(d / "tiling.o"))
    (d / "main.cpp").write_text(ADD_MAIN)
    compile_cxx(str(d / "main.cpp"), "-o", str(d / "main"), "-Wall")
    rng = np.random.default_rng(44)
    rng.uniform(1, 100, N).astype(np.float16).tofile(d / "x.bin")
    rng.uniform(1, 100, N).astype(np.float16).tofile(d / "y.bin")
    return d


def _sum(d: Path) -> np.ndarray:
    return np.fromfile(d / "x.bin", dtype=np.float16) + np.fromfile(d / "y.bin", dtype=np.float16)


@pytest.mark.parametrize("mode, binary", [("file", "simple.o"), ("placeholder", "tiling.o"), ("data", "simple.o")])
def test_a_kernel_binary_is_loaded_and_its_kernel_launched_by_name(built, mode, binary):
    """example/2_advanced_features/kernel/0_launch_kernel: the binary loaded (from its file, or from data:
    aclrtBinaryLoadFromData), `add_custom` got by name, its three
    device pointers appended as the addresses of the variables holding them with size 8, launched on 8 blocks:
    z equals numpy's float16 x + y. Placeholder mode: the total length and tile count reach the kernel as
    pointers to the bytes the program wrote in the placeholders' buffers, taken at the launch (the program's
    write after it changes nothing: hicann/runtime api_impl.cc ApiImpl::LaunchNonKernelByHandle copies the
    arguments and their data at the launch)."""
    (built / "z.bin").unlink(missing_ok=True)
    done = run(built / "main", mode, str(built / binary))
    assert done.returncode == 0 and "done" in done.stdout, done.stdout + done.stderr
    assert np.array_equal(np.fromfile(built / "z.bin", dtype=np.float16), _sum(built))


def test_a_binary_loaded_through_acl_create_binary_runs(built):
    """aclrtCreateBinary keeps the data's address and length, aclrtBinaryLoad reads them (kernel.cpp
    aclrtCreateBinaryImpl, aclrtBinaryLoadImpl), aclrtDestroyBinary leaves the loaded binary loaded."""
    (built / "z.bin").unlink(missing_ok=True)
    done = run(built / "main", "create", str(built / "simple.o"))
    assert done.returncode == 0 and "done" in done.stdout, done.stdout + done.stderr
    assert np.array_equal(np.fromfile(built / "z.bin", dtype=np.float16), _sum(built))


ZERO_COPY_MAIN = PRELUDE + r'''
int main(int argc, char **argv)
{
    const size_t count = 8 * 2048, bytes = count * sizeof(uint16_t);
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    uint16_t *host[3];
    void *device[3];
    for (int i = 0; i < 3; i++) {
        CHECK(aclrtMallocHost((void **)&host[i], bytes));
        CHECK(aclrtHostRegisterV2(host[i], bytes, ACL_HOST_REG_MAPPED));
        CHECK(aclrtHostGetDevicePointer(host[i], &device[i], 0));
    }
    for (size_t i = 0; i < count; i++) { host[0][i] = 0x3C00; host[1][i] = 0x4000; host[2][i] = 0; }
    aclrtBinHandle bin;
    CHECK(aclrtBinaryLoadFromFile(argv[1], nullptr, &bin));
    aclrtFuncHandle func;
    CHECK(aclrtBinaryGetFunction(bin, "add_custom", &func));
    aclrtArgsHandle args;
    CHECK(aclrtKernelArgsInit(func, &args));
    aclrtParamHandle p;
    for (int i = 0; i < 3; i++) CHECK(aclrtKernelArgsAppend(args, &device[i], sizeof(void *), &p));
    CHECK(aclrtKernelArgsFinalize(args));
    CHECK(aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, args, nullptr));
    CHECK(aclrtSynchronizeStream(stream));
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) wrong += host[2][i] != 0x4200;
    printf("wrong %zu\n", wrong);
    CHECK(aclrtBinaryUnLoad(bin));
    for (int i = 0; i < 3; i++) { CHECK(aclrtHostUnregister(host[i])); CHECK(aclrtFreeHost(host[i])); }
    return 0;
}
'''


def test_kernel_arguments_may_be_mapped_host_memory(built):
    """example/3_memory_advanced/host_register/0_simple_zero_copy: page-locked host buffers registered
    ACL_HOST_REG_MAPPED, their device addresses (aclrtHostGetDevicePointer) the kernel's arguments: 1.0 + 2.0 is
    3.0 (0x4200) in every half of the host's output buffer once the stream is synchronized."""
    (built / "zero_copy.cpp").write_text(ZERO_COPY_MAIN)
    compile_cxx(str(built / "zero_copy.cpp"), "-o", str(built / "zero_copy"), "-Wall")
    done = run(built / "zero_copy", str(built / "simple.o"))
    assert done.returncode == 0 and "wrong 0" in done.stdout, done.stdout + done.stderr


# Each call's code, one "name code" line each (and a few facts: "name 0|1"); the program goes on whatever a call
# returns.
ERRORS_MAIN = PRELUDE + r'''
#define SAY(name, call) printf("%s %d\n", name, (int)(call))
int main(int argc, char **argv)
{
    const char *simple = argv[1], *text = argv[2], *object = argv[3];
    CHECK(aclInit(nullptr));
    aclrtBinHandle bin = nullptr, other = nullptr;
    aclrtFuncHandle func = nullptr;
    aclrtArgsHandle args = nullptr, again = nullptr;
    aclrtParamHandle p = nullptr, ph = nullptr;
    int32_t *buffer = nullptr;
    uint64_t word = 7;

    /* before any device is set: aclrtKernelArgsFinalize needs a context */
    CHECK(aclrtBinaryLoadFromFile(simple, nullptr, &bin));
    CHECK(aclrtBinaryGetFunction(bin, "add_custom", &func));
    CHECK(aclrtKernelArgsInit(func, &args));
    SAY("finalize_no_context", aclrtKernelArgsFinalize(args));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    void *x, *y, *z;
    const size_t bytes = 8 * 2048 * sizeof(uint16_t);
    CHECK(aclrtMalloc(&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&z, bytes, ACL_MEM_MALLOC_HUGE_FIRST));

    /* loading */
    SAY("load_null_path", aclrtBinaryLoadFromFile(nullptr, nullptr, &other));
    SAY("load_null_handle", aclrtBinaryLoadFromFile(simple, nullptr, nullptr));
    SAY("load_missing", aclrtBinaryLoadFromFile("no/such/kernels.o", nullptr, &other));
    SAY("load_text", aclrtBinaryLoadFromFile(text, nullptr, &other));
    printf("load_text_says %s\n", aclGetRecentErrMsg());
    SAY("load_object", aclrtBinaryLoadFromFile(object, nullptr, &other));
    SAY("load_no_kernels", aclrtBinaryLoadFromFile("/proc/self/exe", nullptr, &other));
    aclrtBinaryLoadOption option;
    aclrtBinaryLoadOptions options = {&option, 1};
    option.type = ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD; option.value.isLazyLoad = 2;
    SAY("load_lazy_2", aclrtBinaryLoadFromFile(simple, &options, &other));
    option.value.isLazyLoad = 1;
    SAY("load_lazy_1", aclrtBinaryLoadFromFile(simple, &options, &other));
    SAY("unload_lazy_1", aclrtBinaryUnLoad(other));
    option.type = ACL_RT_BINARY_LOAD_OPT_MAGIC; option.value.magic = ACL_RT_BINARY_MAGIC_ELF_AICORE;
    SAY("load_magic_from_file", aclrtBinaryLoadFromFile(simple, &options, &other));
    option.type = ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE; option.value.cpuKernelMode = 1;
    SAY("load_cpu_kernel_mode", aclrtBinaryLoadFromFile(simple, &options, &other));
    option.type = (aclrtBinaryLoadOptionType)9;
    SAY("load_unknown_option", aclrtBinaryLoadFromFile(simple, &options, &other));
    aclrtBinaryLoadOptions empty = {nullptr, 1};
    SAY("load_options_without_array", aclrtBinaryLoadFromFile(simple, &empty, &other));
    size_t size = 0;
    void *image = whole(simple, &size);
    SAY("data_null", aclrtBinaryLoadFromData(nullptr, size, nullptr, &other));
    SAY("data_length_0", aclrtBinaryLoadFromData(image, 0, nullptr, &other));
    SAY("data_text", aclrtBinaryLoadFromData("hello", 5, nullptr, &other));
    option.type = ACL_RT_BINARY_LOAD_OPT_MAGIC; option.value.magic = 0x12345678;
    SAY("data_magic_wrong", aclrtBinaryLoadFromData(image, size, &options, &other));
    option.value.magic = ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE;
    SAY("data_magic", aclrtBinaryLoadFromData(image, size, &options, &other));
    SAY("unload_data_magic", aclrtBinaryUnLoad(other));
    printf("create_null %d\n", aclrtCreateBinary(nullptr, size) == nullptr);
    SAY("destroy_null", aclrtDestroyBinary(nullptr));
    SAY("binary_load_null", aclrtBinaryLoad(nullptr, &other));
    aclrtBinary zero = aclrtCreateBinary(image, 0);
    SAY("binary_load_length_0", aclrtBinaryLoad(zero, &other));
    SAY("destroy", aclrtDestroyBinary(zero));
    SAY("destroy_twice", aclrtDestroyBinary(zero));

    /* looking kernels up */
    aclrtFuncHandle f2 = nullptr;
    SAY("function_null_binary", aclrtBinaryGetFunction(nullptr, "add_custom", &f2));
    SAY("function_null_name", aclrtBinaryGetFunction(bin, nullptr, &f2));
    SAY("function_null_output", aclrtBinaryGetFunction(bin, "add_custom", nullptr));
    SAY("function_unknown", aclrtBinaryGetFunction(bin, "sub_custom", &f2));
    printf("function_unknown_says %s\n", aclGetRecentErrMsg());
    CHECK(aclrtBinaryGetFunction(bin, "add_custom", &f2));
    printf("function_same %d\n", f2 == func);

    /* building arguments */
    SAY("init_null", aclrtKernelArgsInit(nullptr, &again));
    SAY("init_null_output", aclrtKernelArgsInit(func, nullptr));
    CHECK(aclrtKernelArgsInit(func, &again));
    printf("init_same_list %d\n", again == args);
    SAY("append_null_list", aclrtKernelArgsAppend(nullptr, &x, 8, &p));
    SAY("append_null_param", aclrtKernelArgsAppend(args, nullptr, 8, &p));
    SAY("append_size_0", aclrtKernelArgsAppend(args, &x, 0, &p));
    SAY("append_null_output", aclrtKernelArgsAppend(args, &x, 8, nullptr));
    SAY("append_device_address", aclrtKernelArgsAppend(args, x, 8, &p));
    SAY("append", aclrtKernelArgsAppend(args, &x, 8, &p));
    SAY("placeholder_null_list", aclrtKernelArgsAppendPlaceHolder(nullptr, &ph));
    SAY("placeholder_null_output", aclrtKernelArgsAppendPlaceHolder(args, nullptr));
    SAY("placeholder", aclrtKernelArgsAppendPlaceHolder(args, &ph));
    SAY("buffer_null_param", aclrtKernelArgsGetPlaceHolderBuffer(args, nullptr, 4, (void **)&buffer));
    SAY("buffer_size_0", aclrtKernelArgsGetPlaceHolderBuffer(args, ph, 0, (void **)&buffer));
    SAY("buffer_of_a_value", aclrtKernelArgsGetPlaceHolderBuffer(args, p, 4, (void **)&buffer));
    SAY("buffer_too_big", aclrtKernelArgsGetPlaceHolderBuffer(args, ph, 64 * 1024, (void **)&buffer));
    SAY("buffer", aclrtKernelArgsGetPlaceHolderBuffer(args, ph, 4, (void **)&buffer));
    SAY("append_after_buffer", aclrtKernelArgsAppend(args, &x, 8, &p));
    SAY("placeholder_after_buffer", aclrtKernelArgsAppendPlaceHolder(args, &ph));
    SAY("finalize_null", aclrtKernelArgsFinalize(nullptr));
    SAY("finalize", aclrtKernelArgsFinalize(args));
    SAY("buffer_after_finalize", aclrtKernelArgsGetPlaceHolderBuffer(args, ph, 4, (void **)&buffer));
    aclrtParamHandle old = ph;
    CHECK(aclrtKernelArgsInit(func, &args));
    SAY("append_after_init", aclrtKernelArgsAppend(args, &x, 8, &p));
    SAY("old_parameter", aclrtKernelArgsGetPlaceHolderBuffer(args, old, 4, (void **)&buffer));
    SAY("finalize_2", aclrtKernelArgsFinalize(args));
    SAY("append_after_finalize", aclrtKernelArgsAppend(args, &x, 8, &p));
    SAY("placeholder_after_finalize", aclrtKernelArgsAppendPlaceHolder(args, &ph));
    CHECK(aclrtKernelArgsInit(func, &args));
    for (int i = 0; i < 128; i++) aclrtKernelArgsAppend(args, &word, 8, &p);
    SAY("append_129th", aclrtKernelArgsAppend(args, &word, 8, &p));
    CHECK(aclrtKernelArgsInit(func, &args));
    static char big[40000];
    SAY("append_40000", aclrtKernelArgsAppend(args, big, sizeof big, &p));
    SAY("append_past_64k", aclrtKernelArgsAppend(args, big, sizeof big, &p));

    /* launching */
    CHECK(aclrtKernelArgsInit(func, &args));
    CHECK(aclrtKernelArgsAppend(args, &x, 8, &p));
    CHECK(aclrtKernelArgsAppend(args, &y, 8, &p));
    SAY("launch_not_finalized", aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, args, nullptr));
    CHECK(aclrtKernelArgsFinalize(args));
    SAY("launch_null_function", aclrtLaunchKernelWithConfig(nullptr, 8, stream, nullptr, args, nullptr));
    SAY("launch_0_blocks", aclrtLaunchKernelWithConfig(func, 0, stream, nullptr, args, nullptr));
    SAY("launch_null_list", aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, nullptr, nullptr));
    SAY("launch_reserve", aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, args, &word));
    SAY("launch_2_of_3", aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, args, nullptr));
    printf("launch_2_of_3_says %s\n", aclGetRecentErrMsg());
    CHECK(aclrtKernelArgsInit(func, &args));
    uint32_t narrow = 0;
    CHECK(aclrtKernelArgsAppend(args, &x, 8, &p));
    CHECK(aclrtKernelArgsAppend(args, &narrow, 4, &p));
    CHECK(aclrtKernelArgsAppend(args, &z, 8, &p));
    CHECK(aclrtKernelArgsFinalize(args));
    SAY("launch_4_bytes_for_8", aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, args, nullptr));
    printf("launch_4_bytes_for_8_says %s\n", aclGetRecentErrMsg());
    CHECK(aclrtKernelArgsInit(func, &args));
    CHECK(aclrtKernelArgsAppend(args, &x, 8, &p));
    CHECK(aclrtKernelArgsAppend(args, &y, 8, &p));
    CHECK(aclrtKernelArgsAppend(args, &z, 8, &p));
    CHECK(aclrtKernelArgsFinalize(args));
    aclrtLaunchKernelAttr attrs[2];
    aclrtLaunchKernelCfg cfg = {nullptr, 1};
    SAY("launch_cfg_without_attrs", aclrtLaunchKernelWithConfig(func, 8, stream, &cfg, args, nullptr));
    cfg.attrs = attrs;
    attrs[0].id = ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE; attrs[0].value.schemMode = 2;
    SAY("launch_schem_mode_2", aclrtLaunchKernelWithConfig(func, 8, stream, &cfg, args, nullptr));
    attrs[0].id = (aclrtLaunchKernelAttrId)42;
    SAY("launch_attr_42", aclrtLaunchKernelWithConfig(func, 8, stream, &cfg, args, nullptr));
    cfg.numAttrs = 2;
    attrs[0].id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT; attrs[0].value.timeout = 1;
    attrs[1].id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US; attrs[1].value.timeoutUs.timeoutLow = 5;
    SAY("launch_both_timeouts", aclrtLaunchKernelWithConfig(func, 8, stream, &cfg, args, nullptr));
    cfg.numAttrs = 1;
    SAY("launch_timeout", aclrtLaunchKernelWithConfig(func, 8, stream, &cfg, args, nullptr));
    SAY("launch_65536_blocks", aclrtLaunchKernelWithConfig(func, 65536, stream, nullptr, args, nullptr));
    aclrtStream gone;
    CHECK(aclrtCreateStream(&gone));
    CHECK(aclrtDestroyStream(gone));
    SAY("launch_destroyed_stream", aclrtLaunchKernelWithConfig(func, 8, gone, nullptr, args, nullptr));
    SAY("launch", aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, args, nullptr));
    SAY("synchronize", aclrtSynchronizeStream(stream));

    /* unloading */
    SAY("unload_null", aclrtBinaryUnLoad(nullptr));
    SAY("unload", aclrtBinaryUnLoad(bin));
    SAY("unload_twice", aclrtBinaryUnLoad(bin));
    SAY("function_of_unloaded", aclrtBinaryGetFunction(bin, "add_custom", &f2));
    SAY("init_of_unloaded", aclrtKernelArgsInit(func, &again));
    SAY("launch_of_unloaded", aclrtLaunchKernelWithConfig(func, 8, stream, nullptr, args, nullptr));
    free(image);
    return 0;
}
'''

# name: (code, its source in hicann/runtime)
EXPECTED = {
    "finalize_no_context": (107002, "api_impl.cc ApiImpl::KernelArgsFinalize: CHECK_CONTEXT_VALID_WITH_RETURN"),
    "load_null_path": (100000, "kernel.cpp aclrtBinaryLoadFromFileImpl"),
    "load_null_handle": (100000, "kernel.cpp aclrtBinaryLoadFromFileImpl"),
    "load_missing": (107000, "binary_loader.cc BinaryLoader::ReadBinaryFile"),
    "load_text": (107000, "binary_loader.cc BinaryLoader::LoadNonCpu (LoadProgram fails)"),
    "load_object": (107000, "binary_loader.cc BinaryLoader::LoadNonCpu"),
    "load_no_kernels": (107000, "binary_loader.cc BinaryLoader::LoadNonCpu"),
    "load_lazy_2": (107000, "binary_loader.cc BinaryLoader::ParseLoadOptions"),
    "load_lazy_1": (0, "binary_loader.cc BinaryLoader::ParseLoadOptions"),
    "unload_lazy_1": (0, ""),
    "load_magic_from_file": (107000, "binary_loader.cc BinaryLoader::ParseLoadOptions"),
    "load_cpu_kernel_mode": (207000, "AI CPU kernels are not emulated"),
    "load_unknown_option": (107000, "binary_loader.cc BinaryLoader::ParseLoadOptions"),
    "load_options_without_array": (107000, "binary_loader.cc BinaryLoader::ParseLoadOptions"),
    "data_null": (100000, "kernel.cpp aclrtBinaryLoadFromDataImpl"),
    "data_length_0": (107000, "api_error.cc ApiErrorDecorator::BinaryLoadFromData"),
    "data_text": (107000, "binary_loader.cc BinaryLoader::LoadNonCpu"),
    "data_magic_wrong": (107000, "binary_loader.cc BinaryLoader::ParseLoadOptions"),
    "data_magic": (0, ""),
    "unload_data_magic": (0, ""),
    "create_null": (1, "kernel.cpp aclrtCreateBinaryImpl: NULL"),
    "destroy_null": (100000, "kernel.cpp aclrtDestroyBinaryImpl"),
    "binary_load_null": (100000, "kernel.cpp aclrtBinaryLoadImpl"),
    "binary_load_length_0": (107000, "api_error.cc ApiErrorDecorator::BinaryLoadWithoutTilingKey"),
    "destroy": (0, ""),
    "destroy_twice": (100000, "kernel.cpp aclrtDestroyBinaryImpl"),
    "function_null_binary": (100000, "kernel.cpp aclrtBinaryGetFunctionImpl"),
    "function_null_name": (100000, "kernel.cpp aclrtBinaryGetFunctionImpl"),
    "function_null_output": (100000, "kernel.cpp aclrtBinaryGetFunctionImpl"),
    "function_unknown": (107000, "api_impl.cc ApiImpl::BinaryGetFunctionByName"),
    "function_same": (1, ""),
    "init_null": (100000, "kernel.cpp aclrtKernelArgsInitImpl"),
    "init_null_output": (100000, "kernel.cpp aclrtKernelArgsInitImpl"),
    "init_same_list": (1, "api_impl.cc ApiImpl::KernelArgsInit: a thread_local handle"),
    "append_null_list": (100000, "kernel.cpp aclrtKernelArgsAppendImpl"),
    "append_null_param": (100000, "kernel.cpp aclrtKernelArgsAppendImpl"),
    "append_size_0": (100000, "kernel.cpp aclrtKernelArgsAppendImpl"),
    "append_null_output": (100000, "kernel.cpp aclrtKernelArgsAppendImpl"),
    "append_device_address": (107000, "api_impl.cc ApiImpl::KernelArgsAppend: memcpy_s"),
    "append": (0, ""),
    "placeholder_null_list": (100000, "kernel.cpp aclrtKernelArgsAppendPlaceHolderImpl"),
    "placeholder_null_output": (100000, "kernel.cpp aclrtKernelArgsAppendPlaceHolderImpl"),
    "placeholder": (0, ""),
    "buffer_null_param": (100000, "kernel.cpp aclrtKernelArgsGetPlaceHolderBufferImpl"),
    "buffer_size_0": (100000, "kernel.cpp aclrtKernelArgsGetPlaceHolderBufferImpl"),
    "buffer_of_a_value": (107000, "api_impl.cc ApiImpl::KernelArgsGetPlaceHolderBuffer: paraHandle->type == 0"),
    "buffer_too_big": (107000, "api_impl.cc ApiImpl::KernelArgsGetPlaceHolderBuffer: past MAX_ARGS_BUFF_SIZE"),
    "buffer": (0, ""),
    "append_after_buffer": (207000, "api_impl.cc ApiImpl::KernelArgsAppend: isGotPhBuff"),
    "placeholder_after_buffer": (207000, "api_impl.cc ApiImpl::KernelArgsAppendPlaceHolder: isGotPhBuff"),
    "finalize_null": (100000, "kernel.cpp aclrtKernelArgsFinalizeImpl"),
    "finalize": (0, ""),
    "buffer_after_finalize": (207000, "api_impl.cc ApiImpl::KernelArgsGetPlaceHolderBuffer: isFinalized"),
    "append_after_init": (0, "api_impl.cc ApiImpl::KernelArgsInit: the list starts again"),
    "old_parameter": (107017, "api_impl.cc ReinitKernelArgsEmbeddedHandle; api_c_kernel.cc "
                              "rtsKernelArgsGetPlaceHolderBuffer: ValidateParamHandleForApi"),
    "finalize_2": (0, ""),
    "append_after_finalize": (207000, "api_impl.cc ApiImpl::KernelArgsAppend: isFinalized"),
    "placeholder_after_finalize": (207000, "api_impl.cc ApiImpl::KernelArgsAppendPlaceHolder: isFinalized"),
    "append_129th": (107000, "api_impl.cc ApiImpl::KernelArgsAppend: MAX_PARAM_CNT"),
    "append_40000": (0, ""),
    "append_past_64k": (107000, "api_impl.cc ApiImpl::KernelArgsAppend: MAX_ARGS_BUFF_SIZE"),
    "launch_not_finalized": (107000, "api_error.cc ApiErrorDecorator::CheckNonArgsHandle"),
    "launch_null_function": (100000, "kernel.cpp aclrtLaunchKernelWithConfigImpl"),
    "launch_0_blocks": (100000, "kernel.cpp aclrtLaunchKernelWithConfigImpl: ACL_REQUIRES_POSITIVE"),
    "launch_null_list": (100000, "kernel.cpp aclrtLaunchKernelWithConfigImpl"),
    "launch_reserve": (100000, "kernel.cpp aclrtLaunchKernelWithConfigImpl: reserve must be nullptr"),
    "launch_2_of_3": (107000, "the kernel's record: its parameters"),
    "launch_4_bytes_for_8": (107000, "the kernel's record: its parameters' sizes"),
    "launch_cfg_without_attrs": (107000, "api_error.cc CheckKernelLaunchCfg"),
    "launch_schem_mode_2": (107000, "api_error.cc CheckKernelLaunchCfg: RT_SCHEM_MODE_END"),
    "launch_attr_42": (107000, "para_convertor.cc ConvertLaunchCfgToTaskCfg"),
    "launch_both_timeouts": (107000, "api_error.cc CheckKernelLaunchCfg"),
    "launch_timeout": (0, ""),
    "launch_65536_blocks": (107000, "blockDim 1 to 65535"),
    "launch_destroyed_stream": (107017, "api_c_kernel.cc rtsLaunchKernelWithConfig: RT_VALIDATE_AND_UNWRAP_OBJECT"),
    "launch": (0, ""),
    "synchronize": (0, ""),
    "unload_null": (100000, "kernel.cpp aclrtBinaryUnLoadImpl"),
    "unload": (0, ""),
    "unload_twice": (107017, "api_c.cc rtBinaryUnLoad: ValidateProgramHandleForApi"),
    "function_of_unloaded": (107017, "api_c_kernel.cc rtsFuncGetByName: ValidateProgramHandleForApi"),
    "init_of_unloaded": (107017, "api_c_kernel.cc rtsKernelArgsInit: ValidateKernelHandleForApi"),
    "launch_of_unloaded": (107017, "api_c_kernel.cc rtsLaunchKernelWithConfig: ValidateKernelHandleForApi"),
}


def test_each_check_gives_the_reference_code(built):
    """Every argument check of the binary and argument-list APIs, in the reference's order, with its code (hicann/
    runtime: the ACL layer src/acl/aclrt_impl/kernel.cpp, 100000; the runtime layer src/runtime/api/api_c_kernel.cc,
    api/impl/api_error.cc, api/impl/api_impl.cc, core/src/kernel/binary_loader.cc, kernel/args/para_convertor.cc:
    107000 for a bad value, 107017 for a handle that is not live, 207000 for what comes too late, 107002 without a
    context; each line of EXPECTED names its function). A file that is not a kernel binary says it is not one of
    acl-emu's toolkit; an unknown kernel name lists the binary's kernels; a list that does not match the kernel
    says which parameter."""
    (built / "errors.cpp").write_text(ERRORS_MAIN)
    compile_cxx(str(built / "errors.cpp"), "-o", str(built / "errors"))
    (built / "notes.txt").write_text("not a kernel binary\n")
    (built / "object.cpp").write_text("int f() { return 1; }\n")
    compile_cxx("-c", str(built / "object.cpp"), "-o", str(built / "object.o"))
    done = run(built / "errors", str(built / "simple.o"), str(built / "notes.txt"), str(built / "object.o"))
    assert done.returncode == 0, done.stdout + done.stderr
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    got = {name: int(said[name]) if name in said else None for name in EXPECTED}
    assert got == {name: code for name, (code, _) in EXPECTED.items()}, done.stdout + done.stderr
    assert "is not a kernel binary built by acl-emu's toolkit (not an ELF file)" in said["load_text_says"]
    assert "holds no kernel 'sub_custom' (it holds add_custom)" in said["function_unknown_says"]
    assert "takes 3 parameters, the argument list holds 2" in said["launch_2_of_3_says"]
    assert "parameter 1 takes 8 bytes, the argument list gives 4 bytes" in said["launch_4_bytes_for_8_says"]


@pytest.mark.skipif(not shutil.which("cmake") or not shutil.which("make"), reason="needs cmake and make")
def test_ascendc_fatbin_library_writes_the_binary_the_program_reads(built, tmp_path):
    """The CMake of example/2_advanced_features/kernel/0_launch_kernel: `ascendc_fatbin_library(name kernel.cpp)`
    with CMAKE_INSTALL_PREFIX ${CMAKE_CURRENT_LIST_DIR}/out writes out/fatbin/<name>/<name>.o at build time (no
    install step: the toolkit's merge target is ALL and writes into the install prefix, asc-devkit
    cmake/asc/legacy_modules/function.cmake ascendc_fatbin_library), and the program, run from its folder, loads
    ./out/fatbin/<name>/<name>.o as the example's main.cpp does."""
    src = tmp_path / "src"
    (src / "kernel_func").mkdir(parents=True)
    (src / "kernel_func" / "add_custom.cpp").write_text(SIMPLE_KERNEL)
    (src / "main.cpp").write_text(ADD_MAIN)
    (src / "CMakeLists.txt").write_text(CMAKE_HEAD % "launch_kernel" + '''file(GLOB KERNEL_FILES_SIMPLE ${CMAKE_CURRENT_SOURCE_DIR}/kernel_func/add_custom.cpp)
ascendc_fatbin_library(ascendc_kernels_simple ${KERNEL_FILES_SIMPLE})
include_directories($ENV{ASCEND_HOME_PATH}/include)
link_directories($ENV{ASCEND_HOME_PATH}/lib64)
add_executable(main main.cpp)
target_link_libraries(main PRIVATE ascendcl)
''')
    for name in ("x.bin", "y.bin"):
        shutil.copy(built / name, src / name)
    env = cmake_build(src)
    binary = "./out/fatbin/ascendc_kernels_simple/ascendc_kernels_simple.o"
    assert (src / binary).is_file()
    done = subprocess.run([str(src / "build" / "main"), "file", binary], capture_output=True, text=True, timeout=120,
                          env=env, cwd=src)
    assert done.returncode == 0 and "done" in done.stdout, done.stdout + done.stderr
    assert np.array_equal(np.fromfile(src / "z.bin", dtype=np.float16), _sum(built))


def test_through_pyacl_a_binary_runs_and_addresses_are_the_hosts(built, acl):
    """pyACL's form of the same calls (acl.rt.binary_load_from_file, kernel_args_append(args, param, size) with
    `param` a host address: acl.util.bytes_to_ptr of the pointer's 8 bytes): the launch equals numpy. An address
    the emulator does not know as host memory is 100000, as for every call through pyACL; a device address given
    as `param` is 107000 (hicann/runtime api_impl.cc ApiImpl::KernelArgsAppend: its memcpy_s of the host bytes);
    load options as pyACL gives them, {"type", "value"} dicts (binary_loader.cc ParseLoadOptions: a lazy-load
    value of 2 is 107000)."""
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    x = np.fromfile(built / "x.bin", dtype=np.float16)
    y = np.fromfile(built / "y.bin", dtype=np.float16)
    dev = []
    for data in (x, y, np.zeros_like(x)):
        ptr, ret = acl.rt.malloc(data.nbytes, 0)
        assert ret == 0
        assert acl.rt.memcpy(ptr, data.nbytes, acl.util.bytes_to_ptr(data.tobytes()), data.nbytes, 1) == 0
        dev.append(ptr)
    assert acl.rt.binary_load_from_file(str(built / "simple.o"), [{"type": 1, "value": 2}]) == (0, 107000)
    binary, ret = acl.rt.binary_load_from_file(str(built / "simple.o"), [{"type": 1, "value": 1}])
    assert ret == 0
    func, ret = acl.rt.binary_get_function(binary, "add_custom")
    assert ret == 0
    args, ret = acl.rt.kernel_args_init(func)
    assert ret == 0
    assert acl.rt.kernel_args_append(args, 0x1234, 8) == (0, 100000)
    assert acl.rt.kernel_args_append(args, dev[0], 8) == (0, 107000)
    for ptr in dev:
        assert acl.rt.kernel_args_append(args, acl.util.bytes_to_ptr(int(ptr).to_bytes(8, "little")), 8)[1] == 0
    assert acl.rt.kernel_args_finalize(args) == 0
    assert acl.rt.launch_kernel_with_config(func, 8, 0, None, args) == 0
    assert acl.rt.synchronize_stream(0) == 0
    out = bytes(x.nbytes)
    assert acl.rt.memcpy(acl.util.bytes_to_ptr(out), x.nbytes, dev[2], x.nbytes, 2) == 0
    assert np.array_equal(np.frombuffer(out, dtype=np.float16), x + y)
    assert acl.rt.binary_unload(binary) == 0
    assert acl.rt.binary_get_function(binary, "add_custom") == (0, 107017)


def test_each_host_thread_has_one_argument_list(built, rt):
    """hicann/runtime api_impl.cc ApiImpl::KernelArgsInit: the argument list is the calling thread's own
    (thread_local), the same handle at each aclrtKernelArgsInit of that thread, emptied; another thread's list is
    another handle, and building one does not touch the other."""
    import struct
    import threading
    func = rt.binary_get_function(rt.binary_load_from_file(str(built / "simple.o")), "add_custom")
    mine = rt.kernel_args_init(func)
    rt.kernel_args_append(mine, struct.pack("<Q", 1), 8)
    assert rt.kernel_args_init(func) == mine
    theirs = []
    worker = threading.Thread(target=lambda: theirs.append(rt.kernel_args_init(func)))
    worker.start()
    worker.join()
    assert theirs and theirs[0] != mine
    rt.kernel_args_append(theirs[0], struct.pack("<Q", 2), 8)
    assert len(rt.handles[mine].params) == 0 and len(rt.handles[theirs[0]].params) == 1
