/* AscendC on the CPU: the part of the AscendC programming model that the runtime's examples and the common
 * kernel samples use, for device code compiled with the host's C++ compiler and run by the emulator's block
 * runner (emu/device/runner.c), one block at a time.
 *
 * Global memory is the device memory of the emulator, reached through plain pointers (emu/arena.py); the Unified
 * Buffer is this block's own buffer of the product's size (acl_emu_block.ub_size). Instructions take effect at
 * once and in program order, so PipeBarrier, SetFlag / WaitFlag and EnQue / DeQue only order what already is in
 * order. half is _Float16 and bfloat16_t a 16-bit truncation of float rounded to nearest even: arithmetic is
 * done in float and rounded once, as numpy does on the same data. What is not here fails to compile, naming
 * itself. Its parts, each including the one before:
 *
 *   acl_emu/core.h       the dialect, the block and its core's registers (mask, atomic mode), printf, SyncAll
 *   acl_emu/tensor.h     LocalTensor, GlobalTensor, TPipe, TQue, TBuf, LocalMemAllocator
 *   acl_emu/copy.h       DataCopy, DataCopyPad, Fill, atomic copies, SyncAll with a workspace
 *   acl_emu/vector.h     elementwise instructions by count and by repeats (masks, strides), Duplicate, Cast
 *   acl_emu/reduce.h     ReduceSum / Max / Min, WholeReduce* (ReduceRepeat), GatherMask
 *   acl_emu/transform.h  Broadcast */
#ifndef ACL_EMU_KERNEL_OPERATOR_H
#define ACL_EMU_KERNEL_OPERATOR_H

#include "acl_emu/core.h"
#include "acl_emu/tensor.h"
#include "acl_emu/copy.h"
#include "acl_emu/vector.h"
#include "acl_emu/reduce.h"
#include "acl_emu/transform.h"

#include "acl_emu_launch.h"

#endif
