/* AscendC on the CPU, part 5 of kernel_operator.h: reductions and GatherMask.
 *
 * - ReduceSum / ReduceMax / ReduceMin of a whole tensor: by count, or by repeats (a mask and repeatTime, source
 *   repeats srcRepStride blocks apart) over every element the mask selects in every repeat. dst[0] is the result;
 *   with calIndex, dst[1] holds the bits of the index of the first extreme element, counted in elements from
 *   src's start (asc-devkit impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h, ReduceImplThirdStep).
 * - WholeReduceSum / WholeReduceMax / WholeReduceMin (ReduceRepeat): one result for each repeat, dstRepStride
 *   results apart; Max and Min with the element's index in its repeat, in the order ReduceOrder says.
 * - GatherMask: the elements a pattern selects, packed into dst, and how many.
 *
 * Sums are summed as numpy sums (pairwise, blocks of 128 in 8 running sums, in float for half and bfloat16_t),
 * so that a result equals np.sum of the same elements. */
#ifndef ACL_EMU_REDUCE_H
#define ACL_EMU_REDUCE_H

#include "vector.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif

namespace AscendC {

template <typename W, typename T> __attribute__((noinline)) ACL_EMU_UB_ONLY W acl_emu_pairwise(const T *a, uint32_t n) {
    if (n < 8) {
        W r = (W)0;
        for (uint32_t i = 0; i < n; i++)
            r += (W)a[i];
        return r;
    }
    if (n <= 128) {
        W r[8];
        for (int k = 0; k < 8; k++)
            r[k] = (W)a[k];
        uint32_t i = 8;
        for (; i < n - n % 8; i += 8)
            for (int k = 0; k < 8; k++)
                r[k] += (W)a[i + k];
        W res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += (W)a[i];
        return res;
    }
    uint32_t n2 = n / 2;
    n2 -= n2 % 8;
    return acl_emu_pairwise<W>(a, n2) + acl_emu_pairwise<W>(a + n2, n - n2);
}

/* The elements one repeat-form reduction reads, in order (for the sums, which numpy sums as one array). */
template <typename T> struct acl_emu_gathered {
    T *items = nullptr;
    uint64_t n = 0, cap = 0;
    T small[256];
    acl_emu_gathered() : items(small), cap(256) {}
    ~acl_emu_gathered() {
        if (items != small)
            delete[] items;
    }
    void add(T v) {
        if (n == cap) {
            T *grown = new T[cap * 2];
            std::memcpy(grown, items, n * sizeof(T));
            if (items != small)
                delete[] items;
            items = grown;
            cap *= 2;
        }
        items[n++] = v;
    }
};

/* -- over a whole tensor, by count --------------------------------------------------------------------------- */
template <typename T>
ACL_EMU_UB_ONLY
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                      const LocalTensor<T> &, const int32_t count) {
    acl_emu_vector(dst, 1, "ReduceSum");
    if ((uint32_t)count > src.GetSize())
        acl_emu_fail("ReduceSum of %d elements from a LocalTensor of %u", count, src.GetSize());
    using W = typename acl_emu_wide<T>::type;
    dst.GetPhyAddr()[0] = (T)acl_emu_pairwise<W>(src.GetPhyAddr(), (uint32_t)count);
}

template <typename T>
ACL_EMU_UB_ONLY inline void acl_emu_index_into(T *slot, uint64_t index) {
    typename acl_emu_bits<T>::type bits = (typename acl_emu_bits<T>::type)index;
    std::memcpy(slot, &bits, sizeof bits);
}

template <typename T, bool most>
ACL_EMU_UB_ONLY
inline void acl_emu_extreme(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                            int32_t count, bool calIndex, const char *what) {
    acl_emu_vector(dst, calIndex ? 2 : 1, what);
    if (count < 1 || (uint32_t)count > src.GetSize())
        acl_emu_fail("%s of %d elements from a LocalTensor of %u", what, count, src.GetSize());
    using W = typename acl_emu_wide<T>::type;
    const T *a = src.GetPhyAddr();
    uint32_t at = 0;
    for (uint32_t i = 1; i < (uint32_t)count; i++)
        if (most ? (W)a[i] > (W)a[at] : (W)a[i] < (W)a[at])
            at = i;
    dst.GetPhyAddr()[0] = a[at];
    if (calIndex)
        acl_emu_index_into(dst.GetPhyAddr() + 1, at);
}

