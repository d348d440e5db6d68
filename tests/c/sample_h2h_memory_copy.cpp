// The call sequence of hicann/runtime example/1_basic_features/memory/0_h2h_memory_copy (main.cpp), written
// for acl-emu: two page-locked buffers, a value written by the host, aclrtMemcpy HOST_TO_HOST, the value read
// back; teardown with aclrtDestroyStreamForce and aclrtResetDeviceForce. Prints the two lines its run.sh
// compares.
#include <cstdio>
#include "check.h"

int main()
{
    const size_t size = 1u << 20;
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    void *a = nullptr, *b = nullptr;
    CHECK_ACL(aclrtMallocHost(&a, size));
    CHECK_ACL(aclrtMallocHost(&b, size));
    *static_cast<int *>(a) = 123;
    CHECK_ACL(aclrtMemcpy(b, size, a, size, ACL_MEMCPY_HOST_TO_HOST));
    std::printf("[INFO]  Source data: %d\n", *static_cast<int *>(a));
    std::printf("[INFO]  Destination data: %d\n", *static_cast<int *>(b));
    EXPECT(*static_cast<int *>(b) == 123);
    CHECK_ACL(aclrtDestroyStreamForce(stream));
    CHECK_ACL(aclrtFreeHost(a));
    CHECK_ACL(aclrtFreeHost(b));
    CHECK_ACL(aclrtResetDeviceForce(0));
    CHECK_ACL(aclFinalize());
    return 0;
}
