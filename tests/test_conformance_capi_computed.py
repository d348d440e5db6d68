"""The C library computes every value it returns, or fails saying so (issue: aclFloatToFloat16 and aclFloat16ToFloat
were exported and returned 0.0, with a message only on stderr).

- aclFloatToFloat16 / aclFloat16ToFloat: hicann/runtime 681ef7610 src/acl/aclrt_impl/types/fp16_impl.cpp
  FloatToFp16 (round to nearest, ties to even, subnormal halves included; saturating: a magnitude that rounds to
  65520 or more, an infinity and a NaN become +-65504, 0x7BFF / 0xFBFF) and Fp16ToFloat (exact, subnormals
  included; exponent 31 read as an ordinary exponent: +-inf are +-65536.0, a NaN (1 + m/1024) * 65536), called by
  types/fp16.cpp aclFloatToFloat16Impl / aclFloat16ToFloatImpl. Tested against numpy's float16 where the two
  agree and against the reference's rule where they differ (emu/runtime/fp16.py; emu/capi/special.py).
- aclrtGet{TaskId,StreamId,ThreadId,DeviceId,ErrorCode}FromExceptionInfo: src/acl/aclrt_impl/callback.cpp
  aclrtGet*FromExceptionInfoImpl: 0xFFFFFFFF (ACL_ERROR_INVALID_EXCEPTION_INFO) for a null info, else the field of
  rtExceptionInfo (pkg_inc/runtime/rt_external_base.h).
- Every other function the headers declare runs through the runtime, or is not emulated: an aclError function then
  returns 200001, a pointer NULL, and a function returning a number the reference's value for a null tensor
  description, the only one a program can hold (hicann/ge api/acl/acl_model/types/acl_model_tensor_desc_internal.cpp
  aclGetTensorDesc*Impl), each naming itself in aclGetRecentErrMsg (emu/capi/bridge.py NOT_EMULATED_VALUES). The
  list is docs/api.md's section "The C library".
"""
from __future__ import annotations

import math
import os
import shutil
import struct
import subprocess
import sysconfig

import numpy as np
import pytest

from emu.capi import bridge, build, special
from emu.errors import recent_error
from emu.runtime import fp16

CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                              reason="needs a C compiler and a shared libpython")

HALVES = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def numpy_half(value: float) -> int:
    with np.errstate(over="ignore", invalid="ignore"):
        return int(np.array([value], dtype=np.float32).astype(np.float16).view(np.uint16)[0])


# -- aclFloat16ToFloat ----------------------------------------------------------------------------------------------

