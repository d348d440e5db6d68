"""Kernel sources for the host compiler: what `ascendc_library` and `acl-emu c++` do to a kernel file.

The device dialect is mostly macros of kernel_operator.h (`__global__`, `__aicore__`, `__gm__`, `GM_ADDR`); what a
host compiler cannot parse is rewritten here, in place, so that every line keeps its number (errors and debuggers
name the kernel file's own lines):

- a launch `name<<<blockDim, l2ctrl, stream>>>(args)` becomes `acl_emu::launch<&name>("name", blockDim, l2ctrl,
  stream, args)` (launch.h: the arguments converted to the kernel's parameter types, packed, and queued on the
  stream by aclEmuLaunchKernel, whose code is the expression's value, as the generated stub's is);
- `asm("trap")` and its spellings become `trap()`.

After the source, for each `extern "C"` kernel: `acl_emu_kernel_<name>`, what the emulator looks a kernel up by
(a kernel binary's aclrtBinaryGetFunction), and `aclrtlaunch_<name>`, the function of the header
`aclrtlaunch_<name>.h` written beside (ACLRT_LAUNCH_KERNEL), as the CANN toolkit generates them: `__gm__`
pointers as `void *`, scalars as they are, other types (a tiling struct) by pointer, copied by value.

A construct outside what is emulated (the Cube unit's matrix instructions) stops here with one line naming it and
its file:line (`NotEmulated`).
"""
from __future__ import annotations

import functools
import os
import platform
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import files

# What the emulator does not run yet, and the unit it belongs to: a call of it (`Name(` or `Name<`) outside comments,
# in a source that does not define the name itself. (Other AscendC functions not here fail to compile, named by
# the compiler at their file:line.)
NOT_EMULATED = {name: "the Cube unit's matrix instructions" for name in (
    "Mmad", "LoadData", "LoadDataWithTranspose", "Fixpipe", "Matmul", "MatmulImpl", "REGIST_MATMUL_OBJ", "Conv3D",
    "BatchMatmul")}


class NotEmulated(Exception):
    """A kernel source uses what the emulator does not run: `str(e)` names it and its file:line."""


@dataclass(frozen=True)
class Param:
    ctype: str  # as written, without the name
    name: str

    @property
    def pointer(self) -> bool:
        return "*" in self.ctype or self.ctype.split()[-1] == "GM_ADDR"

    def host_type(self) -> str:
        """The parameter's type in aclrtlaunch_<kernel>'s prototype."""
        if self.pointer:
            return "void *"
        if _SCALAR.fullmatch(" ".join(self.ctype.replace("const", " ").split())):
            return self.ctype.replace("__gm__", "").strip()
        return f"const {self.ctype.replace('const', '').strip()} *"

    def by_value(self) -> bool:
        return not self.pointer and self.host_type().endswith("*")


@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple[Param, ...]
    line: int
    extern_c: bool


_SCALAR = re.compile(r"(?:unsigned |signed )?(?:bool|char|short|int|long|long long|float|double|size_t|half|"
                     r"bfloat16_t|u?int(?:8|16|32|64)_t)")
_KERNEL = re.compile(r"__global__\b[^;{}()]*?\b(\w+)\s*\(")
_CHEVRON = re.compile(r"([A-Za-z_]\w*(?:\s*<[^<>;]*>)?)\s*<<<")
_TRAP = re.compile(r"\b(?:__asm__|asm)\s*(?:volatile\s*|__volatile__\s*)?\(\s*\"trap\"\s*\)")


def _blank_comments(text: str) -> str:
    """`text` with comments and string and character literals' contents replaced by spaces (newlines kept), so
    that offsets into it are offsets into `text`."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
            continue
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _closing(code: str, start: int, opening: str = "(", closing: str = ")") -> int:
    """The index of the bracket closing the one at `start`."""
    depth = 0
    for i in range(start, len(code)):
        if code[i] == opening:
            depth += 1
        elif code[i] == closing:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced")


def _split(text: str) -> list[str]:
    """Split a parameter or argument list at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "(<[{":
            depth += 1
        elif c in ")>]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _param(text: str) -> Param:
    m = re.fullmatch(r"(.*?[\s*&])(\w+)\s*(?:=.*)?", " ".join(text.split()))
    if m is None or not m.group(1).strip():
        raise ValueError(text)
    return Param(m.group(1).strip(), m.group(2))


