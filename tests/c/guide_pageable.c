/* The guide's asynchronous copy of non-page-locked memory and the page-locked memory guide's two ways to
 * pin: malloc'ed memory copied with aclrtMemcpyAsync (the call returns once the copy is done), then the same
 * buffer registered with aclrtHostRegisterV2(PINNED | MAPPED), its device pointer from
 * aclrtHostGetDevicePointer, and unregistered. Bytes are checked after each step. */
#include <string.h>
#include "check.h"

int main(void)
{
    const size_t size = 1u << 20;
    CHECK_ACL(aclInit(NULL));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK_ACL(aclrtCreateStream(&stream));

    unsigned char *host = malloc(size), *back = malloc(size);
    EXPECT(host != NULL && back != NULL);
    for (size_t i = 0; i < size; i++)
        host[i] = (unsigned char)(i % 251);
    void *dev = NULL;
    CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK_ACL(aclrtMemcpyAsync(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    memset(host, 0, size); /* pageable: the copy already read it */
    CHECK_ACL(aclrtMemcpy(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < size; i++)
        EXPECT(back[i] == (unsigned char)(i % 251));

    CHECK_ACL(aclrtHostRegisterV2(back, size, ACL_HOST_REG_PINNED | ACL_HOST_REG_MAPPED));
    void *mapped = NULL;
    CHECK_ACL(aclrtHostGetDevicePointer(back, &mapped, 0));
    EXPECT(mapped != NULL);
    aclrtPtrAttributes attributes;
    CHECK_ACL(aclrtPointerGetAttributes(back, &attributes));
    EXPECT(attributes.location.type == ACL_MEM_LOCATION_TYPE_HOST);
    CHECK_ACL(aclrtMemcpyAsync(dev, size, back, size, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    CHECK_ACL(aclrtHostUnregister(back));

    CHECK_ACL(aclrtFree(dev));
    free(host);
    free(back);
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    printf("guide_pageable: ok\n");
    return 0;
}
