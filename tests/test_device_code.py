"""Device code: AscendC kernels compiled for the CPU (`acl-emu c++`, the toolkit's ascendc_library) and run by the
emulator block by block (emu.device). Each program follows a kernel of the runtime's own examples (hicann/runtime
example/, named in its test) or of the Ascend/samples kernel-invocation samples."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emu.capi import commands

PRELUDE = r'''
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "acl/acl.h"
#define CHECK(call) do { aclError r_ = (call); if (r_ != ACL_SUCCESS) { \
    printf("%s failed: %d\n", #call, (int)r_); return 1; } } while (0)
'''

# After hicann/runtime example/kernel_func/easy_OP.cpp and error_OP.cpp: one word per block, a trap.
EASY_KERNELS = r'''
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void EasyOPf(__gm__ uint32_t* x)
{
    uint32_t idx = block_idx;
    x[idx] += 1;
}
extern "C" __global__ __aicore__ void ErrorOPf() { asm("trap"); }
extern "C" __global__ __aicore__ void WildOPf(__gm__ uint32_t* x, uint64_t far) { x[far] = 1; }
void EasyOP(uint32_t blockDim, void* stream, uint32_t* x) { EasyOPf<<<blockDim, nullptr, stream>>>(x); }
void ErrorOP(uint32_t blockDim, void* stream) { ErrorOPf<<<blockDim, nullptr, stream>>>(); }
void WildOP(void* stream, uint32_t* x, uint64_t far) { WildOPf<<<1, nullptr, stream>>>(x, far); }
'''
EASY_DECLS = r'''
void EasyOP(uint32_t blockDim, void* stream, uint32_t* x);
void ErrorOP(uint32_t blockDim, void* stream);
void WildOP(void* stream, uint32_t* x, uint64_t far);
'''


def build(tmp_path: Path, name: str, main: str, kernels: str, extra: tuple[str, ...] = ()) -> Path:
    (tmp_path / f"{name}_main.cpp").write_text(PRELUDE + main)
    (tmp_path / f"{name}_kernels.cpp").write_text(kernels)
    exe = tmp_path / name
    code = commands.compile_command("c++", [str(tmp_path / f"{name}_main.cpp"), str(tmp_path / f"{name}_kernels.cpp"),
                                            "-o", str(exe), "-Wall", *extra])
    assert code == 0, f"building {name} failed"
    return exe


def run(exe: Path, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    clean.update(env or {})
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, env=clean,
                          cwd=exe.parent)


def sanitized(exe: Path, *args: str) -> tuple[subprocess.CompletedProcess, list]:
    """`acl-emu run --sanitize` of `exe ARGS` in its folder: what it did, and the sanitizer's findings."""
    name = "-".join((exe.name, *args))
    findings = exe.parent / f"{name}.findings.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    out = exe.parent / ("out" if not args else f"out-{name}")
    done = subprocess.run([sys.executable, "-m", "emu", "run", "--sanitize", "--sanitize-json", str(findings),
                           "--out", str(out), str(exe), *args], capture_output=True, text=True, timeout=300,
                          env=clean, cwd=exe.parent)
    return done, json.loads(findings.read_text())["findings"]


# The head of the CMakeLists.txt of hicann/runtime example/'s kernel programs: the toolkit's ascendc.cmake, the
# install prefix under the source folder.
CMAKE_HEAD = '''
cmake_minimum_required(VERSION 3.16)
project(%s LANGUAGES CXX)
set(SOC_VERSION $ENV{SOC_VERSION})
set(ASCENDC_CMAKE_DIR $ENV{ASCENDC_CMAKE_DIR})
set(CMAKE_INSTALL_PREFIX "${CMAKE_CURRENT_LIST_DIR}/out" CACHE STRING "path for install()" FORCE)
include(${ASCENDC_CMAKE_DIR}/ascendc.cmake)
'''


