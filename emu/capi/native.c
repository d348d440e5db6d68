/* libascendcl.so of acl-emu: the C ACL API of a program, answered by the emulator's runtime in Python.
 *
 * The program links this library in place of CANN's. Its first ACL call starts a Python interpreter inside
 * the program (or joins the one already there, when the program is Python), imports emu.capi.bridge and
 * asks it for one handler per exported function (in the order of EMU_NAMES). Each exported function,
 * written by emu/capi/build.py from the headers' prototypes, packs its arguments (pointers and integers as
 * Python ints, floats as floats) and calls its handler; the handler's int is the function's result.
 *
 * Threads: a thread's first call gives it a Python thread state that lives until the thread ends, so its
 * thread-local state (the current context) persists between calls, as the API requires.
 *
 * Its folder in the cache is in use while programs load it: each process touches the folder's stamp once, at
 * its first call, so a build of another acl-emu sharing the cache does not remove it (emu/capi/build.py, prune).
 *
 * fork(): the child gets a working runtime (emu/runtime/core.py says why). The library's fork handlers
 * (pthread_atfork, registered when it loads) wait for the first call's start-up to end, take the GIL and run
 * Python's own fork preparation (PyOS_BeforeFork: the runtime's locks among its hooks), and in the child
 * PyOS_AfterFork_Child, which leaves the forking thread as Python's only one. A fork Python makes itself
 * (os.fork, with the GIL held) is left to Python.
 *
 * Signals: the program's signal actions are what they were before its first ACL call (the interpreter starts
 * without handlers of its own, and the SIGINT handler that importing Python's `signal` module installs is
 * undone), but for two kinds, each only where the program left the default action:
 * - SIGSEGV and SIGBUS while a thread is inside an ACL call (the emulator reading or writing a host pointer the
 *   program gave it): one line naming the call and the address first, then the program's own action (by
 *   default it dies of the signal, as the real runtime's copy would make it). Outside a call, the program's
 *   own action, untouched.
 * - SIGTERM and SIGINT under `acl-emu run`: the run's summary and trace are written (by a thread of the
 *   library's, never in the handler), then the program dies of the signal as it would have.
 * A forked child's signals and crashes are its own: it writes none of its parent's files.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>
#include "emu_calls.h" /* EMU_NAMES, EMU_COUNT: written by build.py */

#define EMU_INTERNAL_ERROR 500000 /* ACL_ERROR_INTERNAL_ERROR */

typedef union { uint64_t u; int64_t i; double f; const void *p; } emu_arg;

static pthread_once_t started = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static PyObject *handlers[EMU_COUNT];
static PyObject *finish_fn, *thread_started_fn, *thread_ended_fn;
static int broken;
static int ours;     /* the library started the interpreter (a C program), rather than joining a Python one */
static pid_t owner;  /* the process whose first call started the library: a forked child is not it */
static int status_fd = -1;  /* `acl-emu run`'s status socket (emu.capi.session.status_fd), -1 without one */
static __thread int in_call;  /* 1 + the index (in EMU_NAMES) of the ACL call this thread is making; 0 outside */

static void say(const char *what) {
    fprintf(stderr, "acl-emu: libascendcl: %s\n", what);
}

/* -- writing from a signal handler: write(2) and send(2) only, the text made here ---------------------------- */

typedef struct { char text[512]; size_t n; } line_t;

static void put(line_t *l, const char *s) {
    while (*s && l->n < sizeof l->text - 1)
        l->text[l->n++] = *s++;
}