template <typename T>
ACL_EMU_UB_ONLY
inline void ReduceMax(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                      const LocalTensor<T> &, const int32_t count, bool calIndex = false) {
    acl_emu_extreme<T, true>(dst, src, count, calIndex, "ReduceMax");
}

template <typename T>
ACL_EMU_UB_ONLY
inline void ReduceMin(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                      const LocalTensor<T> &, const int32_t count, bool calIndex = false) {
    acl_emu_extreme<T, false>(dst, src, count, calIndex, "ReduceMin");
}

/* -- over a whole tensor, by repeats (in Normal mode, source blocks contiguous) ----------------------------- */
template <typename T, int kind>
ACL_EMU_UB_ONLY
inline void acl_emu_reduce_repeats(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                   int32_t repeatTime, int32_t srcRepStride,
                                   bool calIndex, const char *what) {
    using R = acl_emu_repeats<T>;
    using W = typename acl_emu_wide<T>::type;
    SetMaskNorm();
    if (repeatTime <= 0)
        return;
    R rp((uint64_t)repeatTime, what, true);
    rp.check(src.GetPhyAddr(), 1, (uint32_t)srcRepStride, what);
    acl_emu_check_local(dst.GetPhyAddr(), (kind != 0 && calIndex ? 2 : 1) * sizeof(T), what);
    if (kind == 0) {
        acl_emu_gathered<T> all;
        rp.each([&](uint64_t r, uint32_t k) ACL_EMU_UB_ONLY {
            all.add(acl_emu_elem(src, R::at(r, k, 1, (uint32_t)srcRepStride)));
        });
        if (all.n)
            dst.GetPhyAddr()[0] = (T)acl_emu_pairwise<W>(all.items, (uint32_t)all.n);
        return;
    }
    bool found = false;
    uint64_t index = 0;
    T best = T(0);
    rp.each([&](uint64_t r, uint32_t k) ACL_EMU_UB_ONLY {
        uint64_t off = R::at(r, k, 1, (uint32_t)srcRepStride);
        T v = acl_emu_elem(src, off);
        if (!found || (kind == 1 ? (W)v > (W)best : (W)v < (W)best)) {
            found = true;
            best = v;
            index = off / sizeof(T);
        }
    });
    if (!found)
        return;
    dst.GetPhyAddr()[0] = best;
    if (calIndex)
        acl_emu_index_into(dst.GetPhyAddr() + 1, index);
}

#define ACL_EMU_REDUCE(NAME, KIND)                                                                                     \
    template <typename T>                                                                                              \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                                             \
                     const LocalTensor<T> &, const uint64_t mask[], const int32_t repeatTime,                          \
                     const int32_t srcRepStride, bool calIndex = false) {                                              \
        SetVectorMask<T>(mask[1], mask[0]);                                                                            \
        acl_emu_reduce_repeats<T, KIND>(dst, src, repeatTime, srcRepStride, calIndex, #NAME);                          \
    }                                                                                                                  \
    template <typename T>                                                                                              \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                                             \
                     const LocalTensor<T> &, const int32_t mask, const int32_t repeatTime,                             \
                     const int32_t srcRepStride, bool calIndex = false) {                                              \
        SetVectorMask<T>(mask);                                                                                        \
        acl_emu_reduce_repeats<T, KIND>(dst, src, repeatTime, srcRepStride, calIndex, #NAME);                          \
    }
ACL_EMU_REDUCE(ReduceMax, 1)
ACL_EMU_REDUCE(ReduceMin, 2)
#undef ACL_EMU_REDUCE

template <typename T>
ACL_EMU_UB_ONLY
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                      const LocalTensor<T> &, const uint64_t mask[], const int32_t repeatTime,
                      const int32_t srcRepStride) {
    SetVectorMask<T>(mask[1], mask[0]);
    acl_emu_reduce_repeats<T, 0>(dst, src, repeatTime, srcRepStride, false, "ReduceSum");
}
template <typename T>
ACL_EMU_UB_ONLY
inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                      const LocalTensor<T> &, const int32_t mask, const int32_t repeatTime,
                      const int32_t srcRepStride) {
    SetVectorMask<T>(mask);
    acl_emu_reduce_repeats<T, 0>(dst, src, repeatTime, srcRepStride, false, "ReduceSum");
}

