/* AscendC on the CPU: the part of the AscendC programming model that the runtime's examples and the common
 * kernel samples use, for device code compiled with the host's C++ compiler and run by the emulator's block
 * runner (emu/device/runner.c), one block at a time.
 *
 * Global memory is the device memory of the emulator, reached through plain pointers (emu/arena.py); the Unified
 * Buffer is this block's own buffer of the product's size (acl_emu_block.ub_size), which TPipe::InitBuffer
 * hands out and refuses past its end. Instructions take effect at once and in program order, so PipeBarrier,
 * SetFlag / WaitFlag and EnQue / DeQue only order what already is in order. half is _Float16 and bfloat16_t a
 * 16-bit truncation of float rounded to nearest even: arithmetic is done in float and rounded once, as numpy
 * does on the same data. What is not here fails to compile, naming itself (see ACL_EMU_NOT_EMULATED). */
#ifndef ACL_EMU_KERNEL_OPERATOR_H
#define ACL_EMU_KERNEL_OPERATOR_H

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "acl_emu_block.h"

/* -- the device dialect, for the host compiler ------------------------------------------------------------ */
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __inline__ inline
#ifndef __NPU_ARCH__
#define __NPU_ARCH__ 2201
#endif
typedef __gm__ uint8_t *GM_ADDR;

/* The block this thread runs (set by the kernel library's entry point for each block). */
inline thread_local acl_emu_block *acl_emu_current_block = nullptr;

#define block_idx (acl_emu_current_block->index)
#define block_num (acl_emu_current_block->count)

inline void acl_emu_fail(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));
inline void acl_emu_fail(const char *format, ...) {
    char message[400];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    acl_emu_current_block->fail(acl_emu_current_block, message);
    __builtin_unreachable();
}

[[noreturn]] inline void trap() {
    acl_emu_current_block->trap(acl_emu_current_block, "trap()");
    __builtin_unreachable();
}

enum class cache_line_t { SINGLE_CACHE_LINE, ENTIRE_DATA_CACHE };
enum class dcci_dst_t { CACHELINE_ALL, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
template <typename T> inline void dcci(__gm__ T *, cache_line_t, dcci_dst_t = dcci_dst_t::CACHELINE_ALL) {}
template <typename T> inline void dcci(__gm__ T *, cache_line_t, int) {}

typedef _Float16 half;

/* bfloat16: the upper half of a float, rounded to nearest even (NaN kept quiet). */
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    bfloat16_t(float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u)
            bits = (uint16_t)((u >> 16) | 0x40);
        else
            bits = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    bfloat16_t(double d) : bfloat16_t((float)d) {}
    bfloat16_t(int i) : bfloat16_t((float)i) {}
    operator float() const {
        uint32_t u = (uint32_t)bits << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
};

namespace AscendC {

/* -- blocks ------------------------------------------------------------------------------------------------- */
inline int64_t GetBlockIdx() { return acl_emu_current_block->index; }
inline int64_t GetBlockNum() { return acl_emu_current_block->count; }
inline void SyncAll() { acl_emu_current_block->sync_all(acl_emu_current_block); }
template <bool = true> inline void SyncAll() { SyncAll(); }

inline void printf(const char *format, ...) __attribute__((format(printf, 1, 2)));
inline void printf(const char *format, ...) {
    char text[1024];
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    if (n > 0)
        acl_emu_current_block->print(acl_emu_current_block, text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}
#define PRINTF AscendC::printf

/* -- ordering (instructions take effect at once here) ------------------------------------------------------ */
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_V2, PIPE_FIX };
enum class HardEvent { MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1,
                       MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S,
                       S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3 };
template <pipe_t> inline void PipeBarrier() {}
template <HardEvent> inline void SetFlag(int32_t) {}
template <HardEvent> inline void WaitFlag(int32_t) {}

/* -- tensors -------------------------------------------------------------------------------------------------- */
enum class TPosition { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM, TSCM,
                       MAX };
using QuePosition = TPosition;

template <typename T> class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    LocalTensor(T *data, uint32_t size) : data_(data), size_(size) {}
    T *GetPhyAddr() const { return data_; }
    T *GetPhyAddr(uint32_t offset) const { return data_ + offset; }
    uint32_t GetSize() const { return size_; }
    uint32_t GetLength() const { return size_ * sizeof(T); }
    T GetValue(uint32_t i) const { check(i); return data_[i]; }
    void SetValue(uint32_t i, T v) const { check(i); data_[i] = v; }
    T &operator()(uint32_t i) const { check(i); return data_[i]; }
    LocalTensor operator[](uint32_t offset) const {
        if (offset > size_)
            acl_emu_fail("LocalTensor[%u]: past its %u elements", offset, size_);
        return LocalTensor(data_ + offset, size_ - offset);
    }
    template <typename U> LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(reinterpret_cast<U *>(data_), (uint32_t)(size_ * sizeof(T) / sizeof(U)));
    }
    void SetSize(uint32_t size) { size_ = size; }

private:
    void check(uint32_t i) const {
        if (i >= size_)
            acl_emu_fail("LocalTensor element %u: past its %u elements", i, size_);
    }
    T *data_ = nullptr;
    uint32_t size_ = 0;
};