def kernels(text: str) -> list[Kernel]:
    """The kernels (`__global__` functions defined) of a source."""
    code = _blank_comments(text)
    found = []
    for m in _KERNEL.finditer(code):
        close = _closing(code, m.end() - 1)
        after = code[close + 1:close + 200].lstrip()
        if not after.startswith("{"):
            continue  # a declaration
        head = 1 + max(code.rfind(c, 0, m.start()) for c in ";{}")  # (the declaration's own words)
        inner = code[m.end():close].strip()
        params = () if inner in ("", "void") else tuple(_param(p) for p in _split(inner))
        found.append(Kernel(m.group(1), params, code.count("\n", 0, m.start()) + 1,
                            re.search(r'extern\s*"C"', text[head:m.start()]) is not None))
    return found


def check(text: str, path: str) -> None:
    """NotEmulated for the first construct of NOT_EMULATED the source uses."""
    code = _blank_comments(text)
    for name, unit in NOT_EMULATED.items():
        m = re.search(rf"\b{name}\s*[(<]", code)
        if m is not None and re.search(rf"\b(?:class|struct|void|auto)\s+{name}\b", code) is None:
            line = code.count("\n", 0, m.start()) + 1
            raise NotEmulated(f"{path}:{line}: {name} is not emulated ({unit}): acl-emu runs AscendC kernels of "
                              f"scalar code and the vector unit")


def rewrite(text: str, path: str) -> str:
    """The source as the host compiler takes it (see the module's docstring), lines where they were."""
    check(text, path)
    code = _blank_comments(text)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), in order
    for m in _CHEVRON.finditer(code):
        name = re.sub(r"\s+", "", m.group(1))
        inside_end = code.find(">>>", m.end())
        if inside_end < 0:
            continue
        config = text[m.end():inside_end]
        call = code.find("(", inside_end + 3)
        if call < 0 or code[inside_end + 3:call].strip():
            continue
        close = _closing(code, call)
        args = text[call + 1:close]
        plain = re.sub(r"<.*", "", name)
        joined = ", ".join(part for part in (config.strip(), args.strip()) if part)
        edits.append((m.start(), close + 1, f'acl_emu::launch<&{name}>("{plain}", {joined})'))
    for m in _TRAP.finditer(text):
        edits.append((m.start(), m.end(), "trap()"))
    edits.sort()
    out, at = [], 0
    for start, end, new in edits:
        if start < at:
            continue
        out.append(text[at:start])
        out.append(new + "\n" * text.count("\n", start, end))  # (lines kept)
        at = end
    out.append(text[at:])
    return f'#line 1 "{path}"\n' + "".join(out) + _epilogue(kernels(text))


def _epilogue(found: list[Kernel]) -> str:
    lines = ["", "/* -- acl-emu: the kernels' entries and launch stubs (emu/device/rewrite.py) -- */"]
    for k in found:
        if not k.extern_c:
            continue
        lines.append(f'extern "C" __attribute__((visibility("default"))) const acl_emu_kernel_info *'
                     f'acl_emu_kernel_{k.name}(void) {{ return acl_emu::info<&{k.name}>("{k.name}"); }}')
        params = ", ".join(["uint32_t blockDim", "void *stream"] + [f"{p.host_type()} {p.name}" for p in k.params])
        args = ", ".join(["blockDim", "nullptr", "stream"] + [f"*{p.name}" if p.by_value() else p.name
                                                                for p in k.params])
        lines.append(f'extern "C" __attribute__((visibility("default"))) uint32_t aclrtlaunch_{k.name}({params}) '
                     f'{{ return acl_emu::launch_from<&{k.name}>(__builtin_return_address(0), "{k.name}", {args}); }}')
    return "\n".join(lines) + "\n"


def header(k: Kernel) -> str:
    """aclrtlaunch_<kernel>.h, as the toolkit generates it."""
    guard = f"HEADER_ACLRTLAUNCH_{k.name.upper()}_H"
    params = ", ".join(["uint32_t blockDim", "aclrtStream stream"] + [f"{p.host_type()} {p.name}" for p in k.params])
    return (f"#ifndef {guard}\n#define {guard}\n#include \"acl/acl_base.h\"\n\n#ifndef ACLRT_LAUNCH_KERNEL\n"
            f"#define ACLRT_LAUNCH_KERNEL(kernel_func) aclrtlaunch_##kernel_func\n#endif\n\n"
            f'#ifdef __cplusplus\nextern "C"\n#endif\nuint32_t aclrtlaunch_{k.name}({params});\n#endif\n')


