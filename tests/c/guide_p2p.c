/* The cross-device data exchange guide's sample, completed: peer access enabled both ways, a copy of device
 * 0's memory into device 1's, the bytes checked through the host, peer access disabled, devices reset. */
#include <string.h>
#include "check.h"

int main(void)
{
    CHECK_ACL(aclInit(NULL));
    uint32_t count = 0;
    CHECK_ACL(aclrtGetDeviceCount(&count));
    if (count < 2) {
        printf("guide_p2p: skipped, %u device(s)\n", count);
        return 0;
    }
    int32_t canAccessPeer = 0;
    CHECK_ACL(aclrtDeviceCanAccessPeer(&canAccessPeer, 0, 1));
    EXPECT(canAccessPeer == 1);
    uint32_t reserveFlag = 0;
    void *dev0Mem = NULL, *dev1Mem = NULL, *host = NULL;
    CHECK_ACL(aclrtSetDevice(0));
    CHECK_ACL(aclrtDeviceEnablePeerAccess(1, reserveFlag));
    CHECK_ACL(aclrtMalloc(&dev0Mem, 10, ACL_MEM_MALLOC_HUGE_FIRST_P2P));
    CHECK_ACL(aclrtMemset(dev0Mem, 10, 0x5a, 10));
    CHECK_ACL(aclrtSetDevice(1));
    CHECK_ACL(aclrtDeviceEnablePeerAccess(0, reserveFlag));
    CHECK_ACL(aclrtMalloc(&dev1Mem, 10, ACL_MEM_MALLOC_HUGE_FIRST_P2P));
    CHECK_ACL(aclrtMemcpy(dev1Mem, 10, dev0Mem, 10, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK_ACL(aclrtMallocHost(&host, 10));
    CHECK_ACL(aclrtMemcpy(host, 10, dev1Mem, 10, ACL_MEMCPY_DEVICE_TO_HOST));
    for (int i = 0; i < 10; i++)
        EXPECT(((unsigned char *)host)[i] == 0x5a);
    CHECK_ACL(aclrtDeviceDisablePeerAccess(0));
    CHECK_ACL(aclrtFree(dev1Mem));
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtResetDevice(1));
    CHECK_ACL(aclrtSetDevice(0));
    CHECK_ACL(aclrtDeviceDisablePeerAccess(1));
    CHECK_ACL(aclrtFree(dev0Mem));
    CHECK_ACL(aclrtResetDeviceForce(0));
    CHECK_ACL(aclFinalize());
    printf("guide_p2p: ok\n");
    return 0;
}