template <typename T> class GlobalTensor {
public:
    using PrimType = T;
    void SetGlobalBuffer(__gm__ T *buffer, uint64_t size) { data_ = buffer; size_ = size; }
    void SetGlobalBuffer(__gm__ T *buffer) { data_ = buffer; size_ = UINT64_MAX / sizeof(T); }
    __gm__ T *GetPhyAddr() const { return data_; }
    __gm__ T *GetPhyAddr(uint64_t offset) const { return data_ + offset; }
    uint64_t GetSize() const { return size_; }
    T GetValue(uint64_t i) const { return data_[i]; }
    void SetValue(uint64_t i, T v) const { data_[i] = v; }
    T &operator()(uint64_t i) const { return data_[i]; }
    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor t;
        t.data_ = data_ + offset;
        t.size_ = offset <= size_ ? size_ - offset : 0;
        return t;
    }

private:
    __gm__ T *data_ = nullptr;
    uint64_t size_ = 0;
};

/* -- the Unified Buffer: TPipe, TQue, TBuf ------------------------------------------------------------------ */
constexpr uint32_t ONE_BLK_SIZE = 32;

class TQueBase {
public:
    unsigned char *base_ = nullptr;
    uint32_t num_ = 0, len_ = 0;
    uint32_t used_ = 0;             /* buffers allocated and not freed */
    uint32_t queued_ = 0;           /* enqueued and not dequeued */
    unsigned char *slots_[16] = {};  /* allocation order of the buffers handed out */
    unsigned char *queue_[16] = {};
    uint32_t head_ = 0;
    bool free_[16] = {};
    const char *name_ = "TQue";

    unsigned char *take() {
        if (base_ == nullptr)
            acl_emu_fail("%s::AllocTensor before TPipe::InitBuffer gave it memory", name_);
        for (uint32_t i = 0; i < num_; i++) {
            uint32_t k = (next_ + i) % num_;
            if (free_[k]) {
                free_[k] = false;
                next_ = (k + 1) % num_;
                used_++;
                return base_ + (size_t)k * len_;
            }
        }
        acl_emu_fail("%s::AllocTensor: all %u buffers are in use (FreeTensor gives one back)", name_, num_);
    }
    void give(unsigned char *p) {
        if (p < base_ || p >= base_ + (size_t)num_ * len_ || (size_t)(p - base_) % len_)
            acl_emu_fail("%s::FreeTensor of a tensor it did not allocate", name_);
        uint32_t k = (uint32_t)((size_t)(p - base_) / len_);
        if (free_[k])
            acl_emu_fail("%s::FreeTensor of a buffer already free", name_);
        free_[k] = true;
        used_--;
    }
    void push(unsigned char *p) {
        if (queued_ == 16)
            acl_emu_fail("%s::EnQue: the queue is full", name_);
        queue_[(head_ + queued_++) % 16] = p;
    }
    unsigned char *pop() {
        if (queued_ == 0)
            acl_emu_fail("%s::DeQue of an empty queue (on the device the block would wait forever)", name_);
        unsigned char *p = queue_[head_];
        head_ = (head_ + 1) % 16;
        queued_--;
        return p;
    }

private:
    uint32_t next_ = 0;
};