static void put_hex(line_t *l, uintptr_t v) {
    char digits[2 + 2 * sizeof v + 1], *at = digits + sizeof digits - 1;
    *at = 0;
    do {
        *--at = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    *--at = 'x';
    *--at = '0';
    put(l, at);
}

/* One line of `acl-emu run`'s status socket (emu.capi.session): by the process that started the library only. */
static void tell_run(const line_t *l) {
    if (status_fd >= 0 && getpid() == owner)
        (void)!send(status_fd, l->text, l->n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* -- SIGSEGV and SIGBUS inside an ACL call -------------------------------------------------------------------- */

static struct sigaction program_crash[NSIG];  /* the program's own actions, taken over only where they were default */

static void on_crash(int sig, siginfo_t *info, void *context) {
    int saved_errno = errno;
    int index = in_call - 1;
    if (index >= 0 && index < EMU_COUNT && info->si_code > 0) {  /* a fault (not a signal sent) inside a call */
        const char *verb = "touched";
#if defined(__x86_64__) && defined(REG_ERR)
        verb = (((ucontext_t *)context)->uc_mcontext.gregs[REG_ERR] & 2) ? "wrote" : "read";
#else
        (void)context;
#endif
        const char *why = sig == SIGBUS ? "which has no memory behind it" :
                          info->si_code == SEGV_ACCERR ? "which the program may not access that way" :
                          "which is not mapped";
        line_t what = {.n = 0};
        put(&what, verb);
        put(&what, " host address ");
        put_hex(&what, (uintptr_t)info->si_addr);
        put(&what, ", ");
        put(&what, why);
        line_t said = {.n = 0};
        put(&said, "acl-emu: ");
        put(&said, EMU_NAMES[index]);
        put(&said, " ");
        put(&said, what.text);
        put(&said, sig == SIGBUS ? " (SIGBUS)" : " (SIGSEGV)");
        put(&said, ": a host pointer given to it (or to the call that queued this work) is not memory of the "
                   "program\n");
        (void)!write(STDERR_FILENO, said.text, said.n);
        line_t note = {.n = 0};
        put(&note, "crash\t");
        put(&note, EMU_NAMES[index]);
        put(&note, "\t");
        put(&note, what.text);
        tell_run(&note);
    }
    /* The program's own action from now on: a fault happens again as the handler returns, a signal sent is sent
     * again (it waits, blocked, until the handler returns). */
    sigaction(sig, &program_crash[sig], NULL);
    if (info->si_code <= 0)
        raise(sig);
    errno = saved_errno;
}

static void take_crashes(void) {
    static const int kinds[] = {SIGSEGV, SIGBUS};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int sig = kinds[i];
        struct sigaction now, mine;
        if (sigaction(sig, NULL, &now) != 0 || (now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL)
            continue;  /* the program's own action stays */
        program_crash[sig] = now;
        memset(&mine, 0, sizeof mine);
        mine.sa_sigaction = on_crash;
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&mine.sa_mask);
        sigaction(sig, &mine, NULL);
    }
}

/* -- SIGTERM and SIGINT under `acl-emu run` ------------------------------------------------------------------- */

static int stop_pipe[2] = {-1, -1};
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig) {
    int saved_errno = errno;
    if (getpid() != owner) {  /* a forked child: as if the library were not there */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        raise(sig);
    } else if (!stop_signal) {
        stop_signal = sig;
        char c = (char)sig;
        (void)!write(stop_pipe[1], &c, 1);
    }
    errno = saved_errno;
}

static void finish_stopped(int sig);

/* The library's thread that writes the run's files once SIGTERM or SIGINT came, then lets the signal kill the
 * program with its default action (as it would have without the library). */
static void *stopper(void *arg) {
    (void)arg;
    char c;
    while (read(stop_pipe[0], &c, 1) < 0 && errno == EINTR)
        ;
    int sig = stop_signal;
    finish_stopped(sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    return NULL;
}

static void take_stops(void) {
    static const int kinds[] = {SIGTERM, SIGINT};
    if (pipe(stop_pipe) != 0)
        return;
    fcntl(stop_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(stop_pipe[1], F_SETFD, FD_CLOEXEC);
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);  /* the thread takes no signal of the program's */
    pthread_t thread;
    int made = pthread_create(&thread, NULL, stopper, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (!made)
        return;
    pthread_detach(thread);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct sigaction now, mine;
        if (sigaction(kinds[i], NULL, &now) != 0 || (now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL)
            continue;  /* the program's own handler (or SIG_IGN) stays */
        memset(&mine, 0, sizeof mine);
        mine.sa_handler = on_stop;
        mine.sa_flags = SA_RESTART;
        sigemptyset(&mine.sa_mask);
        sigaction(kinds[i], &mine, NULL);
    }
}

/* -- the program's signal actions across the interpreter's start ---------------------------------------------- */

static struct sigaction program_actions[NSIG];

static void save_signals(void) {
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, NULL, &program_actions[sig]);
}

/* Every action that starting Python and importing the emulator changed, back as it was (the caller holds the
 * GIL). Importing `signal` (subprocess does) installs Python's SIGINT handler where SIGINT has the default action:
 * it is imported now, so that it does so once, here, and Python's own table is told SIGINT's default is back. */
static void restore_signals(void) {
    PyObject *module = PyImport_ImportModule("signal");
    if (module != NULL && program_actions[SIGINT].sa_handler == SIG_DFL &&
        !(program_actions[SIGINT].sa_flags & SA_SIGINFO)) {
        PyObject *dfl = PyObject_GetAttrString(module, "SIG_DFL");
        PyObject *r = dfl == NULL ? NULL : PyObject_CallMethod(module, "signal", "iO", SIGINT, dfl);
        Py_XDECREF(r);
        Py_XDECREF(dfl);
    }
    Py_XDECREF(module);
    PyErr_Clear();
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &now) != 0)
            continue;
        if (now.sa_handler != program_actions[sig].sa_handler || now.sa_flags != program_actions[sig].sa_flags)
            sigaction(sig, &program_actions[sig], NULL);  /* (glibc adds SA_RESTORER, which SIG_DFL ignores) */
    }
}

