/* Host memory the process's allocator hands out again: what the emulator remembers of a range must not outlive
 * the memory it describes.
 * 1. malloc, copy from it, free, then aclrtMallocHost: the page-locked memory (often at the freed address) is
 *    page-locked, copies to and from it work and aclrtFreeHost frees it.
 * 2. aclrtMallocHost, aclrtFreeHost, then malloc: the program's own memory is its own, copies into it work.
 * Prints "reused N bad M": N rounds where the allocator gave back an address the other kind had held. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"

static int bad;

static void expect(int ok, const char *what, int round, int ret) {
    if (!ok && ++bad < 4) {
        const char *why = aclGetRecentErrMsg();
        printf("round %d: %s: %d %s\n", round, what, ret, why ? why : "");
    }
}

static int overlap(uintptr_t x, uintptr_t y, size_t n) {
    return x < y + n && y < x + n;
}

int main(void) {
    const size_t m = 1 << 20;
    void *dev;
    aclInit(NULL);
    aclrtSetDevice(0);
    aclrtMalloc(&dev, m, ACL_MEM_MALLOC_HUGE_FIRST);
    int reused = 0;
    for (int i = 0; i < 60; i++) {  /* 1: the program's freed memory, then page-locked memory */
        size_t n = m / 2 + 4096 * (i % 3);
        unsigned char *p = malloc(n);
        memset(p, i, n);
        int r = aclrtMemcpy(dev, m / 2, p, m / 2, ACL_MEMCPY_HOST_TO_DEVICE);
        expect(r == 0, "copy from malloc", i, r);
        uintptr_t was = (uintptr_t)p;
        free(p);
        unsigned char *h;
        r = aclrtMallocHost((void **)&h, n);
        expect(r == 0, "aclrtMallocHost", i, r);
        if (r)
            continue;
        reused += overlap((uintptr_t)h, was, n);
        memset(h, 0, n);
        r = aclrtMemcpy(h, m / 2, dev, m / 2, ACL_MEMCPY_DEVICE_TO_HOST);
        expect(r == 0 && h[m / 2 - 1] == (unsigned char)i, "copy into page-locked memory", i, r);
        r = aclrtMemcpy(dev, m / 2, h, m / 2, ACL_MEMCPY_HOST_TO_DEVICE);
        expect(r == 0, "copy from page-locked memory", i, r);
        r = aclrtFreeHost(h);
        expect(r == 0, "aclrtFreeHost", i, r);
    }
    aclrtMemset(dev, m, 7, m);
    for (int i = 0; i < 300; i++) {  /* 2: freed page-locked memory, then the program's own */
        size_t n = 4096 + 4096 * (i % 64);
        void *h;
        aclrtMallocHost(&h, n);
        uintptr_t was = (uintptr_t)h;
        aclrtFreeHost(h);
        unsigned char *q = malloc(n);
        reused += overlap((uintptr_t)q, was, n);
        int r = aclrtMemcpy(q, n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST);
        expect(r == 0 && q[n - 1] == 7, "copy into malloc'ed memory", i, r);
        free(q);
    }
    printf("reused %d bad %d\n", reused, bad);
    return bad != 0;
}