template <TPosition pos, int32_t depth = 1> class TQue : public TQueBase {
public:
    template <typename T> LocalTensor<T> AllocTensor() {
        return LocalTensor<T>(reinterpret_cast<T *>(take()), len_ / (uint32_t)sizeof(T));
    }
    template <typename T> void FreeTensor(const LocalTensor<T> &t) {
        give(reinterpret_cast<unsigned char *>(t.GetPhyAddr()));
    }
    template <typename T> bool EnQue(const LocalTensor<T> &t) {
        push(reinterpret_cast<unsigned char *>(t.GetPhyAddr()));
        return true;
    }
    template <typename T> LocalTensor<T> DeQue() {
        return LocalTensor<T>(reinterpret_cast<T *>(pop()), len_ / (uint32_t)sizeof(T));
    }
    bool VacantInQue() const { return queued_ < 16; }
    bool HasTensorInQue() const { return queued_ > 0; }
    int32_t GetTensorCountInQue() const { return (int32_t)queued_; }
};

template <TPosition pos, int32_t depth = 1> using TQueBind = TQue<pos, depth>;

template <TPosition pos> class TBuf {
public:
    unsigned char *base_ = nullptr;
    uint32_t len_ = 0;
    template <typename T> LocalTensor<T> Get() {
        if (base_ == nullptr)
            acl_emu_fail("TBuf::Get before TPipe::InitBuffer gave it memory");
        return LocalTensor<T>(reinterpret_cast<T *>(base_), len_ / (uint32_t)sizeof(T));
    }
    template <typename T> LocalTensor<T> Get(uint32_t count) {
        if (count * sizeof(T) > len_)
            acl_emu_fail("TBuf::Get(%u): past its %u bytes", count, len_);
        return LocalTensor<T>(reinterpret_cast<T *>(base_), count);
    }
};

class TPipe {
public:
    TPipe() = default;
    template <TPosition pos, int32_t depth>
    bool InitBuffer(TQue<pos, depth> &que, uint8_t num, uint32_t len) {
        if (num == 0 || num > 16)
            acl_emu_fail("TPipe::InitBuffer: %u buffers (1 to 16)", (unsigned)num);
        len = (len + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
        que.base_ = carve((uint64_t)num * len, "TPipe::InitBuffer(que)");
        que.num_ = num;
        que.len_ = len;
        for (uint32_t i = 0; i < num; i++)
            que.free_[i] = true;
        return true;
    }
    template <TPosition pos> bool InitBuffer(TBuf<pos> &buf, uint32_t len) {
        len = (len + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
        buf.base_ = carve(len, "TPipe::InitBuffer(buf)");
        buf.len_ = len;
        return true;
    }
    void Reset() { used_ = 0; }
    void Destroy() {}

private:
    unsigned char *carve(uint64_t bytes, const char *what) {
        acl_emu_block *b = acl_emu_current_block;
        if (used_ + bytes > b->ub_size)
            acl_emu_fail("%s: %llu bytes more than the %llu of the Unified Buffer left (it holds %llu)", what,
                         (unsigned long long)bytes, (unsigned long long)(b->ub_size - used_),
                         (unsigned long long)b->ub_size);
        unsigned char *p = b->ub + used_;
        used_ += bytes;
        return p;
    }
    uint64_t used_ = 0;
};

/* -- data movement ------------------------------------------------------------------------------------------ */
inline void acl_emu_check_local(const void *p, uint64_t bytes, const char *what) {
    acl_emu_block *b = acl_emu_current_block;
    const unsigned char *c = static_cast<const unsigned char *>(p);
    if (c < b->ub || c + bytes > b->ub + b->ub_size)
        acl_emu_fail("%s: %llu bytes past the Unified Buffer", what, (unsigned long long)bytes);
}

/* GM -> UB and UB -> GM move whole 32-byte blocks: a count whose bytes are not a multiple of 32 moves the whole
 * blocks it holds, as the device does (DataCopyPad moves any length). */
template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count) {
    uint64_t bytes = (uint64_t)count * sizeof(T) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    if (bytes > (uint64_t)dst.GetSize() * sizeof(T))
        acl_emu_fail("DataCopy GM->UB of %u elements into a LocalTensor of %u", count, dst.GetSize());
    std::memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), bytes);
    acl_emu_current_block->gm_to_ub += bytes;
}

