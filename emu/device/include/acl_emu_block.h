/* What the emulator's block runner (emu/device/runner.c) and device code compiled for the CPU share: one block's
 * view of its launch. A kernel library's entry points (emitted by emu/device/rewrite.py) take the launch's
 * arguments and this record; kernel_operator.h reads it for block_idx, the Unified Buffer, printf and trap. */
#ifndef ACL_EMU_BLOCK_H
#define ACL_EMU_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_EMU_BLOCK_ABI 2 /* changes whenever this record or acl_emu_kernel_info does */

typedef struct acl_emu_block acl_emu_block;

struct acl_emu_block {
    uint32_t abi;           /* ACL_EMU_BLOCK_ABI */
    uint32_t index;         /* the block: 0 .. count - 1 */
    uint32_t count;         /* the launch's blockDim */
    uint32_t npu_arch;      /* __NPU_ARCH__ of the product */
    unsigned char *ub;      /* this block's Unified Buffer */
    uint64_t ub_size;       /* its bytes (the product's AI Core) */
    /* never return: the launch fails as an AI Core exception, naming `what` */
    void (*trap)(acl_emu_block *self, const char *what);
    void (*fail)(acl_emu_block *self, const char *message);
    void (*sync_all)(acl_emu_block *self); /* SyncAll: every block of the launch reaches it first */
    void (*print)(acl_emu_block *self, const char *text, size_t n); /* AscendC::printf's output */
    /* what the block did, for the launch's time (emu/device/timing.py) */
    uint64_t gm_to_ub;      /* bytes DataCopy moved from global memory to the Unified Buffer */
    uint64_t ub_to_gm;      /* ... and back */
    uint64_t vector_bytes;  /* bytes the vector instructions produced */
    uint64_t vector_calls;  /* vector instructions issued */
    void *runner;           /* the runner's own state */
    /* global memory whose accesses the block reports (the launch device's memory, when the sanitizer is on;
     * gm_span 0: none): touch(address, bytes, write) for each, made by the AscendC functions that move bytes
     * to and from global memory, and by the kernel's own loads and stores where the compiler instruments them
     * (ACL_EMU_GM_CHECKED, emu/device/rewrite.py) */
    uint64_t gm_lo, gm_span;
    void (*touch)(uint64_t address, uint64_t bytes, int write);
};

/* A kernel's entry point as a kernel library exports it: its arguments as the launch packed them (one pointer
 * to each argument's bytes), and the block. */
typedef void (*acl_emu_entry)(void *const *args, acl_emu_block *block);

#ifdef __cplusplus
}
#endif
#endif
