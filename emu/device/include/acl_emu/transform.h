/* AscendC on the CPU, part 6 of kernel_operator.h: the high-level tensor transforms. Broadcast (asc-devkit docs:
 * Broadcast, 高阶API): a tensor of one or two dimensions, row-major and unpadded, widened along one axis of
 * length 1, as numpy's broadcast_to. */
#ifndef ACL_EMU_TRANSFORM_H
#define ACL_EMU_TRANSFORM_H

#include "vector.h"

namespace AscendC {

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
ACL_EMU_UB_ONLY
inline void Broadcast(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim]) {
    static_assert(dim == 1 || dim == 2, "Broadcast of 1 or 2 dimensions");
    static_assert(axis == 0 || axis == 1, "Broadcast along axis 0 or 1");
    static_assert(dim == 2 || axis == 0, "Broadcast of 1 dimension is along axis 0");
    uint32_t rows = dim == 2 ? dstShape[0] : 1, cols = dim == 2 ? dstShape[1] : dstShape[0];
    uint32_t srows = dim == 2 ? srcShape[0] : 1, scols = dim == 2 ? srcShape[1] : srcShape[0];
    bool along_cols = dim == 1 || axis == 1;
    if ((along_cols && (scols != 1 || srows != rows)) || (!along_cols && (srows != 1 || scols != cols)))
        acl_emu_fail("Broadcast along axis %d: source shape [%u, %u] into [%u, %u]", axis, srows, scols, rows, cols);
    uint64_t n = (uint64_t)rows * cols;
    if (n > dst.GetSize() || (uint64_t)srows * scols > src.GetSize())
        acl_emu_fail("Broadcast into %llu elements: a LocalTensor of %u, from one of %u", (unsigned long long)n,
                     dst.GetSize(), src.GetSize());
    acl_emu_vector(dst, (uint32_t)n, "Broadcast");
    T *d = dst.GetPhyAddr();
    const T *s = src.GetPhyAddr();
    for (uint32_t i = 0; i < rows; i++)
        for (uint32_t j = 0; j < cols; j++)
            d[(uint64_t)i * cols + j] = along_cols ? s[i] : s[j];
}

/* With the caller's temporary buffer: the same (the emulator needs none). */
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
ACL_EMU_UB_ONLY
inline void Broadcast(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], LocalTensor<uint8_t> &) {
    Broadcast<T, dim, axis, isReuseSource>(dst, src, dstShape, srcShape);
}

}  // namespace AscendC

#endif