def prepare(source: Path, out_dir: Path, include_dir: Path | None = None) -> tuple[Path, list[Kernel]]:
    """Write the rewritten `source` into `out_dir` (and, into `include_dir`, the headers of its extern "C"
    kernels); its path and the kernels. Files whose text would not change are left alone (no rebuild)."""
    text = files.read_text(source, files.SOURCE_BYTES, "a kernel source")
    out = out_dir / f"{source.stem}.acl_emu.cpp"
    _write(out, rewrite(text, str(source.resolve())))
    found = kernels(text)
    if include_dir is not None:
        for k in found:
            if k.extern_c:
                _write(include_dir / f"aclrtlaunch_{k.name}.h", header(k))
    return out, found


def _write(path: Path, text: str) -> None:
    try:
        if files.read_text(path, 2 * files.SOURCE_BYTES, "a rewritten kernel source") == text:
            return
    except files.FileRefused:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def is_kernel_source(path: Path) -> bool:
    """Whether a C++ source is device code: it defines a `__global__` function."""
    try:
        text = files.read_text(path, files.SOURCE_BYTES, "a kernel source")
    except files.FileRefused:
        return False
    return re.search(r"\b__global__\b", _blank_comments(text)) is not None


def compile_args(argv: list[str], work: Path) -> list[str]:
    """`acl-emu c++ ARGS` with device code: each kernel source among ARGS prepared into `work` (its headers in
    `work`/include) and replaced by what the host compiler takes, with AscendC's include folder and the flags
    kernels need (`kernel_flags`). ARGS without a kernel source come back as they were."""
    from .native import INCLUDE
    out, folders = [], []
    for arg in argv:
        path = Path(arg)
        if not arg.startswith("-") and path.suffix in (".cpp", ".cc", ".cxx", ".asc") and is_kernel_source(path):
            prepared, _ = prepare(path, work, work / "include")
            out.append(str(prepared))
            folders.append(f"-iquote{path.resolve().parent}")  # (its own #include "...")
        else:
            out.append(arg)
    if not folders:
        return argv
    checked = not any(re.match(r"-fsanitize=.*address", a) for a in argv)  # (the program's own ASan: not both)
    return [f"-I{INCLUDE}", f"-I{work / 'include'}", *dict.fromkeys(folders), *kernel_flags(checked), *out]


# The compiler's checks of loads and stores, made calls to the hooks of acl_emu/core.h (which report the kernel's
# own accesses of global memory to the sanitizer): GCC's and Clang's spellings. No stack or globals checked.
CHECK_PARAMS = ("asan-instrumentation-with-call-threshold=0", "asan-stack=0", "asan-globals=0")
CHECKED_GNU = ("-fsanitize=kernel-address", *(f"--param={p}" for p in CHECK_PARAMS), "-DACL_EMU_GM_CHECKED=1")
CHECKED_CLANG = ("-fsanitize=kernel-address", *(f for p in CHECK_PARAMS for f in ("-mllvm", f"-{p}")),
                 "-DACL_EMU_GM_CHECKED=1")


def kernel_flags(checked: bool = True) -> tuple[str, ...]:
    """What a kernel source compiles with: C++17, no strict aliasing (kernels cast global memory freely), on an
    x86 host with F16C its half conversions in hardware (without it, each is a library call), and with `checked`
    the compiler's checks of loads and stores where the C++ compiler ($CXX, else c++) has them (`checks`)."""
    flags = ("-std=c++17", "-fno-strict-aliasing")
    try:
        cpuinfo = files.read_text("/proc/cpuinfo", files.CONFIG_BYTES, "the CPU's description")
    except files.FileRefused:
        cpuinfo = ""
    f16c = any(line.startswith("flags") and " f16c" in line for line in cpuinfo.splitlines())
    flags += ("-mf16c",) if f16c and platform.machine() in ("x86_64", "AMD64") else ()
    return flags + (checks() if checked else ())


@functools.cache
def checks() -> tuple[str, ...]:
    """The flags that make the C++ compiler call the hooks for each load and store (CHECKED_GNU or
    CHECKED_CLANG, whichever it takes), or none: then a kernel's own accesses of global memory are not seen one
    by one, and the sanitizer takes a launch to touch the whole of each allocation it is given."""
    cxx = shlex.split(os.environ.get("CXX") or "c++")
    with tempfile.TemporaryDirectory(prefix="acl-emu-probe-") as work:
        source = Path(work) / "probe.cpp"
        source.write_text("int probe(int *p) { return *p; }\n")
        for flags in (CHECKED_GNU, CHECKED_CLANG):
            try:
                done = subprocess.run([*cxx, *flags, "-c", str(source), "-o", str(Path(work) / "probe.o")],
                                      capture_output=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                return ()
            if done.returncode == 0 and not done.stderr:
                return flags
    return ()