/* -- one result for each repeat (WholeReduce*, ReduceRepeat) ------------------------------------------------ */
enum class ReduceOrder { ORDER_VALUE_INDEX, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
enum class ReduceType { SUM, MAX, MIN };

/* dst of repeat r: Sum and ORDER_ONLY_VALUE one T at r * dstRepStride; ORDER_VALUE_INDEX / ORDER_INDEX_VALUE a
 * pair of T (the index in the value's bits) at 2 * r * dstRepStride; ORDER_ONLY_INDEX a uint32_t index at
 * r * dstRepStride uint32_t (asc-devkit docs: ReduceRepeat, table 3). A repeat the mask leaves empty writes
 * nothing. */
template <typename T, ReduceType type>
ACL_EMU_UB_ONLY
inline void acl_emu_reduce_each(const LocalTensor<T> &dst,
                                const LocalTensor<T> &src, int32_t repeatTime,
                                int32_t dstRepStride, int32_t srcBlkStride,
                                int32_t srcRepStride, ReduceOrder order,
                                const char *what) {
    using R = acl_emu_repeats<T>;
    using W = typename acl_emu_wide<T>::type;
    if (repeatTime < 0 || dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0)
        acl_emu_fail("%s: a negative repeatTime or stride", what);
    R rp((uint64_t)repeatTime, what);
    rp.check(src.GetPhyAddr(), (uint32_t)srcBlkStride, (uint32_t)srcRepStride, what);
    bool pair = type != ReduceType::SUM && (order == ReduceOrder::ORDER_VALUE_INDEX ||
                                            order == ReduceOrder::ORDER_INDEX_VALUE);
    bool only_index = type != ReduceType::SUM && order == ReduceOrder::ORDER_ONLY_INDEX;
    uint64_t unit = pair ? 2 * sizeof(T) : only_index ? 4 : sizeof(T);
    if (rp.repeats)
        acl_emu_check_local(dst.GetPhyAddr(), ((rp.repeats - 1) * (uint64_t)dstRepStride + 1) * unit, what);
    unsigned char *out = reinterpret_cast<unsigned char *>(dst.GetPhyAddr());
    T row[256];
    for (uint64_t r = 0; r < rp.repeats; r++) {
        uint32_t n = 0, at = 0;
        uint32_t index[256];
        for (uint32_t k = 0, w = rp.width(r); k < w; k++)
            if (rp.on(k)) {
                index[n] = k;
                row[n++] = acl_emu_elem(src, R::at(r, k, (uint32_t)srcBlkStride, (uint32_t)srcRepStride));
            }
        if (n == 0)
            continue;
        unsigned char *slot = out + r * (uint64_t)dstRepStride * unit;
        if (type == ReduceType::SUM) {
            T sum = (T)acl_emu_pairwise<W>(row, n);
            std::memcpy(slot, &sum, sizeof sum);
            continue;
        }
        for (uint32_t i = 1; i < n; i++)
            if (type == ReduceType::MAX ? (W)row[i] > (W)row[at] : (W)row[i] < (W)row[at])
                at = i;
        T value = row[at], idx;
        acl_emu_index_into(&idx, index[at]);
        uint32_t idx32 = index[at];
        switch (order) {
        case ReduceOrder::ORDER_VALUE_INDEX:
            std::memcpy(slot, &value, sizeof value);
            std::memcpy(slot + sizeof(T), &idx, sizeof idx);
            break;
        case ReduceOrder::ORDER_INDEX_VALUE:
            std::memcpy(slot, &idx, sizeof idx);
            std::memcpy(slot + sizeof(T), &value, sizeof value);
            break;
        case ReduceOrder::ORDER_ONLY_VALUE: std::memcpy(slot, &value, sizeof value); break;
        default: std::memcpy(slot, &idx32, sizeof idx32); break;
        }
    }
}

#define ACL_EMU_WHOLE(NAME, TYPE, ORDER_PARAM, ORDER)                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask[],                      \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,                 \
                     const int32_t srcRepStride ORDER_PARAM) {                                                         \
        acl_emu_set_mask<T, isSetMask>(mask);                                                                          \
        acl_emu_reduce_each<T, TYPE>(dst, src, repeatTime, dstRepStride, srcBlkStride, srcRepStride, ORDER, #NAME);    \
    }                                                                                                                  \
    template <typename T, bool isSetMask = true>                                                                       \
    ACL_EMU_UB_ONLY                                                                                                    \
    inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask,                         \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,                 \
                     const int32_t srcRepStride ORDER_PARAM) {                                                         \
        acl_emu_set_mask<T, isSetMask>((uint64_t)(mask < 0 ? 0 : mask));                                               \
        acl_emu_reduce_each<T, TYPE>(dst, src, repeatTime, dstRepStride, srcBlkStride, srcRepStride, ORDER, #NAME);    \
    }
#define ACL_EMU_ORDER , ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX
ACL_EMU_WHOLE(WholeReduceSum, ReduceType::SUM, , ReduceOrder::ORDER_ONLY_VALUE)
ACL_EMU_WHOLE(WholeReduceMax, ReduceType::MAX, ACL_EMU_ORDER, order)
ACL_EMU_WHOLE(WholeReduceMin, ReduceType::MIN, ACL_EMU_ORDER, order)
#undef ACL_EMU_ORDER
#undef ACL_EMU_WHOLE

/* ReduceRepeat<ReduceType::SUM / MAX / MIN>: WholeReduce* by its current name. */
template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
ACL_EMU_UB_ONLY
inline void ReduceRepeat(const LocalTensor<T> &dst, const LocalTensor<U> &src, const uint64_t mask[],
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {
    static_assert(std::is_same<T, U>::value, "ReduceRepeat from one type into another is not emulated");
    acl_emu_set_mask<T, isSetMask>(mask);
    acl_emu_reduce_each<T, type>(dst, src, repeatTime, dstRepStride, srcBlkStride, srcRepStride, order,
                                 "ReduceRepeat");
}
template <ReduceType type, typename T, typename U = T, bool isSetMask = true>
ACL_EMU_UB_ONLY
inline void ReduceRepeat(const LocalTensor<T> &dst, const LocalTensor<U> &src, const int32_t mask,
                         const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                         const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {
    static_assert(std::is_same<T, U>::value, "ReduceRepeat from one type into another is not emulated");
    acl_emu_set_mask<T, isSetMask>((uint64_t)(mask < 0 ? 0 : mask));
    acl_emu_reduce_each<T, type>(dst, src, repeatTime, dstRepStride, srcBlkStride, srcRepStride, order,
                                 "ReduceRepeat");
}

/* -- GatherMask (asc-devkit docs: GatherMask; impl/basic_api/dav_c220/kernel_operator_vec_gather_mask_impl.h) */
struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(uint8_t src0BlockStrideIn, uint16_t repeatTimesIn, uint16_t src0RepeatStrideIn,
                     uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};
enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V2;

/* repeatTimes repeats of src0: in Normal mode (reduceMode false) each of 256 bytes, in Counter mode (true) each
 * of `mask` elements (the 910B's and A3's reading of the count); element k of repeat r at r * src0RepeatStride +
 * (k / per block) * src0BlockStride blocks. Bit k of the pattern keeps it: a user pattern's bits run on from
 * the repeat's start, r * src1RepeatStride blocks into src1Pattern; a fixed one (1-7) is the same for every
 * repeat. The kept elements go to dst one after another; rsvdCnt is how many. The core is in Normal mode
 * after, its mask register {0, mask} (asc-devkit's GatherMaskImpl sets it so in either mode). */
template <typename T, typename P>
ACL_EMU_UB_ONLY
inline void acl_emu_gather_mask(const LocalTensor<T> &dst, const LocalTensor<T> &src0,
                                P pattern, bool reduceMode, uint32_t mask,
                                const GatherMaskParams &p, uint64_t &rsvdCnt) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "GatherMask takes 16- or 32-bit elements");
    constexpr uint32_t PB = ONE_BLK_SIZE / sizeof(T), E = ONE_REPEAT_BYTE_SIZE / sizeof(T);
    uint32_t width = reduceMode ? mask : E;
    if (reduceMode && mask == 0)
        acl_emu_fail("GatherMask in Counter mode with a mask of 0 (1 to 2^32 - 1)");
    SetMaskNorm();
    const unsigned char *s = reinterpret_cast<const unsigned char *>(src0.GetPhyAddr());
    uint64_t kept = 0, capacity = (uint64_t)dst.GetSize();
    if (p.repeatTimes) {
        uint64_t reach = 0;
        for (uint32_t k = width > PB ? width - PB : 0; k < width; k++) {  /* (blocks may overlap: stride 0) */
            uint64_t end = (p.repeatTimes - 1) * (uint64_t)p.src0RepeatStride * ONE_BLK_SIZE +
                           (k / PB) * (uint64_t)p.src0BlockStride * ONE_BLK_SIZE + (k % PB + 1) * sizeof(T);
            reach = end > reach ? end : reach;
        }
        acl_emu_check_local(s, reach, "GatherMask");
    }
    for (uint32_t r = 0; r < p.repeatTimes; r++)
        for (uint32_t k = 0; k < width; k++) {
            if (!pattern(r, k))
                continue;
            if (kept >= capacity)
                acl_emu_fail("GatherMask keeps more than the %llu elements of dst", (unsigned long long)capacity);
            std::memcpy(dst.GetPhyAddr() + kept, s + ((uint64_t)r * p.src0RepeatStride + (k / PB) * p.src0BlockStride) *
                                                          ONE_BLK_SIZE + (k % PB) * sizeof(T), sizeof(T));
            kept++;
        }
    rsvdCnt = kept;
    acl_emu_core &core = acl_emu_current_block;
    core.kept = (int64_t)kept;
    SetVectorMask<T>(0, mask);  /* (as the instruction leaves the register, in either mode) */
    core->vector_bytes += (uint64_t)p.repeatTimes * width * sizeof(T);
    core->vector_calls += 1;
}

template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
ACL_EMU_UB_ONLY
inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<U> &src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams &params,
                       uint64_t &rsvdCnt) {
    static_assert(std::is_same<U, uint16_t>::value || std::is_same<U, uint32_t>::value,
                  "GatherMask's pattern is a LocalTensor of uint16_t (16-bit elements) or uint32_t (32-bit)");
    static_assert(sizeof(U) == sizeof(T), "GatherMask's pattern has elements of the size of src0's");
    const unsigned char *bits = reinterpret_cast<const unsigned char *>(src1Pattern.GetPhyAddr());
    uint32_t width = reduceMode ? mask : ONE_REPEAT_BYTE_SIZE / sizeof(T);
    if (params.repeatTimes)
        acl_emu_check_local(bits, (params.repeatTimes - 1) * (uint64_t)params.src1RepeatStride * ONE_BLK_SIZE +
                                      (width + 7) / 8, "GatherMask's pattern");
    acl_emu_gather_mask(dst, src0, [&](uint32_t r, uint32_t k) ACL_EMU_UB_ONLY {
        const unsigned char *b = bits + (uint64_t)r * params.src1RepeatStride * ONE_BLK_SIZE;
        return (b[k / 8] >> (k % 8)) & 1;
    }, reduceMode, mask, params, rsvdCnt);
}

template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
ACL_EMU_UB_ONLY
inline void GatherMask(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams &params,
                       uint64_t &rsvdCnt) {
    if (src1Pattern < 1 || src1Pattern > 7)
        acl_emu_fail("GatherMask with the fixed pattern %u (1 to 7)", (unsigned)src1Pattern);
    acl_emu_gather_mask(dst, src0, [src1Pattern](uint32_t, uint32_t k) {
        switch (src1Pattern) {
        case 1: return k % 2 == 0;
        case 2: return k % 2 == 1;
        case 7: return true;
        default: return k % 4 == (uint32_t)(src1Pattern - 3);
        }
    }, reduceMode, mask, params, rsvdCnt);
}

ACL_EMU_UB_ONLY
inline int64_t GetGatherMaskRemainCount() { return acl_emu_current_block.kept; }

}  // namespace AscendC

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

#endif
