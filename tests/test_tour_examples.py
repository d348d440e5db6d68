"""The README's tour, run as a user runs it: the bundled example's headline, the C example the tour builds, and
the way it builds an unchanged Ascend/samples C++ sample.

- `acl-emu run` with no script runs emu/examples/copy_pipeline.py under --host-time calls (unless the user asks
  for wall time): its headline is the time of its calls and copies, near the copy time the example prints, and
  the same on every run; before, under wall time, it read 336-1460 ms for an example printing 3.6 ms (mostly
  numpy building a 512 MiB temporary).
- emu/examples/copy.c is the tour's `copy.c`: the tour's own command lines build it and run it, under acl-emu
  run and alone.
- The tour's CMake lines are the samples' own layout (build/intermediates/host, `cmake ../../../src`, main
  written to the sample's out/ by the sample's CMAKE_RUNTIME_OUTPUT_DIRECTORY "../../../out").
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import emu

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
EXAMPLES = Path(emu.__file__).parent / "examples"
BIN = Path(sys.executable).parent  # the venv's bin: acl-emu is there
NATIVE = pytest.mark.skipif(not shutil.which(os.environ.get("CC", "cc"))
                            or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                            reason="needs a C compiler and a shared libpython")


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.pop("PYTHONPATH", None)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def _emu(*argv: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emu", *argv], capture_output=True, text=True, cwd=cwd,
                          env=env or _env(), timeout=timeout)


def _block_with(text: str) -> list[str]:
    """The command lines of the README's ```sh block that contains `text`, comments taken off."""
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        if text in block:
            return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]
    raise AssertionError(f"no sh block of the README has {text!r}")


# -- the bundled example ---------------------------------------------------------------------------------

