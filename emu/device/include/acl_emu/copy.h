/* AscendC on the CPU, part 3 of kernel_operator.h: moving data between global memory and the Unified Buffer.
 * DataCopy (by count, by DataCopyParams), DataCopyPad (by DataCopyExtParams or DataCopyParams), Fill of global
 * memory; copies to global memory store, add, keep the larger or the smaller as the atomic mode says
 * (SetAtomicAdd, acl_emu/core.h). The bytes moved count as the block's traffic (gm_to_ub, ub_to_gm), and the
 * global memory read and written is reported (acl_emu_gm) for the sanitizer. */
#ifndef ACL_EMU_COPY_H
#define ACL_EMU_COPY_H

#include "tensor.h"

namespace AscendC {

inline void acl_emu_check_local(const void *p, uint64_t bytes, const char *what) {
    acl_emu_block *b = acl_emu_current_block;
    const unsigned char *c = static_cast<const unsigned char *>(p);
    if (c < b->ub || c + bytes > b->ub + b->ub_size)
        acl_emu_fail("%s: %llu bytes past the Unified Buffer", what, (unsigned long long)bytes);
}

/* One element of an atomic copy: `to` (global memory) op `from` (the Unified Buffer), in float for the floating
 * types and rounded once, as numpy adds them. */
template <typename T> ACL_EMU_UB_ONLY inline void acl_emu_atomic_one(unsigned char *to, const unsigned char *from, uint8_t op) {
    T a, b, out;
    std::memcpy(&a, to, sizeof a);
    std::memcpy(&b, from, sizeof b);
    if constexpr (std::is_integral<T>::value) {
        int64_t x = a, y = b, r = op == 1 ? x + y : op == 2 ? (x < y ? y : x) : (y < x ? y : x);
        out = (T)(typename std::make_unsigned<T>::type)(uint64_t)r;  /* adds wrap, as the integers do */
    } else {
        float x = (float)a, y = (float)b, r = op == 1 ? x + y : op == 2 ? (x < y ? y : x) : (y < x ? y : x);
        out = (T)r;
    }
    std::memcpy(to, &out, sizeof out);
}

/* `bytes` from the Unified Buffer to global memory, as the atomic mode says. */
ACL_EMU_UB_ONLY inline void acl_emu_store(unsigned char *to, const unsigned char *from, uint64_t bytes) {
    const acl_emu_core &core = acl_emu_current_block;
    if (core.atomic != 0)
        acl_emu_gm(to, bytes, 0);  /* (an atomic copy reads what is there) */
    acl_emu_gm(to, bytes, 1);
    if (core.atomic == 0) {
        std::memcpy(to, from, bytes);
        return;
    }
    static const uint8_t sizes[] = {0, 4, 2, 2, 1, 2, 4};
    uint32_t n = sizes[core.atomic_type];
    if (bytes % n)
        acl_emu_fail("an atomic copy of %llu bytes: not whole elements of the atomic type's %u bytes",
                     (unsigned long long)bytes, n);
    for (uint64_t i = 0; i < bytes; i += n) {
        switch (core.atomic_type) {
        case ACL_EMU_F32: acl_emu_atomic_one<float>(to + i, from + i, core.atomic); break;
        case ACL_EMU_F16: acl_emu_atomic_one<half>(to + i, from + i, core.atomic); break;
        case ACL_EMU_BF16: acl_emu_atomic_one<bfloat16_t>(to + i, from + i, core.atomic); break;
        case ACL_EMU_I8: acl_emu_atomic_one<int8_t>(to + i, from + i, core.atomic); break;
        case ACL_EMU_I16: acl_emu_atomic_one<int16_t>(to + i, from + i, core.atomic); break;
        default: acl_emu_atomic_one<int32_t>(to + i, from + i, core.atomic); break;
        }
    }
}

/* GM -> UB and UB -> GM move whole 32-byte blocks: a count whose bytes are not a multiple of 32 moves the whole
 * blocks it holds, as the device does (DataCopyPad moves any length). */
template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count) {
    uint64_t bytes = (uint64_t)count * sizeof(T) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    if (bytes > (uint64_t)dst.GetSize() * sizeof(T))
        acl_emu_fail("DataCopy GM->UB of %u elements into a LocalTensor of %u", count, dst.GetSize());
    acl_emu_gm(src.GetPhyAddr(), bytes, 0);
    std::memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), bytes);
    acl_emu_current_block->gm_to_ub += bytes;
}

template <typename T> inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
    uint64_t bytes = (uint64_t)count * sizeof(T) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    if (bytes > (uint64_t)src.GetSize() * sizeof(T))
        acl_emu_fail("DataCopy UB->GM of %u elements from a LocalTensor of %u", count, src.GetSize());
    acl_emu_store(reinterpret_cast<unsigned char *>(dst.GetPhyAddr()),
                  reinterpret_cast<const unsigned char *>(src.GetPhyAddr()), bytes);
    acl_emu_current_block->ub_to_gm += bytes;
}

