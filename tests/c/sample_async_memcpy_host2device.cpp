// The call sequence of Ascend/samples cplusplus/level1_single_api/2_memory_management/
// 06_async_memcpy_01_host2device (async_memcpy_host2device.cpp), written for acl-emu: aclInit with a config
// file in the working folder ("./acl.json"), an explicit context made current, a stream, one large
// page-locked H2D aclrtMemcpyAsync and its synchronize, then everything destroyed in reverse order.
#include <cstdio>
#include "check.h"

int main()
{
    const size_t copy_len = 64u << 20; // the sample copies 1 GiB; the order and the calls are the same
    CHECK_ACL(aclInit("./acl.json"));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));
    CHECK_ACL(aclrtSetCurrentContext(context));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    void *src = nullptr, *dst = nullptr;
    CHECK_ACL(aclrtMallocHost(&src, copy_len));
    CHECK_ACL(aclrtMalloc(&dst, copy_len, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemcpyAsync(dst, copy_len, src, copy_len, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    CHECK_ACL(aclrtFreeHost(src));
    CHECK_ACL(aclrtFree(dst));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("sample_async_memcpy_host2device: ok\n");
    return 0;
}
