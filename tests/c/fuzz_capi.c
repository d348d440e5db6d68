/* Random sequences of the C ABI from several threads, with a byte-level oracle (tests/test_fuzz_capi.py).
 *
 * Usage: fuzz_capi SEED THREADS OPS [PADDING] [--trace] [--no-stale]
 *   SEED     the run's seed; thread i draws from its own generator, seeded from SEED and i
 *   THREADS  worker pthreads, sharing device 0 and one context (aclrtSetCurrentContext)
 *   OPS      operations per thread (most are one ACL call; a synchronize is one call per stream)
 *   PADDING  bytes aclrtMalloc adds after rounding a size up to 32 (the product's malloc_padding: 32 on
 *            910B and A3, hicann/runtime src/acl/aclrt_impl/memory.cpp GetAlignedAndPaddingSize)
 *   --trace  every call of every thread on stderr, with its code
 *   --no-stale  no pointer the thread freed is passed again
 * Prints one JSON line of counts on stdout; exits 0 only when every code was the one expected, every byte
 * of every buffer equalled its shadow and every guard kept its pattern. The first failures are described on
 * stderr (FUZZ-WRONG-CODE, FUZZ-MISMATCH, FUZZ-GUARD), each with the thread's last calls.
 *
 * Each thread owns its buffers: device memory (aclrtMalloc), page-locked memory (aclrtMallocHost), malloc'ed
 * and stack memory (pageable), some of it registered (aclrtHostRegister, whose device address is a further
 * name of the same bytes), beside guards no call names (device and page-locked allocations, and the pads
 * around each malloc'ed and stack buffer). It keeps a shadow of every byte a call may name and changes the
 * shadow, in program order, when a call that succeeded must have changed the bytes. Work queued on a stream
 * lands later: an operation that would race with queued work on other bytes' terms (another stream, or the
 * host now) first synchronizes the thread's streams. After each synchronize every buffer is compared with its
 * shadow (device memory read back with aclrtMemcpy) and every guard with its pattern.
 *
 * Expected codes come from the reference runtime's order of checks, as the tables of docs/conformance give them
 * (memory_copies_fills.md, copy2d_batch_descriptors.md, devices_streams_events.md, hostmem_peer_capture.md);
 * where no table gives a code (a freed or foreign address), any nonzero code is accepted.
 *
 * Pointers the thread freed are passed again only where no other thread can hold the same addresses: a freed
 * device range only while no thread's live allocation overlaps it (a claim, checked again by any thread that
 * allocates meanwhile: such an allocation is left unused and the freed pointer's result is not judged), freed
 * page-locked memory only while the emulator keeps it back from the allocator (emu.memory.HELD_BYTES,
 * FREED_KEPT). Pageable memory is never named past its end nor after free(): the runtime takes any
 * address of the program's as its own memory, so such a call writes wherever it points, as on hardware.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"

#define MAX_THREADS 64
#define MAX_BUFS 12
#define MAX_STREAMS 3
#define MAX_EVENTS 3
#define MAX_STALE 4
#define MAX_PENDING 512
#define PAD 64            /* guard bytes before and after each malloc'ed and stack buffer */
#define STACK_BYTES 8192
#define HUGE_PAGE ((size_t)2 << 20)
#define MAX_CAP (HUGE_PAGE + 4096)
#define GUARD_BYTE 0xA7
#define DEV_GUARD_BYTE 0x5B
#define PIN_GUARD_BYTE 0x3C
#define LOG_KEEP 12
#define LOG_LINE 240
#define CUR_LINE 200
#define FIRST_FAILS 12
#define BIG ((size_t)1 << 63)     /* beyond any user address: never taken as the program's memory */
#define NO_SIZE ((size_t)-1)
#define KEPT_INDEX ((size_t)12345) /* a batch's failIndex before the call: what a failure that writes none leaves */

#define E_PARAM 100000   /* ACL_ERROR_INVALID_PARAM */
#define E_RT_PARAM 107000
#define E_HANDLE 107017
#define E_NOT_SUPPORT 207000
#define E_REGISTERED 507910
#define E_NOT_REGISTERED 507911

/* ------------------------------------------------------------------------------------- settings */
static uint64_t g_seed;
static int g_threads;
static long g_ops;
static size_t g_padding = 32;
static int g_trace, g_no_stale;
static aclrtContext g_ctx;

/* ---------------------------------------------------------------------------------- the calls */
#define APIS(X) X(aclrtMalloc) X(aclrtFree) X(aclrtMallocHost) X(aclrtFreeHost) X(aclrtMemcpy) \
    X(aclrtMemcpyAsync) X(aclrtMemcpy2d) X(aclrtMemcpy2dAsync) X(aclrtMemset) X(aclrtMemsetAsync) \
    X(aclrtMemsetD32) X(aclrtMemsetD32Async) X(aclrtMemcpyBatch) X(aclrtMemcpyBatchV2) X(aclrtMemcpyBatchAsync) \
    X(aclrtMemcpyBatchAsyncV2) X(aclrtMemcpyAsyncWithCondition) X(aclrtHostRegister) X(aclrtHostUnregister) \
    X(aclrtHostGetDevicePointer) X(aclrtPointerGetAttributes) X(aclrtCreateStream) X(aclrtDestroyStream) \
    X(aclrtDestroyStreamForce) X(aclrtSynchronizeStream) X(aclrtSynchronizeStreamWithTimeout) X(aclrtStreamQuery) \
    X(aclrtCreateEvent) \
    X(aclrtDestroyEvent) X(aclrtRecordEvent) X(aclrtStreamWaitEvent) X(aclrtSynchronizeEvent) \
    X(aclrtQueryEventStatus) X(aclrtResetEvent) X(aclrtSynchronizeDevice) X(aclrtSetCurrentContext)
#define ENUM(name) A_##name,
#define NAME(name) #name,
enum { APIS(ENUM) N_APIS };
static const char *api_names[] = {APIS(NAME)};

/* --------------------------------------------------------------------------------- the generator */
static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------------------------ the model */
enum { K_DEV, K_PIN, K_MALLOC, K_STACK, K_ALIAS };
static const char kind_letter[] = "dpmka";
enum { L_HOST = 0, L_DEV = 1, L_UNREG = 2 }; /* where the runtime says memory is (aclrtMemLocationType) */
enum { H2H, H2D, D2H, D2D, DEFAULT, H2B2D };

typedef struct {
    int live, kind, id, tainted;
    unsigned char *ptr;      /* the address calls name */
    size_t size, cap;        /* asked for; the bytes calls may name (device: rounded up and padded) */
    unsigned char *shadow;   /* cap bytes (an alias: its host buffer's) */
    int storage;             /* which bytes: an alias shares its host buffer's, byte for byte (a registration
                              * covers its whole buffer, so both name byte k at offset k) */
    unsigned char *raw;      /* malloc'ed: the block with its pads */
    int alias;               /* host buffer: the slot of its registration's device address + 1, else 0 */
    int registered;          /* host buffer registered (aclrtHostRegister) */
    int host;                /* alias: its host buffer's slot */
} Buf;

typedef struct { int storage; size_t off, len; int write, queued; aclrtStream stream; } Access;
typedef struct { unsigned char *ptr; size_t cap; int id, kind; long frees, bytes; } Stale;
typedef struct { aclrtStream h; int live, busy; } StreamSlot;
typedef struct { aclrtEvent h; int live, state; } EventSlot; /* state: 0 never recorded, 1 recorded, 2 done */

#define BATCH_MAX 4
enum { P_BUF, P_NULL, P_STALE_DEV, P_STALE_PIN };
typedef struct {
    int what, slot;
    size_t off, room;
    unsigned char *p;
    int stale;       /* index into T->stale */
    char name[48];
} End;
typedef struct {
    size_t count, num_attrs, passed_attrs;
    End ends[2 * BATCH_MAX];
    int ids[2 * BATCH_MAX];  /* the buffer each end named */
    size_t sizes[BATCH_MAX], dmax[BATCH_MAX], idx[BATCH_MAX];
    aclrtMemcpyBatchAttr attrs[BATCH_MAX];
    int rsv_bad, idx_bad;
    int api;                 /* A_aclrtMemcpyBatch, ...BatchV2, ...BatchAsync, ...BatchAsyncV2 */
    aclrtStream stream;      /* the async ones' */
} Batch;

typedef struct {
    int index;
    uint64_t rng;
    long op, calls, check_calls, checks;
    long by_api[N_APIS], ok_by_api[N_APIS];
    long wrong_codes, mismatches, guard_changes, stale_skipped, stale_used, host_writes, drains, tainted;
    long forced_drains, queued_ok, in_order, batches_again;
    Batch last_batch;
    Buf buf[MAX_BUFS];
    StreamSlot st[MAX_STREAMS];
    EventSlot ev[MAX_EVENTS];
    aclrtStream dead_streams[4];
    aclrtEvent dead_events[4];
    int n_dead_streams, n_dead_events;
    Stale stale[MAX_STALE];
    int n_stale;
    Access pending[MAX_PENDING];
    int n_pending;
    int next_id, next_storage;
    unsigned char *scratch;
    void *dev_guard[2];
    int dev_guard_ok[2];     /* no other thread's claim met it when it was made */
    void *pin_guard;
    unsigned char *stack;    /* the stack buffer's block, pads included */
    char log[LOG_KEEP][LOG_LINE];
    long log_n;
    char cur[CUR_LINE];
} Thread;

static Thread threads[MAX_THREADS];

static uint64_t rnd(Thread *T, uint64_t n) { return n ? splitmix(&T->rng) % n : 0; }
static int chance(Thread *T, int pct) { return (int)rnd(T, 100) < pct; }

/* ---------------------------------------------------------------------------- reports, counts */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static int reported;
static long suspects_judged;

static void note(Thread *T, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(T->cur, CUR_LINE, fmt, ap);
    va_end(ap);
}

static void logged(Thread *T, int code)
{
    char *line = T->log[T->log_n++ % LOG_KEEP];
    snprintf(line, LOG_LINE, "#%ld %s -> %d", T->op, T->cur, code);
    if (g_trace)
        fprintf(stderr, "T%d %s\n", T->index, line);
}

static void report(Thread *T, const char *what, const char *fmt, ...)
{
    pthread_mutex_lock(&report_lock);
    if (reported++ < FIRST_FAILS) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s seed %llu thread %d op %ld: %s\n  last calls of the thread:\n", what,
                (unsigned long long)g_seed, T->index, T->op, msg);
        long first = T->log_n > LOG_KEEP ? T->log_n - LOG_KEEP : 0;
        for (long i = first; i < T->log_n; i++)
            fprintf(stderr, "    %s\n", T->log[i % LOG_KEEP]);
    }
    pthread_mutex_unlock(&report_lock);
}

/* Expected results: an exact code, or (exact = 0) any nonzero code. */
typedef struct { int exact; int code; } Expect;
static Expect exact(int code) { Expect e = {1, code}; return e; }
static const Expect OK = {1, 0};
static int meets(Expect e, int got) { return e.exact ? got == e.code : got != 0; }

/* ---------------------------------------------------------------- freed device ranges: claims */
/* A freed device range may be named again only while no thread's live allocation overlaps it. `owned` lists
 * every thread's live device ranges (allocations, guards, registrations' device addresses); a thread names a
 * freed range under a claim; a thread whose new allocation overlaps a claim that was open during its call
 * leaves the allocation unused and marks the claim, whose unexpected result is then not judged. */
typedef struct { uintptr_t lo, hi; int thread; } Range;
typedef struct { uintptr_t lo[2], hi[2]; int n, open, reused; long ended; } Claim;
static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static Range *owned;
static int n_owned, cap_owned;
static Claim *claims;
static long n_claims, cap_claims, claim_seq;
typedef struct { long claim; int thread; char what[LOG_LINE]; int expected, got; } Suspect;
static Suspect *suspects;
static long n_suspects, cap_suspects;
/* freed page-locked memory: named again only while the emulator still holds it back (FREED_KEPT 256 buffers,
 * HELD_BYTES 64 MiB), with a wide margin */
static long pin_frees, pin_free_bytes;
#define PIN_MARGIN_FREES 64
#define PIN_MARGIN_BYTES (16L << 20)

static void *grow(void *p, long *cap, long need, size_t each)
{
    if (need <= *cap)
        return p;
    *cap = *cap ? *cap * 2 : 256;
    if (*cap < need)
        *cap = need;
    p = realloc(p, (size_t)*cap * each);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(3);
    }
    return p;
}

static long seq_now(void)
{
    pthread_mutex_lock(&claim_lock);
    long s = claim_seq;
    pthread_mutex_unlock(&claim_lock);
    return s;
}

static int overlaps(uintptr_t a, uintptr_t b, uintptr_t c, uintptr_t d) { return a < d && c < b; }

/* A new device range of this thread: owned, unless a claim open since `since` overlaps it (then 0: unused). */
static int own(Thread *T, void *p, size_t n, long since)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    int clean = 1;
    pthread_mutex_lock(&claim_lock);
    for (long i = n_claims - 1; i >= 0; i--) {
        Claim *c = &claims[i];
        if (!c->open && c->ended <= since)
            continue;
        for (int k = 0; k < c->n; k++)
            if (overlaps(lo, hi, c->lo[k], c->hi[k])) {
                c->reused = 1;
                clean = 0;
            }
    }
    long cap = cap_owned;
    owned = grow(owned, &cap, n_owned + 1, sizeof *owned);
    cap_owned = (int)cap;
    owned[n_owned].lo = lo;
    owned[n_owned].hi = hi;
    owned[n_owned].thread = T->index;
    n_owned++;
    pthread_mutex_unlock(&claim_lock);
    return clean;
}

static void disown(void *p)
{
    pthread_mutex_lock(&claim_lock);
    for (int i = 0; i < n_owned; i++)
        if (owned[i].lo == (uintptr_t)p) {
            owned[i] = owned[--n_owned];
            break;
        }
    pthread_mutex_unlock(&claim_lock);
}