template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
    if (count > dst.GetSize() || count > src.GetSize())
        acl_emu_fail("DataCopy UB->UB of %u elements between LocalTensors of %u and %u", count, dst.GetSize(),
                     src.GetSize());
    std::memmove(dst.GetPhyAddr(), src.GetPhyAddr(), (size_t)count * sizeof(T));
}

struct DataCopyParams {
    uint16_t blockCount = 1, blockLen = 0;
    union {
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
    DataCopyParams() {}
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcGapIn, uint16_t dstGapIn)
        : blockCount(count), blockLen(len), srcGap(srcGapIn), dstGap(dstGapIn) {}
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;   /* bytes */
    uint32_t srcStride = 0;  /* GM side: bytes; UB side: 32-byte blocks */
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcGap, uint32_t dstGap, uint32_t r)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap), rsv(r) {}
};

template <typename T> struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0, rightPadding = 0;
    T paddingValue = T(0);
    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0, rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    DataCopyPadParams(bool pad, uint8_t left, uint8_t right, uint64_t value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

/* DataCopy with blocks of 32 bytes: blockCount runs of blockLen blocks, gaps of srcStride / dstStride blocks. */
template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                           const DataCopyParams &p) {
    const unsigned char *s = reinterpret_cast<const unsigned char *>(src.GetPhyAddr());
    unsigned char *d = reinterpret_cast<unsigned char *>(dst.GetPhyAddr());
    uint64_t run = (uint64_t)p.blockLen * ONE_BLK_SIZE;
    for (uint32_t i = 0; i < p.blockCount; i++) {
        acl_emu_check_local(d, run, "DataCopy GM->UB");
        acl_emu_gm(s, run, 0);
        std::memcpy(d, s, run);
        s += run + (uint64_t)p.srcStride * ONE_BLK_SIZE;
        d += run + (uint64_t)p.dstStride * ONE_BLK_SIZE;
        acl_emu_current_block->gm_to_ub += run;
    }
}

template <typename T> inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                           const DataCopyParams &p) {
    const unsigned char *s = reinterpret_cast<const unsigned char *>(src.GetPhyAddr());
    unsigned char *d = reinterpret_cast<unsigned char *>(dst.GetPhyAddr());
    uint64_t run = (uint64_t)p.blockLen * ONE_BLK_SIZE;
    for (uint32_t i = 0; i < p.blockCount; i++) {
        acl_emu_check_local(s, run, "DataCopy UB->GM");
        acl_emu_store(d, s, run);
        s += run + (uint64_t)p.srcStride * ONE_BLK_SIZE;
        d += run + (uint64_t)p.dstStride * ONE_BLK_SIZE;
        acl_emu_current_block->ub_to_gm += run;
    }
}

/* DataCopyPad GM->UB (asc-devkit docs: DataCopyPad GMToUB): blockCount rows of blockLen bytes, GM rows srcStride
 * bytes apart (after each row), each UB row leftPadding elements, the row, rightPadding elements and dummy
 * bytes to a whole number of 32-byte blocks, dstStride blocks between rows. With isPad the padding and the
 * dummy bytes take paddingValue; without padding on either side the dummy bytes repeat the row's first element;
 * otherwise they keep what was there (the device leaves them undefined). */
template <typename T> inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                              const DataCopyExtParams &p, const DataCopyPadExtParams<T> &pad) {
    if (p.blockCount == 0 || p.blockLen == 0)
        return;
    if (p.blockLen % sizeof(T))
        acl_emu_fail("DataCopyPad GM->UB: blockLen %u is not a whole number of %zu-byte elements", p.blockLen,
                     sizeof(T));
    const unsigned char *s = reinterpret_cast<const unsigned char *>(src.GetPhyAddr());
    unsigned char *d = reinterpret_cast<unsigned char *>(dst.GetPhyAddr());
    uint64_t left = (uint64_t)pad.leftPadding * sizeof(T), row = left + p.blockLen + pad.rightPadding * sizeof(T);
    uint64_t padded = (row + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    uint32_t n = (uint32_t)(padded / sizeof(T)), first = (uint32_t)(left / sizeof(T));
    uint32_t end = (uint32_t)((left + p.blockLen) / sizeof(T));
    bool dummy_first = pad.leftPadding == 0 && pad.rightPadding == 0;
    for (uint32_t i = 0; i < p.blockCount; i++) {
        acl_emu_check_local(d, padded, "DataCopyPad GM->UB");
        T *e = reinterpret_cast<T *>(d);
        acl_emu_gm(s, p.blockLen, 0);
        std::memcpy(d + left, s, p.blockLen);
        if (pad.isPad && !dummy_first) {
            for (uint32_t k = 0; k < first; k++)
                e[k] = pad.paddingValue;
            for (uint32_t k = end; k < n; k++)
                e[k] = pad.paddingValue;
        } else if (dummy_first) {
            for (uint32_t k = end; k < n; k++)
                e[k] = e[0];
        }
        s += p.blockLen + p.srcStride;
        d += padded + (uint64_t)p.dstStride * ONE_BLK_SIZE;
        acl_emu_current_block->gm_to_ub += p.blockLen;
    }
}

template <typename T> inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                              const DataCopyExtParams &p) {
    DataCopyPad(dst, src, p, DataCopyPadExtParams<T>());
}