/* The Python exception raised, with its traceback, on stderr now (the caller holds the GIL). */
static void print_error(void) {
    PyErr_Print();
    PyObject *err = PySys_GetObject("stderr"); /* borrowed */
    PyObject *r = err ? PyObject_CallMethod(err, "flush", NULL) : NULL;
    Py_XDECREF(r);
    PyErr_Clear();
}

/* The interpreter of a C program: the Python that built this library (its venv's packages), no signal
 * handlers of its own (the program's stay as they were), no working directory on sys.path. */
static int start_interpreter(void) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.safe_path = 1;
    config.parse_argv = 0;
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, EMU_PYTHON);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        say("could not start Python (" EMU_PYTHON ")");
        return -1;
    }
    return 0;
}

/* bridge.finish(signal): the run's files, at the program's exit (0) or stopped by a signal. */
static void call_finish(int sig) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallFunction(finish_fn, "i", sig);
    if (r == NULL)
        print_error();
    Py_XDECREF(r);
    PyGILState_Release(g);
}

static void finish(void) {
    if (broken || finish_fn == NULL)
        return;
    fflush(stdout);
    call_finish(0);
}

static void finish_stopped(int sig) {
    if (!broken && finish_fn != NULL)
        call_finish(sig);
}

/* The handlers, from emu.capi.bridge.handlers(names): the caller holds the GIL. In an interpreter of our own,
 * the folder holding this emulator's `emu` goes first on sys.path; a Python program's own path is left alone. */
static int bind_handlers(void) {
    if (ours) {
        PyObject *path = PySys_GetObject("path"); /* borrowed */
        PyObject *where = PyUnicode_FromString(EMU_PACKAGE_PARENT);
        int failed = path == NULL || where == NULL || PyList_Insert(path, 0, where) < 0;
        Py_XDECREF(where);
        if (failed)
            return -1;
    }
    PyObject *bridge = PyImport_ImportModule("emu.capi.bridge");
    if (bridge == NULL)
        return -1;
    PyObject *names = PyTuple_New(EMU_COUNT);
    for (int i = 0; i < EMU_COUNT; i++)
        PyTuple_SET_ITEM(names, i, PyUnicode_FromString(EMU_NAMES[i]));
    PyObject *list = PyObject_CallMethod(bridge, "handlers", "(O)", names);
    Py_DECREF(names);
    finish_fn = list == NULL ? NULL : PyObject_GetAttrString(bridge, "finish");
    thread_started_fn = finish_fn == NULL ? NULL : PyObject_GetAttrString(bridge, "thread_started");
    thread_ended_fn = thread_started_fn == NULL ? NULL : PyObject_GetAttrString(bridge, "thread_ended");
    PyObject *bridge_module = bridge;
    if (thread_ended_fn == NULL || PyList_Size(list) != EMU_COUNT) {
        Py_XDECREF(list);
        Py_DECREF(bridge_module);
        return -1;
    }
    for (int i = 0; i < EMU_COUNT; i++) {
        handlers[i] = PyList_GET_ITEM(list, i);
        Py_INCREF(handlers[i]);
    }
    Py_DECREF(list);
    PyObject *fd = PyObject_CallMethod(bridge_module, "status_fd", NULL);
    Py_DECREF(bridge_module);
    if (fd == NULL)
        return -1;
    status_fd = (int)PyLong_AsLong(fd);
    Py_DECREF(fd);
    return PyErr_Occurred() ? -1 : 0;
}

/* Tell the bridge (the GIL held); a failure is printed, never raised into the program. */
static void notify(PyObject *fn) {
    PyObject *r = fn == NULL ? NULL : PyObject_CallNoArgs(fn);
    if (r == NULL && PyErr_Occurred())
        print_error();
    Py_XDECREF(r);
}

/* (Not PyGILState_Release, which finds the state through Python's own thread key: glibc clears a thread's keys in
 * the order of their slots, running destructors as it goes, and in a forked child Python's key is made anew, in
 * whichever slot is free first.) */
