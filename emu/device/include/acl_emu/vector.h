/* AscendC on the CPU, part 4 of kernel_operator.h: the vector unit's elementwise instructions, in both of their
 * forms (asc-devkit docs: SIMD计算说明):
 *
 * - by count (Add(dst, src0, src1, count)): elements 0 .. count-1. On the device this runs in Counter mode and
 *   leaves the core in Normal mode with every element in the mask, as it does here.
 * - by repeats (Add(dst, src0, src1, mask, repeatTime, BinaryRepeatParams)): repeatTime repeats of 8 DataBlocks
 *   (256 bytes); element k of repeat r of an operand is at r * repStride + (k / per block) * blkStride blocks
 *   and k % per block elements; the mask says which elements of each repeat are computed: a count (its first
 *   `mask` elements) or bits (mask[0] elements 0-63, mask[1] 64-127). With isSetMask = false the mask register
 *   set before (SetVectorMask) is used; in Counter mode (SetMaskCount) its low 64 bits are a count of elements
 *   and the repeats are as many as that count needs. Elements outside the mask keep what they held.
 *
 * Element i of dst comes from element i of the sources, in float for half and bfloat16_t and rounded once, as
 * numpy does on the same data. Duplicate and Cast are here too. */
#ifndef ACL_EMU_VECTOR_H
#define ACL_EMU_VECTOR_H

#include "copy.h"

/* (their loops vectorized whatever the program's optimization level: they stand for the vector unit) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif

namespace AscendC {

template <typename T> struct acl_emu_wide { using type = T; };
template <> struct acl_emu_wide<half> { using type = float; };
template <> struct acl_emu_wide<bfloat16_t> { using type = float; };

template <typename W>
ACL_EMU_UB_ONLY inline W acl_emu_abs(W x) {
    if constexpr (std::is_floating_point<W>::value)
        return std::fabs(x);
    else
        return x < 0 ? (W)-x : x;
}

/* A count form: `count` elements into dst, counted as the block's vector work; the core left in Normal mode
 * with every element in the mask. */
template <typename T>
ACL_EMU_UB_ONLY inline void acl_emu_vector(const LocalTensor<T> &dst, uint32_t count, const char *what) {
    if (count > dst.GetSize())
        acl_emu_fail("%s of %u elements into a LocalTensor of %u", what, count, dst.GetSize());
    acl_emu_core &core = acl_emu_current_block;
    core.counter = false;
    core.mask_high = core.mask_low = FULL_MASK;
    core->vector_bytes += (uint64_t)count * sizeof(T);
    core->vector_calls += 1;
}

/* -- the repeat forms' parameters (asc-devkit include/basic_api/kernel_struct_binary.h, kernel_struct_unary.h) */
constexpr uint8_t DEFAULT_BLK_NUM = 8;
constexpr uint8_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint32_t MAX_REPEAT_TIMES = 255;

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(uint8_t dstBlk, uint8_t src0Blk, uint8_t src1Blk, uint8_t dstRep, uint8_t src0Rep,
                       uint8_t src1Rep)
        : dstBlkStride(dstBlk), src0BlkStride(src0Blk), src1BlkStride(src1Blk), dstRepStride(dstRep),
          src0RepStride(src0Rep), src1RepStride(src1Rep) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE, src0BlkStride = DEFAULT_BLK_STRIDE, src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE, src0RepStride = DEFAULT_REPEAT_STRIDE,
            src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false, strideSizeMode = false;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint8_t dstRep, uint8_t srcRep)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep) {}
    UnaryRepeatParams(uint16_t dstBlk, uint16_t srcBlk, uint8_t dstRep, uint8_t srcRep, bool half)
        : dstBlkStride(dstBlk), srcBlkStride(srcBlk), dstRepStride(dstRep), srcRepStride(srcRep), halfBlock(half) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE, srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE, srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false, strideSizeMode = false, halfBlock = false;
};

/* The mask forms set the register before they run (isSetMask): bits, or a count of leading elements. */
template <typename T, bool isSetMask>
ACL_EMU_UB_ONLY inline void acl_emu_set_mask(const uint64_t mask[]) {
    if (isSetMask)
        SetVectorMask<T>(mask[1], mask[0]);
}
template <typename T, bool isSetMask>
ACL_EMU_UB_ONLY inline void acl_emu_set_mask(uint64_t mask) {
    if (isSetMask)
        SetVectorMask<T>((int32_t)(mask > 256 ? 256 : mask));
}

