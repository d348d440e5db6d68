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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "emu_calls.h" /* EMU_NAMES, EMU_COUNT: written by build.py */

#define EMU_INTERNAL_ERROR 500000 /* ACL_ERROR_INTERNAL_ERROR */

typedef union { uint64_t u; int64_t i; double f; const void *p; } emu_arg;

static pthread_once_t started = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static PyObject *handlers[EMU_COUNT];
static PyObject *finish_fn, *thread_started_fn, *thread_ended_fn;
static int broken;

static void say(const char *what) {
    fprintf(stderr, "acl-emu: libascendcl: %s\n", what);
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

static void finish(void) {
    if (broken || finish_fn == NULL)
        return;
    fflush(stdout);
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallNoArgs(finish_fn);
    if (r == NULL)
        print_error();
    Py_XDECREF(r);
    PyGILState_Release(g);
}

/* The handlers, from emu.capi.bridge.handlers(names): the caller holds the GIL. In an interpreter of our own,
 * the folder holding this emulator's `emu` goes first on sys.path; a Python program's own path is left alone. */
static int bind_handlers(int ours) {
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
    Py_DECREF(bridge);
    if (thread_ended_fn == NULL || PyList_Size(list) != EMU_COUNT) {
        Py_XDECREF(list);
        return -1;
    }
    for (int i = 0; i < EMU_COUNT; i++) {
        handlers[i] = PyList_GET_ITEM(list, i);
        Py_INCREF(handlers[i]);
    }
    Py_DECREF(list);
    return 0;
}

/* Tell the bridge (the GIL held); a failure is printed, never raised into the program. */
static void notify(PyObject *fn) {
    PyObject *r = fn == NULL ? NULL : PyObject_CallNoArgs(fn);
    if (r == NULL && PyErr_Occurred())
        print_error();
    Py_XDECREF(r);
}

static void thread_ends(void *state) {
    PyEval_RestoreThread((PyThreadState *)state);
    notify(thread_ended_fn);
    PyGILState_Release(PyGILState_UNLOCKED);
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

static void start(void) {
    touch_stamp();
    pthread_key_create(&thread_key, thread_ends);
    int ours = !Py_IsInitialized();
    if (ours && start_interpreter() < 0) {
        broken = 1;
        return;
    }
    PyGILState_STATE g = ours ? PyGILState_UNLOCKED : PyGILState_Ensure();
    if (bind_handlers(ours) < 0) {
        print_error();
        say("could not load the emulator (emu.capi.bridge) from " EMU_PACKAGE_PARENT);
        broken = 1;
    }
    if (ours) {
        /* The thread that started the interpreter keeps its state (Python's main thread, whichever thread of
         * the program it is); the GIL is free for every thread. */
        PyEval_SaveThread();
        atexit(finish);
    } else {
        PyGILState_Release(g);
    }
}

static __thread const void *last_caller;

/* The return address in the program of this thread's current (or last) ACL call: where the sanitizer says a
 * C program made it (emu.capi.sites). */
__attribute__((visibility("default"))) const void *acl_emu_last_caller(void) {
    return last_caller;
}

/* Call the handler of exported function `index` with `n` arguments described by `kinds` (one letter each:
 * p pointer, u unsigned, i signed, f floating point); its result as 64 bits, or `failed` when Python
 * raised (the traceback is printed: a fault of the emulator, not of the program). `caller`: the return
 * address in the program. */
uint64_t emu_call(int index, const char *kinds, const emu_arg *args, int n, uint64_t failed,
                  const void *caller) {
    last_caller = caller;
    pthread_once(&started, start);
    if (broken)
        return failed;
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