template <typename T> inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
    uint64_t bytes = (uint64_t)count * sizeof(T) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    if (bytes > (uint64_t)src.GetSize() * sizeof(T))
        acl_emu_fail("DataCopy UB->GM of %u elements from a LocalTensor of %u", count, src.GetSize());
    std::memcpy(dst.GetPhyAddr(), src.GetPhyAddr(), bytes);
    acl_emu_current_block->ub_to_gm += bytes;
}

template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
    if (count > dst.GetSize() || count > src.GetSize())
        acl_emu_fail("DataCopy UB->UB of %u elements between LocalTensors of %u and %u", count, dst.GetSize(),
                     src.GetSize());
    std::memmove(dst.GetPhyAddr(), src.GetPhyAddr(), (size_t)count * sizeof(T));
}

struct DataCopyParams {
    uint16_t blockCount = 1, blockLen = 0, srcStride = 0, dstStride = 0;
    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcGap, uint16_t dstGap)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap) {}
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

/* DataCopy with blocks of 32 bytes: blockCount runs of blockLen blocks, gaps of srcStride / dstStride blocks. */
template <typename T> inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                           const DataCopyParams &p) {
    const unsigned char *s = reinterpret_cast<const unsigned char *>(src.GetPhyAddr());
    unsigned char *d = reinterpret_cast<unsigned char *>(dst.GetPhyAddr());
    uint64_t run = (uint64_t)p.blockLen * ONE_BLK_SIZE;
    for (uint32_t i = 0; i < p.blockCount; i++) {
        acl_emu_check_local(d, run, "DataCopy GM->UB");
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
        std::memcpy(d, s, run);
        s += run + (uint64_t)p.srcStride * ONE_BLK_SIZE;
        d += run + (uint64_t)p.dstStride * ONE_BLK_SIZE;
        acl_emu_current_block->ub_to_gm += run;
    }
}

/* DataCopyPad GM->UB: blockCount rows of blockLen bytes, GM rows srcStride bytes apart (after each row), UB rows
 * starting on 32-byte blocks (dstStride blocks between them); each UB row padded to a whole block, with
 * paddingValue when isPad (leftPadding / rightPadding elements), else left as it was. */
template <typename T> inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                              const DataCopyExtParams &p, const DataCopyPadExtParams<T> &pad) {
    const unsigned char *s = reinterpret_cast<const unsigned char *>(src.GetPhyAddr());
    unsigned char *d = reinterpret_cast<unsigned char *>(dst.GetPhyAddr());
    uint64_t row = (uint64_t)pad.leftPadding * sizeof(T) + p.blockLen + (uint64_t)pad.rightPadding * sizeof(T);
    uint64_t padded = (row + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    for (uint32_t i = 0; i < p.blockCount; i++) {
        acl_emu_check_local(d, padded, "DataCopyPad GM->UB");
        T *e = reinterpret_cast<T *>(d);
        if (pad.isPad)
            for (uint32_t k = 0; k < pad.leftPadding; k++)
                e[k] = pad.paddingValue;
        std::memcpy(d + (uint64_t)pad.leftPadding * sizeof(T), s, p.blockLen);
        if (pad.isPad)
            for (uint64_t k = (pad.leftPadding * sizeof(T) + p.blockLen) / sizeof(T); k < padded / sizeof(T); k++)
                e[k] = pad.paddingValue;
        s += p.blockLen + p.srcStride;
        d += padded + (uint64_t)p.dstStride * ONE_BLK_SIZE;
        acl_emu_current_block->gm_to_ub += p.blockLen;
    }
}

template <typename T> inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                              const DataCopyExtParams &p) {
    DataCopyPad(dst, src, p, DataCopyPadExtParams<T>());
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
        std::memcpy(d, s, p.blockLen);
        s += padded + (uint64_t)p.srcStride * ONE_BLK_SIZE;
        d += p.blockLen + p.dstStride;
        acl_emu_current_block->ub_to_gm += p.blockLen;
    }
}

