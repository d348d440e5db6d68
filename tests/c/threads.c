/* Two worker threads share one context (each makes it current, as the API requires of a new thread), each
 * with its own stream and buffers; a third thread processes the callbacks of the main thread's stream:
 * aclrtSubscribeReport names it, aclrtLaunchCallback queues a blocking callback, and the callback must run on
 * that thread with the user data it was given. */
#include <pthread.h>
#include <string.h>
#include "check.h"

static aclrtContext context;
static volatile int stop;

static void *worker(void *arg)
{
    const unsigned char tag = (unsigned char)(uintptr_t)arg;
    const size_t size = 1u << 20;
    CHECK_ACL(aclrtSetCurrentContext(context));
    aclrtStream stream;
    CHECK_ACL(aclrtCreateStream(&stream));
    void *host, *back, *dev;
    CHECK_ACL(aclrtMallocHost(&host, size));
    CHECK_ACL(aclrtMallocHost(&back, size));
    CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int round = 0; round < 20; round++) {
        memset(host, tag + round, size);
        CHECK_ACL(aclrtMemcpyAsync(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE, stream));
        CHECK_ACL(aclrtMemcpyAsync(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST, stream));
        CHECK_ACL(aclrtSynchronizeStream(stream));
        EXPECT(((unsigned char *)back)[size / 2] == (unsigned char)(tag + round));
    }
    CHECK_ACL(aclrtFree(dev));
    CHECK_ACL(aclrtFreeHost(host));
    CHECK_ACL(aclrtFreeHost(back));
    CHECK_ACL(aclrtDestroyStream(stream));
    return NULL;
}

static void *reporter(void *arg)
{
    (void)arg;
    CHECK_ACL(aclrtSetCurrentContext(context));
    while (!stop)
        (void)aclrtProcessReport(10);
    return NULL;
}

struct call { pthread_t ran_on; int value; };

static void callback(void *userData)
{
    struct call *c = userData;
    c->ran_on = pthread_self();
    c->value = 42;
}

int main(void)
{
    CHECK_ACL(aclInit(NULL));
    CHECK_ACL(aclrtSetDevice(0));
    CHECK_ACL(aclrtCreateContext(&context, 0));
    pthread_t workers[2], report;
    for (uintptr_t i = 0; i < 2; i++)
        EXPECT(pthread_create(&workers[i], NULL, worker, (void *)(i * 100 + 1)) == 0);
    EXPECT(pthread_create(&report, NULL, reporter, NULL) == 0);

    aclrtStream stream;
    CHECK_ACL(aclrtCreateStream(&stream));
    CHECK_ACL(aclrtSubscribeReport((uint64_t)report, stream));
    struct call c = {0, 0};
    CHECK_ACL(aclrtLaunchCallback(callback, &c, ACL_CALLBACK_BLOCK, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));
    EXPECT(c.value == 42);
    EXPECT(pthread_equal(c.ran_on, report));
    CHECK_ACL(aclrtUnSubscribeReport((uint64_t)report, stream));

    for (int i = 0; i < 2; i++)
        EXPECT(pthread_join(workers[i], NULL) == 0);
    stop = 1;
    EXPECT(pthread_join(report, NULL) == 0);
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    printf("threads: ok\n");
    return 0;
}
