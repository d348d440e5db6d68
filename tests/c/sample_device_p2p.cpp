// The call sequence of hicann/runtime example/1_basic_features/device/2_device_P2P (main.cpp), written for
// acl-emu: device count (skip below two), peer query, peer access enabled both ways, P2P memory on each
// device filled with aclrtMemset, a device-to-device copy, page-locked memory filled and the result copied
// back and checked, aclrtSynchronizeDevice, peer access disabled, aclrtResetDeviceForce on both devices.
#include <cstdlib>
#include <cstdio>
#include "check.h"

int main()
{
    CHECK_ACL(aclInit(nullptr));
    uint32_t n = 0;
    CHECK_ACL(aclrtGetDeviceCount(&n));
    if (n < 2) {
        std::printf("[SKIP] 2_device_P2P needs two devices\n");
        CHECK_ACL(aclFinalize());
        return 0;
    }
    CHECK_ACL(aclrtSetDevice(0));
    int32_t can = 0;
    CHECK_ACL(aclrtDeviceCanAccessPeer(&can, 0, 1));
    EXPECT(can == 1);
    CHECK_ACL(aclrtDeviceEnablePeerAccess(1, 0));
    void *dev0 = nullptr, *dev1 = nullptr, *host = nullptr;
    const int value = std::rand() % 256;
    CHECK_ACL(aclrtMalloc(&dev0, 10, ACL_MEM_MALLOC_HUGE_FIRST_P2P));
    CHECK_ACL(aclrtMemset(dev0, 10, value, 10));
    CHECK_ACL(aclrtSetDevice(1));
    CHECK_ACL(aclrtDeviceEnablePeerAccess(0, 0));
    CHECK_ACL(aclrtMalloc(&dev1, 10, ACL_MEM_MALLOC_HUGE_FIRST_P2P));
    CHECK_ACL(aclrtMemset(dev1, 10, 0, 10));
    CHECK_ACL(aclrtMemcpy(dev1, 10, dev0, 10, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK_ACL(aclrtMallocHost(&host, 10));
    CHECK_ACL(aclrtMemset(host, 10, 0, 10));
    CHECK_ACL(aclrtMemcpy(host, 10, dev1, 10, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(static_cast<unsigned char *>(host)[9] == value);
    CHECK_ACL(aclrtSynchronizeDevice());
    CHECK_ACL(aclrtDeviceDisablePeerAccess(0));
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtFree(dev1));
    CHECK_ACL(aclrtResetDeviceForce(1));
    CHECK_ACL(aclrtSetDevice(0));
    CHECK_ACL(aclrtDeviceDisablePeerAccess(1));
    CHECK_ACL(aclrtFree(dev0));
    CHECK_ACL(aclrtResetDeviceForce(0));
    CHECK_ACL(aclFinalize());
    std::printf("sample_device_p2p: ok\n");
    return 0;
}
