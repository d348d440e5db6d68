/* The data replication guide's host-device copy, completed: page-locked input and output, H2D on a stream,
 * the compute step, D2H, one synchronize. The guide's kernel (myKernel<<<...>>>) is device code, outside
 * the emulator's scope: a device-to-device copy of the input to the output stands in for it, ordered on the
 * same stream as the kernel would be. */
#include <string.h>
#include "check.h"

int main(void)
{
    const size_t size = 4u << 20;
    CHECK_ACL(aclInit(NULL));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK_ACL(aclrtCreateStream(&stream));

    void *hostIn = NULL, *hostOut = NULL, *devIn = NULL, *devOut = NULL;
    CHECK_ACL(aclrtMallocHost(&hostIn, size));
    CHECK_ACL(aclrtMallocHost(&hostOut, size));
    CHECK_ACL(aclrtMalloc(&devIn, size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&devOut, size, ACL_MEM_MALLOC_HUGE_FIRST));
    for (size_t i = 0; i < size; i++)
        ((unsigned char *)hostIn)[i] = (unsigned char)(i * 7 + 1);
    memset(hostOut, 0, size);

    CHECK_ACL(aclrtMemcpyAsync(devIn, size, hostIn, size, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_ACL(aclrtMemcpyAsync(devOut, size, devIn, size, ACL_MEMCPY_DEVICE_TO_DEVICE, stream)); /* the kernel */
    CHECK_ACL(aclrtMemcpyAsync(hostOut, size, devOut, size, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    EXPECT(memcmp(hostIn, hostOut, size) == 0);

    CHECK_ACL(aclrtFree(devIn));
    CHECK_ACL(aclrtFree(devOut));
    CHECK_ACL(aclrtFreeHost(hostIn));
    CHECK_ACL(aclrtFreeHost(hostOut));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    printf("guide_host_device: ok\n");
    return 0;
}