/* Open a claim on up to two freed ranges; -1 when a live allocation overlaps one (the call is skipped). */
static long claim(uintptr_t lo0, uintptr_t hi0, uintptr_t lo1, uintptr_t hi1, int n)
{
    uintptr_t lo[2] = {lo0, lo1}, hi[2] = {hi0, hi1};
    pthread_mutex_lock(&claim_lock);
    for (int i = 0; i < n_owned; i++)
        for (int k = 0; k < n; k++)
            if (overlaps(owned[i].lo, owned[i].hi, lo[k], hi[k])) {
                pthread_mutex_unlock(&claim_lock);
                return -1;
            }
    claims = grow(claims, &cap_claims, n_claims + 1, sizeof *claims);
    Claim *c = &claims[n_claims];
    memset(c, 0, sizeof *c);
    for (int k = 0; k < n; k++) {
        c->lo[k] = lo[k];
        c->hi[k] = hi[k];
    }
    c->n = n;
    c->open = 1;
    long id = n_claims++;
    pthread_mutex_unlock(&claim_lock);
    return id;
}

static void unclaim(long id)
{
    pthread_mutex_lock(&claim_lock);
    claims[id].open = 0;
    claims[id].ended = ++claim_seq;
    pthread_mutex_unlock(&claim_lock);
}

/* ----------------------------------------------------------------------------------- buffers */
static size_t round32(size_t n) { return (n + 31) / 32 * 32; }

static int live_count(Thread *T)
{
    int n = 0;
    for (int i = 0; i < MAX_BUFS; i++)
        n += T->buf[i].live;
    return n;
}

static int free_slot(Thread *T)
{
    for (int i = 0; i < MAX_BUFS; i++)
        if (!T->buf[i].live)
            return i;
    return -1;
}

/* A random live, usable buffer; `mask`: the kinds allowed (bit per K_*). */
static int pick_buf(Thread *T, int mask)
{
    int idx[MAX_BUFS], n = 0;
    for (int i = 0; i < MAX_BUFS; i++)
        if (T->buf[i].live && !T->buf[i].tainted && (mask >> T->buf[i].kind & 1))
            idx[n++] = i;
    return n ? idx[rnd(T, n)] : -1;
}

static int location(Buf *b)
{
    if (b->kind == K_DEV || b->kind == K_ALIAS)
        return L_DEV;
    if (b->kind == K_PIN || b->registered)
        return L_HOST;
    return L_UNREG;
}

static int is_pageable(Buf *b) { return b->kind == K_MALLOC || b->kind == K_STACK; }
static int is_host(Buf *b) { return b->kind == K_PIN || is_pageable(b); }


/* ------------------------------------------------------------------------------- pending work */
static int conflicts(Thread *T, const Access *a)
{
    for (int i = 0; i < T->n_pending; i++) {
        Access *p = &T->pending[i];
        if (p->storage != a->storage || !(p->write || a->write))
            continue;
        if (!overlaps(p->off, p->off + p->len, a->off, a->off + a->len))
            continue;
        if (a->queued && a->stream == p->stream)
            continue; /* the same stream: in order */
        return 1;
    }
    return 0;
}

static void add_pending(Thread *T, const Access *a)
{
    if (T->n_pending < MAX_PENDING)
        T->pending[T->n_pending++] = *a;
}

/* --------------------------------------------------------------------------------- the checks */
static void call_done(Thread *T, int api, int got, Expect e);
static void check_all(Thread *T);

static int sync_all(Thread *T)
{
    int r, bad = 0;
    if (chance(T, 25)) {
        note(T, "aclrtSynchronizeDevice()");
        r = aclrtSynchronizeDevice();
        call_done(T, A_aclrtSynchronizeDevice, r, OK);
        bad |= r != 0;
    } else {
        for (int i = 0; i < MAX_STREAMS; i++)
            if (T->st[i].live) {
                if (chance(T, 15)) { /* -1: no limit (devices_streams_events.md, streams rows 13-20) */
                    note(T, "aclrtSynchronizeStreamWithTimeout(s%d, -1)", i);
                    r = aclrtSynchronizeStreamWithTimeout(T->st[i].h, -1);
                    call_done(T, A_aclrtSynchronizeStreamWithTimeout, r, OK);
                } else {
                    note(T, "aclrtSynchronizeStream(s%d)", i);
                    r = aclrtSynchronizeStream(T->st[i].h);
                    call_done(T, A_aclrtSynchronizeStream, r, OK);
                }
                bad |= r != 0;
            }
        note(T, "aclrtSynchronizeStream(NULL)");
        r = aclrtSynchronizeStream(NULL);
        call_done(T, A_aclrtSynchronizeStream, r, OK);
        bad |= r != 0;
    }
    return bad;
}

/* Synchronize every stream of the thread, then compare. */
static void drain(Thread *T)
{
    T->drains++;
    sync_all(T);
    T->n_pending = 0;
    for (int i = 0; i < MAX_STREAMS; i++)
        T->st[i].busy = 0;
    for (int i = 0; i < MAX_EVENTS; i++)
        if (T->ev[i].live && T->ev[i].state == 1)
            T->ev[i].state = 2;
    check_all(T);
}

static void rebaseline(Thread *T);