def cmake_build(src: Path) -> dict:
    """Configure and build `src` (its CMakeLists.txt) into src/build in the toolkit's environment (acl-emu config
    --env), asserting both steps pass; the environment, to run what it built."""
    from emu.capi import toolkit
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.update(toolkit.environment())
    env["LD_LIBRARY_PATH"] = toolkit.library_path(Path(env["ASCEND_HOME_PATH"]), env.get("LD_LIBRARY_PATH", ""))
    for step in (["cmake", "-S", str(src), "-B", str(src / "build")], ["cmake", "--build", str(src / "build")]):
        done = subprocess.run(step, capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    return env


def test_a_scalar_kernel_increments_one_word_per_block(tmp_path):
    """example/1_basic_features/stream/0_simple_stream: EasyOP on the default stream (stream nullptr), on a stream
    of its own, then 300 times: each block index 0..blockDim-1 runs once, its `block_idx` its own."""
    exe = build(tmp_path, "easy", EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    uint32_t host[8] = {0};
    void *dev; CHECK(aclrtMalloc(&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE));
    EasyOP(8, nullptr, (uint32_t *)dev);
    CHECK(aclrtSynchronizeStream(nullptr));
    EasyOP(4, s, (uint32_t *)dev);
    for (int i = 0; i < 300; i++) EasyOP(2, s, (uint32_t *)dev);
    CHECK(aclrtSynchronizeStream(s));
    CHECK(aclrtMemcpy(host, sizeof host, dev, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 8; i++) printf("%u ", host[i]);
    printf("\n");
    return 0;
}
''', EASY_KERNELS)
    done = run(exe)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["302", "302", "2", "2", "1", "1", "1", "1"], done.stdout + done.stderr


def test_printf_from_blocks_follows_the_programs_output_with_each_blocks_prefix(tmp_path):
    """example/kernel_func/kernel_print.cpp and Ascend/samples 0_helloworld (run.sh counts 8 "Hello World"
    lines): each block's lines after what the program printed before the launch, prefixed as the device
    prints them ("[AIV Block i/n] "), and the kernel's format arguments."""
    exe = build(tmp_path, "hello", r'''
void PrintDo(uint32_t blockDim, void* stream, int value);
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    printf("before\n");
    PrintDo(8, s, 123);
    CHECK(aclrtSynchronizeStream(s));
    printf("after\n");
    return 0;
}
''', r'''
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void KernelPrint(int value)
{
    AscendC::printf("Hello World %d from %d\n", value, (int)AscendC::GetBlockIdx());
}
void PrintDo(uint32_t blockDim, void* stream, int value) { KernelPrint<<<blockDim, nullptr, stream>>>(value); }
''')
    done = run(exe)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == ["before"] + [f"[AIV Block {i}/8] Hello World 123 from {i}" for i in range(8)] + ["after"]


def test_a_trap_fails_the_launch_with_the_vector_cores_exception_and_the_stream_goes_on(tmp_path):
    """example/1_basic_features/stream/1_stream_with_failure_mode (README: aclrtSynchronizeStream returned 507035,
    result 2): ErrorOP traps; the synchronize returns ACL_ERROR_RT_VECTOR_CORE_EXCEPTION (507035, a vector-only
    kernel's exception: hicann/runtime src/runtime/core/src/task/davinci_kernel_task_v100.cc
    SetStarsResultForDavinciTask), the EasyOP queued behind it still runs, aclGetRecentErrMsg names the kernel and
    the block, and the next synchronize is clean."""
    exe = build(tmp_path, "trap", EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    uint32_t host = 0;
    void *dev; CHECK(aclrtMalloc(&dev, 4, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, 4, &host, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    EasyOP(1, s, (uint32_t *)dev);
    ErrorOP(2, s);
    EasyOP(1, s, (uint32_t *)dev);
    int first = aclrtSynchronizeStream(s);
    const char *why = aclGetRecentErrMsg();
    int second = aclrtSynchronizeStream(s);
    CHECK(aclrtMemcpy(&host, 4, dev, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("%d %d %u\n%s\n", first, second, host, why ? why : "(none)");
    return 0;
}
''', EASY_KERNELS)
    done = run(exe)
    assert done.returncode == 0, done.stderr
    codes, why = done.stdout.splitlines()[0].split(), done.stdout.splitlines()[1]
    assert codes == ["507035", "0", "2"], done.stdout + done.stderr
    assert "ErrorOPf" in why and "block 0 of 2" in why and "trap" in why, why


@pytest.mark.parametrize("far", [1 << 30, 1 << 60])
def test_a_pointer_outside_device_memory_fails_the_launch_and_the_process_goes_on(tmp_path, far):
    """A kernel writing 4 GiB past its buffer (above the device's memory in use) or to a wild address: the launch
    fails with 507035 naming the kernel, the block and the address; nothing outside an allocation is written, and
    the program's next copies and launches work."""
    exe = build(tmp_path, "wild", EASY_DECLS + r'''
int main(int argc, char **argv) {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    uint32_t host[2] = {5, 6};
    void *dev; CHECK(aclrtMalloc(&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE));
    WildOP(s, (uint32_t *)dev, strtoull(argv[1], nullptr, 0));
    int failed = aclrtSynchronizeStream(s);
    const char *why = aclGetRecentErrMsg();
    EasyOP(2, s, (uint32_t *)dev);
    CHECK(aclrtSynchronizeStream(s));
    CHECK(aclrtMemcpy(host, sizeof host, dev, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("%d %u %u\n%s\n", failed, host[0], host[1], why ? why : "(none)");
    return 0;
}
''', EASY_KERNELS)
    done = run(exe, str(far))
    assert done.returncode == 0, done.stdout + done.stderr
    first, why = done.stdout.splitlines()[:2]
    assert first.split() == ["507035", "6", "7"], done.stdout + done.stderr
    assert "WildOPf" in why and "SIGSEGV" in why and "block 0 of 1" in why, why


