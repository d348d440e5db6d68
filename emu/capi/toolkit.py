"""The emulator dressed as a CANN toolkit, for the build files of C and C++ programs.

Ascend's samples find ACL through environment variables and fixed folders under them: Ascend/samples
read $INSTALL_DIR (or $DDK_PATH and $NPU_HOST_LIB) and use `<root>/runtime/include` and
`<root>/runtime/lib64/stub`; the open-source runtime's examples read $ASCEND_HOME_PATH, source
`<root>/bin/setenv.bash`, use `<root>/include` and `<root>/lib64`, include `$ASCENDC_CMAKE_DIR/ascendc.cmake`
and link ascendcl, acl_rt or acl_dvpp. `tree()` makes that layout in the library's cache folder, every
header and library in it the emulator's, so an unchanged CMake sample builds against the emulator once
`eval "$(acl-emu config --env)"` has set the variables (`environment`).
"""
from __future__ import annotations

import os
import platform
import shlex
import sys
from pathlib import Path

from ..models.atomic import atomic_write
from .build import INCLUDE, LIBRARY, library_dir

HERE_PARENT = Path(__file__).resolve().parent.parent.parent  # the folder holding the package `emu`
LIBRARY_NAMES = ("libascendcl.so", "libacl_rt.so", "libacl_dvpp.so")  # the names samples link: one library
_ASCENDC_CMAKE = """\
# acl-emu: ascendc.cmake of a CANN toolkit. Kernel sources are compiled for the host (emu/device): each is rewritten
# for the host compiler (python -m emu.device prepare: launches, traps, the aclrtlaunch_<kernel> stubs and headers)
# and built against AscendC on the CPU (emu/device/include); the program's launches run on the emulator.
set(ACL_EMU_PYTHON "@PYTHON@")
set(ACL_EMU_PACKAGE_PARENT "@PACKAGE_PARENT@")
set(ACL_EMU_DEVICE_INCLUDE "@DEVICE_INCLUDE@")
set(ACL_EMU_TOOLKIT "@TOOLKIT@")

# What the Ascend/samples executables link for the host side: the toolkit's headers and libraries.
if(NOT TARGET host_intf_pub)
    add_library(host_intf_pub INTERFACE)
    target_include_directories(host_intf_pub INTERFACE "${ACL_EMU_TOOLKIT}/include")
    target_link_directories(host_intf_pub INTERFACE "${ACL_EMU_TOOLKIT}/lib64")
    target_compile_options(host_intf_pub INTERFACE -fPIC $<$<COMPILE_LANGUAGE:CXX>:-std=c++17>)
endif()

function(_acl_emu_prepare target out_var)
    set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/acl_emu/${target}")
    set(inc_dir "${CMAKE_BINARY_DIR}/include/${target}")
    file(MAKE_DIRECTORY "${gen_dir}" "${inc_dir}")
    set(command "${CMAKE_COMMAND}" -E env "PYTHONPATH=${ACL_EMU_PACKAGE_PARENT}" "${ACL_EMU_PYTHON}" -m emu.device
        prepare)
    set(outputs)
    foreach(src ${ARGN})
        get_filename_component(path "${src}" ABSOLUTE)
        get_filename_component(stem "${src}" NAME_WE)
        get_filename_component(dir "${path}" DIRECTORY)
        set(out "${gen_dir}/${stem}.acl_emu.cpp")
        set_source_files_properties("${out}" PROPERTIES COMPILE_OPTIONS "-iquote;${dir}")  # (its own #include "...")
        # now, so that the headers are there before any source including them compiles; again when it changes
        execute_process(COMMAND ${command} "${path}" --out-dir "${gen_dir}" --include-dir "${inc_dir}"
                        RESULT_VARIABLE failed ERROR_VARIABLE said)
        if(failed)
            message(FATAL_ERROR "${said}")
        endif()
        add_custom_command(OUTPUT "${out}" COMMAND ${command} "${path}" --out-dir "${gen_dir}" --include-dir
                           "${inc_dir}" DEPENDS "${path}" VERBATIM)
        list(APPEND outputs "${out}")
    endforeach()
    set(${out_var} ${outputs} PARENT_SCOPE)
endfunction()

function(_acl_emu_kernel_target target)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
    target_include_directories(${target} PRIVATE "${ACL_EMU_DEVICE_INCLUDE}"
                               PUBLIC "$<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/include/${target}>"
                               "${ACL_EMU_TOOLKIT}/include")
    target_compile_options(${target} PRIVATE @KERNEL_FLAGS@)
    # the compiler's checks of loads and stores, which report a kernel's own accesses of global memory to the
    # sanitizer (emu/device/rewrite.py: CHECKED_GNU, CHECKED_CLANG); not with the program's own AddressSanitizer
    if(NOT "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${CMAKE_BUILD_TYPE}}" MATCHES "-fsanitize=[a-z,-]*address")
        if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
            target_compile_options(${target} PRIVATE @CHECKED_GNU@)
        elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
            target_compile_options(${target} PRIVATE @CHECKED_CLANG@)
        endif()
    endif()
    string(TOLOWER "${SOC_VERSION}" soc)
    if(soc MATCHES "^ascend950")
        target_compile_definitions(${target} PRIVATE __NPU_ARCH__=3510)
    elseif(soc MATCHES "^ascend310p")
        target_compile_definitions(${target} PRIVATE __NPU_ARCH__=2002)
    else()
        target_compile_definitions(${target} PRIVATE __NPU_ARCH__=2201)
    endif()
endfunction()

function(ascendc_library target type)
    string(TOUPPER "${type}" kind)
    if(NOT kind MATCHES "^(SHARED|STATIC|OBJECT)$")
        message(FATAL_ERROR "target_type ${type} does not support, the support list is SHARED;STATIC;OBJECT")
    endif()
    _acl_emu_prepare(${target} sources ${ARGN})
    add_library(${target} ${kind} ${sources})
    _acl_emu_kernel_target(${target})
    if(NOT kind STREQUAL "OBJECT")
        target_link_libraries(${target} PUBLIC "${ACL_EMU_TOOLKIT}/lib64/libascendcl.so")
        install(TARGETS ${target} LIBRARY DESTINATION lib ARCHIVE DESTINATION lib RUNTIME DESTINATION bin)
    endif()
    install(DIRECTORY "${CMAKE_BINARY_DIR}/include/" DESTINATION include)
endfunction()

# A kernel binary for aclrtBinaryLoadFromFile: written at build time to <install prefix>/fatbin/<target>/<target>.o,
# as the toolkit writes it (here a shared library of the kernels compiled for the host).
function(ascendc_fatbin_library target)
    _acl_emu_prepare(${target} sources ${ARGN})
    add_library(${target} SHARED ${sources})
    _acl_emu_kernel_target(${target})
    set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".o" OUTPUT_NAME ${target}
                          LIBRARY_OUTPUT_DIRECTORY "${CMAKE_INSTALL_PREFIX}/fatbin/${target}")
endfunction()

function(ascendc_compile_definitions target scope)
    target_compile_definitions(${target} ${scope} ${ARGN})
endfunction()

function(ascendc_include_directories target scope)
    target_include_directories(${target} ${scope} ${ARGN})
endfunction()

# Options before -forward-options-to-host-compiler are the kernel compiler's: here there is one compiler, which
# takes those after the marker (the host compiler's) and leaves the device compiler's own.
function(ascendc_compile_options target scope)
    set(host FALSE)
    foreach(option ${ARGN})
        if(option STREQUAL "-forward-options-to-host-compiler")
            set(host TRUE)
        elseif(host)
            target_compile_options(${target} ${scope} ${option})
        endif()
    endforeach()
endfunction()
"""


