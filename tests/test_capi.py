"""C and C++ ACL programs on the emulator (emu.capi): the headers, libascendcl.so, the compiler wrappers and
`acl-emu run ./prog`.

The programs in tests/c are the data replication guide's samples completed into programs that check their
own bytes, the call sequences of six public C/C++ samples (each file names the sample it follows), a program
with threads and callbacks, a race, and a table of wrong arguments. They are built once per session with
`acl-emu cc` / `acl-emu c++` into a temporary folder.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import emu
from emu import constants as C
from emu import errors
from emu.capi import build, commands

HERE = Path(__file__).resolve().parent / "c"
CC = shutil.which(os.environ.get("CC", "cc")) and shutil.which(os.environ.get("CXX", "c++"))
pytestmark = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                                reason="needs a C and a C++ compiler and a shared libpython")

PROGRAMS = ["guide_host_device", "guide_pageable", "guide_p2p", "sample_memcpy_host_device",
            "sample_memcpy_host_device_async", "sample_memcpy_host_dvpp", "sample_async_memcpy_host2device",
            "sample_h2h_memory_copy", "sample_device_p2p", "threads", "bad_args", "race",
            "sample_resnet50_classification"]


def _source(name: str) -> Path:
    return next(p for p in (HERE / f"{name}.c", HERE / f"{name}.cpp") if p.exists())


def _program_env(extra: dict | None = None) -> dict:
    """This process's environment without its ACL_EMU_ settings (a program runs on the defaults), and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.update(extra or {})
    return env


def _compile(folder: Path, name: str, source: str, *flags: str) -> Path:
    """`source` written to folder/name.c and built with `acl-emu cc` into folder/name; the source's path."""
    src = folder / f"{name}.c"
    src.write_text(source)
    assert commands.compile_command("cc", [str(src), "-o", str(folder / name), *flags]) == 0
    return src


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory):
    """Every program of tests/c built with the wrappers, as a user would (`acl-emu cc prog.c -o prog`)."""
    out = tmp_path_factory.mktemp("capi")
    for name in PROGRAMS:
        src = _source(name)
        language = "c++" if src.suffix == ".cpp" else "cc"
        code = commands.compile_command(language, [str(src), "-o", str(out / name), "-Wall", "-Werror",
                                                   "-lpthread"])
        assert code == 0, f"building {src.name} failed"
    (out / "acl.json").write_text("{}")  # sample_async_memcpy_host2device: aclInit("./acl.json")
    return out


def _run(bin_dir: Path, name: str, *args: str, env: dict | None = None, timeout: float = 120):
    return subprocess.run([str(bin_dir / name), *args], cwd=bin_dir, capture_output=True, text=True,
                          timeout=timeout, env=_program_env(env))


@pytest.mark.parametrize("name", ["guide_host_device", "guide_pageable", "guide_p2p", "sample_memcpy_host_device",
                                  "sample_memcpy_host_device_async", "sample_memcpy_host_dvpp",
                                  "sample_async_memcpy_host2device", "sample_h2h_memory_copy",
                                  "sample_device_p2p"])
