"""The C types of the headers in the bridge (emu.capi.build.typedefs, marshal.pointee): an output parameter of a
typedef'd type is written with the width and signedness of the type the headers declare it to be."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sysconfig

import pytest

from emu import capi
from emu.capi import build, marshal
from emu.capi.bridge import generic

HEADER = """
typedef uint64_t myCount;
typedef size_t mySize;
typedef int32_t myInt;
typedef myCount myAlias;
typedef uint16_t myHalf;
typedef unsigned long long myWide;
typedef const int8_t mySmall;
typedef enum { MY_A = 0, MY_B = 1 } myEnum;
typedef void *myHandle;
typedef struct myStruct myStruct;
typedef myLoop myLoop;
ACL_FUNC_VISIBILITY aclError myGet(myCount *a, mySize *b, myInt *c, myAlias *d, myHalf *e, myWide *f,
                                   mySmall *g, myEnum *h, myHandle *i);
"""
WIDTHS = {"a": 8, "b": 8, "c": 4, "d": 8, "e": 2, "f": 8, "g": 1, "h": 4, "i": 8}


def test_typedefs_follow_the_headers_declarations_to_a_known_type():
    """Each typedef stands for the type its declaration (or chain of declarations) names: a scalar typedef its
    known type, an enum an int, a pointer a pointer; a struct, or a chain ending nowhere, is not listed."""
    types = build.typedefs([HEADER])
    assert {n: t for n, t in types.items() if n.startswith("my")} == {
        "myCount": "uint64_t", "mySize": "size_t", "myInt": "int32_t", "myAlias": "uint64_t", "myHalf": "uint16_t",
        "myWide": "unsigned long long", "mySmall": "int8_t", "myEnum": "int", "myHandle": "void *"}
    real = build.typedefs(build.header_texts())
    assert (real["aclFloat16"], real["aclError"], real["aclrtRunMode"], real["aclrtStream"]) == (
        "uint16_t", "int", "int", "void *")


def test_type_kinds_are_the_kinds_of_what_the_typedefs_stand_for():
    """The kind each typedef is passed as (build.type_kinds) is its target's: no typedef is read two ways."""
    for texts in ([HEADER], build.header_texts()):
        kinds = build.type_kinds(texts)
        for name, target in build.typedefs(texts).items():
            assert kinds[name] == ("p" if target == "void *" else build.KNOWN_TYPES[target]), name


def test_every_known_type_is_written_with_its_width_and_signedness():
    """Each C type the generator knows (but char, a string) has a ctypes type in the bridge, unsigned for an
    unsigned kind, signed for a signed one, floating for a floating one."""
    table = marshal._CTYPES
    assert set(table) == set(build.KNOWN_TYPES) - {"char"}
    for name, kind in build.KNOWN_TYPES.items():
        if name == "char":
            continue
        value = table[name](-1).value
        assert (value < 0) if kind in "if" else (value > 0), name


def test_an_output_of_a_typedef_is_written_with_the_typedefs_real_width():
    """A generic handler writes each typedef'd output with its declared type: a typedef of uint64_t, size_t or
    unsigned long long all 8 bytes, int32_t 4 and signed, uint16_t 2, int8_t 1, an enum an int, a handle a
    pointer; the bytes after each output are untouched."""
    proto = build.prototypes([HEADER])[0]
    values = (1 << 40 | 7, 1 << 33, -5, (1 << 64) - 1, 0xBEEF, 1 << 63, -2, 1, 0x1234_5678_9ABC)
    handler = generic(proto, lambda: values, build.typedefs([HEADER]))
    cells = [(ctypes.c_uint8 * 16)(*[0xAA] * 16) for _ in proto.params]
    assert handler(*(ctypes.addressof(c) for c in cells)) == 0
    for param, cell, value in zip(proto.params, cells, values):
        width = WIDTHS[param.name]
        assert bytes(cell)[width:] == b"\xaa" * (16 - width), param.name
        assert int.from_bytes(bytes(cell)[:width], "little", signed=value < 0) == value, param.name


CC = shutil.which(os.environ.get("CC", "cc"))


@pytest.mark.skipif(not CC, reason="needs a C compiler")
def test_the_known_types_widths_are_the_c_compilers(tmp_path):
    """ctypes' width of each known type is what the compiler that builds the library says sizeof is."""
    names = sorted(set(build.KNOWN_TYPES) - {"char"})
    body = "".join(f'    printf("%zu\\n", sizeof({n}));\n' for n in names)
    src = tmp_path / "sizes.c"
    src.write_text(f'#include <stdio.h>\n#include "acl/acl.h"\nint main(void) {{\n{body}    return 0;\n}}\n')
    subprocess.run([*build.compiler(), f"-I{build.INCLUDE}", str(src), "-o", str(tmp_path / "sizes")], check=True)
    out = subprocess.run([str(tmp_path / "sizes")], capture_output=True, text=True, check=True).stdout.split()
    assert dict(zip(names, map(int, out))) == {n: ctypes.sizeof(marshal._CTYPES[n]) for n in names}


@pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                    reason="needs a C compiler and a shared libpython")
def test_typedef_outputs_of_real_apis_are_written_with_their_width(tmp_path):
    """Through libascendcl.so: aclrtGetRunMode writes its enum as 4 bytes, aclrtCreateStream its aclrtStream
    handle as a pointer and aclrtGetMemInfo its size_t outputs as 8 bytes, each output followed by a guard the
    library leaves as it was."""
    src = tmp_path / "widths.c"
    src.write_text(r'''
#include <stdio.h>
#include "acl/acl.h"
int main(void) {
    struct { aclrtRunMode mode; uint32_t guard; } m = {99, 0xA5A5A5A5u};
    struct { aclrtStream stream; uint64_t guard; } s = {NULL, 0xA5A5A5A5A5A5A5A5ull};
    struct { size_t free, total; uint64_t guard; } i = {0, 0, 0xA5A5A5A5A5A5A5A5ull};
    aclrtSetDevice(0);
    int r1 = aclrtGetRunMode(&m.mode), r2 = aclrtCreateStream(&s.stream);
    int r3 = aclrtGetMemInfo(ACL_HBM_MEM, &i.free, &i.total);
    printf("%d %d %d %d %x %d %llx %d %llx\n", r1, r2, r3, (int)m.mode, m.guard, s.stream != NULL,
           (unsigned long long)s.guard, i.total > ((size_t)1 << 32), (unsigned long long)i.guard);
    return 0;
}
''')
    exe = tmp_path / "widths"
    lib = build.library_dir()
    subprocess.run([*build.compiler(), *capi.cflags(), str(src), "-o", str(exe), *capi.libs(lib)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env)
    assert done.stdout.split() == ["0", "0", "0", "1", "a5a5a5a5", "1", "a5a5a5a5a5a5a5a5", "1",
                                   "a5a5a5a5a5a5a5a5"], done.stdout + done.stderr