def _link(path: Path, target: Path) -> None:
    if path.is_symlink() or path.exists():
        if path.is_symlink() and os.readlink(path) == str(target):
            return
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, path)


def _write(path: Path, text: str) -> None:
    if path.is_file() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as f:
        f.write(text)


def tree() -> Path:
    """The toolkit folder (made or refreshed): include/ and lib64/ at its top and under runtime/, the stub
    folder, set_env.sh and bin/setenv.bash, and the AscendC cmake folder."""
    where = library_dir()
    lib, root = where / LIBRARY, where / "toolkit"
    for include in (root / "include", root / "runtime" / "include"):
        _link(include, INCLUDE)
    for folder in (root / "lib64", root / "lib64" / "stub", root / "runtime" / "lib64",
                   root / "runtime" / "lib64" / "stub"):
        for name in LIBRARY_NAMES:
            _link(folder / name, lib)
    script = shell_lines(root)
    _write(root / "set_env.sh", script)
    _write(root / "bin" / "setenv.bash", script)
    from ..device.native import INCLUDE as device_include
    from ..device.rewrite import CHECK_PARAMS, CHECKED_GNU, kernel_flags
    clang = ["-fsanitize=kernel-address", *(f'"SHELL:-mllvm -{p}"' for p in CHECK_PARAMS), "-DACL_EMU_GM_CHECKED=1"]
    cmake = (_ASCENDC_CMAKE.replace("@PYTHON@", sys.executable).replace("@PACKAGE_PARENT@", str(HERE_PARENT))
             .replace("@DEVICE_INCLUDE@", str(device_include)).replace("@TOOLKIT@", str(root))
             .replace("@KERNEL_FLAGS@", " ".join(f for f in kernel_flags(False) if not f.startswith("-std=")))
             .replace("@CHECKED_GNU@", " ".join(CHECKED_GNU))
             .replace("@CHECKED_CLANG@", " ".join(clang)))
    for folder in ("tikcpp", "compiler/tikcpp", "tools/tikcpp"):  # (where the samples look for it)
        _write(root / folder / "ascendc_kernel_cmake" / "ascendc.cmake", cmake)
    return root


