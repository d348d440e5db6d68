// The call sequence of Ascend/samples cplusplus/level1_single_api/2_memory_management/memcpy_host_device_cpp
// (memcpy_host_device.cpp), written for acl-emu: run mode, init, device, context, memory info, then cycles
// of page-locked host memory filled with aclrtMemset, copied to fresh device memory and back (with the
// sample's print_data copies), memory info between steps, everything freed, context destroyed, device reset.
#include <cstring>
#include <vector>
#include <cstdio>
#include "check.h"

static void print_data(const void *src, size_t size, aclrtMemcpyKind kind)
{
    void *copy = nullptr; // as the sample: a page-locked copy of what is printed
    CHECK_ACL(aclrtMallocHost(&copy, size));
    CHECK_ACL(aclrtMemcpy(copy, size, src, size, kind));
    EXPECT(static_cast<unsigned char *>(copy)[size - 1] == 7);
    CHECK_ACL(aclrtFreeHost(copy));
}

int main()
{
    const size_t size = 10u << 20;
    aclrtRunMode mode;
    CHECK_ACL(aclrtGetRunMode(&mode));
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr, current = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));
    CHECK_ACL(aclrtGetCurrentContext(&current));
    EXPECT(current == context);
    size_t freeMem = 0, totalMem = 0;
    CHECK_ACL(aclrtGetMemInfo(ACL_DDR_MEM, &freeMem, &totalMem));
    CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeMem, &totalMem));
    for (int cycle = 0; cycle < 2; cycle++) {
        std::vector<void *> devs;
        for (int i = 0; i < 2; i++) {
            void *host = nullptr, *dev = nullptr, *back = nullptr;
            CHECK_ACL(aclrtMallocHost(&host, size));
            CHECK_ACL(aclrtMemset(host, size, 7, size));
            print_data(host, size, ACL_MEMCPY_HOST_TO_HOST);
            CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
            CHECK_ACL(aclrtMemcpy(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE));
            print_data(dev, size, ACL_MEMCPY_DEVICE_TO_HOST);
            CHECK_ACL(aclrtMallocHost(&back, size));
            CHECK_ACL(aclrtMemcpy(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST));
            EXPECT(std::memcmp(host, back, size) == 0);
            CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeMem, &totalMem));
            CHECK_ACL(aclrtFreeHost(host));
            CHECK_ACL(aclrtFreeHost(back));
            devs.push_back(dev);
        }
        for (void *dev : devs)
            CHECK_ACL(aclrtFree(dev));
        CHECK_ACL(aclrtGetMemInfo(ACL_HBM_MEM, &freeMem, &totalMem));
    }
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("sample_memcpy_host_device: ok\n");
    return 0;
}