def test_a_double_buffered_vector_add_over_8_blocks_equals_numpy(tmp_path):
    """example/kernel_func/add_custom.cpp (and Ascend/samples AddKernelInvocationNeo): 8 blocks of 2048 halves,
    TPipe, TQue VECIN / VECOUT with 2 buffers, DataCopy both ways, Add, through ACLRT_LAUNCH_KERNEL and its
    generated aclrtlaunch_add_custom.h: the result equals numpy's float16 add of the same data."""
    rng = np.random.default_rng(7)
    x = rng.uniform(1, 100, 8 * 2048).astype(np.float16)
    y = rng.uniform(1, 100, 8 * 2048).astype(np.float16)
    x.tofile(tmp_path / "x.bin")
    y.tofile(tmp_path / "y.bin")
    exe = build(tmp_path, "add", r'''
#include "aclrtlaunch_add_custom.h"
static void load(const char *path, void *to, size_t n) { FILE *f = fopen(path, "rb"); fread(to, 1, n, f); fclose(f); }
int main() {
    const uint32_t n = 8 * 2048; const size_t bytes = n * 2;
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    void *hx, *hy; CHECK(aclrtMallocHost(&hx, bytes)); CHECK(aclrtMallocHost(&hy, bytes));
    load("x.bin", hx, bytes); load("y.bin", hy, bytes);
    void *x, *y, *z;
    CHECK(aclrtMalloc(&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST)); CHECK(aclrtMalloc(&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&z, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(x, bytes, hx, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(y, bytes, hy, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK((aclError)ACLRT_LAUNCH_KERNEL(add_custom)(8, s, x, y, z));
    CHECK(aclrtSynchronizeStream(s));
    CHECK(aclrtMemcpy(hx, bytes, z, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    FILE *f = fopen("z.bin", "wb"); fwrite(hx, 1, bytes, f); fclose(f);
    return 0;
}
''', r'''
#include "kernel_operator.h"
constexpr int32_t TOTAL_LENGTH = 8 * 2048;
constexpr int32_t USE_CORE_NUM = 8;
constexpr int32_t BLOCK_LENGTH = TOTAL_LENGTH / USE_CORE_NUM;
constexpr int32_t TILE_NUM = 8;
constexpr int32_t BUFFER_NUM = 2;
constexpr int32_t TILE_LENGTH = BLOCK_LENGTH / TILE_NUM / BUFFER_NUM;
class KernelAdd {
public:
    __aicore__ inline KernelAdd() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z)
    {
        xGm.SetGlobalBuffer((__gm__ half *)x + BLOCK_LENGTH * AscendC::GetBlockIdx(), BLOCK_LENGTH);
        yGm.SetGlobalBuffer((__gm__ half *)y + BLOCK_LENGTH * AscendC::GetBlockIdx(), BLOCK_LENGTH);
        zGm.SetGlobalBuffer((__gm__ half *)z + BLOCK_LENGTH * AscendC::GetBlockIdx(), BLOCK_LENGTH);
        pipe.InitBuffer(inQueueX, BUFFER_NUM, TILE_LENGTH * sizeof(half));
        pipe.InitBuffer(inQueueY, BUFFER_NUM, TILE_LENGTH * sizeof(half));
        pipe.InitBuffer(outQueueZ, BUFFER_NUM, TILE_LENGTH * sizeof(half));
    }
    __aicore__ inline void Process()
    {
        for (int32_t i = 0; i < TILE_NUM * BUFFER_NUM; i++) { CopyIn(i); Compute(i); CopyOut(i); }
    }
private:
    __aicore__ inline void CopyIn(int32_t progress)
    {
        AscendC::LocalTensor<half> xLocal = inQueueX.AllocTensor<half>();
        AscendC::LocalTensor<half> yLocal = inQueueY.AllocTensor<half>();
        AscendC::DataCopy(xLocal, xGm[progress * TILE_LENGTH], TILE_LENGTH);
        AscendC::DataCopy(yLocal, yGm[progress * TILE_LENGTH], TILE_LENGTH);
        inQueueX.EnQue(xLocal);
        inQueueY.EnQue(yLocal);
    }
    __aicore__ inline void Compute(int32_t progress)
    {
        AscendC::LocalTensor<half> xLocal = inQueueX.DeQue<half>();
        AscendC::LocalTensor<half> yLocal = inQueueY.DeQue<half>();
        AscendC::LocalTensor<half> zLocal = outQueueZ.AllocTensor<half>();
        AscendC::Add(zLocal, xLocal, yLocal, TILE_LENGTH);
        outQueueZ.EnQue<half>(zLocal);
        inQueueX.FreeTensor(xLocal);
        inQueueY.FreeTensor(yLocal);
    }
    __aicore__ inline void CopyOut(int32_t progress)
    {
        AscendC::LocalTensor<half> zLocal = outQueueZ.DeQue<half>();
        AscendC::DataCopy(zGm[progress * TILE_LENGTH], zLocal, TILE_LENGTH);
        outQueueZ.FreeTensor(zLocal);
    }
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inQueueX, inQueueY;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outQueueZ;
    AscendC::GlobalTensor<half> xGm, yGm, zGm;
};
extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z)
{
    KernelAdd op;
    op.Init(x, y, z);
    op.Process();
}
''')
    done = run(exe)
    assert done.returncode == 0, done.stdout + done.stderr
    z = np.fromfile(tmp_path / "z.bin", dtype=np.float16)
    assert np.array_equal(z, x + y)


