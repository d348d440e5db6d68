// The call sequence of Ascend/samples cplusplus/level1_single_api/2_memory_management/
// memcpy_host_device_async_cpp, written for acl-emu: a stream; page-locked memory filled with
// aclrtMemsetAsync; H2D and D2H with aclrtMemcpyAsync around synchronizes; the source freed while the D2H
// copy (whose source is device memory) is still queued; the stream left to aclrtResetDevice, as the sample does.
#include <cstring>
#include <cstdio>
#include "check.h"

int main()
{
    const size_t size = 10u << 20;
    aclrtRunMode mode;
    CHECK_ACL(aclrtGetRunMode(&mode));
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    size_t freeMem = 0, totalMem = 0;
    for (int cycle = 0; cycle < 2; cycle++) {
        void *host = nullptr, *dev = nullptr, *back = nullptr;
        CHECK_ACL(aclrtMallocHost(&host, size));
        CHECK_ACL(aclrtMemsetAsync(host, size, 7, size, stream));
        CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtSynchronizeStream(stream));
        CHECK_ACL(aclrtMemcpyAsync(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE, stream));
        CHECK_ACL(aclrtMallocHost(&back, size));
        CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeMem, &totalMem));
        CHECK_ACL(aclrtSynchronizeStream(stream));
        CHECK_ACL(aclrtMemcpyAsync(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST, stream));
        CHECK_ACL(aclrtFreeHost(host));
        CHECK_ACL(aclrtSynchronizeStream(stream));
        for (size_t i = 0; i < size; i += 4093)
            EXPECT(static_cast<unsigned char *>(back)[i] == 7);
        CHECK_ACL(aclrtFreeHost(back));
        CHECK_ACL(aclrtFree(dev));
    }
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("sample_memcpy_host_device_async: ok\n");
    return 0;
}