def test_fp16_to_float_is_exact_for_every_finite_half_as_numpy():
    """Fp16ToFloat: every half whose exponent is not 31 (normal, subnormal, +-0) is its exact value, as numpy's
    float16 -> float32 gives it (the sign of a zero kept)."""
    finite = HALVES[((HALVES >> 10) & 0x1F) != 31]
    want = finite.view(np.float16).astype(np.float32)
    got = np.array([fp16.float16_to_float(int(h)) for h in finite], dtype=np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_fp16_to_float_keeps_no_infinity_or_nan():
    """Fp16ToFloat ("+Inf to 65536.0, -Inf to -65536.0, NaN to 98304.0"): exponent 31 is an ordinary exponent, so a
    half of exponent 31 and mantissa m is (1 + m / 1024) * 65536 with its sign; numpy gives inf or nan."""
    assert fp16.float16_to_float(0x7C00) == 65536.0 and fp16.float16_to_float(0xFC00) == -65536.0
    assert fp16.float16_to_float(0x7E00) == 98304.0
    for h in HALVES[((HALVES >> 10) & 0x1F) == 31].tolist():
        sign = -1.0 if h & 0x8000 else 1.0
        assert fp16.float16_to_float(h) == sign * (1 + (h & 0x3FF) / 1024) * 65536


# -- aclFloatToFloat16 ----------------------------------------------------------------------------------------------

def _float32s_in_range() -> list[float]:
    """Float32s below 65520 in magnitude: every exponent with mantissas at and around each rounding point (ties,
    just below, just above, for the normal shift of 13 bits and every subnormal shift), and 200,000 at random."""
    out = []
    mantissas = {0, 1, 0x7FFFFF, 0x400000, 0x3FFFFF}
    for shift in range(13, 25):  # the bits a half drops: 13 for a normal half, more for a subnormal one
        half = 1 << (shift - 1)
        for base in (0, 1 << shift, 3 << shift, 0x7FFFFF & ~((1 << shift) - 1)):
            for delta in (-1, 0, 1):
                mantissas.add((base + half + delta) & 0x7FFFFF)
    for exp in range(0, 143):
        for m in mantissas:
            for sign in (0, 1):
                out.append(f32((sign << 31) | (exp << 23) | m))
    rng = np.random.default_rng(43)
    bits = (rng.integers(0, 143, 200_000).astype(np.uint32) << 23) | rng.integers(0, 1 << 23, 200_000).astype(np.uint32)
    bits |= rng.integers(0, 2, 200_000).astype(np.uint32) << 31
    out += bits.view(np.float32).tolist()
    return [v for v in out if abs(v) < 65520]


def test_float_to_fp16_rounds_to_nearest_even_as_numpy_below_65520():
    """FloatToFp16 (IsRoundOne: round to nearest, ties to even; Fp16Normalize): below 65520 in magnitude, every
    float32 (ties and their neighbours at every exponent and subnormal shift, and random ones) gives numpy's half."""
    values = _float32s_in_range()
    want = np.array(values, dtype=np.float32).astype(np.float16).view(np.uint16).tolist()
    got = [fp16.float_to_float16(v) for v in values]
    wrong = [(v, hex(g), hex(w)) for v, g, w in zip(values, got, want) if g != w]
    assert not wrong, wrong[:5]
    assert len(values) > 200_000


@pytest.mark.parametrize("value,half", [
    (2049.0, 0x6800), (2051.0, 0x6802),  # ties to even: 2048 and 2052
    (2.0 ** -25, 0x0000), (3 * 2.0 ** -26, 0x0001), (1.5 * 2.0 ** -24, 0x0002),  # subnormal ties and above
    (f32(0x33000001), 0x0001),  # just above half the smallest subnormal (exponent 102, a mantissa bit): up to it
    (2.0 ** -14 - 2.0 ** -26, 0x0400),  # rounds up to the smallest normal half (Fp16Normalize)
    (f32(0x00000001), 0x0000), (-f32(0x00000001), 0x8000),  # float32 subnormals are +-0
    (-0.00000001, 0x8000), (1.0, 0x3C00), (-1.0, 0xBC00), (1.625, 0x3E80),  # UTEST_ACL_Fp16; 2_system_info
    (1.0000000001, 0x3C00),  # a Python float is first a float32, as C passes it
])
def test_float_to_fp16_examples(value, half):
    """FloatToFp16 on ties, subnormal boundaries and the reference's own unit-test and example values."""
    assert fp16.float_to_float16(value) == half
    if not math.isnan(value) and abs(value) < 65520:
        assert numpy_half(value) == half


@pytest.mark.parametrize("value,half", [
    (65519.99, 0x7BFF), (65520.0, 0x7BFF), (65536.0, 0x7BFF), (999999999.0, 0x7BFF), (3.4e38, 0x7BFF),
    (math.inf, 0x7BFF), (-65520.0, 0xFBFF), (-999999999.0, 0xFBFF), (-math.inf, 0xFBFF),
    (math.nan, 0x7BFF), (-math.nan, 0xFBFF), (f32(0x7FC00001), 0x7BFF), (f32(0xFF800001), 0xFBFF),
])
def test_float_to_fp16_saturates_where_numpy_overflows(value, half):
    """FloatToFp16 ("saturation mode: NaN and Inf to 65504.0 (0x7BFF), negative Inf to -65504.0 (0xFBFF)"): an
    exponent past 142, and a value of exponent 142 whose rounding carries, become the largest finite half of its
    sign (a NaN keeps its sign bit); numpy gives +-inf or nan there (only 65519.99 agrees)."""
    assert fp16.float_to_float16(value) == half
    if abs(value) >= 65520 or math.isnan(value):
        assert numpy_half(value) in (0x7C00, 0xFC00) or numpy_half(value) & 0x7C00 == 0x7C00


# -- the C library: conversions, exception info, functions not emulated ---------------------------------------------

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"

struct info { uint32_t taskid, streamid, tid, deviceid, retcode; char rest[256]; };

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "halves") == 0) {
        for (unsigned h = 0; h < 65536; h++) {
            float f = aclFloat16ToFloat((aclFloat16)h);
            uint32_t bits;
            memcpy(&bits, &f, 4);
            printf("%08x\n", bits);
        }
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "floats") == 0) {
        for (int i = 2; i < argc; i++) {
            uint32_t bits = (uint32_t)strtoul(argv[i], NULL, 16);
            float f;
            memcpy(&f, &bits, 4);
            printf("%04x\n", (unsigned)aclFloatToFloat16(f));
        }
        return 0;
    }
    struct info made = {7, 8, 9, 10, 507011, {0}};
    const aclrtExceptionInfo *info = (const aclrtExceptionInfo *)&made;
    printf("info %u %u %u %u %u\n", aclrtGetTaskIdFromExceptionInfo(info), aclrtGetStreamIdFromExceptionInfo(info),
           aclrtGetThreadIdFromExceptionInfo(info), aclrtGetDeviceIdFromExceptionInfo(info),
           aclrtGetErrorCodeFromExceptionInfo(info));
    printf("null %x %x %x %x %x\n", aclrtGetTaskIdFromExceptionInfo(NULL), aclrtGetStreamIdFromExceptionInfo(NULL),
           aclrtGetThreadIdFromExceptionInfo(NULL), aclrtGetDeviceIdFromExceptionInfo(NULL),
           aclrtGetErrorCodeFromExceptionInfo(NULL));
    int64_t dims[2] = {2, 3};
    aclTensorDesc *desc = aclCreateTensorDesc(ACL_FLOAT, 2, dims, ACL_FORMAT_ND);
    printf("desc %s\n", desc == NULL ? "null" : "made");
    int type = (int)aclGetTensorDescType(desc), format = (int)aclGetTensorDescFormat(desc);
    size_t size = aclGetTensorDescSize(desc), count = aclGetTensorDescElementCount(desc);
    size_t dims_n = aclGetTensorDescNumDims(desc);
    const char *name = aclGetTensorDescName(desc);
    const char *said = aclGetRecentErrMsg();
    printf("getters %d %d %zu %zu %zu [%s]\n", type, format, size, count, dims_n, name);
    printf("said %s\n", said ? said : "(null)");
    aclDestroyTensorDesc(desc);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("computed")
    (folder / "computed.c").write_text(PROGRAM)
    from emu.capi import commands
    assert commands.compile_command("cc", [str(folder / "computed.c"), "-o", str(folder / "computed")]) == 0
    return folder / "computed"


