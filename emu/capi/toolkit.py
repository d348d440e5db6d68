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
from pathlib import Path

from ..models.atomic import atomic_write
from .build import INCLUDE, LIBRARY, library_dir

LIBRARY_NAMES = ("libascendcl.so", "libacl_rt.so", "libacl_dvpp.so")  # the names samples link: one library
_ASCENDC_CMAKE = """\
# acl-emu: ascendc.cmake of a CANN toolkit. Device code (AscendC kernels) is outside acl-emu's scope: a
# sample that builds a kernel library stops here with this message; a sample without kernels never calls it.
function(ascendc_library name)
    message(FATAL_ERROR "acl-emu: ascendc_library(${name}): AscendC kernels are not emulated; acl-emu runs "
                        "the host program's ACL calls (memory, streams, events, devices, callbacks)")
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
    _write(root / "tikcpp" / "ascendc_kernel_cmake" / "ascendc.cmake", _ASCENDC_CMAKE)
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