/* One repeat-form instruction: which elements of which repeats the mask register selects, where they are, and
 * the work counted (a repeat is one pass of the vector unit over 256 bytes, whatever its mask). */
template <typename T> struct acl_emu_repeats {
    static_assert(sizeof(T) >= 2, "the repeat forms of vector instructions take 16-, 32- or 64-bit elements");
    static constexpr uint32_t E = ONE_REPEAT_BYTE_SIZE / sizeof(T), PB = ONE_BLK_SIZE / sizeof(T);
    uint64_t repeats = 0, low = 0, high = 0;
    uint32_t last = E;  /* the elements of the last repeat in Counter mode */
    bool counter = false;

    acl_emu_repeats(uint64_t repeatTime, const char *what, bool normal_only = false) {
        acl_emu_core &core = acl_emu_current_block;
        counter = core.counter && !normal_only;
        low = core.mask_low;
        high = core.mask_high;
        if (counter) {
            if (low > core->ub_size)
                acl_emu_fail("%s in Counter mode of %llu elements: more than the Unified Buffer holds", what,
                             (unsigned long long)low);
            repeats = (low + E - 1) / E;
            last = low % E ? (uint32_t)(low % E) : E;
        } else {
            repeats = repeatTime;
        }
        core->vector_bytes += repeats * ONE_REPEAT_BYTE_SIZE;
        core->vector_calls += 1;
    }
    uint32_t width(uint64_t r) const { return counter && r + 1 == repeats ? last : E; }
    bool on(uint32_t k) const { return counter || (k < 64 ? (low >> k) & 1 : k < 128 && ((high >> (k - 64)) & 1)); }
    static uint64_t at(uint64_t r, uint32_t k, uint32_t blk, uint32_t rep) {
        return (r * rep + (uint64_t)(k / PB) * blk) * ONE_BLK_SIZE + (uint64_t)(k % PB) * sizeof(T);
    }
    /* The bytes from an operand's start that the instruction reaches. */
    uint64_t reach(uint32_t blk, uint32_t rep) const {
        uint64_t most = 0;
        for (uint64_t r = repeats > 2 ? repeats - 2 : 0; r < repeats; r++)
            for (uint32_t k = 0; k < width(r); k++)
                if (on(k) && at(r, k, blk, rep) + sizeof(T) > most)
                    most = at(r, k, blk, rep) + sizeof(T);
        return most;
    }
    void check(const void *base, uint32_t blk, uint32_t rep, const char *what) const {
        acl_emu_check_local(base, reach(blk, rep), what);
    }
    template <typename F> void each(F &&f) const {
        for (uint64_t r = 0; r < repeats; r++)
            for (uint32_t k = 0, n = width(r); k < n; k++)
                if (on(k))
                    f(r, k);
    }
};

template <typename T>
ACL_EMU_UB_ONLY inline T &acl_emu_elem(const LocalTensor<T> &t, uint64_t byte_offset) {
    return *reinterpret_cast<T *>(reinterpret_cast<unsigned char *>(t.GetPhyAddr()) + byte_offset);
}

template <typename T, typename F>
ACL_EMU_UB_ONLY
inline void acl_emu_binary(const LocalTensor<T> &dst, const LocalTensor<T> &a,
                           const LocalTensor<T> &b, uint8_t repeatTime,
                           const BinaryRepeatParams &p, F f, const char *what) {
    using R = acl_emu_repeats<T>;
    using W = typename acl_emu_wide<T>::type;
    R rp(repeatTime, what);
    rp.check(dst.GetPhyAddr(), p.dstBlkStride, p.dstRepStride, what);
    rp.check(a.GetPhyAddr(), p.src0BlkStride, p.src0RepStride, what);
    rp.check(b.GetPhyAddr(), p.src1BlkStride, p.src1RepStride, what);
    rp.each([&](uint64_t r, uint32_t k) ACL_EMU_UB_ONLY {
        W x = (W)acl_emu_elem(a, R::at(r, k, p.src0BlkStride, p.src0RepStride));
        W y = (W)acl_emu_elem(b, R::at(r, k, p.src1BlkStride, p.src1RepStride));
        acl_emu_elem(dst, R::at(r, k, p.dstBlkStride, p.dstRepStride)) = (T)f(x, y);
    });
}

