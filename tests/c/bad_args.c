/* Wrong arguments, each call's code printed as "name code"; tests/test_capi.py makes the same calls through
 * pyACL and expects the same codes. */
#include <stdint.h>
#include "check.h"

#define SHOW(name, call) printf("%s %d\n", name, (int)(call))

int main(void)
{
    CHECK_ACL(aclInit(NULL));
    SHOW("set_device_99", aclrtSetDevice(99));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK_ACL(aclrtCreateStream(&stream));
    void *host, *dev, *p = NULL;
    CHECK_ACL(aclrtMallocHost(&host, 64));
    CHECK_ACL(aclrtMalloc(&dev, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    SHOW("malloc_size_0", aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST));
    SHOW("malloc_policy_99", aclrtMalloc(&p, 64, (aclrtMemMallocPolicy)99));
    SHOW("free_null", aclrtFree(NULL));
    SHOW("free_host_pointer", aclrtFree(host));
    SHOW("memcpy_count_over_dest_max", aclrtMemcpy(dev, 16, host, 32, ACL_MEMCPY_HOST_TO_DEVICE));
    SHOW("memcpy_kind_99", aclrtMemcpy(dev, 16, host, 16, (aclrtMemcpyKind)99));
    SHOW("memcpy_null_dst", aclrtMemcpy(NULL, 16, host, 16, ACL_MEMCPY_HOST_TO_DEVICE));
    SHOW("memcpy_past_end", aclrtMemcpy(dev, 128, host, 128, ACL_MEMCPY_HOST_TO_DEVICE));
    SHOW("memcpy_wrong_kind", aclrtMemcpy(dev, 16, host, 16, ACL_MEMCPY_DEVICE_TO_HOST));
    SHOW("memcpy_async_bad_stream", aclrtMemcpyAsync(dev, 16, host, 16, ACL_MEMCPY_HOST_TO_DEVICE,
                                                     (aclrtStream)(uintptr_t)0x1234));
    SHOW("memset_count_over_max", aclrtMemset(dev, 16, 0, 32));
    SHOW("memcpy2d_dpitch_below_width", aclrtMemcpy2d(dev, 8, host, 16, 16, 2, ACL_MEMCPY_HOST_TO_DEVICE));
    SHOW("memcpy2d_height_0", aclrtMemcpy2d(dev, 16, host, 16, 16, 0, ACL_MEMCPY_HOST_TO_DEVICE));
    SHOW("synchronize_bad_stream", aclrtSynchronizeStream((aclrtStream)(uintptr_t)0x1234));
    SHOW("record_null_event", aclrtRecordEvent(NULL, stream));
    size_t fail = 0;
    SHOW("batch_zero_entries", aclrtMemcpyBatch(&dev, NULL, &host, NULL, 0, NULL, NULL, 0, &fail));
    SHOW("get_device_null", aclrtGetDevice(NULL));
    SHOW("launch_callback_null_fn", aclrtLaunchCallback(NULL, NULL, ACL_CALLBACK_BLOCK, stream));
    CHECK_ACL(aclrtFree(dev));
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    return 0;
}
