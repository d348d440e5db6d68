/* The test programs' checks: a failing ACL call or a wrong byte prints where and exits 1. */
#ifndef ACL_EMU_TEST_CHECK_H
#define ACL_EMU_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include "acl/acl.h"

#define CHECK_ACL(call)                                                                                   \
    do {                                                                                                  \
        aclError ret_ = (call);                                                                           \
        if (ret_ != ACL_SUCCESS) {                                                                        \
            const char *why_ = aclGetRecentErrMsg();                                                      \
            fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, ret_,            \
                    why_ ? why_ : "");                                                                   \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

#define EXPECT(cond)                                                                                      \
    do {                                                                                                  \
        if (!(cond)) {                                                                                    \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                        \
            exit(1);                                                                                      \
        }                                                                                                 \
    } while (0)

#endif
