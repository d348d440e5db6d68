/* The block runner: one kernel launch's blocks run on the CPU (emu/device/launch.py calls acl_emu_run).
 *
 * Blocks run one after another, in the order of their index, on the calling thread; each on a stack of its own
 * (ucontext), so that SyncAll can stop a block until every block of the launch has reached it and then let them
 * go on, in order. A block that faults (SIGSEGV, SIGBUS: a pointer outside device memory; SIGFPE, SIGILL), traps
 * (trap(), asm("trap")) or fails (kernel_operator.h: the Unified Buffer overrun, an instruction's bad argument)
 * ends the launch there: the runner returns what happened, which block, and where, and the process goes on.
 * The launch's printf output is gathered (each call prefixed "[AIV Block i/n] ", as the device prints it) for
 * acl_emu_write after the kernel. Counts of what the blocks did and the CPU time the blocks themselves ran tell
 * the launch's time (models/aicore.py). When asked (the sanitizer), the byte ranges the blocks read and wrote in
 * a window of global memory are kept (`touch`), merged, for the sanitizer.
 *
 * No Python here: the library is loaded by ctypes, which calls acl_emu_run without the GIL. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "acl_emu_block.h"

#define EXPORT __attribute__((visibility("default")))
#define STACK_BYTES (1u << 20) /* a block's stack, below it a guard page */
#define ALT_STACK_BYTES (64u << 10)

enum { OK = 0, FAULT = 1, TRAP = 2, FAILED = 3 };
enum { READY, WAITING, DONE };

typedef struct {
    int status;               /* OK, FAULT, TRAP or FAILED */
    uint32_t block;           /* the block that ended the launch */
    int signal;               /* FAULT: the signal */
    uint64_t address;         /* FAULT: the address it names */
    char message[512];        /* TRAP, FAILED: what */
    char *output;             /* printf's text (acl_emu_free) */
    size_t output_len;
    uint64_t gm_to_ub, ub_to_gm, vector_bytes, vector_calls;
    uint64_t cpu_ns;          /* the thread's CPU time in the blocks */
    struct Span *spans;       /* the ranges of global memory the blocks touched (acl_emu_free), sorted */
    size_t n_spans;
    int coarse;               /* 1: ranges were joined across gaps to keep their number bounded */
} acl_emu_result;

/* Bytes [lo, hi) of global memory that block `block` read (write 0) or wrote (1). */
typedef struct Span {
    uint64_t lo, hi;
    uint32_t block, write;
} Span;

typedef struct {
    acl_emu_block block;
    ucontext_t context;
    void *stack;              /* mmap'd: guard page, then STACK_BYTES */
    int state;
} Block;

typedef struct Run {
    acl_emu_entry entry;
    void *const *args;
    Block *blocks;
    uint32_t n;
    uint32_t current;         /* the block running */
    ucontext_t scheduler;
    sigjmp_buf escape;        /* back to the scheduler when a block faults, traps or fails */
    volatile int in_block;
    acl_emu_result *out;
    size_t output_cap;
    void *spare_stack;        /* a finished block's stack, for the next */
    unsigned char *spare_ub;  /* ... and its Unified Buffer */
    uint64_t ub_size;
    size_t spans_cap;         /* out->spans' room */
} Run;

static __thread Run *running;
static __thread void *alt_stack;
static __thread void *kept_stack;  /* a block's stack kept from one launch to the next on this thread */

/* -- signals -------------------------------------------------------------------------------------------------- */

static const int caught[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP};
#define N_CAUGHT (sizeof caught / sizeof *caught)
static struct sigaction previous[N_CAUGHT];
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

static void on_fault(int sig, siginfo_t *info, void *uctx) {
    Run *run = running;
    if (run != NULL && run->in_block) {
        run->in_block = 0;
        run->out->status = FAULT;
        run->out->signal = sig;
        run->out->address = (uint64_t)(uintptr_t)info->si_addr;
        siglongjmp(run->escape, 1);
    }
    for (size_t i = 0; i < N_CAUGHT; i++) {  /* not a block's: as if this handler were not there */
        if (caught[i] != sig)
            continue;
        if (previous[i].sa_flags & SA_SIGINFO) {
            previous[i].sa_sigaction(sig, info, uctx);
        } else if (previous[i].sa_handler != SIG_IGN && previous[i].sa_handler != SIG_DFL) {
            previous[i].sa_handler(sig);
        } else {
            sigaction(sig, &previous[i], NULL);  /* the fault happens again on return, and does what it did */
        }
        return;
    }
}

