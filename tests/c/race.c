/* A race: stream one copies input into device memory while stream two reads the same memory back, with no
 * event between them. The program may get the right bytes by chance; on hardware the streams run
 * concurrently. `acl-emu run --sanitize` must report it. */
#include "check.h"

int main(void)
{
    const size_t size = 1u << 20;
    CHECK_ACL(aclInit(NULL));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream one, two;
    CHECK_ACL(aclrtCreateStream(&one));
    CHECK_ACL(aclrtCreateStream(&two));
    void *host, *back, *dev;
    CHECK_ACL(aclrtMallocHost(&host, size));
    CHECK_ACL(aclrtMallocHost(&back, size));
    CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemcpyAsync(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE, one));
    CHECK_ACL(aclrtMemcpyAsync(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST, two)); /* no wait on one */
    CHECK_ACL(aclrtSynchronizeDevice());
    CHECK_ACL(aclrtFree(dev));
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtFreeHost(back));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    return 0;
}
