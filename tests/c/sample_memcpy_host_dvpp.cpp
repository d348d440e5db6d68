// The call sequence of Ascend/samples cplusplus/level1_single_api/2_memory_management/memcpy_host_DVPP_cpp,
// written for acl-emu: media memory from acldvppMalloc (the sample includes acl/ops/acl_dvpp.h with
// ENABLE_DVPP_INTERFACE and links acl_dvpp), page-locked memory filled with aclrtMemset, H2D into the media
// memory and D2H back, memory reused across cycles, then acldvppFree.
#define ENABLE_DVPP_INTERFACE
#include <cstring>
#include <cstdio>
#include "check.h"
#include "acl/ops/acl_dvpp.h"

int main()
{
    const size_t size = 10u << 20;
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));
    void *host = nullptr, *dev = nullptr, *back = nullptr;
    CHECK_ACL(aclrtMallocHost(&host, size));
    CHECK_ACL(acldvppMalloc(&dev, size));
    CHECK_ACL(aclrtMallocHost(&back, size));
    for (int i = 0; i < 3; i++) {
        CHECK_ACL(aclrtMemset(host, size, 7 + i, size));
        CHECK_ACL(aclrtMemcpy(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK_ACL(aclrtMemcpy(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST));
        EXPECT(std::memcmp(host, back, size) == 0);
    }
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtFreeHost(back));
    CHECK_ACL(acldvppFree(dev));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("sample_memcpy_host_dvpp: ok\n");
    return 0;
}
