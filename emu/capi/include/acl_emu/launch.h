/* acl-emu's own entry point for device code compiled for the CPU (emu/device): a launch of kernel<<<...>>>,
 * aclrtlaunch_<kernel> or ACLRT_LAUNCH_KERNEL, made by the code emu/device/rewrite.py and acl_emu_launch.h give a
 * kernel library. Not a CANN API: programs do not call it themselves. */
#ifndef ACL_EMU_LAUNCH_API_H
#define ACL_EMU_LAUNCH_API_H

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Queue `kernel` (its acl_emu_kernel_info record) on `stream` for blockDim blocks, with its arguments packed
 * as the record lays them out (argsSize bytes at args, copied before the call returns). */
ACL_FUNC_VISIBILITY aclError aclEmuLaunchKernel(const void *kernel, uint32_t blockDim, aclrtStream stream,
                                                const void *args, size_t argsSize);

#ifdef __cplusplus
}
#endif
#endif