template <typename T, typename F>
ACL_EMU_UB_ONLY
inline void acl_emu_unary(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                          uint8_t repeatTime, const UnaryRepeatParams &p, F f,
                          const char *what) {
    using R = acl_emu_repeats<T>;
    using W = typename acl_emu_wide<T>::type;
    R rp(repeatTime, what);
    rp.check(dst.GetPhyAddr(), p.dstBlkStride, p.dstRepStride, what);
    rp.check(src.GetPhyAddr(), p.srcBlkStride, p.srcRepStride, what);
    rp.each([&](uint64_t r, uint32_t k) ACL_EMU_UB_ONLY {
        W x = (W)acl_emu_elem(src, R::at(r, k, p.srcBlkStride, p.srcRepStride));
        acl_emu_elem(dst, R::at(r, k, p.dstBlkStride, p.dstRepStride)) = (T)f(x);
    });
}

/* -- binary: dst = src0 op src1 ----------------------------------------------------------------------------- */
#define ACL_EMU_BINARY(NAME, EXPR)                                                                                     \
    template <typename T>                                                                                              \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0,                                            \
                     const LocalTensor<T> &src1, const int32_t &count) {                                               \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        acl_emu_vector(dst, (uint32_t)count, #NAME);                                                                   \
        if ((uint32_t)count > src0.GetSize() || (uint32_t)count > src1.GetSize())                                      \
            acl_emu_fail(#NAME " of %d elements from LocalTensors of %u and %u", count, src0.GetSize(),                \
                         src1.GetSize());                                                                              \
        T *d = dst.GetPhyAddr();                                                                                       \
        const T *a = src0.GetPhyAddr(), *b = src1.GetPhyAddr();                                                        \
        for (int32_t i = 0, n = count; i < n; i++) { /* (n: count may alias what d points to) */                       \
            W x = (W)a[i], y = (W)b[i];                                                                                \
            d[i] = (T)(EXPR);                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,                \
                     const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams &params) {              \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        acl_emu_set_mask<T, isSetMask>(mask);                                                                          \
        acl_emu_binary(dst, src0, src1, repeatTime, params,                                                            \
                       [](W x, W y) ACL_EMU_UB_ONLY { return (W)(EXPR); }, #NAME);                                     \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1,                \
                     uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams &params) {                      \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        acl_emu_set_mask<T, isSetMask>(mask);                                                                          \
        acl_emu_binary(dst, src0, src1, repeatTime, params,                                                            \
                       [](W x, W y) ACL_EMU_UB_ONLY { return (W)(EXPR); }, #NAME);                                     \
    }
ACL_EMU_BINARY(Add, x + y)
ACL_EMU_BINARY(Sub, x - y)
ACL_EMU_BINARY(Mul, x * y)
ACL_EMU_BINARY(Div, x / y)
ACL_EMU_BINARY(Max, x > y ? x : y)
ACL_EMU_BINARY(Min, x < y ? x : y)
#undef ACL_EMU_BINARY

/* -- with a scalar: dst = src op scalar (the scalar in T first, as the device holds it) ---------------------- */
#define ACL_EMU_SCALAR(NAME, EXPR)                                                                                     \
    template <typename T, typename S>                                                                                  \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                                             \
                     const S &scalar, const int32_t &count) {                                                          \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        acl_emu_vector(dst, (uint32_t)count, #NAME);                                                                   \
        if ((uint32_t)count > src.GetSize())                                                                           \
            acl_emu_fail(#NAME " of %d elements from a LocalTensor of %u", count, src.GetSize());                      \
        T *d = dst.GetPhyAddr();                                                                                       \
        const T *a = src.GetPhyAddr();                                                                                 \
        W y = (W)(T)scalar;                                                                                            \
        for (int32_t i = 0, n = count; i < n; i++) { /* (n: count may alias what d points to) */                       \
            W x = (W)a[i];                                                                                             \
            d[i] = (T)(EXPR);                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true, typename S>                                                           \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const S &scalar, const uint64_t mask[],     \
                     const uint8_t repeatTime, const UnaryRepeatParams &params) {                                      \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        W y = (W)(T)scalar;                                                                                            \
        acl_emu_set_mask<T, isSetMask>(mask);                                                                          \
        acl_emu_unary(dst, src, repeatTime, params, [y](W x) { return (W)(EXPR); }, #NAME);                            \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true, typename S>                                                           \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const S &scalar, uint64_t mask,             \
                     const uint8_t repeatTime, const UnaryRepeatParams &params) {                                      \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        W y = (W)(T)scalar;                                                                                            \
        acl_emu_set_mask<T, isSetMask>(mask);                                                                          \
        acl_emu_unary(dst, src, repeatTime, params, [y](W x) { return (W)(EXPR); }, #NAME);                            \
    }
ACL_EMU_SCALAR(Adds, x + y)
ACL_EMU_SCALAR(Muls, x * y)
ACL_EMU_SCALAR(Maxs, x > y ? x : y)
ACL_EMU_SCALAR(Mins, x < y ? x : y)
#undef ACL_EMU_SCALAR

/* -- unary: dst = f(src) ------------------------------------------------------------------------------------ */
#define ACL_EMU_UNARY(NAME, EXPR)                                                                                      \
    template <typename T>                                                                                              \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                                             \
                     const int32_t &count) {                                                                           \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        acl_emu_vector(dst, (uint32_t)count, #NAME);                                                                   \
        if ((uint32_t)count > src.GetSize())                                                                           \
            acl_emu_fail(#NAME " of %d elements from a LocalTensor of %u", count, src.GetSize());                      \
        T *d = dst.GetPhyAddr();                                                                                       \
        const T *a = src.GetPhyAddr();                                                                                 \
        for (int32_t i = 0, n = count; i < n; i++) { /* (n: count may alias what d points to) */                       \
            W x = (W)a[i];                                                                                             \
            d[i] = (T)(EXPR);                                                                                          \
        }                                                                                                              \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],                      \
                     const uint8_t repeatTime, const UnaryRepeatParams &params) {                                      \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        acl_emu_set_mask<T, isSetMask>(mask);                                                                          \
        acl_emu_unary(dst, src, repeatTime, params, [](W x) ACL_EMU_UB_ONLY { return (W)(EXPR); }, #NAME);             \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint64_t mask,                              \
                     const uint8_t repeatTime, const UnaryRepeatParams &params) {                                      \
        using W = typename acl_emu_wide<T>::type;                                                                      \
        acl_emu_set_mask<T, isSetMask>(mask);                                                                          \
        acl_emu_unary(dst, src, repeatTime, params, [](W x) ACL_EMU_UB_ONLY { return (W)(EXPR); }, #NAME);             \
    }
ACL_EMU_UNARY(Abs, acl_emu_abs(x))
ACL_EMU_UNARY(Exp, (W)std::exp((double)x))
ACL_EMU_UNARY(Ln, (W)std::log((double)x))
ACL_EMU_UNARY(Sqrt, (W)std::sqrt((double)x))
ACL_EMU_UNARY(Relu, x > 0 ? x : (W)0)
ACL_EMU_UNARY(Reciprocal, (W)1 / x)
#undef ACL_EMU_UNARY

/* -- Duplicate: the scalar into dst's elements ------------------------------------------------------------- */
template <typename T, typename S>
ACL_EMU_UB_ONLY
inline void Duplicate(const LocalTensor<T> &dst, const S &scalar,
                      const int32_t &count) {
    acl_emu_vector(dst, (uint32_t)count, "Duplicate");
    T v = (T)scalar;
    for (int32_t i = 0, n = count; i < n; i++)
        dst.GetPhyAddr()[i] = v;
}

template <typename T>
ACL_EMU_UB_ONLY
inline void acl_emu_duplicate(const LocalTensor<T> &dst, T v, uint8_t repeatTime,
                              uint16_t dstBlockStride, uint8_t dstRepeatStride) {
    using R = acl_emu_repeats<T>;
    R rp(repeatTime, "Duplicate");
    rp.check(dst.GetPhyAddr(), dstBlockStride, dstRepeatStride, "Duplicate");
    rp.each([&](uint64_t r, uint32_t k) ACL_EMU_UB_ONLY {
        acl_emu_elem(dst, R::at(r, k, dstBlockStride, dstRepeatStride)) = v;
    });
}

template <typename T, bool isSetMask = true, typename S>
ACL_EMU_UB_ONLY
inline void Duplicate(const LocalTensor<T> &dst, const S &scalar, const uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
    acl_emu_set_mask<T, isSetMask>(mask);
    acl_emu_duplicate(dst, (T)scalar, repeatTime, dstBlockStride, dstRepeatStride);
}

template <typename T, bool isSetMask = true, typename S>
ACL_EMU_UB_ONLY
inline void Duplicate(const LocalTensor<T> &dst, const S &scalar, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
    acl_emu_set_mask<T, isSetMask>(mask);
    acl_emu_duplicate(dst, (T)scalar, repeatTime, dstBlockStride, dstRepeatStride);
}

/* -- Cast: element i of dst is element i of src in dst's type, rounded as `mode` says ------------------------ */
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

template <typename T> struct acl_emu_bits { using type = typename std::make_unsigned<T>::type; };  /* integers */
template <> struct acl_emu_bits<half> { using type = uint16_t; };
template <> struct acl_emu_bits<bfloat16_t> { using type = uint16_t; };
template <> struct acl_emu_bits<float> { using type = uint32_t; };

/* The representable value next to `x` away from or towards zero (`up`: larger magnitude), in T's own bits. */
template <typename T>
ACL_EMU_UB_ONLY inline T acl_emu_step(T x, bool up) {
    typename acl_emu_bits<T>::type b;
    std::memcpy(&b, &x, sizeof b);
    b = up ? b + 1 : b - 1;
    std::memcpy(&x, &b, sizeof b);
    return x;
}

/* `v` in a floating type T, rounded as `mode` says (CAST_NONE and CAST_RINT: to nearest, ties to even). */
template <typename T>
ACL_EMU_UB_ONLY inline T acl_emu_round_float(double v, RoundMode mode) {
    T near = (T)(float)v;
    if (std::isnan(v) || (double)(float)near == v || mode == RoundMode::CAST_NONE || mode == RoundMode::CAST_RINT)
        return near;
    double n = (double)(float)near;
    bool above = n > v, negative = v < 0;
    T other = acl_emu_step(near, above == negative);  /* the neighbour on v's other side */
    T lower = above ? other : near, upper = above ? near : other;  /* lower <= v <= upper */
    switch (mode) {
    case RoundMode::CAST_FLOOR: return lower;
    case RoundMode::CAST_CEIL: return upper;
    case RoundMode::CAST_TRUNC: return negative ? upper : lower;
    case RoundMode::CAST_ROUND: {
        double dl = v - (double)(float)lower, du = (double)(float)upper - v;
        if (dl == du)
            return negative ? lower : upper;  /* ties away from zero */
        return dl < du ? lower : upper;
    }
    case RoundMode::CAST_ODD: {
        typename acl_emu_bits<T>::type b;
        std::memcpy(&b, &lower, sizeof b);
        return (b & 1) ? lower : upper;
    }
    default: return near;
    }
}

template <typename D>
ACL_EMU_UB_ONLY inline D acl_emu_round(double v, RoundMode mode) {
    if constexpr (std::is_integral<D>::value) {
        double r = mode == RoundMode::CAST_FLOOR ? std::floor(v) : mode == RoundMode::CAST_CEIL ? std::ceil(v)
                 : mode == RoundMode::CAST_TRUNC ? std::trunc(v) : mode == RoundMode::CAST_ROUND ? std::round(v)
                 : std::nearbyint(v);
        if (std::isnan(r))
            return 0;
        double lo = (double)std::numeric_limits<D>::min(), hi = (double)std::numeric_limits<D>::max();
        return (D)(r < lo ? lo : r > hi ? hi : r);  /* saturated */
    } else if constexpr (std::is_same<D, double>::value) {
        return v;
    } else {
        return acl_emu_round_float<D>(v, mode);
    }
}

template <typename D, typename S>
ACL_EMU_UB_ONLY
inline void Cast(const LocalTensor<D> &dst, const LocalTensor<S> &src,
                 const RoundMode &mode, const uint32_t count) {
    acl_emu_vector(dst, count, "Cast");
    if (count > src.GetSize())
        acl_emu_fail("Cast of %u elements from a LocalTensor of %u", count, src.GetSize());
    for (uint32_t i = 0; i < count; i++)
        dst.GetPhyAddr()[i] = acl_emu_round<D>((double)(typename acl_emu_wide<S>::type)src.GetPhyAddr()[i], mode);
}

}  // namespace AscendC

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
