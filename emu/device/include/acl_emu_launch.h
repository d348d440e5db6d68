/* Launching a kernel compiled for the CPU: what `name<<<blockDim, l2ctrl, stream>>>(args)` and
 * aclrtlaunch_<name> become (emu/device/rewrite.py). The kernel's parameters are read off its type: each argument
 * is converted to its parameter's type (as the device call would), packed at the offsets the kernel's record
 * (acl_emu_kernel_info) gives, and the launch is queued on the stream by aclEmuLaunchKernel (libascendcl); when
 * the task runs, the emulator calls the record's entry once for each block, which unpacks them. */
#ifndef ACL_EMU_LAUNCH_H
#define ACL_EMU_LAUNCH_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "acl_emu_block.h"

extern "C" {
/* A kernel's record: what the emulator needs to run it and to check and convert its arguments. */
typedef struct acl_emu_kernel_info {
    uint32_t abi;              /* ACL_EMU_BLOCK_ABI */
    uint32_t nparams;
    const char *name;
    acl_emu_entry entry;
    const uint32_t *offsets;   /* each parameter's offset in the packed arguments */
    const uint32_t *sizes;     /* ... and bytes */
    const uint8_t *pointers;   /* 1: a global-memory pointer (a device address, made a host one to run) */
    uint32_t args_size;        /* the packed arguments' bytes */
    uint32_t flags;            /* ACL_EMU_KERNEL_GM_CHECKED: its loads and stores report global memory */
} acl_emu_kernel_info;

#define ACL_EMU_KERNEL_GM_CHECKED 1u
#ifdef ACL_EMU_GM_CHECKED
#define ACL_EMU_KERNEL_FLAGS ACL_EMU_KERNEL_GM_CHECKED
#else
#define ACL_EMU_KERNEL_FLAGS 0u
#endif

int aclEmuLaunchKernel(const void *kernel, uint32_t blockDim, void *stream, const void *args, size_t argsSize);
/* The next ACL call of this thread is named as made at `caller` (a return address in the program). */
void acl_emu_call_from(const void *caller);
}

/* (included by kernel_operator.h, after acl_emu_current_block) */

namespace acl_emu {

template <typename F> struct Signature;
template <typename... P> struct Signature<void (*)(P...)> {
    static constexpr uint32_t n = sizeof...(P);
    static constexpr uint32_t sizes[n + 1] = {(uint32_t)sizeof(std::decay_t<P>)..., 0};
    static constexpr uint8_t pointers[n + 1] = {(uint8_t)std::is_pointer<std::decay_t<P>>::value..., 0};
    static constexpr uint32_t aligns[n + 1] = {(uint32_t)alignof(std::decay_t<P>)..., 1};
    struct Layout {
        uint32_t offsets[n + 1];
        uint32_t size;
        constexpr Layout() : offsets{}, size(0) {
            uint32_t at = 0;
            for (uint32_t i = 0; i < n; i++) {
                at = (at + aligns[i] - 1) / aligns[i] * aligns[i];
                offsets[i] = at;
                at += sizes[i];
            }
            size = at;
        }
    };
    static constexpr Layout layout{};

    template <void (*F)(P...), size_t... I>
    static void call(void *const *args, std::index_sequence<I...>) {
        F(*static_cast<std::decay_t<P> *>(args[I])...);
    }
    template <void (*F)(P...)> static void entry(void *const *args, acl_emu_block *block) {
        acl_emu_current_block = block;
        call<F>(args, std::index_sequence_for<P...>{});
        acl_emu_current_block = nullptr;
    }
    template <typename... A, size_t... I>
    static void pack(unsigned char *out, std::index_sequence<I...>, A &&...a) {
        (void)out;
        (..., (void)[&] {
            std::decay_t<P> v = (std::decay_t<P>)(a);
            std::memcpy(out + layout.offsets[I], &v, sizeof v);
        }());
    }
};

template <auto F> const acl_emu_kernel_info *info(const char *name) {
    using S = Signature<decltype(F)>;
    static const acl_emu_kernel_info k = {ACL_EMU_BLOCK_ABI, S::n, name, &S::template entry<F>, S::layout.offsets,
                                          S::sizes, S::pointers, S::layout.size,
                                          ACL_EMU_KERNEL_FLAGS};
    return &k;
}

/* Queue kernel F's launch (aclEmuLaunchKernel's code: 0 when queued); `caller`: where in the program it was made,
 * for the sanitizer's reports (acl_emu_call_from). */
template <auto F, typename... A>
uint32_t launch_from(const void *caller, const char *name, uint32_t blockDim, void *l2ctrl, void *stream,
                     A &&...args) {
    using S = Signature<decltype(F)>;
    static_assert(sizeof...(A) == S::n, "a kernel launch takes one argument for each of the kernel's parameters");
    (void)l2ctrl;
    unsigned char packed[S::layout.size + 1];
    S::pack(packed, std::index_sequence_for<A...>{}, std::forward<A>(args)...);
    acl_emu_call_from(caller);
    return (uint32_t)aclEmuLaunchKernel(info<F>(name), blockDim, stream, packed, S::layout.size);
}

/* kernel<<<blockDim, l2ctrl, stream>>>(args...): made where the expression is (never inlined, so that its
 * return address is the program's line). */
template <auto F, typename... A>
__attribute__((noinline)) uint32_t launch(const char *name, uint32_t blockDim, void *l2ctrl, void *stream,
                                          A &&...args) {
    return launch_from<F>(__builtin_return_address(0), name, blockDim, l2ctrl, stream, std::forward<A>(args)...);
}

}  // namespace acl_emu

#endif
