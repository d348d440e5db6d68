/* acl-emu: acl/acl_rt_allocator.h of CANN. External allocators (aclrtAllocator*) are outside the emulator's
 * scope; the header exists because acl_rt.h includes it. */
#ifndef ACL_EMU_ACL_RT_ALLOCATOR_H
#define ACL_EMU_ACL_RT_ALLOCATOR_H

#include "acl_base.h"

#endif
