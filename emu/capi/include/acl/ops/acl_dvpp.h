/* acl-emu: media memory (acl/ops/acl_dvpp.h of CANN): acldvppMalloc / acldvppFree, which the emulator runs
 * (memory for the media engines is device memory of the current device). The rest of DVPP is outside its
 * scope. As CANN's header, it asks for ENABLE_DVPP_INTERFACE. */
#ifndef ACL_EMU_ACL_DVPP_H
#define ACL_EMU_ACL_DVPP_H

#if !defined(ENABLE_DVPP_INTERFACE)
#error "acl/ops/acl_dvpp.h needs ENABLE_DVPP_INTERFACE to be defined (-DENABLE_DVPP_INTERFACE)"
#endif

#include "acl/acl.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclError acldvppMalloc(void **devPtr, size_t size);
ACL_FUNC_VISIBILITY aclError acldvppFree(void *devPtr);

#ifdef __cplusplus
}
#endif

#endif