/* -- vector instructions: element i of dst from element i of the sources, in float for half and bfloat16 -- */
/* (their loops vectorized whatever the program's optimization level: they stand for the vector unit) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("O3")
#endif
template <typename T> struct acl_emu_wide { using type = T; };
template <> struct acl_emu_wide<half> { using type = float; };
template <> struct acl_emu_wide<bfloat16_t> { using type = float; };

template <typename T> inline void acl_emu_vector(const LocalTensor<T> &dst, uint32_t count, const char *what) {
    if (count > dst.GetSize())
        acl_emu_fail("%s of %u elements into a LocalTensor of %u", what, count, dst.GetSize());
    acl_emu_current_block->vector_bytes += (uint64_t)count * sizeof(T);
    acl_emu_current_block->vector_calls += 1;
}

#define ACL_EMU_BINARY(NAME, EXPR)                                                                              \
    template <typename T> inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src0,                 \
                                           const LocalTensor<T> &src1, const int32_t &count) {                    \
        using W = typename acl_emu_wide<T>::type;                                                                  \
        acl_emu_vector(dst, (uint32_t)count, #NAME);                                                               \
        if ((uint32_t)count > src0.GetSize() || (uint32_t)count > src1.GetSize())                                  \
            acl_emu_fail(#NAME " of %d elements from LocalTensors of %u and %u", count, src0.GetSize(),          \
                         src1.GetSize());                                                                          \
        T *d = dst.GetPhyAddr();                                                                                   \
        const T *a = src0.GetPhyAddr(), *b = src1.GetPhyAddr();                                                    \
        for (int32_t i = 0, n = count; i < n; i++) { /* (n: count may alias what d points to) */                                                                      \
            W x = (W)a[i], y = (W)b[i];                                                                            \
            d[i] = (T)(EXPR);                                                                                      \
        }                                                                                                          \
    }
ACL_EMU_BINARY(Add, x + y)
ACL_EMU_BINARY(Sub, x - y)
ACL_EMU_BINARY(Mul, x * y)
ACL_EMU_BINARY(Div, x / y)
ACL_EMU_BINARY(Max, x > y ? x : y)
ACL_EMU_BINARY(Min, x < y ? x : y)
#undef ACL_EMU_BINARY