def _example(tmp_path: Path, *argv: str, env: dict | None = None) -> tuple[dict, float]:
    """`acl-emu run --json [argv]` with no script: (the summary, the copy time the example prints in ms)."""
    done = _emu("run", "--json", "--out", str(tmp_path), *argv, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    printed = re.search(r"on two streams took ([0-9.]+) ms \(simulated\)", done.stderr)  # (--json: its output
    assert printed, done.stderr                                                           # goes to stderr)
    return json.loads(done.stdout), float(printed.group(1))


def test_the_bundled_examples_headline_is_its_calls_and_copies_the_same_on_every_run(tmp_path):
    first, copies = _example(tmp_path)
    again, _ = _example(tmp_path)
    assert first["host_time"] == "calls"
    assert first["simulated_ms"] == again["simulated_ms"]  # calls: it repeats
    assert copies <= first["simulated_ms"] < 3 * copies  # the copies it prints, and its other calls
    assert abs(first["device_busy_ms"] - copies) < 0.1 * copies


@pytest.mark.parametrize("argv,env", [(("--host-time", "wall"), {}), ((), {"ACL_EMU_HOST_TIME": "wall"}),
                                      (("--host-time-scale", "0.5"), {})])
def test_the_bundled_example_takes_the_wall_time_a_user_asks_for(tmp_path, argv, env):
    summary, _ = _example(tmp_path, *argv, env=_env(**env))
    assert summary["host_time"].startswith("wall")


def test_the_readme_says_what_the_bundled_examples_headline_counts():
    assert "emu/examples/copy_pipeline.py" in README
    assert "without a script `acl-emu run` counts host time by `--host-time calls` unless told otherwise" in README


# -- the C example -----------------------------------------------------------------------------------------

@NATIVE
def test_the_tours_c_example_is_shipped_and_its_commands_build_and_run_it(tmp_path):
    """The tour's three lines, from the repository root (the README's `.venv/bin/` is this Python's bin): build
    emu/examples/copy.c, run it under acl-emu run with an argument, and alone."""
    lines = _block_with("acl-emu cc emu/examples/copy.c")
    assert (ROOT / "emu/examples/copy.c").is_file() and (EXAMPLES / "copy.c").is_file()
    build, run, alone = lines
    assert build.startswith(".venv/bin/acl-emu cc emu/examples/copy.c -o copy")
    exe = tmp_path / "copy"
    done = subprocess.run([str(BIN / "acl-emu"), *build.split()[1:-1], str(exe)], capture_output=True,
                          text=True, cwd=ROOT, env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    assert run.startswith(".venv/bin/acl-emu run ./copy")
    done = subprocess.run([str(BIN / "acl-emu"), "run", "--json", "--out", str(tmp_path), str(exe),
                           *run.split()[3:]], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    assert done.returncode == 0, done.stderr
    mib = int(run.split()[3])
    assert f"H2D of {mib} MiB from page-locked memory" in done.stderr
    assert "D2H into malloc'ed memory: the bytes came back equal" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["calls"]["aclrtMemcpyAsync"] == 1 and summary["calls"]["aclrtMemcpy"] == 1
    assert summary["bytes_by_route"]["h2d"] == mib << 20 == summary["bytes_by_route"]["d2h"]
    assert alone == "./copy"
    done = subprocess.run([str(exe)], capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "H2D of 16 MiB" in done.stdout and "came back equal" in done.stdout


# -- an Ascend/samples C++ sample, in its own layout -----------------------------------------------------------

# The CMake lines of Ascend/samples' cplusplus/.../resnet50_imagenet_classification/src/CMakeLists.txt that
# place and link the program (fc2aea93): the output folder relative to the build folder, ACL from $DDK_PATH's
# runtime/include and $NPU_HOST_LIB.
SAMPLE_SRC_CMAKE = '''cmake_minimum_required(VERSION 3.5.1)
project(ACL_TOUR)
add_compile_options(-std=c++11)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY  "../../../out")
set(INC_PATH $ENV{DDK_PATH})
if (NOT DEFINED ENV{DDK_PATH})
    set(INC_PATH "/usr/local/Ascend")
endif ()
set(LIB_PATH $ENV{NPU_HOST_LIB})
if (NOT DEFINED ENV{NPU_HOST_LIB})
    set(LIB_PATH "/usr/local/Ascend/runtime/lib64/stub/")
endif ()
include_directories(${INC_PATH}/runtime/include/ ../inc/)
link_directories(${LIB_PATH})
add_executable(main main.cpp)
target_link_libraries(main ascendcl stdc++)
'''

# Reads its input from ../data, as the samples do from out/.
SAMPLE_MAIN = r'''#include <cstdio>
#include "acl/acl.h"

int main()
{
    FILE *f = std::fopen("../data/input.bin", "rb");
    if (f == nullptr) { std::printf("[ERROR] no ../data/input.bin\n"); return 1; }
    static unsigned char in[4096], out[4096];
    size_t n = std::fread(in, 1, sizeof in, f);
    std::fclose(f);
    void *dev = nullptr;
    if (aclInit(nullptr) || aclrtSetDevice(0) || aclrtMalloc(&dev, n, ACL_MEM_MALLOC_HUGE_FIRST) ||
        aclrtMemcpy(dev, n, in, n, ACL_MEMCPY_HOST_TO_DEVICE) || aclrtMemcpy(out, n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST))
        return 2;
    std::printf("[INFO]  %zu bytes there and back, last %d\n", n, out[n - 1]);
    aclrtFree(dev);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
'''


@NATIVE
@pytest.mark.skipif(not shutil.which("cmake") or not shutil.which("g++") or not shutil.which("make"),
                    reason="needs cmake, make and g++")
def test_the_tours_cmake_lines_build_a_sample_in_its_own_layout(tmp_path):
    """The README's lines for an unchanged C++ sample, run in a folder laid out as the samples are: main is
    written to the sample's out/, finds ../data from there, and runs under acl-emu run."""
    lines = _block_with("cmake ../../../src")
    assert lines[0] == "source .venv/bin/activate" and lines[1] == 'eval "$(acl-emu config --env)"'
    assert lines[2].startswith("cd samples/cplusplus/")
    sample = tmp_path / "resnet50_imagenet_classification"
    (sample / "src").mkdir(parents=True)
    (sample / "inc").mkdir()
    (sample / "data").mkdir()
    (sample / "CMakeLists.txt").write_text('cmake_minimum_required(VERSION 3.5.1)\nproject(ACL_TOUR)\n'
                                           'add_subdirectory("./src")\n')
    (sample / "src" / "CMakeLists.txt").write_text(SAMPLE_SRC_CMAKE)
    (sample / "src" / "main.cpp").write_text(SAMPLE_MAIN)
    (sample / "data" / "input.bin").write_bytes(bytes(range(256)) * 4)
    script = "\n".join(["set -e", lines[1], f"cd {sample}", *lines[3:]])
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (sample / "out" / "main").is_file() and not (tmp_path.parent / "out").exists()
    assert "[INFO]  1024 bytes there and back, last 255" in done.stdout
    assert "[acl-emu] 910B: simulated time" in done.stderr