def test_the_unified_buffer_holds_what_the_products_ai_core_holds(tmp_path):
    """TPipe::InitBuffer past the 192 KiB of a 910B AI Core's Unified Buffer (ub_size=196608, hicann/runtime
    src/platform/platform_config/cann/Ascend910B3.ini:56) fails the launch (507035) saying so; 192 KiB fit."""
    exe = build(tmp_path, "ub", r'''
void Fill(uint32_t bytes, void *stream);
int main(int argc, char **argv) {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    Fill((uint32_t)atoi(argv[1]), nullptr);
    int code = aclrtSynchronizeStream(nullptr);
    const char *why = aclGetRecentErrMsg();
    printf("%d\n%s\n", code, code && why ? why : "");
    return 0;
}
''', r'''
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void fill(uint32_t bytes)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, bytes);
    AscendC::LocalTensor<uint8_t> t = buf.Get<uint8_t>();
    AscendC::Duplicate(t, (uint8_t)1, (int32_t)bytes);
}
void Fill(uint32_t bytes, void *stream) { fill<<<1, nullptr, stream>>>(bytes); }
''')
    fits = run(exe, str(192 * 1024))
    assert fits.stdout.split()[0] == "0", fits.stdout + fits.stderr
    over = run(exe, str(192 * 1024 + 32))
    code, why = over.stdout.splitlines()[:2]
    assert code == "507035" and "InitBuffer" in why and "196608" in why, over.stdout


def test_sync_all_holds_every_block_until_all_reach_it(tmp_path):
    """AscendC::SyncAll: what each block wrote before it is seen by every block after it (blocks run one at a
    time, each on a stack of its own, and SyncAll switches between them)."""
    exe = build(tmp_path, "syncall", r'''
void Gather(void *stream, void *words, void *sums);
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    void *words, *sums;
    CHECK(aclrtMalloc(&words, 64, ACL_MEM_MALLOC_HUGE_FIRST)); CHECK(aclrtMalloc(&sums, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    Gather(nullptr, words, sums);
    CHECK(aclrtSynchronizeStream(nullptr));
    uint32_t out[4];
    CHECK(aclrtMemcpy(out, sizeof out, sums, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("%u %u %u %u\n", out[0], out[1], out[2], out[3]);
    return 0;
}
''', r'''
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void gather(__gm__ uint32_t *words, __gm__ uint32_t *sums)
{
    uint32_t i = AscendC::GetBlockIdx();
    words[i] = (i + 1) * 10;
    AscendC::SyncAll();
    uint32_t total = 0;
    for (uint32_t k = 0; k < AscendC::GetBlockNum(); k++) total += words[k];
    sums[i] = total + i;
}
void Gather(void *stream, void *words, void *sums)
{
    gather<<<4, nullptr, stream>>>((uint32_t *)words, (uint32_t *)sums);
}
''')
    done = run(exe)
    assert done.stdout.split() == ["100", "101", "102", "103"], done.stdout + done.stderr


def test_a_cube_instruction_fails_at_build_time_naming_itself_and_its_line(tmp_path, capfd):
    """The Cube unit's matrix instructions are the next step: a kernel using Mmad stops the build with one line
    naming it and its file:line."""
    (tmp_path / "mm.cpp").write_text('#include "kernel_operator.h"\n'
                                    'extern "C" __global__ __aicore__ void mm(GM_ADDR a)\n{\n'
                                    '    // Mmad in a comment is not a use\n    AscendC::Mmad(c, a, b, p);\n}\n')
    code = commands.compile_command("c++", [str(tmp_path / "mm.cpp"), "-c", "-o", str(tmp_path / "mm.o")])
    err = capfd.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [f"acl-emu c++: error: {tmp_path / 'mm.cpp'}:5: Mmad is not emulated (the "
                                        f"Cube unit's matrix instructions): acl-emu runs AscendC kernels of scalar "
                                        f"code and the vector unit"]


