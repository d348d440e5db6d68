"""aclFloatToFloat16 and aclFloat16ToFloat: float32 <-> IEEE half conversions as the reference runtime makes them
(hicann/runtime src/acl/aclrt_impl/types/fp16_impl.cpp, FloatToFp16 and Fp16ToFloat, called by fp16.cpp).

The two differ from IEEE 754 (and numpy's float16) where the reference says so:
- float32 -> half saturates: a value whose magnitude rounds to 65520 or more, an infinity and a NaN all become the
  largest finite half of their sign, 65504 (0x7BFF) or -65504 (0xFBFF); numpy gives an infinity or a NaN.
  Everything else rounds to nearest, ties to even, subnormal halves included, as numpy does.
- half -> float32 keeps no infinity or NaN: exponent 31 is read as an ordinary exponent, so +inf (0x7C00) is
  65536.0, -inf -65536.0, and a NaN (1 + m / 1024) * 65536 with its sign (0x7E00: 98304.0); every other half,
  subnormals included, is its exact value, as numpy gives it.
"""
from __future__ import annotations

import struct

# fp16_impl.h
FP16_MAN_LEN = 10
FP16_MAN_MASK = 0x03FF
FP16_MAN_HIDE_BIT = 0x0400
FP16_MAX_EXP = 0x001F
FP16_MAX_MAN = 0x03FF
FP32_MAN_LEN = 23
FP32_MAN_MASK = 0x007FFFFF
FP32_MAN_HIDE_BIT = 0x00800000
FP32_EXP_BIAS, FP16_EXP_BIAS = 127, 15


def _round_one(man: int, trunc_len: int) -> bool:
    """IsRoundOne: whether dropping the low `trunc_len` bits of `man` rounds up (to nearest, ties to even)."""
    shift = trunc_len - 2
    last, high = 0x4 << shift, 0x2 << shift
    return bool(man & high) and bool((man & (high - 1)) or (man & last))


def float_to_float16(value: float) -> int:
    """FloatToFp16: the half (its 16 bits) of `value` taken as a float32 (a Python float is first rounded to the
    nearest float32, as C passes a float)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    sign = bits >> 31
    exp = (bits >> FP32_MAN_LEN) & 0xFF
    man = bits & FP32_MAN_MASK
    if exp > 0x8F:  # 142 = 127 + 15: past the half's exponents, infinities and NaNs: the largest finite half
        e_ret, m_ret = FP16_MAX_EXP - 1, FP16_MAX_MAN
    elif exp <= 0x70:  # 112 = 127 - 15: a subnormal half or zero
        e_ret = 0
        if exp >= 0x67:  # 103 = 127 - 24
            wide = (man | FP32_MAN_HIDE_BIT) << (exp - 0x67)
            m_ret = (wide >> FP32_MAN_LEN) + _round_one(wide, FP32_MAN_LEN)
        elif exp == 0x66 and man > 0:  # between half the smallest subnormal and it: rounds up to it
            m_ret = 1
        else:
            m_ret = 0
    else:
        delta = FP32_MAN_LEN - FP16_MAN_LEN
        e_ret = exp - 0x70
        m_ret = (man >> delta) + _round_one(man, delta)
        if m_ret & FP16_MAN_HIDE_BIT:
            e_ret += 1
    # Fp16Normalize
    if e_ret >= FP16_MAX_EXP:
        e_ret, m_ret = FP16_MAX_EXP - 1, FP16_MAX_MAN
    elif e_ret == 0 and m_ret == FP16_MAN_HIDE_BIT:
        e_ret, m_ret = 1, 0
    return (sign << 15) | (e_ret << FP16_MAN_LEN) | (m_ret & FP16_MAX_MAN)


def float16_to_float(half: int) -> float:
    """Fp16ToFloat: the float32 value (as a Python float, exactly) of the half whose 16 bits are `half` (an
    aclFloat16, a uint16_t: only its low 16 bits count)."""
    half &= 0xFFFF
    sign = half >> 15
    exp = (half >> FP16_MAN_LEN) & FP16_MAX_EXP
    man = (half & FP16_MAN_MASK) | (FP16_MAN_HIDE_BIT if exp > 0 else 0)
    if exp == 0:  # ExtractFP16: a subnormal's exponent is 1
        exp = 1
    while man and not man & FP16_MAN_HIDE_BIT:
        man <<= 1
        exp -= 1
    if man == 0:
        e_ret = m_ret = 0
    else:
        e_ret = exp + FP32_EXP_BIAS - FP16_EXP_BIAS
        m_ret = (man & FP16_MAN_MASK) << (FP32_MAN_LEN - FP16_MAN_LEN)
    bits = (sign << 31) | (e_ret << FP32_MAN_LEN) | (m_ret & FP32_MAN_MASK)
    return struct.unpack("<f", struct.pack("<I", bits))[0]