#define ACL_EMU_SCALAR(NAME, EXPR)                                                                              \
    template <typename T, typename S> inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,      \
                                                       const S &scalar, const int32_t &count) {                   \
        using W = typename acl_emu_wide<T>::type;                                                                  \
        acl_emu_vector(dst, (uint32_t)count, #NAME);                                                               \
        if ((uint32_t)count > src.GetSize())                                                                       \
            acl_emu_fail(#NAME " of %d elements from a LocalTensor of %u", count, src.GetSize());                \
        T *d = dst.GetPhyAddr();                                                                                   \
        const T *a = src.GetPhyAddr();                                                                             \
        W y = (W)(T)scalar;                                                                                        \
        for (int32_t i = 0, n = count; i < n; i++) { /* (n: count may alias what d points to) */                                                                      \
            W x = (W)a[i];                                                                                         \
            d[i] = (T)(EXPR);                                                                                      \
        }                                                                                                          \
    }
ACL_EMU_SCALAR(Adds, x + y)
ACL_EMU_SCALAR(Muls, x * y)
ACL_EMU_SCALAR(Maxs, x > y ? x : y)
ACL_EMU_SCALAR(Mins, x < y ? x : y)
#undef ACL_EMU_SCALAR

#define ACL_EMU_UNARY(NAME, EXPR)                                                                               \
    template <typename T> inline void NAME(const LocalTensor<T> &dst, const LocalTensor<T> &src,                  \
                                           const int32_t &count) {                                                 \
        using W = typename acl_emu_wide<T>::type;                                                                  \
        acl_emu_vector(dst, (uint32_t)count, #NAME);                                                               \
        if ((uint32_t)count > src.GetSize())                                                                       \
            acl_emu_fail(#NAME " of %d elements from a LocalTensor of %u", count, src.GetSize());                \
        T *d = dst.GetPhyAddr();                                                                                   \
        const T *a = src.GetPhyAddr();                                                                             \
        for (int32_t i = 0, n = count; i < n; i++) { /* (n: count may alias what d points to) */                                                                      \
            W x = (W)a[i];                                                                                         \
            d[i] = (T)(EXPR);                                                                                      \
        }                                                                                                          \
    }
ACL_EMU_UNARY(Abs, x < 0 ? -x : x)
ACL_EMU_UNARY(Exp, (W)std::exp((double)x))
ACL_EMU_UNARY(Ln, (W)std::log((double)x))
ACL_EMU_UNARY(Sqrt, (W)std::sqrt((double)x))
ACL_EMU_UNARY(Relu, x > 0 ? x : (W)0)
ACL_EMU_UNARY(Reciprocal, (W)1 / x)
#undef ACL_EMU_UNARY

template <typename T, typename S> inline void Duplicate(const LocalTensor<T> &dst, const S &scalar,
                                                        const int32_t &count) {
    acl_emu_vector(dst, (uint32_t)count, "Duplicate");
    T v = (T)scalar;
    for (int32_t i = 0, n = count; i < n; i++)
        dst.GetPhyAddr()[i] = v;
}

/* -- Cast: element i of dst is element i of src in dst's type, rounded as `mode` says ------------------------ */
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

template <typename T> struct acl_emu_bits { using type = typename std::make_unsigned<T>::type; };  /* integers */
template <> struct acl_emu_bits<half> { using type = uint16_t; };
template <> struct acl_emu_bits<bfloat16_t> { using type = uint16_t; };
template <> struct acl_emu_bits<float> { using type = uint32_t; };

/* The representable value next to `x` away from or towards zero (`up`: larger magnitude), in T's own bits. */
template <typename T> inline T acl_emu_step(T x, bool up) {
    typename acl_emu_bits<T>::type b;
    std::memcpy(&b, &x, sizeof b);
    b = up ? b + 1 : b - 1;
    std::memcpy(&x, &b, sizeof b);
    return x;
}

/* `v` in a floating type T, rounded as `mode` says (CAST_NONE and CAST_RINT: to nearest, ties to even). */
template <typename T> inline T acl_emu_round_float(double v, RoundMode mode) {
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

template <typename D> inline D acl_emu_round(double v, RoundMode mode) {
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

template <typename D, typename S> inline void Cast(const LocalTensor<D> &dst, const LocalTensor<S> &src,
                                                   const RoundMode &mode, const uint32_t count) {
    acl_emu_vector(dst, count, "Cast");
    if (count > src.GetSize())
        acl_emu_fail("Cast of %u elements from a LocalTensor of %u", count, src.GetSize());
    for (uint32_t i = 0; i < count; i++)
        dst.GetPhyAddr()[i] = acl_emu_round<D>((double)(typename acl_emu_wide<S>::type)src.GetPhyAddr()[i], mode);
}

/* -- reductions: dst[0] is the result (ReduceMax / ReduceMin with calIndex: dst[1] holds the index's bits) ---- */
/* Summed as numpy sums (pairwise, blocks of 128 in 8 running sums, in float for half and bfloat16), so that a
 * result equals np.sum of the same data. */
template <typename W, typename T> inline W acl_emu_pairwise(const T *a, uint32_t n) {
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

template <typename T> inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                            const LocalTensor<T> &, const int32_t count) {
    acl_emu_vector(dst, 1, "ReduceSum");
    if ((uint32_t)count > src.GetSize())
        acl_emu_fail("ReduceSum of %d elements from a LocalTensor of %u", count, src.GetSize());
    using W = typename acl_emu_wide<T>::type;
    dst.GetPhyAddr()[0] = (T)acl_emu_pairwise<W>(src.GetPhyAddr(), (uint32_t)count);
}

template <typename T, bool most> inline void acl_emu_extreme(const LocalTensor<T> &dst, const LocalTensor<T> &src,
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
    if (calIndex) {
        typename acl_emu_bits<T>::type index = (typename acl_emu_bits<T>::type)at;
        std::memcpy(dst.GetPhyAddr() + 1, &index, sizeof index);
    }
}

template <typename T> inline void ReduceMax(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                            const LocalTensor<T> &, const int32_t count, bool calIndex = false) {
    acl_emu_extreme<T, true>(dst, src, count, calIndex, "ReduceMax");
}

template <typename T> inline void ReduceMin(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                            const LocalTensor<T> &, const int32_t count, bool calIndex = false) {
    acl_emu_extreme<T, false>(dst, src, count, calIndex, "ReduceMin");
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

}  // namespace AscendC

#include "acl_emu_launch.h"

#endif
