/* AscendC on the CPU, part 1 of kernel_operator.h: the device dialect for the host compiler, the block being run
 * and what its AI Core keeps between instructions (the vector mask register and its mode, the atomic mode of
 * copies to global memory), half and bfloat16_t, printf, SyncAll, the pipes' ordering, and AscendC::Std. */
#ifndef ACL_EMU_CORE_H
#define ACL_EMU_CORE_H

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../acl_emu_block.h"

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

/* The block this thread runs, and the registers of its core that instructions set and later ones read. The
 * kernel library's entry point assigns the block (acl_emu_launch.h), which starts it with the registers as a
 * kernel finds them (InitSocState's values); SyncAll keeps them across the other blocks it lets run. */
struct acl_emu_core {
    acl_emu_block *block = nullptr;
    uint64_t mask_high = ~0ull, mask_low = ~0ull;  /* the vector mask (ResetMask: every element) */
    bool counter = false;                          /* its mode: Normal (a mask per repeat) or Counter */
    uint8_t atomic = 0;                            /* copies UB -> GM: 0 store, 1 add, 2 max, 3 min ... */
    uint8_t atomic_type = 0;                       /* ... on elements of this type (acl_emu_atomic_type) */
    int64_t kept = 0;                              /* GatherMask's count of the elements it kept */
    uint64_t gm_lo = 0, gm_span = 0;               /* the block's global memory to report (acl_emu_gm) */
    void (*touch)(uint64_t, uint64_t, int) = nullptr;

    acl_emu_core &operator=(acl_emu_block *b) {
        *this = acl_emu_core();
        block = b;
        if (b != nullptr && b->touch != nullptr) {
            gm_lo = b->gm_lo;
            gm_span = b->gm_span;
            touch = b->touch;
        }
        return *this;
    }
    acl_emu_block *operator->() const { return block; }
    operator acl_emu_block *() const { return block; }
};

inline thread_local acl_emu_core acl_emu_current_block;

/* Functions that stand for the vector unit and only touch the Unified Buffer: left out of the compiler's checks
 * of loads and stores (ACL_EMU_GM_CHECKED), which would cost a call for each element. */
#if defined(__GNUC__)
#define ACL_EMU_UB_ONLY __attribute__((no_sanitize_address))
#else
#define ACL_EMU_UB_ONLY
#endif

/* `bytes` of global memory at `p` read (write 0) or written (1) by the block: reported when the sanitizer
 * watches the launch (acl_emu_block.touch; a stale window after a launch reaches a runner that is not running,
 * which ignores it). */
ACL_EMU_UB_ONLY inline void acl_emu_gm(const volatile void *p, uint64_t bytes, int write) {
    const acl_emu_core &c = acl_emu_current_block;
    uint64_t a = (uint64_t)(uintptr_t)p;
    if (a - c.gm_lo < c.gm_span)
        c.touch(a, bytes, write);
}

/* The compiler's checks of the kernel's own loads and stores (-fsanitize=kernel-address with calls, in
 * emu/device/rewrite.py's kernel flags) land here, declared as the compiler declares them. */
#ifdef ACL_EMU_GM_CHECKED
#define ACL_EMU_HOOK(name, n, w)                                                                                    \
    extern "C" __attribute__((weak, no_sanitize_address)) void name(void *a) { acl_emu_gm(a, n, w); }
ACL_EMU_HOOK(__asan_load1_noabort, 1, 0) ACL_EMU_HOOK(__asan_load2_noabort, 2, 0)
ACL_EMU_HOOK(__asan_load4_noabort, 4, 0) ACL_EMU_HOOK(__asan_load8_noabort, 8, 0)
ACL_EMU_HOOK(__asan_load16_noabort, 16, 0) ACL_EMU_HOOK(__asan_store1_noabort, 1, 1)
ACL_EMU_HOOK(__asan_store2_noabort, 2, 1) ACL_EMU_HOOK(__asan_store4_noabort, 4, 1)
ACL_EMU_HOOK(__asan_store8_noabort, 8, 1) ACL_EMU_HOOK(__asan_store16_noabort, 16, 1)
#undef ACL_EMU_HOOK
extern "C" __attribute__((weak, no_sanitize_address)) void __asan_loadN_noabort(void *a, long n) {
    acl_emu_gm(a, (uint64_t)n, 0);
}
extern "C" __attribute__((weak, no_sanitize_address)) void __asan_storeN_noabort(void *a, long n) {
    acl_emu_gm(a, (uint64_t)n, 1);
}
extern "C" __attribute__((weak)) void __asan_handle_no_return() {}
#endif

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

/* The core's pipes (PipeBarrier) and their events (SetFlag / WaitFlag take their ids), as the device compiler
 * declares them: outside namespace AscendC. */
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_V2, PIPE_FIX };
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

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