static void install_handlers(void) {
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_fault;
    act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    for (size_t i = 0; i < N_CAUGHT; i++)
        sigaction(caught[i], &act, &previous[i]);
}

/* A stack to handle a fault on: a block's own stack may be what overflowed. */
static int ensure_alt_stack(void) {
    if (alt_stack != NULL)
        return 0;
    alt_stack = mmap(NULL, ALT_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (alt_stack == MAP_FAILED) {
        alt_stack = NULL;
        return -1;
    }
    stack_t ss = {.ss_sp = alt_stack, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
    return sigaltstack(&ss, NULL);
}

/* -- what a block calls (acl_emu_block's functions) ----------------------------------------------------------- */

static void end_block(Run *run, int status, const char *what) {
    run->in_block = 0;
    run->out->status = status;
    snprintf(run->out->message, sizeof run->out->message, "%s", what);
    siglongjmp(run->escape, 1);
}

static void block_trap(acl_emu_block *self, const char *what) {
    end_block((Run *)self->runner, TRAP, what ? what : "trap");
}

static void block_fail(acl_emu_block *self, const char *message) {
    end_block((Run *)self->runner, FAILED, message);
}

static void block_sync_all(acl_emu_block *self) {
    Run *run = (Run *)self->runner;
    Block *b = &run->blocks[self->index];
    b->state = WAITING;
    swapcontext(&b->context, &run->scheduler);
}

static void block_print(acl_emu_block *self, const char *text, size_t n) {
    Run *run = (Run *)self->runner;
    acl_emu_result *out = run->out;
    char prefix[64];
    int p = snprintf(prefix, sizeof prefix, "[AIV Block %u/%u] ", self->index, self->count);
    size_t need = out->output_len + (size_t)p + n + 1;
    if (need > run->output_cap) {
        size_t cap = run->output_cap ? run->output_cap : 4096;
        while (cap < need)
            cap *= 2;
        char *grown = realloc(out->output, cap);
        if (grown == NULL)
            return;  /* (the line is lost, the kernel goes on) */
        out->output = grown;
        run->output_cap = cap;
    }
    memcpy(out->output + out->output_len, prefix, (size_t)p);
    memcpy(out->output + out->output_len + p, text, n);
    out->output_len += (size_t)p + n;
    out->output[out->output_len] = '\0';
}

/* -- the ranges touched (acl_emu_block.touch) ----------------------------------------------------------------- */

#define SPANS_FIRST 1024
#define SPANS_MOST (1u << 20)  /* past this, ranges are joined across the smallest gaps (out->coarse) */

static int by_block_mode_lo(const void *a, const void *b) {
    const Span *x = a, *y = b;
    if (x->block != y->block) return x->block < y->block ? -1 : 1;
    if (x->write != y->write) return x->write < y->write ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sort the spans and join those of one block and mode that overlap or are closer than `gap` bytes. */
static void merge_spans(acl_emu_result *out, uint64_t gap) {
    Span *s = out->spans;
    size_t n = out->n_spans, k = 0;
    if (n == 0)
        return;
    qsort(s, n, sizeof *s, by_block_mode_lo);
    for (size_t i = 1; i < n; i++) {
        Span *last = &s[k];
        if (s[i].block == last->block && s[i].write == last->write && s[i].lo <= last->hi + gap) {
            if (s[i].hi > last->hi)
                last->hi = s[i].hi;
        } else {
            s[++k] = s[i];
        }
    }
    out->n_spans = k + 1;
}

/* Room for one more span: merged first; if that frees too little, more room; at SPANS_MOST, joined across
 * growing gaps. 0 when there is no memory (the span is then joined to the last one). */
static int make_room(Run *run) {
    acl_emu_result *out = run->out;
    if (out->n_spans < run->spans_cap)
        return 1;
    merge_spans(out, 0);
    for (uint64_t gap = 64; out->n_spans > run->spans_cap / 2 && run->spans_cap >= SPANS_MOST; gap *= 4) {
        merge_spans(out, gap);
        out->coarse = 1;
    }
    if (run->spans_cap > 0 && out->n_spans <= run->spans_cap / 2)
        return 1;
    size_t cap = run->spans_cap ? run->spans_cap * 2 : SPANS_FIRST;
    Span *grown = realloc(out->spans, cap * sizeof *grown);
    if (grown == NULL)
        return out->n_spans < run->spans_cap;
    out->spans = grown;
    run->spans_cap = cap;
    return 1;
}

static void block_touch(uint64_t address, uint64_t bytes, int write) {
    Run *run = running;
    if (run == NULL || !run->in_block || bytes == 0)
        return;
    acl_emu_result *out = run->out;
    uint32_t block = run->current;
    uint64_t hi = address + bytes;
    /* a run of accesses (x[i] += 1: a load, a store, the next load...) grows the last span of its mode */
    for (size_t back = 1; back <= 2 && back <= out->n_spans; back++) {
        Span *s = &out->spans[out->n_spans - back];
        if (s->block == block && s->write == (uint32_t)write && address <= s->hi && hi >= s->lo) {
            if (address < s->lo) s->lo = address;
            if (hi > s->hi) s->hi = hi;
            return;
        }
    }
    if (!make_room(run)) {
        if (out->n_spans == 0)
            return;
        Span *s = &out->spans[out->n_spans - 1];  /* no memory: a coarser range than the truth, never less */
        if (address < s->lo) s->lo = address;
        if (hi > s->hi) s->hi = hi;
        out->coarse = 1;
        return;
    }
    out->spans[out->n_spans++] = (Span){address, hi, block, (uint32_t)write};
}

/* -- blocks --------------------------------------------------------------------------------------------------- */

static void *new_stack(Run *run) {
    if (run->spare_stack != NULL) {
        void *s = run->spare_stack;
        run->spare_stack = NULL;
        return s;
    }
    if (kept_stack != NULL) {
        void *s = kept_stack;
        kept_stack = NULL;
        return s;
    }
    long page = sysconf(_SC_PAGESIZE);
    void *s = mmap(NULL, STACK_BYTES + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (s == MAP_FAILED)
        return NULL;
    mprotect(s, page, PROT_NONE);  /* the guard: an overflow faults */
    return s;
}

static void drop_stack(Run *run, void *s) {
    if (s == NULL)
        return;
    if (run->spare_stack == NULL) {
        run->spare_stack = s;
        return;
    }
    munmap(s, STACK_BYTES + sysconf(_SC_PAGESIZE));
}

static void block_main(unsigned int hi, unsigned int lo) {
    Run *run = (Run *)(((uintptr_t)hi << 32) | (uintptr_t)lo);
    Block *b = &run->blocks[run->current];
    run->entry(run->args, &b->block);
    b->state = DONE;
    /* returns to uc_link: the scheduler */
}

static uint64_t thread_cpu_ns(void);

/* Run (or go on with) block i until it ends or waits at SyncAll; nonzero when it ended the launch. The CPU time
 * the block itself runs is counted (not the runner's own work around it). */
static int step(Run *run, uint32_t i) {
    Block *b = &run->blocks[i];
    run->current = i;
    if (b->stack == NULL) {
        b->stack = new_stack(run);
        if (b->stack == NULL) {
            run->out->status = FAILED;
            run->out->block = i;
            snprintf(run->out->message, sizeof run->out->message, "no memory for block %u's stack", i);
            return 1;
        }
        b->block.ub = run->spare_ub != NULL ? run->spare_ub : malloc(run->ub_size ? run->ub_size : 1);
        run->spare_ub = NULL;
        if (b->block.ub == NULL) {
            drop_stack(run, b->stack);
            b->stack = NULL;
            run->out->status = FAILED;
            run->out->block = i;
            snprintf(run->out->message, sizeof run->out->message, "no memory for block %u's Unified Buffer", i);
            return 1;
        }
        getcontext(&b->context);
        b->context.uc_stack.ss_sp = (char *)b->stack + sysconf(_SC_PAGESIZE);
        b->context.uc_stack.ss_size = STACK_BYTES;
        b->context.uc_link = &run->scheduler;
        uintptr_t p = (uintptr_t)run;
        makecontext(&b->context, (void (*)(void))block_main, 2, (unsigned int)(p >> 32), (unsigned int)p);
    }
    b->state = READY;
    if (sigsetjmp(run->escape, 1) != 0) {
        run->out->block = i;
        return 1;
    }
    run->in_block = 1;
    uint64_t t0 = thread_cpu_ns();
    swapcontext(&run->scheduler, &b->context);
    run->out->cpu_ns += thread_cpu_ns() - t0;
    run->in_block = 0;
    if (b->state == DONE) {
        drop_stack(run, b->stack);
        b->stack = NULL;
        if (run->spare_ub == NULL)
            run->spare_ub = b->block.ub;
        else
            free(b->block.ub);
        b->block.ub = NULL;
    }
    return 0;
}

static int schedule(Run *run) {
    for (;;) {
        int waiting = 0, done = 0;
        for (uint32_t i = 0; i < run->n; i++) {
            if (run->blocks[i].state == READY && step(run, i))
                return 1;
            waiting += run->blocks[i].state == WAITING;
            done += run->blocks[i].state == DONE;
        }
        if (waiting == 0)
            return 0;
        if (done > 0) {  /* SyncAll waits for every block: one ended without it */
            uint32_t w = 0, d = 0;
            while (run->blocks[w].state != WAITING) w++;
            while (run->blocks[d].state != DONE) d++;
            run->out->status = FAILED;
            run->out->block = w;
            snprintf(run->out->message, sizeof run->out->message,
                     "SyncAll: block %u waits for every block of the launch, but block %u ended without reaching "
                     "it (on the device the launch would never end)", w, d);
            return 1;
        }
        for (uint32_t i = 0; i < run->n; i++)
            run->blocks[i].state = READY;
    }
}

/* -- counters ------------------------------------------------------------------------------------------------- */

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* -- the entry points ----------------------------------------------------------------------------------------- */

EXPORT uint32_t acl_emu_block_abi(void) { return ACL_EMU_BLOCK_ABI; }

/* Run `blocks` blocks of `entry` on `args`, each with a Unified Buffer of `ub_size` bytes; what happened in *out
 * (its output and spans to be given back with acl_emu_free). With gm_span, the ranges of [gm_lo, gm_lo + gm_span)
 * the blocks touched are kept in out->spans, sorted by block, mode and address. 0 when every block ended, else
 * out->status. */
EXPORT int acl_emu_run(acl_emu_entry entry, uint32_t blocks, void *const *args, uint64_t ub_size,
                       uint32_t npu_arch, uint64_t gm_lo, uint64_t gm_span, acl_emu_result *out) {
    memset(out, 0, sizeof *out);
    pthread_once(&handlers_once, install_handlers);
    if (ensure_alt_stack() != 0) {
        out->status = FAILED;
        snprintf(out->message, sizeof out->message, "no signal stack: %s", strerror(errno));
        return out->status;
    }
    Run run;
    memset(&run, 0, sizeof run);
    run.entry = entry;
    run.args = args;
    run.n = blocks;
    run.out = out;
    run.ub_size = ub_size;
    run.blocks = calloc(blocks ? blocks : 1, sizeof(Block));
    if (run.blocks == NULL) {
        out->status = FAILED;
        snprintf(out->message, sizeof out->message, "no memory for %u blocks' state", blocks);
        return out->status;
    }
    for (uint32_t i = 0; i < blocks; i++) {
        acl_emu_block *b = &run.blocks[i].block;
        b->abi = ACL_EMU_BLOCK_ABI;
        b->index = i;
        b->count = blocks;
        b->npu_arch = npu_arch;
        b->ub_size = ub_size;  /* (b->ub: given when the block starts, kept while it waits at SyncAll) */
        b->trap = block_trap;
        b->fail = block_fail;
        b->sync_all = block_sync_all;
        b->print = block_print;
        b->runner = &run;
        if (gm_span) {
            b->gm_lo = gm_lo;
            b->gm_span = gm_span;
            b->touch = block_touch;
        }
        run.blocks[i].state = READY;
    }
    running = &run;
    schedule(&run);
    running = NULL;
    merge_spans(out, 0);
    for (uint32_t i = 0; i < blocks; i++) {
        acl_emu_block *b = &run.blocks[i].block;
        out->gm_to_ub += b->gm_to_ub;
        out->ub_to_gm += b->ub_to_gm;
        out->vector_bytes += b->vector_bytes;
        out->vector_calls += b->vector_calls;
        if (run.blocks[i].stack != NULL)
            munmap(run.blocks[i].stack, STACK_BYTES + sysconf(_SC_PAGESIZE));
        free(b->ub);
    }
    if (run.spare_stack != NULL && kept_stack == NULL)
        kept_stack = run.spare_stack;
    else if (run.spare_stack != NULL)
        munmap(run.spare_stack, STACK_BYTES + sysconf(_SC_PAGESIZE));
    free(run.spare_ub);
    free(run.blocks);
    return out->status;
}

EXPORT void acl_emu_free(void *p) { free(p); }

/* The launch's printf output, after what the program itself printed (C's stdout is the program's). */
EXPORT void acl_emu_write(const char *text, size_t n) {
    fflush(stdout);
    fwrite(text, 1, n, stdout);
    fflush(stdout);
}
