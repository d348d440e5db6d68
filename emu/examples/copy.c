/* copy.c: host-to-device and back, the way an ACL program on an NPU does it; it builds against the emulator's
 * headers and runs on its libascendcl.so, unchanged.
 *
 *   acl-emu cc emu/examples/copy.c -o copy
 *   acl-emu run ./copy 64        (MiB; 16 by default): the program's output, then the run's summary and trace
 *   ./copy                       alone too, on $ACL_EMU_PRODUCT (default 910B)
 *
 * A page-locked input (aclrtMallocHost) is copied to the device on a stream between two events, then back into
 * the program's own malloc'ed memory with a blocking copy; the bytes are checked. On an error, main returns the
 * aclError, as the CANN samples do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        aclError ret_ = (call);                                                                       \
        if (ret_ != ACL_SUCCESS) {                                                                    \
            fprintf(stderr, "%s failed: %d (%s)\n", #call, (int)ret_, aclGetRecentErrMsg());          \
            return ret_;                                                                              \
        }                                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 16;
    if (mib == 0) {
        fprintf(stderr, "usage: %s [MiB to copy, default 16]\n", argv[0]);
        return 2;
    }
    size_t size = mib << 20;

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    aclrtEvent start, stop;
    CHECK(aclrtCreateStream(&stream));
    CHECK(aclrtCreateEvent(&start));
    CHECK(aclrtCreateEvent(&stop));

    unsigned char *in = NULL;
    void *dev = NULL;
    CHECK(aclrtMallocHost((void **)&in, size));
    CHECK(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
    unsigned char *out = malloc(size);  /* the program's own memory: pageable */
    if (out == NULL)
        return 3;
    for (size_t i = 0; i < size && i < 4096; i++)  /* a pattern, doubled up to the size */
        in[i] = (unsigned char)(i * 7);
    for (size_t n = 4096; n < size; n *= 2)
        memcpy(in + n, in, n < size - n ? n : size - n);
    memset(out, 0, size);

    CHECK(aclrtRecordEvent(start, stream));
    CHECK(aclrtMemcpyAsync(dev, size, in, size, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK(aclrtRecordEvent(stop, stream));
    CHECK(aclrtSynchronizeStream(stream));
    float ms = 0;
    CHECK(aclrtEventElapsedTime(&ms, start, stop));
    CHECK(aclrtMemcpy(out, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST));
    int same = memcmp(in, out, size) == 0;

    printf("H2D of %zu MiB from page-locked memory: %.3f ms, %.1f GB/s\n", mib, ms, size / (ms * 1e6));
    printf("D2H into malloc'ed memory: the bytes came back %s\n", same ? "equal" : "DIFFERENT");

    free(out);
    CHECK(aclrtFree(dev));
    CHECK(aclrtFreeHost(in));
    CHECK(aclrtDestroyEvent(start));
    CHECK(aclrtDestroyEvent(stop));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return same ? 0 : 1;
}