/* Every block of the launch reaches it before any goes on; the block's registers are its own again after. */
inline void SyncAll() {
    acl_emu_core self = acl_emu_current_block;
    self->sync_all(self.block);
    acl_emu_current_block = self;
}
template <bool isAIVOnly = true> inline void SyncAll() { SyncAll(); }

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
enum class HardEvent { MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1,
                       MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S,
                       S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3 };
template <pipe_t> inline void PipeBarrier() {}
template <HardEvent> inline void SetFlag(int32_t) {}
template <HardEvent> inline void WaitFlag(int32_t) {}

/* -- the vector mask register (asc-devkit impl/basic_api/kernel_reg.h, kernel_utils_base.h) ------------------ */
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };
constexpr uint64_t MASK_PLACEHOLDER = 0;
constexpr uint64_t MASK_PLACEHOLDER_LIST[2] = {0, 0};
constexpr uint64_t FULL_MASK = ~0ull;

inline void SetMaskCount() { acl_emu_current_block.counter = true; }
inline void SetMaskNorm() { acl_emu_current_block.counter = false; }
inline void ResetMask() { acl_emu_current_block.mask_high = acl_emu_current_block.mask_low = FULL_MASK; }

template <typename T, MaskMode mode = MaskMode::NORMAL> inline void SetVectorMask(uint64_t maskHigh, uint64_t maskLow) {
    acl_emu_current_block.mask_high = maskHigh;
    acl_emu_current_block.mask_low = maskLow;
}

/* A length as the register holds it: in Counter mode the count; in Normal mode its first `len` bits. */
template <typename T, MaskMode mode = MaskMode::NORMAL> inline void SetVectorMask(int32_t len) {
    if (mode == MaskMode::COUNTER) {
        SetVectorMask<T>(0, (uint64_t)(int64_t)len);
        return;
    }
    constexpr int32_t per_repeat = 256 / (int32_t)sizeof(T);
    if (len == 64)
        SetVectorMask<T>(0, FULL_MASK);
    else if (len == per_repeat || len >= 128)
        SetVectorMask<T>(FULL_MASK, FULL_MASK);
    else if (len > 64)
        SetVectorMask<T>((1ull << (len - 64)) - 1, FULL_MASK);
    else
        SetVectorMask<T>(0, len <= 0 ? 0 : (1ull << len) - 1);
}

/* -- atomic copies to global memory (SetAtomicAdd and the rest): what DataCopy UB -> GM does with the bytes
 *    already there (acl_emu/copy.h) ----------------------------------------------------------------------- */
enum acl_emu_atomic_type { ACL_EMU_F32 = 1, ACL_EMU_F16, ACL_EMU_BF16, ACL_EMU_I8, ACL_EMU_I16, ACL_EMU_I32 };
template <typename T> constexpr uint8_t acl_emu_atomic_of() {
    if constexpr (std::is_same<T, float>::value) return ACL_EMU_F32;
    else if constexpr (std::is_same<T, half>::value) return ACL_EMU_F16;
    else if constexpr (std::is_same<T, bfloat16_t>::value) return ACL_EMU_BF16;
    else if constexpr (std::is_same<T, int8_t>::value) return ACL_EMU_I8;
    else if constexpr (std::is_same<T, int16_t>::value) return ACL_EMU_I16;
    else if constexpr (std::is_same<T, int32_t>::value) return ACL_EMU_I32;
    else static_assert(sizeof(T) == 0, "atomic copies take float, half, bfloat16_t, int8_t, int16_t or int32_t");
}
template <typename T> inline void SetAtomicType() { acl_emu_current_block.atomic_type = acl_emu_atomic_of<T>(); }
template <typename T> inline void SetAtomicAdd() { SetAtomicType<T>(); acl_emu_current_block.atomic = 1; }
template <typename T> inline void SetAtomicMax() { SetAtomicType<T>(); acl_emu_current_block.atomic = 2; }
template <typename T> inline void SetAtomicMin() { SetAtomicType<T>(); acl_emu_current_block.atomic = 3; }
inline void SetAtomicNone() { acl_emu_current_block.atomic = 0; }
inline void DisableDmaAtomic() { SetAtomicNone(); }

/* The core's state as a kernel finds it (asc-devkit docs: InitSocState): no atomic copies, Normal mode, every
 * element in the mask. */
inline void InitSocState() {
    SetAtomicNone();
    SetMaskNorm();
    ResetMask();
}

/* -- AscendC::Std ------------------------------------------------------------------------------------------ */
namespace Std {
template <typename T, typename U> constexpr auto max(const T &a, const U &b) { return a < b ? b : a; }
template <typename T, typename U> constexpr auto min(const T &a, const U &b) { return b < a ? b : a; }
}  // namespace Std

}  // namespace AscendC

#endif