static void thread_ends(void *state) {
    PyEval_RestoreThread((PyThreadState *)state);
    notify(thread_ended_fn);
    PyThreadState_Clear((PyThreadState *)state);
    PyThreadState_DeleteCurrent();
}

/* This thread's Python thread state, kept until the thread ends (see the top of this file). */
static void keep_thread_state(void) {
    if (PyGILState_GetThisThreadState() != NULL)
        return;
    PyGILState_Ensure();
    notify(thread_started_fn);
    PyThreadState *state = PyEval_SaveThread();
    pthread_setspecific(thread_key, state);
}

/* The stamp (EMU_STAMP, build.py's STAMP) next to this library, its real file, touched: the folder is in use.
 * A folder this user cannot write is left as it is. */
static void touch_stamp(void) {
    Dl_info info;
    char path[PATH_MAX];
    if (!dladdr((const void *)&touch_stamp, &info) || info.dli_fname == NULL || realpath(info.dli_fname, path) == NULL)
        return;
    char *slash = strrchr(path, '/');
    if (slash == NULL || strlen(path) - strlen(slash) + sizeof "/" EMU_STAMP > sizeof path)
        return;
    strcpy(slash + 1, EMU_STAMP);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        futimens(fd, NULL);
        close(fd);
    }
}

/* -- fork (see the top of this file) -------------------------------------------------------------------------- */

static pthread_mutex_t start_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_done = PTHREAD_COND_INITIALIZER;
static int starting, ready;  /* a thread is in start(); start() has ended and the handlers are bound */
static pthread_t starter;
static int fork_held;  /* this fork took the GIL and ran PyOS_BeforeFork */
static int fork_made_state;  /* ... with a thread state made for it (the forking thread had none) */
static PyGILState_STATE fork_gil;

/* Before a fork: the first call's start-up ended (the mutex is then held across the fork, so none begins), and
 * Python prepared, unless Python itself is forking (its os.fork holds the GIL and prepares). */
static void before_fork(void) {
    pthread_mutex_lock(&start_mutex);
    while (starting && !pthread_equal(starter, pthread_self()))
        pthread_cond_wait(&start_done, &start_mutex);
    fork_held = 0;
    if (ready && !broken && !PyGILState_Check()) {
        fork_made_state = PyGILState_GetThisThreadState() == NULL;
        fork_gil = PyGILState_Ensure();
        PyOS_BeforeFork();
        fork_held = 1;
    }
}

static void after_fork_in_parent(void) {
    if (fork_held) {
        fork_held = 0;
        PyOS_AfterFork_Parent();
        PyGILState_Release(fork_gil);
    }
    pthread_mutex_unlock(&start_mutex);
}

static void after_fork_in_child(void) {
    if (fork_held) {
        fork_held = 0;
        PyOS_AfterFork_Child();
        if (fork_made_state) {
            /* The child's only thread state: kept as the thread's own, as its first call would keep it
             * (keep_thread_state). Deleted, it would leave the interpreter with none, and Python 3.11 then
             * fails to make the next ("thread state already initialized"). */
            notify(thread_started_fn);
            pthread_setspecific(thread_key, PyEval_SaveThread());
        } else {
            PyGILState_Release(fork_gil);
        }
    }
    pthread_cond_init(&start_done, NULL);  /* (its waiters were threads the child does not have) */
    pthread_mutex_unlock(&start_mutex);
}

/* numpy's OpenBLAS, loaded by the first call's start-up, starts worker threads unless OPENBLAS_NUM_THREADS says
 * one: a fork made while the start-up ran (before_fork waits for it) would then leave the child OpenBLAS's state
 * of threads it does not have, and the child hangs at exit in OpenBLAS's clean-up (the handler OpenBLAS gives
 * pthread_atfork is registered during that fork, so glibc skips it). The emulator makes no BLAS call: in a C
 * program, the start-up sets the variable (when the program has not) and takes it away once numpy is loaded,
 * so the program and what it runs see their environment as it was. */
static int blas_threads_set;

