/* N threads of one context, each copying its own buffers in blocking calls: H2D from a buffer it fills, then
 * D2H into a zeroed one, compared, both freed at once (malloc'ed or aclrtMallocHost'ed, argv[4] "p"). A copy's
 * bytes must have moved when its call returns: a late move reads zeros or writes into freed memory.
 * Usage: thread_copies THREADS BYTES ROUNDS [p]; prints "bad N" and exits 1 when any round failed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"
static aclrtContext ctx; static size_t size; static int iters; static int pinned;
static int bad;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static void *work(void *arg) {
    unsigned tag = (unsigned)(size_t)arg;
    if (aclrtSetCurrentContext(ctx)) { bad++; return NULL; }
    void *dev; aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST);
    for (int it = 0; it < iters; it++) {
        unsigned char *src, *dst;
        if (pinned) { aclrtMallocHost((void **)&src, size); aclrtMallocHost((void **)&dst, size); }
        else { src = malloc(size); dst = malloc(size); }
        for (size_t k = 0; k < size; k++) src[k] = (unsigned char)(k * 7 + tag * 13 + it);
        memset(dst, 0, size);
        int r1 = aclrtMemcpy(dev, size, src, size, ACL_MEMCPY_HOST_TO_DEVICE);
        int r2 = aclrtMemcpy(dst, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST);
        if (r1 || r2 || memcmp(src, dst, size)) {
            pthread_mutex_lock(&m); bad++;
            if (bad < 4) fprintf(stderr, "thread %u round %d: %d %d %s\n", tag, it, r1, r2, r1 || r2 ? aclGetRecentErrMsg() : "bytes differ");
            pthread_mutex_unlock(&m);
        }
        if (pinned) { aclrtFreeHost(src); aclrtFreeHost(dst); } else { free(src); free(dst); }
    }
    aclrtFree(dev);
    return NULL;
}
int main(int argc, char **argv) {
    int n = atoi(argv[1]); size = strtoull(argv[2], NULL, 0); iters = atoi(argv[3]); pinned = argc > 4 && argv[4][0] == 'p';
    aclInit(NULL); aclrtSetDevice(0); aclrtGetCurrentContext(&ctx);
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, work, (void *)(size_t)i);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    printf("bad %d\n", bad);
    return bad != 0;
}