def _run(program, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    done = subprocess.run([str(program), *args], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return done


@needs_cc
def test_c_fp16_to_float_for_every_half(program):
    """aclFloat16ToFloat from C, all 65536 halves: the float32 bits are emu.runtime.fp16's (Fp16ToFloat), numpy's
    for every finite half, and 0.0 for none but +-0 (the library used to return 0.0 for all)."""
    got = [int(line, 16) for line in _run(program, "halves").stdout.split()]
    want = [struct.unpack("<I", struct.pack("<f", fp16.float16_to_float(h)))[0] for h in range(1 << 16)]
    assert got == want
    finite = ((HALVES >> 10) & 0x1F) != 31
    assert np.array_equal(np.array(got, dtype=np.uint32)[finite],
                          HALVES[finite].view(np.float16).astype(np.float32).view(np.uint32))
    assert got[0x7C00] == 0x47800000 and got[0x7E00] == struct.unpack("<I", struct.pack("<f", 98304.0))[0]


@needs_cc
def test_c_float_to_fp16(program):
    """aclFloatToFloat16 from C: ties, subnormals, the saturated values and a sample of random float32s give
    emu.runtime.fp16's halves (FloatToFp16), numpy's below 65520."""
    rng = np.random.default_rng(15)
    bits = [0x3F800000, 0xBF800000, 0x45002000, 0x45006000, 0x33000000, 0x33000001, 0x7F800000, 0xFF800000,
            0x7FC00000, 0xFFC00000, 0x477FF000, 0x477FEFFF, 0x00000001, 0x80000000, 0x3FD00000]
    bits += rng.integers(0x30000000, 0x47800000, 2000).tolist()
    got = [int(line, 16) for line in _run(program, "floats", *(f"{b:x}" for b in bits)).stdout.split()]
    assert got == [fp16.float_to_float16(f32(b)) for b in bits]
    for b, half in zip(bits, got):
        if abs(f32(b)) < 65520:
            assert half == numpy_half(f32(b))
    assert got[6:10] == [0x7BFF, 0xFBFF, 0x7BFF, 0xFBFF]


@needs_cc
def test_c_exception_info_getters_and_functions_not_emulated(program):
    """callback.cpp aclrtGet*FromExceptionInfoImpl: the fields of the rtExceptionInfo given, 0xFFFFFFFF for a null
    one. aclCreateTensorDesc is not emulated: NULL; the getters then give the reference's values for a null
    description (ACL_DT_UNDEFINED -1, ACL_FORMAT_UNDEFINED -1, 0, 0, 0, ""), each naming itself in
    aclGetRecentErrMsg."""
    done = _run(program)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["info"] == "7 8 9 10 507011"
    assert lines["null"] == " ".join(["ffffffff"] * 5)
    assert lines["desc"] == "null"
    assert lines["getters"] == "-1 -1 0 0 0 []"
    assert lines["said"] == f"acl-emu: aclGetTensorDescName is not emulated ({bridge.SCOPE})"
    assert "aclCreateTensorDesc is not emulated" in done.stderr


# -- the audit: every exported function -----------------------------------------------------------------------------

def test_every_function_not_emulated_fails_with_a_known_value():
    """Every function the headers declare runs through the runtime, has a handler of its own, or is not emulated;
    each one not emulated returns 200001 (aclError), NULL (a pointer), nothing (void) or NOT_EMULATED_VALUES' value
    (a number or a string: the reference's for a null tensor description), and sets aclGetRecentErrMsg naming
    itself. No function returning a number is left to return a value the library made up."""
    protos = {p.name: p for p in build.prototypes()}
    kinds = bridge.scope()
    assert set(kinds) == set(protos) | {"aclAppLog"}
    missing = [protos[n] for n, k in kinds.items() if k == "not emulated" and n in protos]
    assert {p.name for p in missing} >= {"aclGetTensorDescSize", "aclopSetModelDir", "aclrtLaunchKernel"}
    assert set(bridge.NOT_EMULATED_VALUES) <= {p.name for p in missing}
    for p in missing:
        if p.name in special.NOT_EMULATED:
            continue
        value = bridge.not_emulated_value(p)
        if p.returns == "aclError":
            assert value == 200001
        elif p.kind == "p" and p.name not in bridge.NOT_EMULATED_VALUES:
            assert value == 0
        elif p.kind == "v":
            assert value is None
        else:
            assert p.name in bridge.NOT_EMULATED_VALUES
        result = bridge._not_emulated(p)(*([0] * len(p.params)))
        assert recent_error() == f"acl-emu: {p.name} is not emulated ({bridge.SCOPE})"
        if not isinstance(value, str):
            assert result == (0 if value is None else value)


def test_a_function_returning_a_number_without_a_value_is_refused():
    """bridge.not_emulated_value: a function not emulated that returns a number with no value listed is a
    ValueError naming it (the library would otherwise return a made-up 0)."""
    proto = build.Prototype("uint32_t", "u", "aclrtMadeUp", (build.Param("const void *", "x", "p"),))
    with pytest.raises(ValueError, match="aclrtMadeUp"):
        bridge.not_emulated_value(proto)


def test_the_api_page_lists_every_function_not_emulated_with_its_value():
    """docs/api.md's section "The C library" (bridge.api_section, rendered by emu.apidoc) names every function not
    emulated, under the value it returns, and the conversions among those the library computes."""
    text = "\n".join(bridge.api_section())
    for name, kind in bridge.scope().items():
        if kind != "runtime":  # (those are the page's sections above, by their runtime names)
            assert f"`{name}`" in text, name
    assert "- 0: `aclGetTensorDescSize`" in text and "-1: `aclGetTensorDescType`" in text
    assert '"": `aclGetTensorDescName`' in text
    library = text[text.index("**In the library**"):text.index("**Not emulated**")]
    assert "`aclFloatToFloat16`" in library and "`aclrtGetTaskIdFromExceptionInfo`" in library
    assert "`aclrtLaunchKernel`" not in library
