"""Building libascendcl.so: the headers' prototypes made into exported functions, compiled once into a cache.

Every function the headers in emu/capi/include declare (`ACL_FUNC_VISIBILITY <type> <name>(<params>);`) is
exported: build.py writes, for each, a C function of that prototype that hands its arguments to
`emu_call` (native.c), which calls the function's handler in emu.capi.bridge. The headers are thus the
one list of what a program can link; the bridge decides what each call does (an emulated API, or a clear
"not emulated" failure).

The library embeds the Python running this module (its packages, so the emulator it imports is this one)
and is built with the machine's C compiler ($CC, else cc) into a cache folder named after everything it is
made from ($ACL_EMU_CACHE, else $XDG_CACHE_HOME/acl-emu, else ~/.cache/acl-emu), on first use, under a
lock, and renamed into place whole: a build that fails or is killed leaves nothing half-made.

Each process that uses a library folder (`library_dir`, and the library itself when a program loads it) touches
the folder's stamp once; a new build removes the sibling folders no one has used for PRUNE_AFTER_DAYS (`prune`).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from ..errors import ACL_ERROR_INTERNAL_ERROR

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
NATIVE = HERE / "native.c"
LIBRARY = "libascendcl.so"
STAMP = ".used"  # in a library folder: its mtime is when a process last used the folder

# A library folder unused for this long is removed when another is built. Every change of acl-emu or of its
# Python makes a new folder of a few MB, so old ones pile up; but the cache may be shared by other installed
# acl-emus (another venv, another version) still using theirs, and a built program's rpath names its folder.
# Each of those touches the folder's stamp when it builds or runs, so a month without a touch means nothing
# has used the folder for a month (a program that still has it open keeps its mapped copy; one run again
# after a month is relinked with `acl-emu cc`). Long enough for a program run once a month, short enough
# that a cache holds a month of versions at most.
PRUNE_AFTER_DAYS = 30

# What the C types of the headers are to Python: p pointer, u unsigned integer, i signed integer (enums too),
# f floating point, v nothing. A type the generator does not know stops the build with its name.
_SIGNED = {"int", "int8_t", "int16_t", "int32_t", "int64_t", "long", "long long", "short", "signed char", "aclError",
           "char"}
_UNSIGNED = {"unsigned", "unsigned int", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t", "uintptr_t",
             "unsigned long", "unsigned long long", "unsigned short", "unsigned char"}
_FLOAT = {"float", "double"}
KNOWN_TYPES = {t: "i" for t in _SIGNED} | {t: "u" for t in _UNSIGNED} | {t: "f" for t in _FLOAT}  # C type: kind
_PROTOTYPE = re.compile(r"ACL_FUNC_VISIBILITY\s+([^;(]*?)\b(\w+)\s*\(([^;]*?)\)\s*;", re.S)
_ENUM = re.compile(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", re.S)
_POINTER_TYPEDEF = re.compile(r"typedef\s+[\w\s]+\*\s*(\w+)\s*;")
_FUNCTION_TYPEDEF = re.compile(r"typedef\s+[\w\s*]+\(\s*\*\s*(\w+)\s*\)")
_SCALAR_TYPEDEF = re.compile(r"typedef\s+((?:\w+\s+)*?\w+)\s+(\w+)\s*;")
_QUALIFIERS = ("const", "volatile", "struct", "enum")


class Param(NamedTuple):
    ctype: str  # as the header writes it, without the name: "const void *", "size_t"
    name: str
    kind: str  # p, u, i, f (see above)


class Prototype(NamedTuple):
    returns: str  # the C return type
    kind: str  # its kind: p, u, i, f or v
    name: str
    params: tuple[Param, ...]


def headers() -> list[Path]:
    return sorted(INCLUDE.rglob("*.h"))


def _without_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def typedefs(texts: list[str]) -> dict[str, str]:
    """{typedef name: the C type it stands for} for the headers' typedefs (or `texts`'): "int" for an enum,
    "void *" for a pointer or a function pointer, and for `typedef <type> <name>;` the type of KNOWN_TYPES its
    chain of typedefs ends at (`typedef uint64_t a; typedef a b;`: both "uint64_t"). A typedef of a struct, or
    of a type neither known nor defined, is not listed."""
    found: dict[str, str] = {}
    named: dict[str, str] = {}
    for text in texts:
        found |= {name: "int" for name in _ENUM.findall(text)}
        found |= {name: "void *" for name in _POINTER_TYPEDEF.findall(text) + _FUNCTION_TYPEDEF.findall(text)}
        for target, name in _SCALAR_TYPEDEF.findall(text):
            named.setdefault(name, " ".join(w for w in target.split() if w not in _QUALIFIERS))
    for name in named:
        target = _chain_end(name, named, found)
        if target is not None and name not in found:
            found[name] = target
    return found


def _chain_end(name: str, named: dict[str, str], found: dict[str, str]) -> str | None:
    """The known type (or enum, or pointer) that the scalar typedef `name` names, following other typedefs."""
    seen = {name}
    target = named[name]
    while target not in KNOWN_TYPES and target not in found:
        if target in seen or target not in named:
            return None
        seen.add(target)
        target = named[target]
    return target if target in KNOWN_TYPES else found[target]


def type_kinds(texts: list[str]) -> dict[str, str]:
    """{type name: kind} for the C types the generator knows and the headers' typedefs (`typedefs`), each
    typedef of the kind of the type it stands for."""
    kinds = dict(KNOWN_TYPES, void="v")
    for name, target in typedefs(texts).items():
        kinds.setdefault(name, "p" if "*" in target else KNOWN_TYPES[target])
    return kinds


def _kind(ctype: str, kinds: dict[str, str], where: str) -> str:
    if "*" in ctype:
        return "p"
    base = " ".join(w for w in ctype.split() if w not in _QUALIFIERS)
    if base not in kinds:
        raise ValueError(f"{where}: the C type {ctype!r} is not one the library generator knows")
    return kinds[base]


def _param(text: str, kinds: dict[str, str], where: str) -> Param:
    m = re.fullmatch(r"(.*?)(\w+)\s*(\[\s*\])?", text.strip(), re.S)
    if m is None or not m.group(1).strip():
        raise ValueError(f"{where}: cannot read the parameter {text.strip()!r}")
    ctype = " ".join(m.group(1).split()) + (" *" if m.group(3) else "")
    ctype = ctype.replace(" *", "*").replace("*", " *").replace("* *", "**").strip()
    return Param(ctype, m.group(2), _kind(ctype, kinds, where))


def header_texts() -> list[str]:
    """The headers' text without comments, each header once, in `headers()`'s order."""
    return [_without_comments(p.read_text()) for p in headers()]


def prototypes(texts: list[str] | None = None) -> list[Prototype]:
    """Every function the headers declare (or `texts`), in the order they declare them (each name once)."""
    texts = header_texts() if texts is None else texts
    kinds = type_kinds(texts)
    found: dict[str, Prototype] = {}
    for text in texts:
        for returns, name, params in _PROTOTYPE.findall(text):
            returns = " ".join(returns.split())
            if "..." in params:
                continue  # variadic (aclAppLog): written in native.c
            parts = [p for p in params.split(",") if p.strip()]
            if [p.strip() for p in parts] == ["void"]:
                parts = []
            if len(parts) > 16:
                raise ValueError(f"{name}: more than 16 parameters")
            where = f"{name}()"
            found.setdefault(name, Prototype(returns, _kind(returns, kinds, where), name,
                                             tuple(_param(p, kinds, where) for p in parts)))
    return list(found.values())


def _function(index: int, proto: Prototype) -> str:
    """The C definition of one exported function."""
    params = ", ".join(f"{p.ctype} {p.name}" if not p.ctype.endswith("*") else f"{p.ctype}{p.name}"
                       for p in proto.params) or "void"
    kinds = "".join(p.kind for p in proto.params)
    failed = ACL_ERROR_INTERNAL_ERROR if proto.returns == "aclError" else 0  # a fault of the emulator
    values = ", ".join(f"{{.{p.kind} = {_cast(p)}}}" for p in proto.params)
    args = f"emu_arg a[] = {{{values}}};\n    " if proto.params else ""
    call = (f"emu_call({index}, \"{kinds}\", {'a' if proto.params else 'NULL'}, {len(proto.params)}, {failed}, "
            f"__builtin_return_address(0))")
    if proto.kind == "v":
        body = f"{args}(void){call};"
    elif proto.kind == "f":
        body = (f"{args}uint64_t r = {call};\n    double d;\n    memcpy(&d, &r, sizeof d);\n"
                f"    return ({proto.returns})d;")
    elif proto.kind == "p":
        body = f"{args}return ({proto.returns})(uintptr_t){call};"
    else:
        body = f"{args}return ({proto.returns}){call};"
    return f"ACL_FUNC_VISIBILITY {proto.returns} {proto.name}({params})\n{{\n    {body}\n}}\n"


def _cast(p: Param) -> str:
    if p.kind == "p":
        return f"(const void *){p.name}"
    if p.kind == "u":
        return f"(uint64_t){p.name}"
    if p.kind == "i":
        return f"(int64_t){p.name}"
    return f"(double){p.name}"


def sources(protos: list[Prototype]) -> dict[str, str]:
    """The generated files: emu_calls.h (the names, in handler order) and calls.c (the functions)."""
    names = ",\n    ".join(f'"{p.name}"' for p in protos)
    header = (f"/* written by emu/capi/build.py from the headers' prototypes */\n#define EMU_COUNT {len(protos)}\n"
              f"static const char *const EMU_NAMES[EMU_COUNT] = {{\n    {names}\n}};\n")
    calls = ("/* written by emu/capi/build.py from the headers' prototypes */\n#include <stdint.h>\n"
             "#include <string.h>\n#define ENABLE_DVPP_INTERFACE\n#include \"acl/acl.h\"\n"
             "#include \"acl/ops/acl_dvpp.h\"\n\n"
             "typedef union { uint64_t u; int64_t i; double f; const void *p; } emu_arg;\n"
             "uint64_t emu_call(int index, const char *kinds, const emu_arg *args, int n, uint64_t failed,\n"
             "                  const void *caller);\n\n"
             + "\n".join(_function(i, p) for i, p in enumerate(protos)))
    return {"emu_calls.h": header, "calls.c": calls}


# -- compiling ------------------------------------------------------------------------------------------------

def compiler() -> list[str]:
    return shlex.split(os.environ.get("CC") or "cc")


def _python_flags() -> tuple[list[str], list[str]]:
    """(compile flags, link flags) that embed this Python."""
    paths = sysconfig.get_paths()
    includes = sorted({paths["include"], paths["platinclude"]})
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    version = sysconfig.get_config_var("LDVERSION") or sysconfig.get_config_var("VERSION")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise BuildError(f"this Python ({sys.executable}) has no shared libpython to embed; the C library "
                         f"needs a Python built with --enable-shared (python.org, distribution and pyenv "
                         f"builds with PYTHON_CONFIGURE_OPTS=--enable-shared are)")
    return [f"-I{p}" for p in includes], [f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-lpython{version}"]


class BuildError(RuntimeError):
    """The C library could not be built; the message says why and what to do."""


def cache_root() -> Path:
    base = os.environ.get("ACL_EMU_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "acl-emu")
    return Path(base)


def _key(generated: dict[str, str]) -> str:
    h = hashlib.sha256()
    for part in (NATIVE.read_bytes(), *(p.read_bytes() for p in headers()),
                 *(text.encode() for text in generated.values()),
                 sys.executable.encode(), sys.version.encode(), " ".join(compiler()).encode(), str(HERE).encode()):
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:16]


def library_dir() -> Path:
    """The folder holding libascendcl.so for this Python and this emulator, built first if it is not there (and
    then the folders no one has used for PRUNE_AFTER_DAYS removed)."""
    generated = sources(prototypes())
    return cached("capi", _key(generated), LIBRARY, lambda work: _build(generated, work))


def cached(prefix: str, key: str, name: str, make) -> Path:
    """The cache's folder `<prefix>-<key>` holding `name`: made, if it is not there, by `make(work)` filling a
    folder of its own, renamed into place whole (under the cache's lock: a build that fails or is killed leaves
    nothing half-made), after which the folders no one has used for PRUNE_AFTER_DAYS are removed. Touched as
    used, once per process."""
    final = cache_root() / f"{prefix}-{key}"
    if not (final / name).is_file():
        final.parent.mkdir(parents=True, exist_ok=True)
        with open(final.parent / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (final / name).is_file():
                work = Path(tempfile.mkdtemp(prefix=f".{prefix}-", dir=final.parent))
                try:
                    make(work)
                    os.rename(work, final)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
                prune(final.parent, keep=final)
    touch_stamp(final)
    return final


_stamped: set[Path] = set()  # the library folders this process uses (touched once each, never pruned by it)


def touch_stamp(folder: Path) -> None:
    """Mark `folder` as in use now, once per process (a folder this user cannot write is left as it is)."""
    if folder in _stamped:
        return
    _stamped.add(folder)
    try:
        (folder / STAMP).touch()
    except OSError:
        pass


def last_use(folder: Path) -> float:
    """When `folder` was last used, as far as can be told: the latest of its stamp's mtime, its own mtime (a
    folder built before stamps has no stamp) and its library's access time (where the file system keeps access
    times, a program loading the library dates its use, even by an acl-emu that stamps nothing)."""
    times = [folder.stat().st_mtime]
    for path, field in ((folder / STAMP, "st_mtime"), (folder / LIBRARY, "st_atime")):
        try:
            times.append(getattr(path.stat(), field))
        except FileNotFoundError:
            pass
    return max(times)


BUILT = ("capi-", ".capi-", "device-", ".device-")  # the folders builds leave in the cache (and killed builds)


def prune(root: Path, keep: Path, now: float | None = None) -> list[Path]:
    """Remove the folders of `root` that builds leave (BUILT: libraries, and the leftovers of killed builds)
    unused for PRUNE_AFTER_DAYS, except `keep` and the folders this process uses; the folders removed. It never
    raises: a folder it cannot remove stays, and one line on stderr says so."""
    now = time.time() if now is None else now
    try:
        folders = sorted(p for p in root.iterdir() if p.name.startswith(BUILT))
    except OSError:
        return []
    removed, failed = [], []
    for folder in folders:
        if folder == keep or folder in _stamped or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            if now - last_use(folder) >= PRUNE_AFTER_DAYS * 86400:
                _remove(folder)
                removed.append(folder)
        except OSError as e:
            failed.append(f"{folder.name}: {e.strerror or e}")
    if failed:
        print(f"acl-emu: could not remove {len(failed)} unused library folder(s) of {root} ({failed[0]})",
              file=sys.stderr)
    return removed


def _remove(folder: Path) -> None:
    """Rename `folder` out of the way (a process looking it up sees it whole or not at all), then delete it."""
    doomed = folder if folder.name.startswith(".") else folder.with_name(f".{folder.name}.{os.getpid()}.removing")
    if doomed != folder:
        os.rename(folder, doomed)
    shutil.rmtree(doomed)


def _build(generated: dict[str, str], work: Path) -> None:
    """libascendcl.so into `work`: native.c and the generated functions, with the stamp beside it."""
    for name, text in generated.items():
        (work / name).write_text(text)
    py_compile, py_link = _python_flags()
    compile_library([*compiler(), "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-DFUNC_VISIBILITY",
                     f"-I{INCLUDE}", f"-I{work}",
                     *py_compile, f'-DEMU_PYTHON="{_c_string(sys.executable)}"',
                     f'-DEMU_PACKAGE_PARENT="{_c_string(str(HERE.parent.parent))}"', f'-DEMU_STAMP="{STAMP}"',
                     str(NATIVE), str(work / "calls.c"), "-o", str(work / LIBRARY), *py_link, "-lpthread", "-ldl"],
                    LIBRARY)
    for name in ("emu_calls.h", "calls.c"):
        (work / name).unlink()
    (work / STAMP).touch()


def compile_library(command: list[str], library: str) -> None:
    """Run the C compiler's `command`, which builds `library`; BuildError saying why when it cannot."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        raise BuildError(f"no C compiler: {compiler()[0]!r} was not found (install gcc, or set CC)") from None
    if done.returncode != 0:
        raise BuildError(f"building {library} failed:\n{shlex.join(command)}\n{done.stderr.strip()}")


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
