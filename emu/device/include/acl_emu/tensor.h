/* AscendC on the CPU, part 2 of kernel_operator.h: tensors and the Unified Buffer. LocalTensor (from a queue, a
 * buffer, or an address of the Unified Buffer for static tensor programming), GlobalTensor, TPipe with TQue and
 * TBuf, and LocalMemAllocator. The Unified Buffer is this block's own buffer of the product's size
 * (acl_emu_block.ub_size): TPipe::InitBuffer hands it out and refuses past its end. */
#ifndef ACL_EMU_TENSOR_H
#define ACL_EMU_TENSOR_H

#include "core.h"

namespace AscendC {

enum class TPosition { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM, TSCM,
                       MAX };
using QuePosition = TPosition;

/* Where the bytes are (LocalMemAllocator's template parameter). */
enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

constexpr uint32_t ONE_BLK_SIZE = 32;       /* a DataBlock */
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;  /* what one repeat of a vector instruction reads: 8 DataBlocks */

template <typename T> class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    LocalTensor(T *data, uint32_t size) : data_(data), size_(size) {}
    /* Static tensor programming: `tileSize` elements at byte `addr` of the Unified Buffer (32-byte aligned). */
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize) : pos_(pos) {
        acl_emu_block *b = acl_emu_current_block;
        if (addr % ONE_BLK_SIZE)
            acl_emu_fail("LocalTensor at Unified Buffer address %u: not 32-byte aligned", addr);
        if ((uint64_t)addr + (uint64_t)tileSize * sizeof(T) > b->ub_size)
            acl_emu_fail("LocalTensor of %u elements at Unified Buffer address %u: past its %llu bytes", tileSize,
                         addr, (unsigned long long)b->ub_size);
        data_ = reinterpret_cast<T *>(b->ub + addr);
        size_ = tileSize;
    }
    T *GetPhyAddr() const { return data_; }
    T *GetPhyAddr(uint32_t offset) const { return data_ + offset; }
    TPosition GetPosition() const { return pos_; }
    uint32_t GetSize() const { return size_; }
    uint32_t GetLength() const { return size_ * sizeof(T); }
    T GetValue(uint32_t i) const { check(i); return data_[i]; }
    void SetValue(uint32_t i, T v) const { check(i); data_[i] = v; }
    T &operator()(uint32_t i) const { check(i); return data_[i]; }
    LocalTensor operator[](uint32_t offset) const {
        if (offset > size_)
            acl_emu_fail("LocalTensor[%u]: past its %u elements", offset, size_);
        LocalTensor t(data_ + offset, size_ - offset);
        t.pos_ = pos_;
        return t;
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
    TPosition pos_ = TPosition::VECCALC;
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
class TQueBase {
public:
    unsigned char *base_ = nullptr;
    uint32_t num_ = 0, len_ = 0;
    uint32_t used_ = 0;             /* buffers allocated and not freed */
    uint32_t queued_ = 0;           /* enqueued and not dequeued */
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

template <TPosition pos = TPosition::VECCALC> class TBuf {
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

/* Static tensor programming: LocalTensors one after another from the start of the Unified Buffer (asc-devkit
 * impl/basic_api/kernel_tensor_impl.h: each takes tileSize elements, unpadded). */
template <Hardware hard = Hardware::UB> class LocalMemAllocator {
    static_assert(hard == Hardware::UB, "LocalMemAllocator of L1, L0A, L0B, L0C, BIAS or FIXBUF is not emulated "
                                        "(the Cube unit's buffers): acl-emu runs scalar code and the vector unit");

public:
    LocalMemAllocator() = default;
    uint32_t GetCurAddr() const { return head_; }
    template <typename DataType, uint32_t tileSize> LocalTensor<DataType> Alloc() {
        return Alloc<DataType>(tileSize);
    }
    template <TPosition pos, typename DataType, uint32_t tileSize> LocalTensor<DataType> Alloc() {
        return Alloc<pos, DataType>(tileSize);
    }
    template <typename DataType> LocalTensor<DataType> Alloc(uint32_t tileSize) {
        return Alloc<TPosition::VECCALC, DataType>(tileSize);
    }
    template <TPosition pos, typename DataType> LocalTensor<DataType> Alloc(uint32_t tileSize) {
        LocalTensor<DataType> t(pos, head_, tileSize);
        head_ += (uint32_t)(tileSize * sizeof(DataType));
        return t;
    }

private:
    uint32_t head_ = 0;
};

}  // namespace AscendC

#endif
