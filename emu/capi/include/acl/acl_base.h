/* acl-emu: ACL's base header (acl/acl_base.h of CANN): the runtime's and the model layer's base types and
 * every return code. */
#ifndef ACL_EMU_ACL_BASE_H
#define ACL_EMU_ACL_BASE_H

#include "acl/acl_base_rt.h"
#include "acl/acl_base_mdl.h"
#include "acl/error_codes/rt_error_codes.h"
#include "acl/error_codes/ge_error_codes.h"

#endif