__attribute__((constructor)) static void at_load(void) {
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

static void start(void) {
    pthread_mutex_lock(&start_mutex);
    starting = 1;
    starter = pthread_self();
    pthread_mutex_unlock(&start_mutex);
    touch_stamp();
    pthread_key_create(&thread_key, thread_ends);
    owner = getpid();
    ours = !Py_IsInitialized();
    if (ours && getenv("OPENBLAS_NUM_THREADS") == NULL)
        blas_threads_set = setenv("OPENBLAS_NUM_THREADS", "1", 0) == 0;
    if (ours)
        save_signals();
    if (ours && start_interpreter() < 0) {
        broken = 1;
    } else {
        PyGILState_STATE g = ours ? PyGILState_UNLOCKED : PyGILState_Ensure();
        if (bind_handlers() < 0) {
            print_error();
            say("could not load the emulator (emu.capi.bridge) from " EMU_PACKAGE_PARENT);
            broken = 1;
        }
        if (blas_threads_set)
            unsetenv("OPENBLAS_NUM_THREADS");  /* (numpy is loaded: see at_load) */
        if (ours) {
            restore_signals();
            take_crashes();
            if (!broken && status_fd >= 0)  /* under `acl-emu run` */
                take_stops();
            /* The thread that started the interpreter keeps its state (Python's main thread, whichever thread of
             * the program it is); the GIL is free for every thread. */
            PyEval_SaveThread();
            atexit(finish);
        } else {
            PyGILState_Release(g);
        }
    }
    pthread_mutex_lock(&start_mutex);
    starting = 0;
    ready = 1;
    pthread_cond_broadcast(&start_done);
    pthread_mutex_unlock(&start_mutex);
}

static __thread const void *last_caller;
static __thread const void *next_caller; /* acl_emu_call_from: where the next call is named as made */

/* Name this thread's next ACL call as made at `caller` (a return address in the program): what a kernel launch
 * through a library's inline code (emu/device/include/acl_emu_launch.h) says of the program's line. */
__attribute__((visibility("default"))) void acl_emu_call_from(const void *caller) {
    next_caller = caller;
}

/* The return address in the program of this thread's current (or last) ACL call: where the sanitizer says a
 * C program made it (emu.capi.sites). */
__attribute__((visibility("default"))) const void *acl_emu_last_caller(void) {
    return last_caller;
}

/* Mark this thread inside ACL call `value` - 1 (0: in the program's own code, a callback the call runs, say); the
 * mark it had (emu.capi.special). A fault inside a call is named as the call's (see the top of this file). */
__attribute__((visibility("default"))) int acl_emu_in_call(int value) {
    int outer = in_call;
    in_call = value;
    return outer;
}

/* Call the handler of exported function `index` with `n` arguments described by `kinds` (one letter each:
 * p pointer, u unsigned, i signed, f floating point); its result as 64 bits, or `failed` when Python
 * raised (the traceback is printed: a fault of the emulator, not of the program). `caller`: the return
 * address in the program. */
uint64_t emu_call(int index, const char *kinds, const emu_arg *args, int n, uint64_t failed,
                  const void *caller) {
    last_caller = next_caller != NULL ? next_caller : caller;
    next_caller = NULL;
    pthread_once(&started, start);
    if (broken)
        return failed;
    int outer = in_call;
    in_call = index + 1;
    keep_thread_state();
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *values[16];
    int made = 0;
    for (; made < n; made++) {
        switch (kinds[made]) {
        case 'p': values[made] = PyLong_FromVoidPtr((void *)args[made].p); break;
        case 'u': values[made] = PyLong_FromUnsignedLongLong(args[made].u); break;
        case 'i': values[made] = PyLong_FromLongLong(args[made].i); break;
        default: values[made] = PyFloat_FromDouble(args[made].f); break;
        }
        if (values[made] == NULL)
            break;
    }
    uint64_t out = failed;
    PyObject *r = made == n ? PyObject_Vectorcall(handlers[index], values, n, NULL) : NULL;
    if (r != NULL) {
        out = PyLong_AsUnsignedLongLongMask(r);
        Py_DECREF(r);
    }
    if (PyErr_Occurred()) {
        print_error();
        out = failed;
    }
    for (int i = 0; i < made; i++)
        Py_DECREF(values[i]);
    PyGILState_Release(g);
    in_call = outer;
    return out;
}

/* aclAppLog: the application's log line, on stderr as "[LEVEL] file:line func: message" (variadic, so
 * written here rather than handed to Python). */
#include <stdarg.h>
#include "acl/acl_base_rt.h"

ACL_FUNC_VISIBILITY void aclAppLog(aclLogLevel logLevel, const char *func, const char *file, uint32_t line,
                                   const char *fmt, ...) {
    static const char *const levels[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
    const char *level = (logLevel >= ACL_DEBUG && logLevel <= ACL_ERROR) ? levels[logLevel] : "LOG";
    fprintf(stderr, "[%s] %s:%u %s: ", level, file ? file : "?", line, func ? func : "?");
    if (fmt != NULL) {
        va_list args;
        va_start(args, fmt);
        vfprintf(stderr, fmt, args);
        va_end(args);
    }
    fputc('\n', stderr);
}