def environment(root: Path | None = None) -> dict[str, str]:
    """The variables Ascend's build files read, each pointing at the emulator's toolkit folder."""
    root = tree() if root is None else root
    return {
        "ASCEND_HOME_PATH": str(root),
        "ASCEND_TOOLKIT_HOME": str(root),
        "ASCEND_INSTALL_PATH": str(root),
        "INSTALL_DIR": str(root),
        "DDK_PATH": str(root),
        "NPU_HOST_LIB": str(root / "runtime" / "lib64" / "stub"),
        "CPU_ARCH": platform.machine(),
        "ASCENDC_CMAKE_DIR": str(root / "tikcpp" / "ascendc_kernel_cmake"),
        "SOC_VERSION": _soc_version(),
    }


def _soc_version() -> str:
    """The SoC name of the product programs will run on ($ACL_EMU_PRODUCT, else the default), as the open-source
    runtime's examples take it from aclrtGetSocName; "" when the emulator knows none."""
    from .. import config
    from ..runtime.callbacks import soc_name

    try:
        product = config.load(os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT)
    except config.ConfigError:
        return ""
    return soc_name(product) or ""


def library_path(root: Path, previous: str = "") -> str:
    """LD_LIBRARY_PATH with the toolkit's library folder first, for programs built without an rpath (the
    samples build with CMAKE_SKIP_RPATH, so LD_LIBRARY_PATH picks the library they run with)."""
    lib = str(root / "runtime" / "lib64")
    return os.pathsep.join([lib] + [p for p in previous.split(os.pathsep) if p and p != lib])


def shell_lines(root: Path | None = None) -> str:
    """`export` lines for a POSIX shell: the variables, and LD_LIBRARY_PATH extended at the time they run."""
    root = tree() if root is None else root
    lines = [f"export {name}={shlex.quote(value)}" for name, value in environment(root).items()]
    lib = shlex.quote(str(root / "runtime" / "lib64"))
    lines.append(f"export LD_LIBRARY_PATH={lib}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}")
    return "\n".join(lines) + "\n"