/* One call, described, made and judged: TRY(T, api, expected, (call), "format", ...); the code is left in `got`. */
#define TRY(T, api, expected, call, ...)                                                                      \
    do {                                                                                                     \
        note(T, __VA_ARGS__);                                                                                \
        got = (call);                                                                                        \
        call_done(T, A_##api, got, expected);                                                                \
    } while (0)

static void call_done(Thread *T, int api, int got, Expect e)
{
    T->calls++;
    T->by_api[api]++;
    if (got == 0)
        T->ok_by_api[api]++;
    logged(T, got);
    if (!meets(e, got)) {
        T->wrong_codes++;
        const char *why = aclGetRecentErrMsg();
        char want[32];
        if (e.exact)
            snprintf(want, sizeof want, "%d", e.code);
        else
            snprintf(want, sizeof want, "nonzero");
        report(T, "FUZZ-WRONG-CODE", "%s: expected %s, got %d (%s)", T->cur, want, got, why ? why : "");
    }
}

/* A call naming a freed range whose code is judged at the end (`suspect`): counted now; when it succeeded, what
 * it read or wrote is unknown, so the bytes are taken as they are. */
static void uncounted(Thread *T, int api, int got)
{
    T->calls++;
    T->by_api[api]++;
    logged(T, got);
    if (got == 0)
        rebaseline(T);
}

static void guard_report(Thread *T, const char *what, size_t at, int want, int got)
{
    T->guard_changes++;
    report(T, "FUZZ-GUARD", "%s changed at byte %zu: expected 0x%02x, got 0x%02x", what, at, want, got);
}

static void compare(Thread *T, Buf *b, const unsigned char *got)
{
    size_t n = b->cap, i = 0;
#ifdef FUZZ_MUTATE
#if FUZZ_MUTATE == 1
    if (T->index == 0 && T->checks == 3)
        b->shadow[n / 2] ^= 0x40; /* the oracle must notice one wrong byte */
#endif
#endif
    if (memcmp(got, b->shadow, n) == 0)
        return;
    while (i < n && got[i] == b->shadow[i])
        i++;
    size_t last = n - 1;
    while (last > i && got[last] == b->shadow[last])
        last--;
    T->mismatches++;
    report(T, "FUZZ-MISMATCH", "buffer %c%d (%zu bytes, cap %zu) differs from its shadow at offsets %zu..%zu: "
           "expected 0x%02x, got 0x%02x at %zu", kind_letter[b->kind], b->id, b->size, n, i, last, b->shadow[i],
           got[i], i);
    memcpy(b->shadow, got, n); /* once: the bytes are the baseline from here on */
}

static int read_device(Thread *T, void *dev, size_t n)
{
    note(T, "aclrtMemcpy(scratch, %zu, check of 0x%llx, %zu, D2H)", n, (unsigned long long)(uintptr_t)dev, n);
    int r = aclrtMemcpy(T->scratch, n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST);
    T->check_calls++;
    logged(T, r);
    if (r) {
        T->wrong_codes++;
        report(T, "FUZZ-WRONG-CODE", "%s: expected 0, got %d", T->cur, r);
    }
    return r;
}

static void check_all(Thread *T)
{
    T->checks++;
    for (int i = 0; i < MAX_BUFS; i++) {
        Buf *b = &T->buf[i];
        if (!b->live || b->tainted || b->kind == K_ALIAS)
            continue;
        if (b->kind == K_DEV) {
            if (read_device(T, b->ptr, b->cap) == 0)
                compare(T, b, T->scratch);
        } else {
            compare(T, b, b->ptr);
        }
        if (b->kind == K_MALLOC)
            for (size_t k = 0; k < PAD; k++) {
                if (b->raw[k] != GUARD_BYTE || b->raw[PAD + b->size + k] != GUARD_BYTE) {
                    int after = b->raw[k] == GUARD_BYTE;
                    guard_report(T, after ? "the pad after a malloc'ed buffer" : "the pad before a malloc'ed buffer",
                                 k, GUARD_BYTE, after ? b->raw[PAD + b->size + k] : b->raw[k]);
                    memset(b->raw, GUARD_BYTE, PAD);
                    memset(b->raw + PAD + b->size, GUARD_BYTE, PAD);
                    break;
                }
            }
    }
    for (size_t k = 0; k < PAD; k++)
        if (T->stack[k] != GUARD_BYTE || T->stack[PAD + STACK_BYTES + k] != GUARD_BYTE) {
            guard_report(T, "a pad of the stack buffer", k, GUARD_BYTE, T->stack[k]);
            memset(T->stack, GUARD_BYTE, PAD);
            memset(T->stack + PAD + STACK_BYTES, GUARD_BYTE, PAD);
            break;
        }
    const unsigned char *pg = T->pin_guard;
#if defined(FUZZ_MUTATE) && FUZZ_MUTATE == 3
    if (T->index == 0 && T->checks == 3)
        ((unsigned char *)T->pin_guard)[7] ^= 1; /* the oracle must notice a changed guard */
#endif
    for (size_t k = 0; k < 4096; k++)
        if (pg[k] != PIN_GUARD_BYTE) {
            guard_report(T, "the page-locked guard", k, PIN_GUARD_BYTE, pg[k]);
            memset(T->pin_guard, PIN_GUARD_BYTE, 4096);
            break;
        }
    for (int g = 0; g < 2; g++)
        if (T->dev_guard_ok[g] && read_device(T, T->dev_guard[g], 4096) == 0)
            for (size_t k = 0; k < 4096; k++)
                if (T->scratch[k] != DEV_GUARD_BYTE) {
                    guard_report(T, "a device guard", k, DEV_GUARD_BYTE, T->scratch[k]);
                    aclrtMemset(T->dev_guard[g], 4096, DEV_GUARD_BYTE, 4096);
                    break;
                }
}

/* After a call that did what was not expected: wait for everything, and take the bytes as they are. */
static void rebaseline(Thread *T)
{
    sync_all(T);
    T->n_pending = 0;
    for (int i = 0; i < MAX_BUFS; i++) {
        Buf *b = &T->buf[i];
        if (!b->live || b->tainted || b->kind == K_ALIAS)
            continue;
        if (b->kind == K_DEV) {
            if (read_device(T, b->ptr, b->cap) == 0)
                memcpy(b->shadow, T->scratch, b->cap);
        } else {
            memcpy(b->shadow, b->ptr, b->cap);
        }
    }
}

/* ------------------------------------------------------------------------------ the pointers */

static int stale_usable(Thread *T, int i)
{
    Stale *s = &T->stale[i];
    if (s->kind != K_PIN)
        return 1;
    return __atomic_load_n(&pin_frees, __ATOMIC_SEQ_CST) - s->frees < PIN_MARGIN_FREES &&
           __atomic_load_n(&pin_free_bytes, __ATOMIC_SEQ_CST) - s->bytes < PIN_MARGIN_BYTES;
}

static size_t pick_off(Thread *T, size_t cap)
{
    switch (rnd(T, 8)) {
    case 0: case 1: case 2: return 0;
    case 3: return cap > 1 ? 1 : 0;
    case 4: return cap > 4 ? 4 : 0;
    case 5: return cap / 2;
    case 6: return cap - 1;
    default: return rnd(T, cap);
    }
}

static void name_end(Thread *T, End *e)
{
    if (e->what == P_NULL)
        snprintf(e->name, sizeof e->name, "NULL");
    else if (e->what == P_BUF) {
        Buf *b = &T->buf[e->slot];
        snprintf(e->name, sizeof e->name, "%c%d+%zu", kind_letter[b->kind], b->id, e->off);
    } else {
        Stale *s = &T->stale[e->stale];
        snprintf(e->name, sizeof e->name, "freed-%c%d+%zu", kind_letter[s->kind], s->id, e->off);
    }
}

/* A pointer for a call: mostly into one of the thread's buffers (`mask` of kinds), sometimes NULL or memory the
 * thread freed (`weird`). */
static End pick_end(Thread *T, int mask, int weird, size_t align)
{
    End e;
    memset(&e, 0, sizeof e);
    int r = (int)rnd(T, 100);
    int slot = pick_buf(T, mask);
    if ((weird && r < 3) || slot < 0) {
        e.what = P_NULL;
    } else if (weird && r < 8 && T->n_stale && !g_no_stale) {
        e.stale = (int)rnd(T, T->n_stale);
        Stale *s = &T->stale[e.stale];
        e.what = s->kind == K_PIN ? P_STALE_PIN : P_STALE_DEV;
        e.off = chance(T, 70) ? 0 : rnd(T, s->cap) / align * align;
        e.p = s->ptr + e.off;
        e.room = s->cap - e.off;
    } else {
        Buf *b = &T->buf[slot];
        e.what = P_BUF;
        e.slot = slot;
        e.off = pick_off(T, b->cap);
        if (align > 1 && chance(T, 85))
            e.off = e.off / align * align;
        e.p = b->ptr + e.off;
        e.room = b->cap - e.off;
    }
    name_end(T, &e);
    return e;
}

static Buf *end_buf(Thread *T, End *e) { return e->what == P_BUF ? &T->buf[e->slot] : NULL; }
static int end_pageable(Thread *T, End *e) { Buf *b = end_buf(T, e); return b && is_pageable(b); }

/* the most bytes a call may name at e without running past pageable memory (which the runtime would take as the
 * program's, wherever it points) */
static size_t limit_of(Thread *T, End *e) { return end_pageable(T, e) ? e->room : NO_SIZE; }

/* A byte count for a call naming `n_ends` pointers: mostly what fits them all, sometimes 0, past the end of a
 * device or page-locked buffer (never of a pageable one), or past any address. */
static size_t pick_count(Thread *T, End *ends, int n_ends, size_t unit)
{
    size_t fit = NO_SIZE, limit = NO_SIZE, np_room = NO_SIZE;
    for (int i = 0; i < n_ends; i++) {
        if (ends[i].what == P_BUF || ends[i].what == P_STALE_DEV || ends[i].what == P_STALE_PIN)
            fit = ends[i].room < fit ? ends[i].room : fit;
        size_t l = limit_of(T, &ends[i]);
        limit = l < limit ? l : limit;
        if (ends[i].what == P_BUF && !end_pageable(T, &ends[i]))
            np_room = ends[i].room < np_room ? ends[i].room : np_room;
    }
    if (fit == NO_SIZE)
        fit = 4096;
    int r = (int)rnd(T, 100);
    if (r < 3)
        return 0;
    if (r < 7)
        return chance(T, 50) ? NO_SIZE : BIG;
    if (r < 15 && np_room != NO_SIZE && np_room / unit + 1 <= limit / unit) {
        size_t past = (np_room / unit + 1 + rnd(T, 3)) * unit;
        return past <= limit ? past : (np_room / unit + 1) * unit;
    }
    size_t most = fit / unit;
    if (most == 0)
        return limit < unit ? 0 : unit; /* past a tiny end, unless it is pageable */
    switch (rnd(T, 4)) {
    case 0: return most * unit;
    case 1: return (1 + rnd(T, most < 64 ? most : 64)) * unit;
    default: return (1 + rnd(T, most)) * unit;
    }
}

/* Whether [p, p + n) is valid memory of the end's buffer. */
static int fits(End *e, size_t n) { return e->what == P_BUF && n <= e->room; }

/* Claim the freed device ranges among `ends` for a call naming n bytes at each; 0: no claim needed, -1 skip. */
static long claim_ends(Thread *T, End *ends, int n_ends, size_t n)
{
    uintptr_t lo[2], hi[2];
    int k = 0;
    for (int i = 0; i < n_ends; i++) {
        if (ends[i].what == P_STALE_PIN && !stale_usable(T, ends[i].stale))
            return -1;
        if (ends[i].what != P_STALE_DEV || k == 2)
            continue;
        size_t span = n < ((size_t)1 << 40) ? n : ((size_t)1 << 40);
        lo[k] = (uintptr_t)ends[i].p;
        hi[k] = lo[k] + (span ? span : 1);
        k++;
    }
    for (int i = 0; i < n_ends; i++)
        if (ends[i].what == P_STALE_DEV || ends[i].what == P_STALE_PIN)
            T->stale_used++;
    if (k == 0)
        return 0;
    long id = claim(lo[0], hi[0], lo[1], hi[1], k);
    if (id < 0) {
        T->stale_skipped++;
        return -1;
    }
    return id + 1;
}

/* A call naming freed device memory returned what was not expected: judged at the end, unless an allocation of
 * another thread took the range meanwhile. */
static int suspect(Thread *T, long claim_id, Expect e, int got)
{
    if (claim_id <= 0 || meets(e, got))
        return 0;
    pthread_mutex_lock(&claim_lock);
    suspects = grow(suspects, &cap_suspects, n_suspects + 1, sizeof *suspects);
    Suspect *s = &suspects[n_suspects++];
    s->claim = claim_id - 1;
    s->thread = T->index;
    s->expected = e.exact ? e.code : -1;
    s->got = got;
    snprintf(s->what, LOG_LINE, "#%ld %s", T->op, T->cur);
    pthread_mutex_unlock(&claim_lock);
    return 1;
}

/* ------------------------------------------------------------------------------- kind rules */
/* MemcpyKindAutoCorrect (docs/conformance/memory_copies_fills.md, aclrtMemcpyAsync row 9; hicann/runtime
 * src/runtime/api/impl/api_error.cc): the kind an EP copy uses for its ends' locations, -1 where forbidden. */
static int correct(int sloc, int dloc, int kind)
{
    if (kind < H2H || kind > DEFAULT)
        return kind;
    if (sloc == L_HOST && dloc == L_DEV) return H2D;
    if (sloc == L_DEV && dloc == L_HOST) return D2H;
    if (sloc == L_HOST && dloc == L_HOST) return H2H;
    if (sloc == L_DEV && dloc == L_DEV) return D2D;
    int allowed, dflt;
    if (sloc == L_UNREG && dloc == L_DEV) { allowed = 1 << H2D | 1 << D2D; dflt = H2D; }
    else if (sloc == L_DEV && dloc == L_UNREG) { allowed = 1 << D2H | 1 << D2D; dflt = D2H; }
    else if (sloc == L_HOST && dloc == L_UNREG) { allowed = 1 << H2H | 1 << H2D; dflt = H2H; }
    else if (sloc == L_UNREG && dloc == L_HOST) { allowed = 1 << H2H | 1 << D2H; dflt = H2H; }
    else { allowed = 1 << H2H | 1 << H2D | 1 << D2H | 1 << D2D; dflt = H2H; }
    if (kind == DEFAULT)
        return dflt;
    return allowed >> kind & 1 ? kind : -1;
}

static int pick_kind(Thread *T, End *d, End *s, int twod)
{
    int r = (int)rnd(T, 100);
    if (r < 5) {
        static const int weird[] = {6, 7, 100, -1};
        return weird[rnd(T, 4)];
    }
    if (r < 25)
        return twod ? (int)(1 + rnd(T, 4)) : (int)rnd(T, 6);
    if (r < 45)
        return DEFAULT;
    Buf *db = end_buf(T, d), *sb = end_buf(T, s);
    int dl = db ? location(db) : L_DEV, sl = sb ? location(sb) : L_DEV;
    if (sl == L_DEV && dl == L_DEV) return D2D;
    if (sl == L_DEV) return D2H;
    if (dl == L_DEV) return H2D;
    return twod ? H2D : H2H;
}

/* -------------------------------------------------------------------------------- accesses */
typedef struct { Access a[8]; int n; } Plan;

static void plan_add(Plan *p, Buf *b, size_t off, size_t len, int write, int queued, aclrtStream s)
{
    Access *a = &p->a[p->n++];
    a->storage = b->storage;
    a->off = off;
    a->len = len;
    a->write = write;
    a->queued = queued;
    a->stream = s;
}

/* Before a call that will succeed: synchronize first if it would race with queued work. */
static void settle(Thread *T, Plan *p)
{
    for (int i = 0; i < p->n; i++)
        if (conflicts(T, &p->a[i])) {
            T->forced_drains++;
            drain(T);
            return;
        }
    for (int i = 0; i < p->n; i++) /* queued after work on the same bytes and stream: their order is tested */
        for (int k = 0; p->a[i].queued && k < T->n_pending; k++) {
            Access *q = &T->pending[k];
            if (q->storage == p->a[i].storage && q->stream == p->a[i].stream && (q->write || p->a[i].write) &&
                overlaps(q->off, q->off + q->len, p->a[i].off, p->a[i].off + p->a[i].len)) {
                T->in_order++;
                return;
            }
        }
}

static void queue_plan(Thread *T, Plan *p)
{
    for (int i = 0; i < p->n; i++)
        if (p->a[i].queued) {
            T->queued_ok++;
            break;
        }
    if (T->n_pending + p->n > MAX_PENDING)
        drain(T); /* (the call is made: its work is waited for with the rest) */
    else
        for (int i = 0; i < p->n; i++)
            if (p->a[i].queued)
                add_pending(T, &p->a[i]);
}

/* Two ranges of the same bytes that overlap without being the same range: the result would depend on the order
 * the bytes move in, which no API promises. */
static int partial_overlap(Thread *T, End *d, size_t dn, End *s, size_t sn)
{
    Buf *db = end_buf(T, d), *sb = end_buf(T, s);
    if (!db || !sb || db->storage != sb->storage)
        return 0;
    size_t a = d->off, b = s->off;
    if (a == b && dn == sn)
        return 0;
    return overlaps(a, a + dn, b, b + sn);
}

/* ------------------------------------------------------------------------------ stream picks */
enum { S_NULL, S_LIVE, S_DEAD, S_JUNK };
typedef struct { int what, slot; aclrtStream h; char name[24]; } StreamPick;

static StreamPick pick_stream(Thread *T, int weird)
{
    StreamPick s = {S_NULL, -1, NULL, "NULL"};
    int live[MAX_STREAMS], n = 0;
    for (int i = 0; i < MAX_STREAMS; i++)
        if (T->st[i].live)
            live[n++] = i;
    int r = (int)rnd(T, 100);
    if (weird && r < 4 && T->n_dead_streams) {
        s.what = S_DEAD;
        s.h = T->dead_streams[rnd(T, T->n_dead_streams)];
        snprintf(s.name, sizeof s.name, "destroyed-%p", s.h);
    } else if (weird && r < 6) {
        s.what = S_JUNK;
        s.h = (aclrtStream)(uintptr_t)0x1234;
        snprintf(s.name, sizeof s.name, "0x1234");
    } else if (r < 80 && n) {
        s.what = S_LIVE;
        s.slot = live[rnd(T, n)];
        s.h = T->st[s.slot].h;
        snprintf(s.name, sizeof s.name, "s%d", s.slot);
    }
    return s;
}

static int stream_ok(StreamPick *s) { return s->what == S_NULL || s->what == S_LIVE; }

/* What a stream handle named earlier is now. */
static StreamPick stream_now(Thread *T, aclrtStream h)
{
    StreamPick s = {S_NULL, -1, h, "NULL"};
    if (!h)
        return s;
    for (int i = 0; i < MAX_STREAMS; i++)
        if (T->st[i].live && T->st[i].h == h) {
            s.what = S_LIVE;
            s.slot = i;
            snprintf(s.name, sizeof s.name, "s%d", i);
            return s;
        }
    s.what = (uintptr_t)h == 0x1234 ? S_JUNK : S_DEAD;
    snprintf(s.name, sizeof s.name, s.what == S_JUNK ? "0x1234" : "destroyed-%p", h);
    return s;
}

static void mark_busy(Thread *T, StreamPick *s)
{
    if (s->what == S_LIVE)
        T->st[s->slot].busy = 1;
}

/* ------------------------------------------------------------------------------------ copies */
static void apply_copy(Thread *T, End *d, End *s, size_t n)
{
    Buf *db = end_buf(T, d), *sb = end_buf(T, s);
    memmove(db->shadow + d->off, sb->shadow + s->off, n);
}

/* One end's bytes could be named: the expected failure of an end that is not valid memory for n bytes. */
static int ends_resolve(End *d, End *s, size_t n) { return fits(d, n) && fits(s, n); }

/* the kinds whose async copies queue (page-locked, device, a registration's device address) */
#define QUEUED_KINDS (1 << K_DEV | 1 << K_PIN | 1 << K_ALIAS)

static void op_memcpy(Thread *T, int async)
{
    End ends[2];
    int mask = async && chance(T, 60) ? QUEUED_KINDS : 0x1F;
    ends[0] = pick_end(T, mask, 1, 1);
    ends[1] = pick_end(T, mask, 1, 1);
    End *d = &ends[0], *s = &ends[1];
    size_t n = pick_count(T, ends, 2, 1);
    if (fits(d, n) && fits(s, n) && partial_overlap(T, d, n, s, n)) {
        *s = *d; /* the same bytes instead */
    }
    size_t dmax;
    int r = (int)rnd(T, 100);
    if (r < 6) dmax = n ? n - 1 : 0;
    else if (r < 9) dmax = 0;
    else if (r < 12) dmax = NO_SIZE;
    else if (d->what == P_BUF && r < 70 && d->room >= n) dmax = d->room;
    else dmax = n;
    int kind = pick_kind(T, d, s, 0);
    StreamPick sp = async ? pick_stream(T, 1) : (StreamPick){S_NULL, -1, NULL, ""};
    Buf *db = end_buf(T, d), *sb = end_buf(T, s);

    Expect e = OK;
    Plan plan = {.n = 0};
    int effect = 0, queued = 0, src_now = 0;
    /* memory_copies_fills.md, aclrtMemcpy rows 1-10 and aclrtMemcpyAsync rows 1-15 (EP products) */
    if (n == 0) e = OK;
    else if (d->what == P_NULL || s->what == P_NULL) e = exact(E_PARAM);
    else if (kind < 0 || kind > 5) e = exact(E_PARAM);
    else if (async && !stream_ok(&sp)) e = exact(E_HANDLE);
    else if (!async && dmax == 0) e = exact(E_RT_PARAM);
    else if (n > dmax) e = exact(E_RT_PARAM);
    else if (!async && d->p == s->p) e = OK;
    else if (!ends_resolve(d, s, n)) e = exact(E_PARAM); /* the emulator's refusal of memory it does not know */
    else if (!async) { effect = 1; }
    else if (kind == H2B2D) {
        if (db->kind == K_DEV || db->kind == K_ALIAS) {
            if (sb->kind == K_DEV || sb->kind == K_ALIAS) e = exact(E_RT_PARAM);
            else { effect = 1; queued = 1; src_now = 1; }
        } else e = exact(E_RT_PARAM);
    } else {
        int used = correct(location(sb), location(db), kind);
        if (used < 0) e = exact(E_RT_PARAM);
        else if (used == H2H) e = exact(E_NOT_SUPPORT);
        else if (d->p == s->p) e = OK;
        else {
            effect = 1;
            int pageable = used != D2D && (location(sb) == L_UNREG || location(db) == L_UNREG);
            queued = !pageable;
        }
    }
    long cid = claim_ends(T, ends, 2, n);
    if (cid < 0)
        return;
    if (effect) {
        plan_add(&plan, sb, s->off, n, 0, queued && !src_now, sp.h);
        plan_add(&plan, db, d->off, n, 1, queued, sp.h);
        settle(T, &plan);
    }
    /* aclrtMemcpyAsyncWithCondition: aclrtMemcpyAsync's checks (memory_copies_fills.md) */
    int api = !async ? A_aclrtMemcpy : chance(T, 20) ? A_aclrtMemcpyAsyncWithCondition : A_aclrtMemcpyAsync;
    const char *kn = api_names[api];
    if (async)
        note(T, "%s(%s, %zu, %s, %zu, kind %d, %s)", kn, d->name, dmax, s->name, n, kind, sp.name);
    else
        note(T, "%s(%s, %zu, %s, %zu, kind %d)", kn, d->name, dmax, s->name, n, kind);
    int got = api == A_aclrtMemcpy ? aclrtMemcpy(d->p, dmax, s->p, n, (aclrtMemcpyKind)kind)
              : api == A_aclrtMemcpyAsync ? aclrtMemcpyAsync(d->p, dmax, s->p, n, (aclrtMemcpyKind)kind, sp.h)
              : aclrtMemcpyAsyncWithCondition(d->p, dmax, s->p, n, (aclrtMemcpyKind)kind, sp.h);
    if (got == 0 && cid > 0 && async)
        aclrtSynchronizeStream(sp.h); /* a freed range that was someone's: let it land inside the claim */
    if (cid > 0)
        unclaim(cid - 1);
    if (suspect(T, cid, e, got)) {
        uncounted(T, api, got);
        return;
    }
    call_done(T, api, got, e);
    if (got == 0 && effect) {
        apply_copy(T, d, s, n);
        queue_plan(T, &plan);
        if (queued)
            mark_busy(T, &sp);
    }
    if (!meets(e, got))
        rebaseline(T);
}

/* ---------------------------------------------------------------------------------- 2D copies */
static void apply_2d(Thread *T, End *d, size_t dpitch, End *s, size_t spitch, size_t w, size_t h)
{
    Buf *db = end_buf(T, d), *sb = end_buf(T, s);
    for (size_t r = 0; r < h; r++)
        memmove(db->shadow + d->off + r * dpitch, sb->shadow + s->off + r * spitch, w);
}

static size_t span(size_t pitch, size_t w, size_t h) { return (h - 1) * pitch + w; }

static void op_memcpy2d(Thread *T, int async)
{
    End ends[2];
    int mask = async && chance(T, 60) ? QUEUED_KINDS : 0x1F;
    ends[0] = pick_end(T, mask, 1, 1);
    ends[1] = pick_end(T, mask, 1, 1);
    End *d = &ends[0], *s = &ends[1];
    size_t w, h, dpitch, spitch;
    size_t droom = d->what == P_BUF ? d->room : 4096, sroom = s->what == P_BUF ? s->room : 4096;
    size_t room = droom < sroom ? droom : sroom;
    w = 1 + rnd(T, room < 256 ? room : 256);
    h = 1 + rnd(T, 8);
    dpitch = w + (chance(T, 50) ? 0 : rnd(T, 40));
    spitch = w + (chance(T, 50) ? 0 : rnd(T, 40));
    int r = (int)rnd(T, 100);
    if (r < 4) w = 0;
    else if (r < 7) h = 0;
    else if (r < 11) { if (chance(T, 50)) dpitch = w ? w - 1 : 0; else spitch = w ? w - 1 : 0; }
    else if (r < 14) h = 5242881;
    else if (r < 16) { w = 5000001; dpitch = spitch = w; }
    else if (r < 24) h = 1 + rnd(T, 64);
    /* fit the rows into pageable ends (the runtime would take any address as the program's) */
    size_t dl = limit_of(T, d), sl = limit_of(T, s);
    if (w && h && h <= 5242880 && w <= 5000000) {
        while (h > 1 && ((dl != NO_SIZE && span(dpitch, w, h) > dl) || (sl != NO_SIZE && span(spitch, w, h) > sl)))
            h--;
        if ((dl != NO_SIZE && span(dpitch, w, h) > dl) || (sl != NO_SIZE && span(spitch, w, h) > sl))
            return;
    } else if (w > 5000000 || h > 5242880) {
        /* refused before any address is read */
    }
    int kind = pick_kind(T, d, s, 1);
    StreamPick sp = async ? pick_stream(T, 1) : (StreamPick){S_NULL, -1, NULL, ""};
    Buf *db = end_buf(T, d), *sb = end_buf(T, s);
    size_t dspan = w && h ? span(dpitch, w, h) : 0, sspan = w && h ? span(spitch, w, h) : 0;
    if (db && sb && db->storage == sb->storage && w && h && h <= 5242880 && w <= 5000000) {
        size_t a = d->off, b = s->off;
        if (overlaps(a, a + dspan, b, b + sspan))
            return; /* rows of the same bytes: no order of moving them is promised */
    }
    Expect e = OK;
    int effect = 0, queued = 0;
    /* copy2d_batch_descriptors.md 2S1-2S15 and 2A1-2A18 (910B / A3: a null stream is the default one) */
    if (w == 0 || h == 0) e = OK;
    else if (d->what == P_NULL || s->what == P_NULL) e = exact(E_PARAM);
    else if (w > spitch || w > dpitch) e = exact(E_PARAM);
    else if (kind != H2D && kind != D2H && kind != D2D && kind != DEFAULT) e = exact(E_PARAM);
    else if (async && !stream_ok(&sp)) e = exact(E_HANDLE);
    else if (h > 5242880 || w > 5000000) e = exact(E_RT_PARAM);
    else if (!async && kind == D2D) e = exact(E_NOT_SUPPORT);
    else if (!fits(d, dspan) || !fits(s, sspan)) e = exact(E_PARAM);
    else {
        int used = correct(location(sb), location(db), kind);
        if (used < 0) e = exact(E_RT_PARAM);
        else if (!async && used != H2D && used != D2H) e = exact(E_RT_PARAM);
        else if (async && used != H2D && used != D2H && used != D2D) e = exact(E_RT_PARAM);
        else {
            effect = 1;
            queued = async && !(used != D2D && (location(sb) == L_UNREG || location(db) == L_UNREG));
        }
    }
    size_t claim_n = dspan > sspan ? dspan : sspan;
    long cid = claim_ends(T, ends, 2, claim_n ? claim_n : 1);
    if (cid < 0)
        return;
    Plan plan = {.n = 0};
    if (effect) {
        plan_add(&plan, sb, s->off, sspan, 0, queued, sp.h);
        plan_add(&plan, db, d->off, dspan, 1, queued, sp.h);
        settle(T, &plan);
    }
    if (async)
        note(T, "aclrtMemcpy2dAsync(%s, %zu, %s, %zu, %zu, %zu, kind %d, %s)", d->name, dpitch, s->name, spitch, w, h,
             kind, sp.name);
    else
        note(T, "aclrtMemcpy2d(%s, %zu, %s, %zu, %zu, %zu, kind %d)", d->name, dpitch, s->name, spitch, w, h, kind);
    int got = async ? aclrtMemcpy2dAsync(d->p, dpitch, s->p, spitch, w, h, (aclrtMemcpyKind)kind, sp.h)
                    : aclrtMemcpy2d(d->p, dpitch, s->p, spitch, w, h, (aclrtMemcpyKind)kind);
    if (got == 0 && cid > 0 && async)
        aclrtSynchronizeStream(sp.h);
    if (cid > 0)
        unclaim(cid - 1);
    int api = async ? A_aclrtMemcpy2dAsync : A_aclrtMemcpy2d;
    if (suspect(T, cid, e, got)) {
        uncounted(T, api, got);
        return;
    }
    call_done(T, api, got, e);
    if (got == 0 && effect) {
        apply_2d(T, d, dpitch, s, spitch, w, h);
        queue_plan(T, &plan);
        if (queued)
            mark_busy(T, &sp);
    }
    if (!meets(e, got))
        rebaseline(T);
}

/* ---------------------------------------------------------------------------------------- fills */
static void op_memset(Thread *T, int async, int d32)
{
    End ends[1];
    ends[0] = pick_end(T, async && chance(T, 60) ? (1 << K_DEV | 1 << K_ALIAS) : 0x1F, 1, d32 ? 4 : 1);
    End *d = &ends[0];
    size_t unit = d32 ? 4 : 1;
    size_t n = pick_count(T, ends, 1, unit); /* bytes */
    size_t count = d32 ? n / 4 : n;          /* memset: bytes; D32: words */
    if (d32 && (n == NO_SIZE || n == BIG))
        count = (size_t)1 << 61; /* 2^63 bytes: past any user address */
    size_t maxc;
    int r = (int)rnd(T, 100);
    if (r < 7) maxc = n ? n - 1 : 0;
    else if (d->what == P_BUF && r < 60 && d->room >= n) maxc = d->room;
    else maxc = d32 ? count * 4 : n;
    uint32_t value = (uint32_t)splitmix(&T->rng);
    if (chance(T, 20))
        value = chance(T, 50) ? 0xFFFFFFFFu : 0x1A5u;
    StreamPick sp = async ? pick_stream(T, 1) : (StreamPick){S_NULL, -1, NULL, ""};
    Buf *db = end_buf(T, d);
    size_t bytes = d32 ? count * 4 : count;
    Expect e = OK;
    int effect = 0, queued = 0;
    if (!d32) {
        /* memory_copies_fills.md, aclrtMemset rows 1-6, aclrtMemsetAsync rows 1-8 */
        if (count == 0) e = OK;
        else if (d->what == P_NULL) e = exact(E_PARAM);
        else if (async && !stream_ok(&sp)) e = exact(E_HANDLE);
        else if (count > maxc) e = exact(E_RT_PARAM);
        else if (!fits(d, count)) e = exact(E_PARAM);
        else { effect = 1; queued = async && !is_host(db); }
    } else {
        /* memory_copies_fills.md, aclrtMemsetD32 rows 1-10, aclrtMemsetD32Async rows 1-12 */
        if (count == 0) e = OK;
        else if (d->what == P_NULL) e = exact(E_PARAM);
        else if ((uintptr_t)d->p % 4) e = exact(E_PARAM);
        else if (maxc / 4 < count) e = exact(E_PARAM);
        else if (d->what == P_STALE_DEV) e = exact(E_RT_PARAM); /* row 5: the attribute query's own error */
        else if (!fits(d, bytes)) e = exact(E_PARAM);
        else if (location(db) == L_UNREG) e = exact(E_PARAM);
        else if (async && !stream_ok(&sp)) e = exact(E_HANDLE);
        else { effect = 1; queued = async && !is_host(db); }
    }
    long cid = claim_ends(T, ends, 1, bytes ? bytes : 1);
    if (cid < 0)
        return;
    Plan plan = {.n = 0};
    if (effect) {
        plan_add(&plan, db, d->off, bytes, 1, queued, sp.h);
        settle(T, &plan);
    }
    int api, got;
    if (d32) {
        api = async ? A_aclrtMemsetD32Async : A_aclrtMemsetD32;
        if (async) {
            note(T, "aclrtMemsetD32Async(%s, %zu, 0x%x, %zu, %s)", d->name, maxc, value, count, sp.name);
            got = aclrtMemsetD32Async(d->p, maxc, value, count, sp.h);
        } else {
            note(T, "aclrtMemsetD32(%s, %zu, 0x%x, %zu)", d->name, maxc, value, count);
            got = aclrtMemsetD32(d->p, maxc, value, count);
        }
    } else {
        api = async ? A_aclrtMemsetAsync : A_aclrtMemset;
        if (async) {
            note(T, "aclrtMemsetAsync(%s, %zu, 0x%x, %zu, %s)", d->name, maxc, value, count, sp.name);
            got = aclrtMemsetAsync(d->p, maxc, (int32_t)value, count, sp.h);
        } else {
            note(T, "aclrtMemset(%s, %zu, 0x%x, %zu)", d->name, maxc, value, count);
            got = aclrtMemset(d->p, maxc, (int32_t)value, count);
        }
    }
    if (got == 0 && cid > 0 && async)
        aclrtSynchronizeStream(sp.h);
    if (cid > 0)
        unclaim(cid - 1);
    if (suspect(T, cid, e, got)) {
        uncounted(T, api, got);
        return;
    }
    call_done(T, api, got, e);
    if (got == 0 && effect) {
        unsigned char *sh = db->shadow + d->off;
        if (d32)
            for (size_t i = 0; i < count; i++) {
                sh[4 * i] = value & 0xFF;
                sh[4 * i + 1] = value >> 8 & 0xFF;
                sh[4 * i + 2] = value >> 16 & 0xFF;
                sh[4 * i + 3] = value >> 24 & 0xFF;
            }
        else
            memset(sh, value & 0xFF, count);
        queue_plan(T, &plan);
        if (queued)
            mark_busy(T, &sp);
    }
    if (!meets(e, got))
        rebaseline(T);
}

/* -------------------------------------------------------------------------------------- batches */
static Buf *same_bytes(Thread *T, End *a, size_t an, End *b, size_t bn)
{
    Buf *x = end_buf(T, a), *y = end_buf(T, b);
    if (!x || !y || x->storage != y->storage)
        return NULL;
    size_t p = a->off, q = b->off;
    return overlaps(p, p + an, q, q + bn) ? x : NULL;
}

static void batch_call(Thread *T, Batch *B, int again);

/* A batch of one to four entries, mostly one device end and one host end each; or the thread's last batch again,
 * when its buffers are still the same (checks a runtime keeps for arguments it has seen must see what changed
 * since: registrations, frees, new allocations). */
static void op_batch(Thread *T)
{
    Batch *B = &T->last_batch;
    if (B->count && chance(T, 20)) {
        for (size_t j = 0; j < 2 * B->count; j++) {
            End *x = &B->ends[j];
            if (x->what == P_STALE_DEV || x->what == P_STALE_PIN)
                return;
            if (x->what == P_BUF && (!T->buf[x->slot].live || T->buf[x->slot].id != B->ids[j] ||
                                     T->buf[x->slot].tainted))
                return;
        }
        batch_call(T, B, 1);
        return;
    }
    memset(B, 0, sizeof *B);
    size_t count = 1 + rnd(T, BATCH_MAX);
    int weird = chance(T, 25);
    const int host = 1 << K_PIN | 1 << K_MALLOC | 1 << K_STACK, dev = 1 << K_DEV | 1 << K_ALIAS;
    for (size_t j = 0; j < count; j++) {
        int dev_dst = chance(T, 50);
        int dmask = dev_dst ? dev : host, smask = dev_dst ? host : dev;
        if (weird && chance(T, 20))
            dmask = smask = 0x1F;
        End *d = &B->ends[2 * j], *s = &B->ends[2 * j + 1];
        /* freed memory only in the first entry: a claim holds two ranges */
        *d = pick_end(T, dmask, weird && j == 0, 1);
        *s = pick_end(T, smask, weird && j == 0, 1);
        B->ids[2 * j] = d->what == P_BUF ? T->buf[d->slot].id : -1;
        B->ids[2 * j + 1] = s->what == P_BUF ? T->buf[s->slot].id : -1;
        size_t n = pick_count(T, d, 2, 1);
        B->sizes[j] = n;
        B->dmax[j] = weird && chance(T, 15) && n ? n - 1 : n;
    }
    /* no entry writes bytes another entry names: the entries run in no promised order */
    for (size_t j = 0; j < 2 * count; j += 2)
        for (size_t k = 0; k < 2 * count; k++)
            if (k != j && same_bytes(T, &B->ends[j], B->sizes[j / 2], &B->ends[k], B->sizes[k / 2])) {
                B->count = 0;
                return;
            }
    size_t num_attrs = chance(T, 50) ? 1 : count;
    for (size_t k = 0; k < num_attrs; k++) {
        B->idx[k] = k;
        Buf *db = end_buf(T, &B->ends[2 * k]), *sb = end_buf(T, &B->ends[2 * k + 1]);
        int dl = db && location(db) != L_DEV ? ACL_MEM_LOCATION_TYPE_HOST : ACL_MEM_LOCATION_TYPE_DEVICE;
        int sl = sb && location(sb) == L_DEV ? ACL_MEM_LOCATION_TYPE_DEVICE : ACL_MEM_LOCATION_TYPE_HOST;
        if (weird && chance(T, 20))
            dl = (int)rnd(T, 5);
        if (weird && chance(T, 20))
            sl = (int)rnd(T, 5);
        B->attrs[k].dstLoc.type = (aclrtMemLocationType)dl;
        B->attrs[k].srcLoc.type = (aclrtMemLocationType)sl;
        B->attrs[k].dstLoc.id = weird && chance(T, 10) ? 1 : 0;
        B->attrs[k].srcLoc.id = weird && chance(T, 10) ? 1 : 0;
    }
    B->rsv_bad = weird && chance(T, 8);
    if (B->rsv_bad)
        B->attrs[0].rsv[rnd(T, 16)] = 1;
    B->idx_bad = weird && chance(T, 8);
    if (B->idx_bad)
        B->idx[num_attrs - 1] = num_attrs == 1 ? 1 : count;
    B->num_attrs = num_attrs;
    B->passed_attrs = weird && chance(T, 5) ? 0 : num_attrs;
    B->count = count;
    static const int apis[] = {A_aclrtMemcpyBatch, A_aclrtMemcpyBatchV2, A_aclrtMemcpyBatchAsync,
                               A_aclrtMemcpyBatchAsyncV2};
    B->api = apis[rnd(T, 4)];
    B->stream = pick_stream(T, weird).h;
    batch_call(T, B, 0);
}

static void batch_call(Thread *T, Batch *B, int again)
{
    size_t count = B->count, num_attrs = B->num_attrs, passed_attrs = B->passed_attrs;
    End *ends = B->ends;
    size_t *sizes = B->sizes, *dmax = B->dmax, *idx = B->idx;
    aclrtMemcpyBatchAttr *attrs = B->attrs;
    int async = B->api == A_aclrtMemcpyBatchAsync || B->api == A_aclrtMemcpyBatchAsyncV2;
    int v2 = B->api == A_aclrtMemcpyBatchV2 || B->api == A_aclrtMemcpyBatchAsyncV2;
    StreamPick sp = stream_now(T, B->stream);
    void *dsts[BATCH_MAX], *srcs[BATCH_MAX];
    for (size_t j = 0; j < count; j++) {
        dsts[j] = ends[2 * j].p;
        srcs[j] = ends[2 * j + 1].p;
    }
    /* copy2d_batch_descriptors.md B1-B23: the checks of the arguments, then entry by entry; failIndex names the
     * entry to blame, else SIZE_MAX; a failure before the runtime's parameter checks (the ACL layer's B1-B6, the
     * stream handle B8) leaves it as it was (KEPT_INDEX: ApiErrorDecorator::MemcpyBatchAsync writes SIZE_MAX
     * first). A synchronous batch copies all its entries or none; an asynchronous one has done or queued the
     * entries before the one that fails. */
    Expect e = OK;
    size_t fail_at = NO_SIZE, done = 0;
    int all_zero = 1;
    for (size_t j = 0; j < count; j++)
        all_zero &= sizes[j] == 0;
    if (!all_zero) {
        for (size_t j = 0; j < count && !e.code; j++)
            if (dmax[j] < sizes[j]) {
                e = exact(E_PARAM);
                fail_at = KEPT_INDEX;
            }
        if (!e.code && B->rsv_bad && passed_attrs) {
            e = exact(E_PARAM);
            fail_at = KEPT_INDEX;
        }
        if (!e.code && async && !stream_ok(&sp)) {
            e = exact(E_HANDLE);
            fail_at = KEPT_INDEX;
        }
        if (!e.code && passed_attrs == 0)
            e = exact(E_RT_PARAM);
        if (!e.code && B->idx_bad)
            e = exact(E_RT_PARAM);
        for (size_t j = 0; j < count && !e.code; j++) {
            size_t k = num_attrs == 1 ? 0 : j;
            aclrtMemLocation *want[2] = {&attrs[k].dstLoc, &attrs[k].srcLoc};
            int side[2] = {0, 0};
            fail_at = j;
            if (async && (sizes[j] == 0 || ends[2 * j + 1].what == P_NULL || ends[2 * j].what == P_NULL)) {
                e = exact(E_RT_PARAM); /* B15, B16 */
                break;
            }
            for (int q = 0; q < 2 && !e.code; q++) {
                End *x = &ends[2 * j + q];
                if (!fits(x, sizes[j])) { /* the emulator's refusal of memory it does not know */
                    e = exact(E_PARAM);
                    break;
                }
                side[q] = location(end_buf(T, x)) == L_DEV;
                int wt = (int)want[q]->type;
                int want_side = wt == ACL_MEM_LOCATION_TYPE_HOST || wt == ACL_MEM_LOCATION_TYPE_HOST_NUMA ? 0 :
                                wt == ACL_MEM_LOCATION_TYPE_DEVICE ? 1 : -1;
                if (want_side != side[q] || (side[q] && want[q]->id != 0))
                    e = exact(E_RT_PARAM);
            }
            if (!e.code && side[0] == side[1])
                e = exact(E_RT_PARAM);
            if (!e.code) {
                fail_at = NO_SIZE;
                done = j + 1;
            }
        }
        if (e.code && !async)
            done = 0;
    }
    long cid = claim_ends(T, ends, 2, sizes[0] ? sizes[0] : 1);
    if (cid < 0)
        return;
    Plan plan = {.n = 0};
    int queued[BATCH_MAX] = {0};
    for (size_t j = 0; j < done; j++) {
        Buf *db = end_buf(T, &ends[2 * j]), *sb = end_buf(T, &ends[2 * j + 1]);
        queued[j] = async && location(db) != L_UNREG && location(sb) != L_UNREG;
        plan_add(&plan, sb, ends[2 * j + 1].off, sizes[j], 0, queued[j], sp.h);
        plan_add(&plan, db, ends[2 * j].off, sizes[j], 1, queued[j], sp.h);
    }
    if (done)
        settle(T, &plan);
    char desc[LOG_LINE];
    int at = snprintf(desc, sizeof desc, "%s(%s%zu:", api_names[B->api], again ? "again, " : "", count);
    for (size_t j = 0; j < count && at < (int)sizeof desc - 48; j++)
        at += snprintf(desc + at, sizeof desc - at, " %s<-%s %zu/%zu", ends[2 * j].name, ends[2 * j + 1].name,
                       sizes[j], dmax[j]);
    for (size_t k = 0; k < num_attrs && at < (int)sizeof desc - 24; k++)
        at += snprintf(desc + at, sizeof desc - at, " @%zu[%d.%u<-%d.%u]", idx[k], (int)attrs[k].dstLoc.type,
                       attrs[k].dstLoc.id, (int)attrs[k].srcLoc.type, attrs[k].srcLoc.id);
    note(T, "%s; numAttrs %zu%s%s%s)", desc, passed_attrs, B->rsv_bad ? ", rsv not 0" : "", async ? ", " : "",
         async ? sp.name : "");
    size_t fail_index = KEPT_INDEX;
    int got;
    switch (B->api) {
    case A_aclrtMemcpyBatch:
        got = aclrtMemcpyBatch(dsts, dmax, srcs, sizes, count, attrs, idx, passed_attrs, &fail_index);
        break;
    case A_aclrtMemcpyBatchV2:
        got = aclrtMemcpyBatchV2(dsts, dmax, srcs, sizes, count, attrs, idx, passed_attrs);
        break;
    case A_aclrtMemcpyBatchAsync:
        got = aclrtMemcpyBatchAsync(dsts, dmax, srcs, sizes, count, attrs, idx, passed_attrs, &fail_index, sp.h);
        break;
    default:
        got = aclrtMemcpyBatchAsyncV2(dsts, dmax, srcs, sizes, count, attrs, idx, passed_attrs, sp.h);
    }
    if (got == 0 && cid > 0 && async)
        aclrtSynchronizeStream(sp.h);
    if (cid > 0)
        unclaim(cid - 1);
    if (suspect(T, cid, e, got)) {
        uncounted(T, B->api, got);
        return;
    }
    call_done(T, B->api, got, e);
    if (!v2 && meets(e, got) && fail_index != (got ? fail_at : NO_SIZE)) {
        T->wrong_codes++;
        report(T, "FUZZ-WRONG-CODE", "%s: failIndex %zu, expected %zu", T->cur, fail_index, got ? fail_at : NO_SIZE);
    }
    if (meets(e, got)) {
        int any_queued = 0;
        for (size_t j = 0; j < done; j++) {
            apply_copy(T, &ends[2 * j], &ends[2 * j + 1], sizes[j]);
            any_queued |= queued[j];
        }
        queue_plan(T, &plan);
        if (any_queued)
            mark_busy(T, &sp);
    } else {
        rebaseline(T);
    }
    if (again)
        T->batches_again++;
}

/* --------------------------------------------------------------------------- allocation, frees */
static void fill_random(Thread *T, unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(splitmix(&T->rng) >> 56);
}

static Buf *new_buf(Thread *T, int slot, int kind, unsigned char *ptr, size_t size, size_t cap)
{
    Buf *b = &T->buf[slot];
    memset(b, 0, sizeof *b);
    b->live = 1;
    b->kind = kind;
    b->id = T->next_id++;
    b->ptr = ptr;
    b->size = size;
    b->cap = cap;
    b->shadow = malloc(cap);
    b->storage = T->next_storage++;
    return b;
}

static void drop_buf(Buf *b)
{
    if (b->kind != K_ALIAS)
        free(b->shadow);
    b->live = 0;
}

/* A host write by the program itself (the CPU, now). */
static void host_write(Thread *T, Buf *b, size_t off, size_t n, int random_bytes)
{
    Plan plan = {.n = 0};
    plan_add(&plan, b, off, n, 1, 0, NULL);
    settle(T, &plan);
    if (random_bytes)
        fill_random(T, b->ptr + off, n);
    else
        memset(b->ptr + off, (int)rnd(T, 256), n);
    memcpy(b->shadow + off, b->ptr + off, n);
    T->host_writes++;
}

static const size_t dev_sizes[] = {32, 64, 96, 100, 1000, 4096, 4100, 8192, 16384, 65536, 131072};
static const size_t pin_sizes[] = {32, 64, 128, 4096, 8192, 16384, 65536, 131072};
static const size_t page_sizes[] = {1, 3, 64, 100, 1000, 4096, 5000, 16384, 65536};

static size_t pick_size(Thread *T, const size_t *sizes, size_t n)
{
    size_t i = rnd(T, n);
    if (sizes[i] >= 65536 && chance(T, 70))
        i = rnd(T, n - 2);
    return sizes[i];
}


static void op_alloc(Thread *T)
{
    int slot = free_slot(T);
    int r = (int)rnd(T, 100);
    if (r < 8) { /* refusals: no output pointer, size 0, sizes no allocator meets */
        int which = (int)rnd(T, 6);
        void *p = NULL;
        int got;
        /* memory_copies_fills.md, aclrtMalloc rows 1, 2, 3, 8 and aclrtMallocHost rows 1, 2 */
        if (which == 0)
            TRY(T, aclrtMalloc, exact(E_PARAM), aclrtMalloc(NULL, 64, 0), "aclrtMalloc(NULL, 64, 0)");
        else if (which == 1)
            TRY(T, aclrtMalloc, exact(E_PARAM), aclrtMalloc(&p, 0, 0), "aclrtMalloc(&p, 0, 0)");
        else if (which == 2)
            TRY(T, aclrtMalloc, exact(E_PARAM), aclrtMalloc(&p, NO_SIZE - 40, ACL_MEM_MALLOC_HUGE_FIRST),
                "aclrtMalloc(&p, SIZE_MAX - 40, 0)");
        else if (which == 3)
            TRY(T, aclrtMallocHost, exact(E_PARAM), aclrtMallocHost(NULL, 64), "aclrtMallocHost(NULL, 64)");
        else if (which == 4)
            TRY(T, aclrtMallocHost, exact(E_PARAM), aclrtMallocHost(&p, 0), "aclrtMallocHost(&p, 0)");
        else
            TRY(T, aclrtMalloc, exact(ACL_ERROR_RT_MEMORY_ALLOCATION),
                aclrtMalloc(&p, (size_t)1 << 50, ACL_MEM_MALLOC_NORMAL_ONLY), "aclrtMalloc(&p, 1 << 50, 2)");
        if (got == 0 && p) /* not expected: give it back */
            which <= 2 || which == 5 ? aclrtFree(p) : aclrtFreeHost(p);
        return;
    }
    if (slot < 0 || live_count(T) >= MAX_BUFS - 2)
        return;
    if (r < 50) {
        size_t size = pick_size(T, dev_sizes, sizeof dev_sizes / sizeof *dev_sizes);
        static const int policies[] = {0, 0, 0, 2, 2, 2, 3, 99};
        int policy = chance(T, 4) ? ACL_MEM_MALLOC_HUGE_ONLY : policies[rnd(T, 8)];
        void *p = NULL;
        long since = seq_now();
        note(T, "aclrtMalloc(&p, %zu, %d)", size, policy);
        int got = aclrtMalloc(&p, size, (aclrtMemMallocPolicy)policy);
        call_done(T, A_aclrtMalloc, got, OK);
        if (got)
            return;
        /* the allocation: the size rounded up to 32 and padded (memory.cpp GetAlignedAndPaddingSize), on 2 MiB
         * pages for HUGE_ONLY (npu_driver_mem.cc DevMemAllocOnline; the emulator's allocation.py) */
        size_t cap = round32(size) + g_padding;
        if (policy == ACL_MEM_MALLOC_HUGE_ONLY)
            cap = (cap + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        Buf *b = new_buf(T, slot, K_DEV, p, size, cap);
        if (!own(T, p, cap, since)) {
            b->tainted = 1; /* another thread named these addresses while they were free: never used */
            T->tainted++;
            return;
        }
        unsigned char v = (unsigned char)rnd(T, 256);
        note(T, "aclrtMemset(d%d+0, %zu, 0x%x, %zu)", b->id, cap, v, cap);
        got = aclrtMemset(p, cap, v, cap);
        call_done(T, A_aclrtMemset, got, OK);
        memset(b->shadow, v, cap);
        if (got)
            rebaseline(T);
    } else if (r < 75) {
        size_t size = pick_size(T, pin_sizes, sizeof pin_sizes / sizeof *pin_sizes);
        void *p = NULL;
        note(T, "aclrtMallocHost(&p, %zu)", size);
        int got = aclrtMallocHost(&p, size);
        call_done(T, A_aclrtMallocHost, got, OK);
        if (got)
            return;
        Buf *b = new_buf(T, slot, K_PIN, p, size, size);
        fill_random(T, b->ptr, size);
        memcpy(b->shadow, b->ptr, size);
    } else {
        size_t size = pick_size(T, page_sizes, sizeof page_sizes / sizeof *page_sizes);
        unsigned char *raw = malloc(size + 2 * PAD);
        memset(raw, GUARD_BYTE, size + 2 * PAD);
        Buf *b = new_buf(T, slot, K_MALLOC, raw + PAD, size, size);
        b->raw = raw;
        fill_random(T, b->ptr, size);
        memcpy(b->shadow, b->ptr, size);
    }
}

static int touches_pending(Thread *T, Buf *b)
{
    for (int i = 0; i < T->n_pending; i++)
        if (T->pending[i].storage == b->storage)
            return 1;
    return 0;
}

static void remember_stale(Thread *T, Buf *b)
{
    Stale s = {b->ptr, b->cap, b->id, b->kind, 0, 0};
    if (b->kind == K_PIN) {
        s.frees = __atomic_load_n(&pin_frees, __ATOMIC_SEQ_CST);
        s.bytes = __atomic_load_n(&pin_free_bytes, __ATOMIC_SEQ_CST);
    }
    if (T->n_stale < MAX_STALE)
        T->stale[T->n_stale++] = s;
    else
        T->stale[rnd(T, MAX_STALE)] = s;
}

static void unregister(Thread *T, int slot);

static void release(Thread *T, int slot, int keep_stale)
{
    Buf *b = &T->buf[slot];
    if (touches_pending(T, b))
        drain(T);
    if (b->registered)
        unregister(T, slot);
    if (b->kind == K_DEV) {
        note(T, "aclrtFree(d%d+0)", b->id);
        int got = aclrtFree(b->ptr);
        call_done(T, A_aclrtFree, got, OK);
        if (got == 0) {
            disown(b->ptr);
            if (keep_stale)
                remember_stale(T, b);
        }
    } else if (b->kind == K_PIN) {
        __atomic_fetch_add(&pin_frees, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&pin_free_bytes, (long)b->cap, __ATOMIC_SEQ_CST);
        note(T, "aclrtFreeHost(p%d+0)", b->id);
        int got = aclrtFreeHost(b->ptr);
        call_done(T, A_aclrtFreeHost, got, OK);
        if (got == 0 && keep_stale)
            remember_stale(T, b);
    } else if (b->kind == K_MALLOC) {
        free(b->raw);
    }
    drop_buf(b);
}

static void op_free(Thread *T)
{
    int r = (int)rnd(T, 100);
    if (r < 25) { /* frees the runtime refuses */
        int got;
        Expect e;
        int which = (int)rnd(T, 7);
        int slot = pick_buf(T, which == 2 || which == 4 ? (1 << K_DEV | 1 << K_ALIAS) :
                               which == 3 ? (1 << K_PIN | 1 << K_MALLOC | 1 << K_STACK) :
                               which == 6 ? 1 << K_PIN : 1 << K_DEV);
        if (which == 0) {
            TRY(T, aclrtFree, exact(E_PARAM), aclrtFree(NULL), "aclrtFree(NULL)");
            return;
        }
        if (which == 1) {
            TRY(T, aclrtFreeHost, exact(E_PARAM), aclrtFreeHost(NULL), "aclrtFreeHost(NULL)");
            return;
        }
        if (which == 5 && T->n_stale && !g_no_stale) { /* a double free */
            int i = (int)rnd(T, T->n_stale);
            Stale *s = &T->stale[i];
            End ends[1];
            memset(ends, 0, sizeof ends);
            ends[0].what = s->kind == K_PIN ? P_STALE_PIN : P_STALE_DEV;
            ends[0].stale = i;
            ends[0].p = s->ptr;
            long cid = claim_ends(T, ends, 1, 1);
            if (cid < 0)
                return;
            int api = s->kind == K_PIN ? A_aclrtFreeHost : A_aclrtFree;
            note(T, "%s(freed-%c%d+0)", api_names[api], kind_letter[s->kind], s->id);
            got = s->kind == K_PIN ? aclrtFreeHost(s->ptr) : aclrtFree(s->ptr);
            if (cid > 0)
                unclaim(cid - 1);
            e = exact(E_RT_PARAM);
            if (!suspect(T, cid, e, got))
                call_done(T, api, got, e);
            else
                uncounted(T, api, got);
            return;
        }
        if (slot < 0)
            return;
        Buf *b = &T->buf[slot];
        if (which == 2) { /* device memory, or a registration's device address, to aclrtFreeHost */
            note(T, "aclrtFreeHost(%c%d+0)", kind_letter[b->kind], b->id);
            got = aclrtFreeHost(b->ptr);
            call_done(T, A_aclrtFreeHost, got, exact(E_RT_PARAM));
        } else if (which == 3) { /* host memory to aclrtFree */
            note(T, "aclrtFree(%c%d+0)", kind_letter[b->kind], b->id);
            got = aclrtFree(b->ptr);
            call_done(T, A_aclrtFree, got, exact(E_RT_PARAM));
        } else if (which == 4) { /* inside an allocation, or a registration's device address */
            size_t off = b->kind == K_ALIAS ? 0 : 1 + rnd(T, b->cap - 1);
            note(T, "aclrtFree(%c%d+%zu)", kind_letter[b->kind], b->id, off);
            got = aclrtFree(b->ptr + off);
            call_done(T, A_aclrtFree, got, exact(E_RT_PARAM));
        } else { /* inside page-locked memory */
            size_t off = 1 + rnd(T, b->cap - 1);
            note(T, "aclrtFreeHost(p%d+%zu)", b->id, off);
            got = aclrtFreeHost(b->ptr + off);
            call_done(T, A_aclrtFreeHost, got, exact(E_RT_PARAM));
        }
        if (got == 0)
            rebaseline(T); /* (what was freed is unknown: a crash may follow) */
        return;
    }
    int slot = pick_buf(T, 1 << K_DEV | 1 << K_PIN | 1 << K_MALLOC);
    if (slot < 0 || live_count(T) <= 3)
        return;
    release(T, slot, 1);
}

/* ---------------------------------------------------------------------------- registration */
static void unregister(Thread *T, int slot)
{
    Buf *b = &T->buf[slot];
    if (touches_pending(T, b))
        drain(T);
    note(T, "aclrtHostUnregister(%c%d+0)", kind_letter[b->kind], b->id);
    int got = aclrtHostUnregister(b->ptr);
    call_done(T, A_aclrtHostUnregister, got, OK);
    if (got)
        return;
    b->registered = 0;
    if (b->alias) {
        Buf *a = &T->buf[b->alias - 1];
        disown(a->ptr);
        Stale s = {a->ptr, a->cap, a->id, K_ALIAS, 0, 0};
        if (T->n_stale < MAX_STALE)
            T->stale[T->n_stale++] = s;
        drop_buf(a);
        b->alias = 0;
    }
}

static void op_register(Thread *T)
{
    int r = (int)rnd(T, 100);
    int slot = pick_buf(T, 1 << K_MALLOC | 1 << K_STACK);
    if (slot < 0)
        return;
    Buf *b = &T->buf[slot];
    if (r < 40 && !b->registered) {
        int aslot = free_slot(T);
        if (aslot < 0)
            return;
        Plan plan = {.n = 0};
        plan_add(&plan, b, 0, b->cap, 1, 0, NULL); /* where its bytes are changes how copies of them run */
        settle(T, &plan);
        void *dev = NULL;
        long since = seq_now();
        note(T, "aclrtHostRegister(%c%d+0, %zu, MAPPED, &dev)", kind_letter[b->kind], b->id, b->size);
        int got = aclrtHostRegister(b->ptr, b->size, ACL_HOST_REGISTER_MAPPED, &dev);
        call_done(T, A_aclrtHostRegister, got, OK);
        if (got)
            return;
        b->registered = 1;
        Buf *a = new_buf(T, aslot, K_ALIAS, dev, b->size, b->size);
        free(a->shadow);
        a->shadow = b->shadow;
        a->storage = b->storage;
        a->host = slot;
        b->alias = aslot + 1;
        if (!own(T, dev, a->cap, since)) {
            /* another thread named the device address while it was free: leave both names unused */
            a->tainted = b->tainted = 1;
            T->tainted++;
        }
    } else if (r < 60 && b->registered) {
        unregister(T, slot);
    } else if (r < 70 && b->registered) {
        Buf *a = &T->buf[b->alias - 1];
        size_t off = rnd(T, b->cap);
        void *dev = NULL;
        note(T, "aclrtHostGetDevicePointer(%c%d+%zu, &dev, 0)", kind_letter[b->kind], b->id, off);
        int got = aclrtHostGetDevicePointer(b->ptr + off, &dev, 0);
        call_done(T, A_aclrtHostGetDevicePointer, got, OK);
        if (got == 0 && dev != (void *)(a->ptr + off)) {
            T->wrong_codes++;
            report(T, "FUZZ-WRONG-CODE", "%s: device address %p, expected %p", T->cur, dev, (void *)(a->ptr + off));
        }
    } else {
        int which = (int)rnd(T, 7);
        void *dev = NULL;
        int got;
        if (which == 0) {
            note(T, "aclrtHostRegister(NULL, 64, MAPPED, &dev)");
            got = aclrtHostRegister(NULL, 64, ACL_HOST_REGISTER_MAPPED, &dev);
            call_done(T, A_aclrtHostRegister, got, exact(E_PARAM));
        } else if (which == 1) {
            note(T, "aclrtHostRegister(%c%d+0, 0, MAPPED, &dev)", kind_letter[b->kind], b->id);
            got = aclrtHostRegister(b->ptr, 0, ACL_HOST_REGISTER_MAPPED, &dev);
            call_done(T, A_aclrtHostRegister, got, exact(E_PARAM));
        } else if (which == 2) {
            note(T, "aclrtHostRegister(%c%d+0, %zu, type 1, &dev)", kind_letter[b->kind], b->id, b->size);
            got = aclrtHostRegister(b->ptr, b->size, (aclrtHostRegisterType)1, &dev);
            call_done(T, A_aclrtHostRegister, got, exact(E_NOT_SUPPORT));
        } else if (which == 3 && b->registered) {
            size_t off = rnd(T, b->cap);
            note(T, "aclrtHostRegister(%c%d+%zu, 1, MAPPED, &dev) again", kind_letter[b->kind], b->id, off);
            got = aclrtHostRegister(b->ptr + off, 1, ACL_HOST_REGISTER_MAPPED, &dev);
            call_done(T, A_aclrtHostRegister, got, exact(E_REGISTERED));
        } else if (which == 4) {
            size_t off = b->registered ? 1 + rnd(T, b->cap) : 0;
            if (b->registered && off >= b->cap)
                return;
            note(T, "aclrtHostUnregister(%c%d+%zu) not a registered base", kind_letter[b->kind], b->id, off);
            got = aclrtHostUnregister(b->ptr + off);
            call_done(T, A_aclrtHostUnregister, got, exact(E_NOT_REGISTERED));
        } else if (which == 5) {
            note(T, "aclrtHostUnregister(NULL)");
            got = aclrtHostUnregister(NULL);
            call_done(T, A_aclrtHostUnregister, got, exact(E_PARAM));
        } else {
            int dslot = pick_buf(T, 1 << K_DEV);
            if (dslot < 0)
                return;
            Buf *d = &T->buf[dslot];
            note(T, "aclrtHostRegister(d%d+0, %zu, MAPPED, &dev)", d->id, d->size);
            got = aclrtHostRegister(d->ptr, d->size, ACL_HOST_REGISTER_MAPPED, &dev);
            call_done(T, A_aclrtHostRegister, got, exact(E_RT_PARAM)); /* HR10: device memory */
        }
        if (got == 0)
            rebaseline(T);
    }
}

static void op_attributes(Thread *T)
{
    int slot = pick_buf(T, 1 << K_DEV | 1 << K_PIN | 1 << K_MALLOC | 1 << K_STACK);
    if (slot < 0)
        return;
    Buf *b = &T->buf[slot];
    size_t off = rnd(T, b->cap);
    aclrtPtrAttributes at;
    memset(&at, 0xEE, sizeof at);
    if (chance(T, 5)) {
        note(T, "aclrtPointerGetAttributes(%c%d+%zu, NULL)", kind_letter[b->kind], b->id, off);
        int got = aclrtPointerGetAttributes(b->ptr + off, NULL);
        call_done(T, A_aclrtPointerGetAttributes, got, exact(E_PARAM));
        return;
    }
    note(T, "aclrtPointerGetAttributes(%c%d+%zu, &at)", kind_letter[b->kind], b->id, off);
    int got = aclrtPointerGetAttributes(b->ptr + off, &at);
    call_done(T, A_aclrtPointerGetAttributes, got, OK);
    /* memory_copies_fills.md, aclrtPointerGetAttributes row 5 */
    int want = b->kind == K_DEV ? ACL_MEM_LOCATION_TYPE_DEVICE :
               b->kind == K_PIN || b->registered ? ACL_MEM_LOCATION_TYPE_HOST : ACL_MEM_LOCATION_TYPE_UNREGISTERED;
    if (got == 0 && ((int)at.location.type != want || (want == ACL_MEM_LOCATION_TYPE_DEVICE && at.location.id != 0))) {
        T->wrong_codes++;
        report(T, "FUZZ-WRONG-CODE", "%s: location %d/%u, expected %d/0", T->cur, (int)at.location.type,
               at.location.id, want);
    }
}

/* ------------------------------------------------------------------------------ streams, events */
static int pending_on(Thread *T, aclrtStream s)
{
    for (int i = 0; i < T->n_pending; i++)
        if (T->pending[i].queued && T->pending[i].stream == s)
            return 1;
    return 0;
}

static void forget_stream_work(Thread *T, aclrtStream s)
{
    int k = 0;
    for (int i = 0; i < T->n_pending; i++)
        if (!(T->pending[i].queued && T->pending[i].stream == s))
            T->pending[k++] = T->pending[i];
    T->n_pending = k;
}

static void op_stream(Thread *T)
{
    int r = (int)rnd(T, 100);
    int free_st = -1, live[MAX_STREAMS], n = 0;
    for (int i = 0; i < MAX_STREAMS; i++) {
        if (T->st[i].live) live[n++] = i;
        else if (free_st < 0) free_st = i;
    }
    int got;
    if (r < 20 && free_st >= 0) {
        aclrtStream s = NULL;
        note(T, "aclrtCreateStream(&s%d)", free_st);
        got = aclrtCreateStream(&s);
        call_done(T, A_aclrtCreateStream, got, OK);
        if (got == 0) {
            T->st[free_st].h = s;
            T->st[free_st].live = 1;
            T->st[free_st].busy = 0;
        }
    } else if (r < 32 && n > 1) {
        int i = live[rnd(T, n)];
        int force = chance(T, 30) && !pending_on(T, T->st[i].h) && !T->st[i].busy;
        note(T, "%s(s%d)", force ? "aclrtDestroyStreamForce" : "aclrtDestroyStream", i);
        got = force ? aclrtDestroyStreamForce(T->st[i].h) : aclrtDestroyStream(T->st[i].h);
        call_done(T, force ? A_aclrtDestroyStreamForce : A_aclrtDestroyStream, got, OK);
        if (got == 0) {
            forget_stream_work(T, T->st[i].h); /* aclrtDestroyStream waits for its tasks */
            if (T->n_dead_streams < 4)
                T->dead_streams[T->n_dead_streams++] = T->st[i].h;
            else
                T->dead_streams[rnd(T, 4)] = T->st[i].h;
            T->st[i].live = 0;
        }
    } else if (r < 40) {
        int which = (int)rnd(T, 4);
        if (which == 0) {
            TRY(T, aclrtCreateStream, exact(E_PARAM), aclrtCreateStream(NULL), "aclrtCreateStream(NULL)");
        } else if (which == 1) {
            TRY(T, aclrtDestroyStream, exact(E_PARAM), aclrtDestroyStream(NULL), "aclrtDestroyStream(NULL)");
        } else if (T->n_dead_streams) {
            aclrtStream s = T->dead_streams[rnd(T, T->n_dead_streams)];
            TRY(T, aclrtDestroyStream, exact(E_HANDLE), aclrtDestroyStream(s), "aclrtDestroyStream(destroyed %p)", s);
        }
    } else if (r < 48) {
        /* devices_streams_events.md, streams: timeout < -1 (row 13, before the handle), the handle (row 14), 0
         * (row 15); a long timeout is a synchronize */
        StreamPick sp = pick_stream(T, 1);
        static const int32_t timeouts[] = {-1, -2, 0, 600000, -100};
        int32_t t = timeouts[rnd(T, 5)];
        Expect e = t < -1 ? exact(E_RT_PARAM) : !stream_ok(&sp) ? exact(E_HANDLE) : t == 0 ? exact(E_RT_PARAM) : OK;
        note(T, "aclrtSynchronizeStreamWithTimeout(%s, %d)", sp.name, (int)t);
        got = aclrtSynchronizeStreamWithTimeout(sp.h, t);
        call_done(T, A_aclrtSynchronizeStreamWithTimeout, got, e);
        if (got == 0 && e.code == 0) {
            forget_stream_work(T, sp.h);
            if (sp.what == S_LIVE)
                T->st[sp.slot].busy = 0;
        }
    } else if (r < 70) {
        StreamPick sp = pick_stream(T, 1);
        note(T, "aclrtSynchronizeStream(%s)", sp.name);
        got = aclrtSynchronizeStream(sp.h);
        call_done(T, A_aclrtSynchronizeStream, got, stream_ok(&sp) ? OK : exact(E_HANDLE));
        if (got == 0 && stream_ok(&sp)) {
            forget_stream_work(T, sp.h);
            if (sp.what == S_LIVE)
                T->st[sp.slot].busy = 0;
        }
    } else {
        StreamPick sp = pick_stream(T, 1);
        aclrtStreamStatus status = (aclrtStreamStatus)7;
        note(T, "aclrtStreamQuery(%s, &status)", sp.name);
        got = aclrtStreamQuery(sp.h, &status);
        call_done(T, A_aclrtStreamQuery, got, stream_ok(&sp) ? OK : exact(E_HANDLE));
        int idle = sp.what == S_LIVE && !T->st[sp.slot].busy;
        if (got == 0 && (status > 1 || (idle && status != ACL_STREAM_STATUS_COMPLETE))) {
            T->wrong_codes++;
            report(T, "FUZZ-WRONG-CODE", "%s: status %d, expected %s", T->cur, (int)status,
                   idle ? "COMPLETE (nothing queued since it was synchronized)" : "0 or 1");
        }
    }
}

static void op_event(Thread *T)
{
    int r = (int)rnd(T, 100);
    int free_ev = -1, live[MAX_EVENTS], n = 0;
    for (int i = 0; i < MAX_EVENTS; i++) {
        if (T->ev[i].live) live[n++] = i;
        else if (free_ev < 0) free_ev = i;
    }
    int got;
    if ((r < 12 || n == 0) && free_ev >= 0) {
        aclrtEvent e = NULL;
        note(T, "aclrtCreateEvent(&e%d)", free_ev);
        got = aclrtCreateEvent(&e);
        call_done(T, A_aclrtCreateEvent, got, OK);
        if (got == 0) {
            T->ev[free_ev].h = e;
            T->ev[free_ev].live = 1;
            T->ev[free_ev].state = 0;
        }
        return;
    }
    if (n == 0)
        return;
    int i = live[rnd(T, n)];
    EventSlot *ev = &T->ev[i];
    if (r < 20) {
        note(T, "aclrtDestroyEvent(e%d)", i);
        got = aclrtDestroyEvent(ev->h);
        call_done(T, A_aclrtDestroyEvent, got, OK);
        if (got == 0) {
            if (T->n_dead_events < 4)
                T->dead_events[T->n_dead_events++] = ev->h;
            else
                T->dead_events[rnd(T, 4)] = ev->h;
            ev->live = 0;
        }
    } else if (r < 45) {
        StreamPick sp = pick_stream(T, 1);
        note(T, "aclrtRecordEvent(e%d, %s)", i, sp.name);
        got = aclrtRecordEvent(ev->h, sp.h);
        call_done(T, A_aclrtRecordEvent, got, stream_ok(&sp) ? OK : exact(E_HANDLE));
        if (got == 0) {
            ev->state = 1;
            mark_busy(T, &sp);
        }
    } else if (r < 62) {
        StreamPick sp = pick_stream(T, 1);
        note(T, "aclrtStreamWaitEvent(%s, e%d)", sp.name, i);
        got = aclrtStreamWaitEvent(sp.h, ev->h);
        call_done(T, A_aclrtStreamWaitEvent, got, stream_ok(&sp) ? OK : exact(E_HANDLE));
        if (got == 0 && ev->state == 1)
            mark_busy(T, &sp);
    } else if (r < 72) {
        note(T, "aclrtSynchronizeEvent(e%d)", i);
        got = aclrtSynchronizeEvent(ev->h);
        call_done(T, A_aclrtSynchronizeEvent, got, OK);
        if (got == 0 && ev->state == 1)
            ev->state = 2;
    } else if (r < 84) {
        aclrtEventRecordedStatus status = (aclrtEventRecordedStatus)7;
        note(T, "aclrtQueryEventStatus(e%d, &status)", i);
        got = aclrtQueryEventStatus(ev->h, &status);
        call_done(T, A_aclrtQueryEventStatus, got, OK);
        /* devices_streams_events.md, events row 41a: never recorded is NOT_READY for an aclrtCreateEvent event */
        int bad = got == 0 && ((int)status > 1 ||
                               (ev->state == 0 && status != ACL_EVENT_RECORDED_STATUS_NOT_READY) ||
                               (ev->state == 2 && status != ACL_EVENT_RECORDED_STATUS_COMPLETE));
        if (bad) {
            T->wrong_codes++;
            report(T, "FUZZ-WRONG-CODE", "%s: status %d with the event %s", T->cur, (int)status,
                   ev->state == 0 ? "never recorded" : ev->state == 1 ? "recorded" : "recorded and synchronized");
        }
    } else if (r < 90) {
        StreamPick sp = pick_stream(T, 1);
        note(T, "aclrtResetEvent(e%d, %s)", i, sp.name);
        got = aclrtResetEvent(ev->h, sp.h);
        call_done(T, A_aclrtResetEvent, got, stream_ok(&sp) ? OK : exact(E_HANDLE));
        if (got == 0)
            ev->state = 0;
    } else {
        int which = (int)rnd(T, 8);
        aclrtEvent dead = T->n_dead_events ? T->dead_events[rnd(T, T->n_dead_events)] : NULL;
        StreamPick sp = pick_stream(T, 0);
        /* devices_streams_events.md, events rows 1, 8, 9, 10, 18, 37, 40 */
        switch (which) {
        case 0:
            TRY(T, aclrtCreateEvent, exact(E_PARAM), aclrtCreateEvent(NULL), "aclrtCreateEvent(NULL)");
            break;
        case 1:
            TRY(T, aclrtRecordEvent, exact(E_PARAM), aclrtRecordEvent(NULL, sp.h), "aclrtRecordEvent(NULL, %s)",
                sp.name);
            break;
        case 2:
            TRY(T, aclrtStreamWaitEvent, exact(E_PARAM), aclrtStreamWaitEvent(sp.h, NULL),
                "aclrtStreamWaitEvent(%s, NULL)", sp.name);
            break;
        case 3:
            TRY(T, aclrtSynchronizeEvent, exact(E_PARAM), aclrtSynchronizeEvent(NULL), "aclrtSynchronizeEvent(NULL)");
            break;
        case 4:
            TRY(T, aclrtDestroyEvent, exact(E_PARAM), aclrtDestroyEvent(NULL), "aclrtDestroyEvent(NULL)");
            break;
        case 5:
            TRY(T, aclrtQueryEventStatus, exact(E_PARAM), aclrtQueryEventStatus(ev->h, NULL),
                "aclrtQueryEventStatus(e%d, NULL)", i);
            break;
        default:
            if (!dead)
                break;
            if (which == 6)
                TRY(T, aclrtRecordEvent, exact(E_HANDLE), aclrtRecordEvent(dead, sp.h),
                    "aclrtRecordEvent(destroyed %p, %s)", dead, sp.name);
            else
                TRY(T, aclrtDestroyEvent, exact(E_HANDLE), aclrtDestroyEvent(dead), "aclrtDestroyEvent(destroyed %p)",
                    dead);
        }
    }
}

static void op_host_write(Thread *T)
{
    int slot = pick_buf(T, 1 << K_PIN | 1 << K_MALLOC | 1 << K_STACK);
    if (slot < 0)
        return;
    Buf *b = &T->buf[slot];
    size_t off = rnd(T, b->cap), n = 1 + rnd(T, b->cap - off);
    host_write(T, b, off, n, chance(T, 50));
}

static void op_context(Thread *T)
{
    int got;
    if (chance(T, 20)) {
        note(T, "aclrtSetCurrentContext(NULL)");
        got = aclrtSetCurrentContext(NULL);
        call_done(T, A_aclrtSetCurrentContext, got, exact(E_PARAM));
    } else {
        note(T, "aclrtSetCurrentContext(ctx)");
        got = aclrtSetCurrentContext(g_ctx);
        call_done(T, A_aclrtSetCurrentContext, got, OK);
    }
}

/* ---------------------------------------------------------------------------------- the thread */
static void setup(Thread *T, unsigned char *stack)
{
    note(T, "aclrtSetCurrentContext(ctx)");
    call_done(T, A_aclrtSetCurrentContext, aclrtSetCurrentContext(g_ctx), OK);
    T->scratch = malloc(MAX_CAP);
    for (int i = 0; i < 2; i++) {
        aclrtStream s = NULL;
        note(T, "aclrtCreateStream(&s%d)", i);
        int got = aclrtCreateStream(&s);
        call_done(T, A_aclrtCreateStream, got, OK);
        T->st[i].h = s;
        T->st[i].live = got == 0;
        aclrtEvent e = NULL;
        note(T, "aclrtCreateEvent(&e%d)", i);
        got = aclrtCreateEvent(&e);
        call_done(T, A_aclrtCreateEvent, got, OK);
        T->ev[i].h = e;
        T->ev[i].live = got == 0;
    }
    /* named buffers with guards between them */
    T->stack = stack;
    memset(stack, GUARD_BYTE, STACK_BYTES + 2 * PAD);
    Buf *k = new_buf(T, 0, K_STACK, stack + PAD, STACK_BYTES, STACK_BYTES);
    fill_random(T, k->ptr, STACK_BYTES);
    memcpy(k->shadow, k->ptr, STACK_BYTES);
    for (int g = 0; g < 2; g++) {
        int slot = free_slot(T);
        size_t size = 4096;
        void *p = NULL;
        long since = seq_now();
        note(T, "aclrtMalloc(&p, %zu, 0)", size);
        int got = aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST);
        call_done(T, A_aclrtMalloc, got, OK);
        if (got == 0) {
            Buf *b = new_buf(T, slot, K_DEV, p, size, round32(size) + g_padding);
            if (!own(T, p, b->cap, since)) {
                b->tainted = 1;
                T->tainted++;
            } else {
                note(T, "aclrtMemset(d%d+0, %zu, 0x11, %zu)", b->id, b->cap, b->cap);
                call_done(T, A_aclrtMemset, aclrtMemset(p, b->cap, 0x11, b->cap), OK);
                memset(b->shadow, 0x11, b->cap);
            }
        }
        note(T, "aclrtMalloc(&guard%d, 4096, 0)", g);
        got = aclrtMalloc(&T->dev_guard[g], 4096, ACL_MEM_MALLOC_HUGE_FIRST);
        call_done(T, A_aclrtMalloc, got, OK);
        T->dev_guard_ok[g] = got == 0 && own(T, T->dev_guard[g], 4096 + g_padding, since);
        note(T, "aclrtMemset(guard%d, 4096, 0x%x, 4096)", g, DEV_GUARD_BYTE);
        call_done(T, A_aclrtMemset, aclrtMemset(T->dev_guard[g], 4096, DEV_GUARD_BYTE, 4096), OK);
    }
    void *p = NULL;
    note(T, "aclrtMallocHost(&p, 4096)");
    int got = aclrtMallocHost(&p, 4096);
    call_done(T, A_aclrtMallocHost, got, OK);
    if (got == 0) {
        Buf *b = new_buf(T, free_slot(T), K_PIN, p, 4096, 4096);
        fill_random(T, b->ptr, 4096);
        memcpy(b->shadow, b->ptr, 4096);
    }
    note(T, "aclrtMallocHost(&pin_guard, 4096)");
    call_done(T, A_aclrtMallocHost, aclrtMallocHost(&T->pin_guard, 4096), OK);
    memset(T->pin_guard, PIN_GUARD_BYTE, 4096);
    unsigned char *raw = malloc(4096 + 2 * PAD);
    memset(raw, GUARD_BYTE, 4096 + 2 * PAD);
    Buf *m = new_buf(T, free_slot(T), K_MALLOC, raw + PAD, 4096, 4096);
    m->raw = raw;
    fill_random(T, m->ptr, 4096);
    memcpy(m->shadow, m->ptr, 4096);
}

static void teardown(Thread *T)
{
    drain(T);
    for (int i = 0; i < MAX_BUFS; i++) {
        Buf *b = &T->buf[i];
        if (!b->live || b->kind == K_ALIAS || b->tainted)
            continue;
        release(T, i, 0);
    }
    for (int i = 0; i < MAX_BUFS; i++) { /* what another thread's claim made unusable: given back now */
        Buf *b = &T->buf[i];
        if (!b->live || b->kind == K_ALIAS)
            continue;
        if (b->registered)
            aclrtHostUnregister(b->ptr);
        if (b->kind == K_DEV)
            aclrtFree(b->ptr);
        else if (b->kind == K_PIN)
            aclrtFreeHost(b->ptr);
        else if (b->kind == K_MALLOC)
            free(b->raw);
        if (b->kind == K_DEV)
            disown(b->ptr);
        drop_buf(b);
    }
    for (int i = 0; i < MAX_BUFS; i++)
        if (T->buf[i].live)
            drop_buf(&T->buf[i]);
    for (int g = 0; g < 2; g++) {
        if (T->dev_guard_ok[g]) {
            note(T, "aclrtFree(guard%d)", g);
            call_done(T, A_aclrtFree, aclrtFree(T->dev_guard[g]), OK);
        } else {
            aclrtFree(T->dev_guard[g]); /* another thread named it while it was free: it may have freed it */
        }
        disown(T->dev_guard[g]);
    }
    note(T, "aclrtFreeHost(pin_guard)");
    call_done(T, A_aclrtFreeHost, aclrtFreeHost(T->pin_guard), OK);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (T->st[i].live) {
            note(T, "aclrtDestroyStream(s%d)", i);
            call_done(T, A_aclrtDestroyStream, aclrtDestroyStream(T->st[i].h), OK);
        }
    for (int i = 0; i < MAX_EVENTS; i++)
        if (T->ev[i].live) {
            note(T, "aclrtDestroyEvent(e%d)", i);
            call_done(T, A_aclrtDestroyEvent, aclrtDestroyEvent(T->ev[i].h), OK);
        }
    free(T->scratch);
}

static void *worker(void *arg)
{
    Thread *T = arg;
    unsigned char stack[STACK_BYTES + 2 * PAD];
    setup(T, stack);
    for (T->op = 0; T->op < g_ops; T->op++) {
        int w = (int)rnd(T, 1000);
#if defined(FUZZ_MUTATE) && FUZZ_MUTATE == 2
        if (T->index == 0 && T->op == 5) { /* the oracle must notice a wrong code */
            note(T, "aclrtMemcpy(NULL, 1, NULL, 1, H2H), told to expect 0");
            call_done(T, A_aclrtMemcpy, aclrtMemcpy(NULL, 1, NULL, 1, ACL_MEMCPY_HOST_TO_HOST), OK);
            continue;
        }
#endif
        if (w < 100) op_memcpy(T, 0);
        else if (w < 230) op_memcpy(T, 1);
        else if (w < 270) op_memcpy2d(T, 0);
        else if (w < 320) op_memcpy2d(T, 1);
        else if (w < 360) op_memset(T, 0, 0);
        else if (w < 410) op_memset(T, 1, 0);
        else if (w < 435) op_memset(T, 0, 1);
        else if (w < 460) op_memset(T, 1, 1);
        else if (w < 490) op_batch(T);
        else if (w < 545) op_alloc(T);
        else if (w < 600) op_free(T);
        else if (w < 630) op_register(T);
        else if (w < 645) op_attributes(T);
        else if (w < 700) op_stream(T);
        else if (w < 780) op_event(T);
        else if (w < 805) drain(T);
        else if (w < 850) op_host_write(T);
        else if (w < 860) op_context(T);
        else op_memcpy(T, (int)rnd(T, 2));
    }
    teardown(T);
    return NULL;
}

/* -------------------------------------------------------------------------- setup and the end */
static int start_code;

static void *start(void *arg)
{
    (void)arg;
    start_code = aclInit(NULL);
    if (!start_code) start_code = aclrtSetDevice(0);
    if (!start_code) start_code = aclrtGetCurrentContext(&g_ctx);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s SEED THREADS OPS [PADDING] [--trace] [--no-stale]\n", argv[0]);
        return 2;
    }
    g_seed = strtoull(argv[1], NULL, 0);
    g_threads = atoi(argv[2]);
    g_ops = atol(argv[3]);
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--trace")) g_trace = 1;
        else if (!strcmp(argv[i], "--no-stale")) g_no_stale = 1;
        else g_padding = strtoull(argv[i], NULL, 0);
    }
    if (g_threads < 1 || g_threads > MAX_THREADS) {
        fprintf(stderr, "THREADS must be 1..%d\n", MAX_THREADS);
        return 2;
    }
    /* The setup runs on a thread that then ends, so that no thread that stopped calling the runtime holds the
     * others' simulated time back ("calls" host-time mode). */
    pthread_t t0;
    pthread_create(&t0, NULL, start, NULL);
    pthread_join(t0, NULL);
    if (start_code) {
        fprintf(stderr, "setup failed: %d\n", start_code);
        return 2;
    }
    pthread_t t[MAX_THREADS];
    for (int i = 0; i < g_threads; i++) {
        threads[i].index = i;
        uint64_t x = g_seed * 0x100000001B3ull + (uint64_t)i;
        threads[i].rng = splitmix(&x);
        pthread_create(&t[i], NULL, worker, &threads[i]);
    }
    for (int i = 0; i < g_threads; i++)
        pthread_join(t[i], NULL);

    /* freed-device calls that did not get their code: wrong unless another thread's allocation took the range */
    long stale_reused = 0, stale_wrong = 0;
    for (long i = 0; i < n_suspects; i++) {
        Suspect *s = &suspects[i];
        if (claims[s->claim].reused) {
            stale_reused++;
            continue;
        }
        stale_wrong++;
        if (reported++ < FIRST_FAILS)
            fprintf(stderr, "FUZZ-WRONG-CODE seed %llu thread %d: %s: expected %s%d, got %d (a freed device range no "
                    "other thread held)\n", (unsigned long long)g_seed, s->thread, s->what,
                    s->expected < 0 ? "nonzero " : "", s->expected < 0 ? 0 : s->expected, s->got);
    }
    suspects_judged = n_suspects;

    long calls = 0, checks = 0, check_calls = 0, wrong = stale_wrong, mism = 0, guards = 0, skipped = 0, used = 0,
         writes = 0, drains = 0, tainted = 0, forced = 0, queued = 0, in_order = 0, again = 0;
    long by[N_APIS] = {0}, ok[N_APIS] = {0};
    for (int i = 0; i < g_threads; i++) {
        Thread *T = &threads[i];
        calls += T->calls;
        checks += T->checks;
        check_calls += T->check_calls;
        wrong += T->wrong_codes;
        mism += T->mismatches;
        guards += T->guard_changes;
        skipped += T->stale_skipped;
        used += T->stale_used;
        writes += T->host_writes;
        drains += T->drains;
        tainted += T->tainted;
        forced += T->forced_drains;
        queued += T->queued_ok;
        in_order += T->in_order;
        again += T->batches_again;
        for (int a = 0; a < N_APIS; a++) {
            by[a] += T->by_api[a];
            ok[a] += T->ok_by_api[a];
        }
    }
    printf("{\"seed\": %llu, \"threads\": %d, \"ops_per_thread\": %ld, \"calls\": %ld, \"check_calls\": %ld, "
           "\"checks\": %ld, \"drains\": %ld, \"host_writes\": %ld, \"freed_pointers_named\": %ld, "
           "\"freed_pointers_skipped\": %ld, \"freed_ranges_reused\": %ld, \"allocations_left_unused\": %ld, "
           "\"queued_calls\": %ld, \"queued_in_order\": %ld, \"forced_drains\": %ld, "
           "\"batches_again\": %ld, \"wrong_codes\": %ld, \"mismatches\": %ld, \"guard_changes\": %ld, \"by_call\": {",
           (unsigned long long)g_seed, g_threads, g_ops, calls, check_calls, checks, drains, writes, used, skipped,
           stale_reused, tainted, queued, in_order, forced, again, wrong, mism,
           guards);
    for (int a = 0; a < N_APIS; a++)
        printf("%s\"%s\": [%ld, %ld]", a ? ", " : "", api_names[a], by[a], ok[a]);
    printf("}}\n");
    fflush(stdout);
    return wrong || mism || guards ? 1 : 0;
}
