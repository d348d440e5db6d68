/* acl-emu: ACL (acl/acl.h of CANN), for C and C++ programs run on the emulator. Build with
 * `acl-emu cc` / `acl-emu c++`, or the flags of `acl-emu config --cflags --libs`. */
#ifndef ACL_EMU_ACL_H
#define ACL_EMU_ACL_H

#include "acl_rt.h"
#include "acl_op.h"
#include "acl_mdl.h"

#endif