/* The older form: DataCopyParams (blockLen and srcStride in bytes, dstStride in blocks) and a padding value in
 * the low bytes of a 64-bit word. */
template <typename T> inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                              const DataCopyParams &p, const DataCopyPadParams &pad) {
    T value;
    std::memcpy(&value, &pad.paddingValue, sizeof value);
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
                DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, value));
}

/* DataCopyPad UB->GM: blockCount rows of blockLen bytes, UB rows starting on 32-byte blocks (srcStride blocks
 * between them), GM rows dstStride bytes apart (after each row). */
template <typename T> inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                              const DataCopyExtParams &p) {
    const unsigned char *s = reinterpret_cast<const unsigned char *>(src.GetPhyAddr());
    unsigned char *d = reinterpret_cast<unsigned char *>(dst.GetPhyAddr());
    uint64_t padded = ((uint64_t)p.blockLen + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    for (uint32_t i = 0; i < p.blockCount; i++) {
        acl_emu_check_local(s, p.blockLen, "DataCopyPad UB->GM");
        acl_emu_store(d, s, p.blockLen);
        s += padded + (uint64_t)p.srcStride * ONE_BLK_SIZE;
        d += p.blockLen + p.dstStride;
        acl_emu_current_block->ub_to_gm += p.blockLen;
    }
}

template <typename T> inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                              const DataCopyParams &p) {
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

/* Fill (asc-devkit docs: Fill, the high-level API; InitGlobalMemory): `size` elements of global memory set to
 * `value`, as the device does it: a Duplicate in the Unified Buffer copied out (so an atomic mode applies). */
template <typename T> inline void Fill(GlobalTensor<T> &gm, const uint64_t size, const T value) {
    unsigned char *d = reinterpret_cast<unsigned char *>(gm.GetPhyAddr());
    T chunk[256];
    for (T &c : chunk)
        c = value;
    for (uint64_t done = 0; done < size;) {
        uint64_t n = size - done < 256 ? size - done : 256;
        acl_emu_store(d + done * sizeof(T), reinterpret_cast<const unsigned char *>(chunk), n * sizeof(T));
        done += n;
    }
    acl_emu_current_block->ub_to_gm += size * sizeof(T);
    acl_emu_current_block->vector_bytes += (size < 256 ? size : 256) * sizeof(T);
    acl_emu_current_block->vector_calls += 1;
}
template <typename T> inline void InitGlobalMemory(GlobalTensor<T> &gm, const uint64_t size, const T value) {
    Fill(gm, size, value);
}

/* SyncAll with a workspace (asc-devkit impl/basic_api/dav_c220/kernel_operator_sync_impl.h SoftSyncAllImpl):
 * each block adds one to its word of gmWorkspace (32 bytes apart), then waits until every block has. Over
 * every block of the launch only (usedCores 0 or blockDim). */
template <bool isAIVOnly = true> inline void SyncAll(const GlobalTensor<int32_t> &gmWorkspace,
                                                     const LocalTensor<int32_t> &ubWorkspace,
                                                     const int32_t usedCores = 0) {
    int64_t n = GetBlockNum();
    if (usedCores != 0 && usedCores != n)
        acl_emu_fail("SyncAll over %d of the launch's %lld blocks is not emulated (only over every block)",
                     usedCores, (long long)n);
    if (ubWorkspace.GetSize() < (uint64_t)n * 8)
        acl_emu_fail("SyncAll: ubWorkspace of %u int32 elements, less than 8 for each of the %lld blocks",
                     ubWorkspace.GetSize(), (long long)n);
    __gm__ int32_t *word = gmWorkspace.GetPhyAddr() + GetBlockIdx() * 8;
    *word += 1;
    acl_emu_current_block->gm_to_ub += ONE_BLK_SIZE;
    acl_emu_current_block->ub_to_gm += ONE_BLK_SIZE;
    SyncAll();
}

}  // namespace AscendC

#endif