@pytest.mark.skipif(not shutil.which("cmake") or not shutil.which("make"), reason="needs cmake and make")
def test_ascendc_library_builds_kernels_with_the_samples_cmake(tmp_path):
    """The CMake pattern of the 29 kernel programs of hicann/runtime example/ (include ascendc.cmake from
    $ASCENDC_CMAKE_DIR, ascendc_library(kernels STATIC ...), link ascendcl and kernels), with the toolkit of
    `acl-emu config --env`: the program builds unchanged and runs its kernel."""
    src = tmp_path / "src"
    (src / "kernel_func").mkdir(parents=True)
    (src / "kernel_func" / "easy_OP.cpp").write_text(EASY_KERNELS)
    (src / "main.cpp").write_text(PRELUDE + EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    uint32_t host[2] = {41, 1};
    void *dev; CHECK(aclrtMalloc(&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE));
    EasyOP(1, nullptr, (uint32_t *)dev);
    CHECK(aclrtSynchronizeStream(nullptr));
    CHECK(aclrtMemcpy(host, sizeof host, dev, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("%u %u\n", host[0], host[1]);
    return 0;
}
''')
    (src / "CMakeLists.txt").write_text(CMAKE_HEAD % "easy" + '''ascendc_library(kernels STATIC kernel_func/easy_OP.cpp)
include_directories($ENV{ASCEND_HOME_PATH}/include)
link_directories($ENV{ASCEND_HOME_PATH}/lib64)
add_executable(main main.cpp)
target_link_libraries(main PRIVATE ascendcl kernels)
''')
    env = cmake_build(src)
    done = subprocess.run([str(src / "build" / "main")], capture_output=True, text=True, timeout=120, env=env)
    assert done.stdout.split() == ["42", "1"], done.stdout + done.stderr


def test_a_launchs_time_follows_the_ai_core_of_the_product():
    """models.aicore: blocks spread over min(blockDim, vector cores) cores in waves, each block the longest of its
    global-memory traffic (ddr_rate, Ascend910B3.ini:71), its vector bytes (256 B a cycle) and, for a kernel with
    neither, its scalar code; at least the whole traffic at the device memory's bandwidth."""
    from emu import config
    from emu.models import Work
    core, hbm = config.load("910B").aicore, config.load("910B").hardware.memory_bandwidth
    clock = core.clock_hz
    # 8 blocks of 16 KiB of traffic each: 8 cores, one wave, 512 cycles a block
    seconds, how = core.launch(8, Work(8 * 16384, 0, 10**9), hbm)
    assert seconds == pytest.approx(16384 / 32 / clock) and "global memory-bound" in how and "1 wave" in how
    # 80 blocks on 40 cores: two waves (of vector work: 40 cores' traffic would pass the device memory's bandwidth)
    assert core.launch(80, Work(0, 80 * 65536, 0), hbm)[0] == pytest.approx(2 * 65536 / 256 / clock)
    # vector-bound when the vector bytes dominate; scalar only without DataCopy or vector work
    assert "vector-bound" in core.launch(1, Work(32, 1 << 20, 10**9), hbm)[1]
    seconds, how = core.launch(2, Work(0, 0, 2_000_000), hbm)
    assert seconds == pytest.approx(1_000_000 * core.scalar_cycles_per_ns / clock) and "scalar-bound" in how
    # a huge traffic over few blocks is bounded by the device memory's bandwidth at the least
    assert core.launch(40, Work(1 << 34, 0, 0), hbm)[0] >= (1 << 34) / hbm


def test_device_code_on_a_product_without_an_ai_core_is_refused_saying_so(tmp_path):
    """A product whose config has no [aicore] table (310P here) refuses the launch with 207000 and a message."""
    exe = build(tmp_path, "noaicore", EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    void *dev; CHECK(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    EasyOP(1, nullptr, (uint32_t *)dev);
    printf("%s\n", aclGetRecentErrMsg());
    return 0;
}
''', EASY_KERNELS)
    done = run(exe, env={"ACL_EMU_PRODUCT": "310P"})
    assert "device code is not emulated on 310P" in done.stdout, done.stdout + done.stderr


CAST_KERNELS = r'''
#include "kernel_operator.h"
using namespace AscendC;
constexpr uint32_t N = 256;
/* x: N floats; out: for each mode, N int32 of Cast(float -> int32), then N halves of Cast(float -> half) for each
 * mode; sums: ReduceSum of the first 240 of x as half, ReduceMax / ReduceMin of x as float with their indices */
extern "C" __global__ __aicore__ void casts(GM_ADDR x, GM_ADDR ints, GM_ADDR halves, GM_ADDR sums)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, i32, h, r, w;
    pipe.InitBuffer(a, N * 4); pipe.InitBuffer(i32, N * 4); pipe.InitBuffer(h, N * 2);
    pipe.InitBuffer(r, 64); pipe.InitBuffer(w, N * 4);
    GlobalTensor<float> xg; xg.SetGlobalBuffer((__gm__ float *)x, N);
    GlobalTensor<int32_t> ig; ig.SetGlobalBuffer((__gm__ int32_t *)ints, 6 * N);
    GlobalTensor<half> hg; hg.SetGlobalBuffer((__gm__ half *)halves, 6 * N);
    LocalTensor<float> xl = a.Get<float>();
    DataCopy(xl, xg, N);
    const RoundMode modes[6] = {RoundMode::CAST_RINT, RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL,
                                RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC, RoundMode::CAST_ODD};
    for (int m = 0; m < 6; m++) {
        LocalTensor<int32_t> il = i32.Get<int32_t>();
        Cast(il, xl, modes[m], N);
        DataCopy(ig[m * N], il, N);
        LocalTensor<half> hl = h.Get<half>();
        Cast(hl, xl, modes[m], N);
        DataCopy(hg[m * N], hl, N);
    }
    LocalTensor<half> hl = h.Get<half>();
    Cast(hl, xl, RoundMode::CAST_NONE, N);
    LocalTensor<half> sum = r.Get<half>();
    ReduceSum(sum, hl, w.Get<half>(), 240);  /* (the random values: the rest holds infinities) */
    LocalTensor<float> most = r.Get<float>()[8], least = r.Get<float>()[10];
    ReduceMax(most, xl, w.Get<float>(), N, true);
    ReduceMin(least, xl, w.Get<float>(), N, true);
    GlobalTensor<uint8_t> sg; sg.SetGlobalBuffer((__gm__ uint8_t *)sums, 64);
    DataCopy(sg, r.Get<uint8_t>(), 64);
}
void Casts(void *stream, void *x, void *ints, void *halves, void *sums)
{
    casts<<<1, nullptr, stream>>>((uint8_t *)x, (uint8_t *)ints, (uint8_t *)halves, (uint8_t *)sums);
}
'''


def _directed(values: np.ndarray, mode: str) -> np.ndarray:
    """float32 -> float16 rounded by `mode`, from the two float16 values around each input (past 65504: inf and
    65504)."""
    with np.errstate(over="ignore"):
        return _directed_values(values, mode)


def _directed_values(values: np.ndarray, mode: str) -> np.ndarray:
    near = values.astype(np.float16)
    out = near.copy()
    for i, (v, n) in enumerate(zip(values.astype(np.float64), near)):
        if float(n) == v:
            continue
        other = np.nextafter(n, np.float16(np.inf) if float(n) < v else np.float16(-np.inf))
        lo, hi = sorted((n, other), key=float)
        if mode == "floor":
            out[i] = lo
        elif mode == "ceil":
            out[i] = hi
        elif mode == "trunc":
            out[i] = hi if v < 0 else lo
        elif mode == "round":
            dl, du = v - float(lo), float(hi) - v
            out[i] = (lo if v < 0 else hi) if dl == du else (lo if dl < du else hi)
        elif mode == "odd":
            out[i] = lo if lo.view(np.uint16) & 1 else hi
    return out


def test_cast_rounds_as_its_mode_says_and_reductions_equal_numpy(tmp_path):
    """Cast float -> int32 and float -> half in CAST_RINT, FLOOR, CEIL, ROUND (ties away from zero), TRUNC and ODD
    (the AscendC Cast modes); ReduceSum of halves equals np.sum of them (pairwise, as numpy sums), ReduceMax /
    ReduceMin with their index."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-300, 300, 240), [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e9, -1e9, 65519.0,
                                                      65520.0, 1e-8, -1e-8, 3.0, -3.0, 0.0, 2049.0]]).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    exe = build(tmp_path, "casts", r'''
void Casts(void *stream, void *x, void *ints, void *halves, void *sums);
static void *dev(size_t n) { void *p; aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST); return p; }
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    static float x[256]; FILE *f = fopen("x.bin", "rb"); fread(x, 4, 256, f); fclose(f);
    void *dx = dev(1024), *di = dev(6 * 1024), *dh = dev(6 * 512), *ds = dev(64);
    CHECK(aclrtMemcpy(dx, 1024, x, 1024, ACL_MEMCPY_HOST_TO_DEVICE));
    Casts(nullptr, dx, di, dh, ds);
    CHECK(aclrtSynchronizeStream(nullptr));
    static unsigned char out[6 * 1024 + 6 * 512 + 64];
    CHECK(aclrtMemcpy(out, 6 * 1024, di, 6 * 1024, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(aclrtMemcpy(out + 6 * 1024, 6 * 512, dh, 6 * 512, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK(aclrtMemcpy(out + 6 * 1024 + 6 * 512, 64, ds, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    f = fopen("out.bin", "wb"); fwrite(out, 1, sizeof out, f); fclose(f);
    return 0;
}
''', CAST_KERNELS)
    done = run(exe)
    assert done.returncode == 0, done.stdout + done.stderr
    raw = (tmp_path / "out.bin").read_bytes()
    ints = np.frombuffer(raw[:6 * 1024], dtype=np.int32).reshape(6, 256)
    halves = np.frombuffer(raw[6 * 1024:6 * 1024 + 6 * 512], dtype=np.float16).reshape(6, 256)
    sums = raw[6 * 1024 + 6 * 512:]
    wide = x.astype(np.float64)
    clip = lambda a: np.clip(a, -2**31, 2**31 - 1).astype(np.int64)  # noqa: E731 (saturated)
    rounded = {"rint": np.rint(wide), "floor": np.floor(wide), "ceil": np.ceil(wide),
               "round": np.sign(wide) * np.floor(np.abs(wide) + 0.5), "trunc": np.trunc(wide)}
    for row, mode in enumerate(("rint", "floor", "ceil", "round", "trunc")):
        assert np.array_equal(ints[row], clip(rounded[mode])), mode
    assert np.array_equal(halves[0], x.astype(np.float16))
    for row, mode in ((1, "floor"), (2, "ceil"), (3, "round"), (4, "trunc"), (5, "odd")):
        assert np.array_equal(halves[row].view(np.uint16), _directed(x, mode).view(np.uint16)), mode
    assert np.frombuffer(sums[:2], dtype=np.float16)[0] == np.sum(x[:240].astype(np.float16))
    most, most_at = np.frombuffer(sums[32:36], np.float32)[0], np.frombuffer(sums[36:40], np.uint32)[0]
    least, least_at = np.frombuffer(sums[40:44], np.float32)[0], np.frombuffer(sums[44:48], np.uint32)[0]
    assert (most, most_at, least, least_at) == (x.max(), x.argmax(), x.min(), x.argmin())


def test_a_kernel_launched_just_before_a_forced_stream_destroy_has_run(tmp_path):
    """example/1_basic_features/memory/1_h2d_sync_memory_copy: ReadDo is launched, then the stream is destroyed
    with aclrtDestroyStreamForce and the device reset, no synchronize between; its run.sh reads the kernel's
    printf ("Destination data: 123"). What the device has started by the time of the forced destroy it does."""
    exe = build(tmp_path, "force", r'''
void ReadDo(uint32_t blockDim, void* stream, int* devPtr);
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    int value = 123; int *dev;
    CHECK(aclrtMalloc((void **)&dev, sizeof value, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, sizeof value, &value, sizeof value, ACL_MEMCPY_HOST_TO_DEVICE));
    ReadDo(1, s, dev);
    CHECK(aclrtDestroyStreamForce(s));
    CHECK(aclrtFree(dev));
    CHECK(aclrtResetDeviceForce(0));
    CHECK(aclFinalize());
    return 0;
}
''', r'''
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void DeviceRead(__gm__ int* devPtr)
{
    int value = devPtr[block_idx];
    AscendC::printf("Destination data: %d\n", value);
}
void ReadDo(uint32_t blockDim, void* stream, int* devPtr) { DeviceRead<<<blockDim, nullptr, stream>>>(devPtr); }
''')
    done = run(exe)
    assert done.returncode == 0 and done.stdout.splitlines() == ["[AIV Block 0/1] Destination data: 123"], \
        done.stdout + done.stderr


def test_the_sanitizer_finds_a_race_between_a_kernel_and_a_copy_on_another_stream(tmp_path):
    """A kernel on one stream and a copy into the same device memory on another, no event between: `acl-emu run
    --sanitize` reports the race, naming the kernel (its launch's whole allocation is what it may touch)."""
    exe = build(tmp_path, "race", EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream a, b; CHECK(aclrtCreateStream(&a)); CHECK(aclrtCreateStream(&b));
    void *host, *dev;
    CHECK(aclrtMallocHost(&host, 4096)); CHECK(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    EasyOP(8, a, (uint32_t *)dev);
    CHECK(aclrtMemcpyAsync(dev, 4096, host, 4096, ACL_MEMCPY_HOST_TO_DEVICE, b));
    CHECK(aclrtSynchronizeStream(a)); CHECK(aclrtSynchronizeStream(b));
    return 0;
}
''', EASY_KERNELS, ("-g",))
    done, found = sanitized(exe)
    assert found and any("EasyOPf<<<8>>>" in json.dumps(f) for f in found), done.stdout + done.stderr


def test_kernels_between_copies_on_two_streams_ordered_by_events(tmp_path):
    """After example/1_basic_features/stream/2_multi_stream: a copy in on stream A, the kernel on stream B after an
    event of A, the copy out on A after an event of B; the bytes are the kernel's, and the sanitizer finds
    nothing (the events order them)."""
    exe = build(tmp_path, "events", EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream a, b; CHECK(aclrtCreateStream(&a)); CHECK(aclrtCreateStream(&b));
    aclrtEvent in, done; CHECK(aclrtCreateEvent(&in)); CHECK(aclrtCreateEvent(&done));
    uint32_t *host; void *dev;
    CHECK(aclrtMallocHost((void **)&host, 64)); CHECK(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int i = 0; i < 16; i++) host[i] = 100 * i;
    CHECK(aclrtMemcpyAsync(dev, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, a));
    CHECK(aclrtRecordEvent(in, a));
    CHECK(aclrtStreamWaitEvent(b, in));
    EasyOP(16, b, (uint32_t *)dev);
    CHECK(aclrtRecordEvent(done, b));
    CHECK(aclrtStreamWaitEvent(a, done));
    CHECK(aclrtMemcpyAsync(host, 64, dev, 64, ACL_MEMCPY_DEVICE_TO_HOST, a));
    CHECK(aclrtSynchronizeStream(a));
    for (int i = 0; i < 16; i++) printf("%u ", host[i]);
    printf("\n");
    return 0;
}
''', EASY_KERNELS)
    done, found = sanitized(exe)
    assert done.stdout.split()[:16] == [str(100 * i + 1) for i in range(16)], done.stdout + done.stderr
    assert found == [], done.stdout


DECLARED_MAIN = EASY_DECLS + r'''
int main(int argc, char **argv) {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    aclrtEvent a, b; CHECK(aclrtCreateEvent(&a)); CHECK(aclrtCreateEvent(&b));
    void *dev; CHECK(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtRecordEvent(a, s));
    EasyOP((uint32_t)atoi(argv[1]), s, (uint32_t *)dev);
    CHECK(aclrtRecordEvent(b, s));
    int synced = aclrtSynchronizeStream(s);
    float ms = 0;
    aclrtEventElapsedTime(&ms, a, b);
    printf("%d %.3f\n%s\n", synced, ms, synced ? "" : "-");
    return 0;
}
'''


def test_a_declared_kernel_time_is_the_launchs_time_on_its_product(tmp_path):
    """emu.device.declared: kernels.toml beside the program names the kernel's time per product, a number of
    microseconds or an expression of blockDim; the launch takes it (its blocks still run), a product the table
    does not name is estimated, and $ACL_EMU_KERNEL_TIMES chooses another file."""
    exe = build(tmp_path, "declared", DECLARED_MAIN, EASY_KERNELS)

    def elapsed_ms(*args, env=None) -> float:  # (the kernel's time, and the launch's host time before it starts)
        code, ms = run(exe, *args, env=env).stdout.split()[:2]
        assert code == "0"
        return float(ms)

    (tmp_path / "kernels.toml").write_text('[EasyOPf]\n910B = 1500000.0\nA3 = "1000 + 250 * blockDim"\n')
    assert elapsed_ms("8") == pytest.approx(1500, abs=0.05)
    assert elapsed_ms("4", env={"ACL_EMU_PRODUCT": "A3"}) == pytest.approx(2.0, abs=0.05)
    (tmp_path / "other.toml").write_text('[EasyOPf]\n910B = "min(5000, 100 * blockDim)"\n')
    assert elapsed_ms("8", env={"ACL_EMU_KERNEL_TIMES": str(tmp_path / "other.toml")}) == pytest.approx(0.8, abs=0.05)
    (tmp_path / "kernels.toml").write_text('[Other]\n910B = 1.0\n')
    assert elapsed_ms("8") < 0.5  # (estimated: microseconds)


@pytest.mark.parametrize("text, says", [
    ('[EasyOPf]\n910B = "__import__(\\"os\\")"\n', "is not a number, blockDim"),
    ('[EasyOPf]\n910B = -5\n', "expected a time of 0 or more"),
    ('[EasyOPf]\n910B = "1 / (blockDim - 8)"\n', "division by zero"),
    ("EasyOPf = 3\n", "must be a table of product = microseconds"),
    ("[EasyOPf\n", "kernels.toml"),
])
def test_a_wrong_kernel_time_declaration_fails_the_launch_saying_why(tmp_path, text, says):
    """A declaration that cannot be used fails the launch with 100000 and one line naming the file and entry;
    nothing of it is evaluated as code."""
    exe = build(tmp_path, "wrongdecl", EASY_DECLS + r'''
extern "C" uint32_t aclrtlaunch_EasyOPf(uint32_t blockDim, void *stream, void *x);
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    void *dev; CHECK(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t code = aclrtlaunch_EasyOPf(8, nullptr, dev);
    printf("%u\n%s\n", code, aclGetRecentErrMsg());
    return 0;
}
''', EASY_KERNELS)
    (tmp_path / "kernels.toml").write_text(text)
    done = run(exe)
    code, message = done.stdout.split("\n", 1)
    assert code == "100000" and says in message and "kernels.toml" in message, done.stdout + done.stderr