def test_samples_run_unchanged_and_get_their_bytes(bin_dir, name):
    """The guide's samples and the public samples' call sequences run to their end: every call returns
    ACL_SUCCESS and every byte they check is right (each program exits 1 naming the first that is not)."""
    done = _run(bin_dir, name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout or "Destination data: 123" in done.stdout


def test_two_device_samples_skip_on_a_one_device_product(bin_dir):
    """aclrtGetDeviceCount is the product's: on 200I_A2 (one SoC per board) the P2P sample takes its skip path."""
    done = _run(bin_dir, "sample_device_p2p", env={"ACL_EMU_PRODUCT": "200I_A2"})
    assert done.returncode == 0, done.stderr
    assert "[SKIP]" in done.stdout


def test_threads_share_a_context_and_callbacks_run_on_the_subscribed_thread(bin_dir):
    """Two pthreads make one context current and copy on their own streams; a blocking aclrtLaunchCallback
    runs the program's C function, with its userData, on the thread aclrtSubscribeReport named."""
    done = _run(bin_dir, "threads")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "threads: ok" in done.stdout


def _pyacl_codes() -> dict[str, int]:
    """bad_args.c's calls made through pyACL on a fresh runtime."""
    emu.configure(product="910B", functional=True)
    import emu.acl as acl
    rt = acl.rt
    codes = {}
    acl.init()
    codes["set_device_99"] = rt.set_device(99)
    rt.set_device(0)
    stream, _ = rt.create_stream()
    host, _ = rt.malloc_host(64)
    dev, _ = rt.malloc(64, C.ACL_MEM_MALLOC_HUGE_FIRST)
    codes["malloc_size_0"] = rt.malloc(0, C.ACL_MEM_MALLOC_HUGE_FIRST)[1]
    codes["malloc_policy_99"] = rt.malloc(64, 99)[1]
    codes["free_null"] = rt.free(0)
    codes["free_host_pointer"] = rt.free(host)
    codes["memcpy_count_over_dest_max"] = rt.memcpy(dev, 16, host, 32, C.ACL_MEMCPY_HOST_TO_DEVICE)
    codes["memcpy_kind_99"] = rt.memcpy(dev, 16, host, 16, 99)
    codes["memcpy_null_dst"] = rt.memcpy(0, 16, host, 16, C.ACL_MEMCPY_HOST_TO_DEVICE)
    codes["memcpy_past_end"] = rt.memcpy(dev, 128, host, 128, C.ACL_MEMCPY_HOST_TO_DEVICE)
    codes["memcpy_wrong_kind"] = rt.memcpy(dev, 16, host, 16, C.ACL_MEMCPY_DEVICE_TO_HOST)
    codes["memcpy_async_bad_stream"] = rt.memcpy_async(dev, 16, host, 16, C.ACL_MEMCPY_HOST_TO_DEVICE, 0x1234)
    codes["memset_count_over_max"] = rt.memset(dev, 16, 0, 32)
    codes["memcpy2d_dpitch_below_width"] = rt.memcpy2d(dev, 8, host, 16, 16, 2, C.ACL_MEMCPY_HOST_TO_DEVICE)
    codes["memcpy2d_height_0"] = rt.memcpy2d(dev, 16, host, 16, 16, 0, C.ACL_MEMCPY_HOST_TO_DEVICE)
    codes["synchronize_bad_stream"] = rt.synchronize_stream(0x1234)
    codes["record_null_event"] = rt.record_event(0, stream)
    codes["batch_zero_entries"] = rt.memcpy_batch([dev], None, [host], None, 0, None, None, 0)[1]
    codes["get_device_null"] = errors.ACL_ERROR_INVALID_PARAM  # C only: a null output pointer
    codes["launch_callback_null_fn"] = rt.launch_callback(None, 0, C.ACL_CALLBACK_BLOCK, stream)
    return codes


def test_wrong_arguments_get_the_codes_pyacl_gets(bin_dir):
    """Every wrong call of bad_args.c returns the code the same call gets through pyACL (a null output pointer,
    which pyACL cannot pass, gets ACL_ERROR_INVALID_PARAM as the ACL layer's null checks give)."""
    done = _run(bin_dir, "bad_args")
    assert done.returncode == 0, done.stderr
    got = {name: int(code) for name, code in (line.split() for line in done.stdout.splitlines())}
    assert got == _pyacl_codes()


def test_a_function_outside_the_scope_fails_naming_itself(tmp_path):
    """A declared function the emulator does not run links, and when called returns ACL_ERROR_API_NOT_SUPPORT
    (200001) with a message naming it, on stderr and from aclGetRecentErrMsg."""
    _compile(tmp_path, "model", '#include <stdio.h>\n#include "acl/acl.h"\nint main(void) {\n'
                                '    aclError r = aclopSetModelDir("op_models");\n'
                                '    printf("%d %s\\n", r, aclGetRecentErrMsg());\n    return 0;\n}\n')
    done = subprocess.run([str(tmp_path / "model")], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("200001 acl-emu: aclopSetModelDir is not emulated")
    assert "aclopSetModelDir is not emulated" in done.stderr


def test_dereferencing_a_device_pointer_faults_as_on_hardware(tmp_path):
    """Device addresses lie above the user address space: the host reading one gets SIGSEGV."""
    _compile(tmp_path, "deref", '#include "acl/acl.h"\nint main(void) {\n    void *d; aclrtSetDevice(0);\n'
                                '    aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST);\n'
                                '    return *(volatile char *)d;\n}\n')
    done = subprocess.run([str(tmp_path / "deref")], capture_output=True, timeout=60)
    assert done.returncode in (-signal.SIGSEGV, -signal.SIGBUS)


DECLARATION = """
[[input]]
name = "data"
dtype = "float16"
shape = [1, 3, 224, 224]
format = "NCHW"

[[output]]
name = "prob"
dtype = "float32"
shape = [1, 1000]

[compute_us]
910B = 4000
A3 = 1000
"""


def test_a_c_inference_program_runs_a_declared_model(bin_dir, tmp_path):
    """The C ResNet-50 sample's sequence (aclmdlQuerySize, aclmdlLoadFromFileWithMem, the description,
    datasets and data buffers, aclmdlExecute, outputs through aclGetDataBufferAddr / SizeV2, unload) runs on a
    declared model; the outputs are the same for the same input, and a second unload is 145003."""
    (tmp_path / "resnet50.om.toml").write_text(DECLARATION)
    picture = bytes(range(256)) * (3 * 224 * 224 * 2 // 256)
    for name in ("dog1.bin", "dog2.bin"):
        (tmp_path / name).write_bytes(picture)
    done = _run(bin_dir, "sample_resnet50_classification", str(tmp_path / "resnet50.om"), str(tmp_path / "dog1.bin"),
                str(tmp_path / "dog2.bin"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "input data of 301056 bytes, output prob [1, 1000]" in done.stdout
    assert "sample_resnet50_classification: ok" in done.stdout


def test_every_declared_function_is_exported():
    """Each function the headers declare is a symbol of libascendcl.so, so every program that compiles links."""
    names = {p.name for p in build.prototypes()} | {"aclAppLog"}
    lib = build.library_dir() / build.LIBRARY
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    exported = {line.split()[-1] for line in out.stdout.splitlines()}
    assert names - exported == set()
    assert not any(n.startswith("emu_") for n in exported)  # the library's own plumbing stays hidden


def _header_value(tmp_path: Path, names: list[str]) -> dict[str, int]:
    src = tmp_path / "values.c"
    body = "".join(f'    printf("{n} %lld\\n", (long long)({n}));\n' for n in names)
    src.write_text(f'#include <stdio.h>\n#include "acl/acl.h"\nint main(void) {{\n{body}    return 0;\n}}\n')
    exe = tmp_path / "values"
    subprocess.run([*build.compiler(), f"-I{build.INCLUDE}", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {name: int(value) for name, value in (line.split() for line in out.splitlines())}


def test_header_constants_are_the_emulators(tmp_path):
    """The enums and codes the headers give a C program have the values emu.constants and emu.errors use
    (both the CANN headers' values)."""
    wanted = {n: v for n, v in vars(C).items() if re.fullmatch(r"ACL_[A-Z0-9_]+", n) and isinstance(v, int)}
    wanted |= {n: v for n, v in vars(errors).items() if re.fullmatch(r"ACL_(ERROR|RT)_[A-Z0-9_]+|ACL_SUCCESS", n)
               and isinstance(v, int)}
    text = "".join(p.read_text() for p in build.headers())
    present = {n: v for n, v in wanted.items() if re.search(rf"\b{n}\b", text)}
    assert len(present) > 100
    assert _header_value(tmp_path, sorted(present)) == present


def test_cc_wrapper_adds_the_flags_and_passes_everything_through(capsys):
    """`acl-emu cc` is the compiler with the include folder, the library and its rpath added; compiling only
    (-c) adds no link flags."""
    assert commands.compile_command("cc", ["--show", "x.c", "-o", "x", "-O2"]) == 0
    line = capsys.readouterr().out
    assert f"-I{build.INCLUDE}" in line and "x.c -o x -O2" in line and "-lascendcl" in line
    assert commands.compile_command("cc", ["--show", "-c", "x.c"]) == 0
    assert "-lascendcl" not in capsys.readouterr().out
    from emu.cli import main
    assert main(["-q", "c++", "--show", "x.cpp", "-o", "x"]) == 0  # global options before the wrapper
    assert "x.cpp -o x" in capsys.readouterr().out


def test_generator_refuses_a_type_it_does_not_know():
    """A prototype with a parameter type the generator cannot pass stops the build, naming the type."""
    with pytest.raises(ValueError, match="'struct_by_value_t'"):
        build.prototypes(["ACL_FUNC_VISIBILITY aclError f(struct_by_value_t v);"])


# -- a C program's own memory (emu.memory.AddressSpace.adopt_host) ---------------------------------------------

def _raw_buffer(n: int):
    import ctypes
    buf = (ctypes.c_ubyte * n)()
    return buf, ctypes.addressof(buf)


def test_unknown_host_memory_is_refused_unless_the_runtime_is_a_c_programs():
    """pyACL's rule stands (an address the emulator does not know is 100000); a C program's runtime takes it
    as the program's own pageable memory, read and written at its real address."""
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    keep, addr = _raw_buffer(256)
    dev = rt.malloc(256)
    with pytest.raises(errors.AclError) as e:
        rt.memcpy(dev, 256, addr, 256, C.ACL_MEMCPY_HOST_TO_DEVICE)
    assert e.value.code == errors.ACL_ERROR_INVALID_PARAM
    rt.space.adopt_raw_host = True
    keep[:] = bytes(range(256))
    rt.memcpy(dev, 256, addr, 256, C.ACL_MEMCPY_HOST_TO_DEVICE)
    back, back_addr = _raw_buffer(256)
    rt.memcpy(back_addr, 256, dev, 256, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert bytes(back) == bytes(range(256))
    assert rt.pointer_get_attributes(addr).type == C.Location.UNREGISTERED


def test_adopted_ranges_grow_and_merge():
    """A longer access of the same buffer widens its adopted range; overlapping ranges become one region."""
    rt = emu.configure(product="910B", functional=True)
    rt.space.adopt_raw_host = True
    keep, addr = _raw_buffer(4096)
    r1, _ = rt.space.resolve(addr + 100, 100)
    r2, off = rt.space.resolve(addr, 4096)
    assert (r2.base, r2.size, off) == (addr, 4096, 0)
    assert [r for r in rt.space.regions() if r.origin == "raw"] == [r2]
    assert r1 is not r2


def test_adoption_never_covers_memory_the_emulator_knows():
    """A range running from the program's memory into page-locked memory is refused, not merged."""
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    rt.space.adopt_raw_host = True
    host = rt.malloc_host(4096)
    with pytest.raises(errors.AclError, match="overlap|past the end"):
        rt.space.resolve(host - 64, 128)


def test_adopted_memory_nothing_holds_is_forgotten():
    """Adopted regions no task or registration holds are pruned, so a program touching many buffers does not
    grow the address space without end."""
    rt = emu.configure(product="910B", functional=True)
    rt.space.adopt_raw_host = True
    buffers = [_raw_buffer(64) for _ in range(600)]
    for _, addr in buffers:
        rt.space.resolve(addr, 64)
    assert len([r for r in rt.space.regions() if r.origin == "raw"]) < 600


@pytest.mark.skipif(not shutil.which("cmake"), reason="needs cmake")
def test_a_cmake_project_builds_with_the_toolkit_variables(tmp_path):
    """`eval "$(acl-emu config --env)"` gives CANN's variables (DDK_PATH, NPU_HOST_LIB, ...): a CMake project
    written the samples' way builds against the emulator without an rpath and runs with the LD_LIBRARY_PATH
    the same lines set."""
    from emu.capi import toolkit
    root = toolkit.tree()
    env = _program_env({**toolkit.environment(root),
                        "LD_LIBRARY_PATH": toolkit.library_path(root, os.environ.get("LD_LIBRARY_PATH", ""))})
    build_dir = tmp_path / "build"
    for step in (["cmake", "-S", str(HERE / "cmake_ddk"), "-B", str(build_dir)], ["cmake", "--build", str(build_dir)]):
        done = subprocess.run(step, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([str(build_dir / "main")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Destination data: 123" in done.stdout
    assert "libascendcl.so" in subprocess.run(["ldd", str(build_dir / "main")], capture_output=True, text=True,
                                              env=env).stdout


# -- the command line ------------------------------------------------------------------------------------------

def _cli(*argv: str, cwd: Path | None = None, timeout: float = 180):
    return subprocess.run([sys.executable, "-m", "emu", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=_program_env())


def test_acl_emu_run_times_a_c_program_and_writes_its_trace(bin_dir, tmp_path):
    """`acl-emu run ./prog` runs a native program as a script: --product, --json (the program's output on
    stderr), the summary's calls and routes, the trace, --msprof's timeline, the program's exit code."""
    done = _cli("run", "--json", "--product", "A3", "--host-time", "calls", "--out", str(tmp_path),
                "--msprof", str(tmp_path / "msprof.json"), str(bin_dir / "guide_host_device"), cwd=bin_dir)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["msprof"] == str(tmp_path / "msprof.json")
    assert json.loads((tmp_path / "msprof.json").read_text())  # the msprof timeline, whole
    assert summary["product"] == "A3" and summary["exit_code"] == 0
    assert summary["calls"]["aclrtMemcpyAsync"] == 3
    assert summary["bytes_by_route"]["h2d"] == 4 << 20
    assert Path(summary["trace"]).is_file() and "guide_host_device: ok" in done.stderr


def test_acl_emu_run_sanitize_names_the_c_line(bin_dir, tmp_path):
    """--sanitize on a C program built with -g: the race is reported with both calls' file and line, the
    findings go to --sanitize-json, and the exit code is 1."""
    exe = tmp_path / "race"
    assert commands.compile_command("cc", ["-g", str(HERE / "race.c"), "-o", str(exe)]) == 0
    out = tmp_path / "findings.json"
    done = _cli("run", "--sanitize-json", str(out), "--out", str(tmp_path), str(exe), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Race between a write and a later read" in done.stderr
    assert f"{HERE / 'race.c'}:18" in done.stderr and f"{HERE / 'race.c'}:19" in done.stderr
    assert json.loads(out.read_text())["findings"]


def test_acl_emu_run_model_flag_names_the_declaration(bin_dir, tmp_path):
    """--model X.om=DECL.toml gives a C program's model its declaration, wherever the file is."""
    decl = tmp_path / "elsewhere.toml"
    decl.write_text(DECLARATION)
    picture = tmp_path / "pic.bin"
    picture.write_bytes(bytes(3 * 224 * 224 * 2))
    done = _cli("run", "--json", "--model", f"{tmp_path / 'net.om'}={decl}", "--out", str(tmp_path),
                str(bin_dir / "sample_resnet50_classification"), str(tmp_path / "net.om"), str(picture), cwd=bin_dir)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["calls"]["aclmdlExecute"] == 1
    bad = _cli("run", "--model", "net.om", str(bin_dir / "threads"), cwd=bin_dir)
    assert bad.returncode == 2 and "MODEL.om=DECLARATION.toml" in bad.stderr


def test_a_program_killed_by_a_signal_has_no_summary_and_its_code(tmp_path):
    """A program that dies of a signal exits 128 + the signal, saying so, without a summary."""
    _compile(tmp_path, "seg", '#include <signal.h>\n#include "acl/acl.h"\nint main(void) { aclrtSetDevice(0); '
                              'raise(SIGSEGV); return 0; }\n')
    done = _cli("run", "--out", str(tmp_path), str(tmp_path / "seg"), cwd=tmp_path)
    assert done.returncode == 128 + signal.SIGSEGV
    assert "ended by signal SIGSEGV" in done.stderr


def test_cli_compiler_wrapper_and_config(tmp_path):
    """`acl-emu cc` builds a program whose arguments argparse never sees; `acl-emu config --cflags --libs`
    prints the flags on one line and --env the toolkit variables."""
    src = tmp_path / "p.c"
    src.write_text('#include "acl/acl.h"\nint main(void) { return aclrtSetDevice(0) != ACL_SUCCESS; }\n')
    assert _cli("cc", str(src), "-o", str(tmp_path / "p"), "-O2", "-Wall").returncode == 0
    assert subprocess.run([str(tmp_path / "p")], timeout=60).returncode == 0
    flags = _cli("config", "--cflags", "--libs")
    assert flags.returncode == 0 and flags.stdout.count("\n") == 1 and "-lascendcl" in flags.stdout
    env = _cli("config", "--env").stdout
    for name in ("DDK_PATH", "NPU_HOST_LIB", "INSTALL_DIR", "ASCEND_HOME_PATH", "SOC_VERSION", "LD_LIBRARY_PATH"):
        assert f"export {name}=" in env


def _build_and_run(tmp_path: Path, name: str, source: str, *args: str, env: dict | None = None, timeout: float = 60):
    _compile(tmp_path, name, source, "-g", "-lpthread")
    return subprocess.run([str(tmp_path / name), *args], capture_output=True, text=True, timeout=timeout,
                          env=_program_env(env))


def test_a_callback_for_a_thread_that_ended_fails_the_wait_as_in_pyacl(tmp_path):
    """A blocking callback for a subscribed pthread that has ended: the synchronize returns 507046, as the same
    program gets through pyACL, instead of waiting forever (bridge.thread_ended, Core.ended_threads)."""
    done = _build_and_run(tmp_path, "ended", r'''
#include <stdio.h>
#include <pthread.h>
#include "acl/acl.h"
static aclrtStream s;
static void cb(void *d) { (void)d; }
static void *worker(void *arg) { (void)arg; aclrtSetDevice(0); aclrtSubscribeReport((uint64_t)pthread_self(), s);
                                 return NULL; }
int main(void) {
    aclrtSetDevice(0); aclrtCreateStream(&s);
    pthread_t t; pthread_create(&t, NULL, worker, NULL); pthread_join(t, NULL);
    aclError launched = aclrtLaunchCallback(cb, NULL, ACL_CALLBACK_BLOCK, s);
    printf("%d %d\n", launched, aclrtSynchronizeStream(s));
    return 0;
}
''')
    assert done.stdout.split() == ["0", "507046"], done.stdout + done.stderr


def test_freed_page_locked_memory_is_not_the_programs_own(tmp_path):
    """After aclrtFreeHost, a copy from that memory fails with 100000 as through pyACL (it is not taken as the
    program's own pageable memory), and the sanitizer reports the use after free with the free's line."""
    source = r'''
#include <stdio.h>
#include "acl/acl.h"
int main(void) {
    void *h, *d; aclrtSetDevice(0);
    aclrtMallocHost(&h, 4096); aclrtMalloc(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtFreeHost(h);
    printf("%d\n", aclrtMemcpy(d, 4096, h, 4096, ACL_MEMCPY_HOST_TO_DEVICE));
    return 0;
}
'''
    src = _compile(tmp_path, "uaf", source, "-g")
    done = _cli("run", "--sanitize", "--out", str(tmp_path), str(tmp_path / "uaf"), cwd=tmp_path)
    line = source.splitlines().index(next(ln for ln in source.splitlines() if "aclrtMemcpy(" in ln)) + 1
    assert done.stdout.splitlines()[0] == "100000", done.stdout + done.stderr
    assert "use-after-free" in done.stderr and f"{src.name}:{line}" in done.stderr


def test_an_array_longer_than_the_library_reads_is_refused_with_a_message(tmp_path):
    """A batch whose numBatches passes what the library reads from a program (2^20 entries) is 100000 with a
    message from aclGetRecentErrMsg, never a crash."""
    done = _build_and_run(tmp_path, "huge", r'''
#include <stdio.h>
#include "acl/acl.h"
int main(void) {
    void *d; void *h; size_t size = 64, fail = 0; aclrtSetDevice(0);
    aclrtMallocHost(&h, 64); aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpyBatchAttr attr = {{0, ACL_MEM_LOCATION_TYPE_DEVICE}, {0, ACL_MEM_LOCATION_TYPE_HOST}, {0}};
    size_t index = 0;
    aclError r = aclrtMemcpyBatch(&d, &size, &h, &size, (size_t)1 << 21, &attr, &index, 1, &fail);
    const char *why = aclGetRecentErrMsg();
    printf("%d %s\n", r, why ? why : "(null)");
    return 0;
}
''')
    assert done.stdout.startswith("100000 2097152 entries: more than"), done.stdout + done.stderr


def test_malloc_with_a_config_writes_the_address_and_names_a_null_output(tmp_path):
    """aclrtMallocWithCfg and aclrtMallocHostWithCfg read the program's aclrtMallocConfig (or none), write the
    address, and a null output pointer is 100000 with a message naming the parameter."""
    done = _build_and_run(tmp_path, "cfg", r'''
#include <stdio.h>
#include "acl/acl.h"
int main(void) {
    void *d = NULL, *h = NULL; aclrtSetDevice(0);
    aclrtMallocAttribute a[1]; a[0].attr = ACL_RT_MEM_ATTR_MODULE_ID; a[0].value.moduleId = 3;
    aclrtMallocConfig cfg = {a, 1};
    printf("%d ", aclrtMallocWithCfg(&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST, &cfg));
    printf("%d ", aclrtMallocHostWithCfg(&h, 4096, NULL));
    printf("%d %d ", d != NULL, h != NULL);
    printf("%d ", aclrtMallocWithCfg(NULL, 4096, ACL_MEM_MALLOC_HUGE_FIRST, NULL));
    printf("%s ", aclGetRecentErrMsg());
    printf("%d ", aclrtMallocHostWithCfg(NULL, 4096, &cfg));
    printf("%s\n", aclGetRecentErrMsg());
    return 0;
}
''')
    assert done.stdout.split() == ["0", "0", "1", "1", "100000", "aclrtMallocWithCfg:", "devPtr", "is", "null",
                                   "100000", "aclrtMallocHostWithCfg:", "ptr", "is", "null"], done.stdout + done.stderr
