"""Processes and signals around a program on the emulator: fork() while another thread is inside the runtime,
Ctrl-C, SIGINT and SIGTERM with and without `acl-emu run`, a program that crashes (a wild host pointer given to an
ACL call, a signal, `_exit`), a forked child that outlives its parent, and summary files that cannot be written.

Every program runs in a subprocess with a timeout, so that a hang fails its test instead of stopping the session.
The C programs are built once per module (`acl-emu cc`), as tests/test_capi.py builds its own.
"""
from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import termios
import time
from pathlib import Path

import pytest

from emu.capi import commands

CC = shutil.which(os.environ.get("CC", "cc"))
pytestmark = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED") or os.name != "posix",
                                reason="needs a C compiler, a shared libpython and fork")

PRELUDE = r'''
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "acl/acl.h"
#define CHECK(call) do { aclError r_ = (call); if (r_ != ACL_SUCCESS) { \
    fprintf(stderr, "%s: %d\n", #call, r_); exit(9); } } while (0)
'''

PROGRAMS = {
    # A helper pthread copies and synchronizes without pause while the main thread forks `argv[1]` times. Each
    # child reads a device buffer the parent filled, allocates, copies and synchronizes the parent's stream, checks
    # the bytes and leaves with exit() (the library's exit handler runs in it too); a child stuck for 20 s dies of
    # SIGALRM. The parent checks each child's status, then goes on copying.
    "fork_busy": r'''
static volatile int stop, started;
static aclrtStream s;
static void *busy(void *arg) {
    (void)arg;
    size_t n = 1 << 20;
    char *h = malloc(n), *back = malloc(n);
    void *d;
    memset(h, 7, n);
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMalloc(&d, n, ACL_MEM_MALLOC_HUGE_FIRST));
    while (!stop) {
        CHECK(aclrtMemcpy(d, n, h, n, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK(aclrtMemcpyAsync(d, n, h, n, ACL_MEMCPY_HOST_TO_DEVICE, s));
        CHECK(aclrtSynchronizeStream(s));
        CHECK(aclrtMemcpy(back, n, d, n, ACL_MEMCPY_DEVICE_TO_HOST));
        started = 1;
    }
    return NULL;
}
static int child(const unsigned char *pattern, void *dev) {
    alarm(20);
    unsigned char got[4096] = {0}, again[4096] = {0};
    void *d2 = NULL;
    aclError r1 = aclrtMemcpy(got, sizeof got, dev, sizeof got, ACL_MEMCPY_DEVICE_TO_HOST);
    aclError r2 = aclrtMalloc(&d2, sizeof got, ACL_MEM_MALLOC_HUGE_FIRST);
    aclError r3 = aclrtMemcpy(d2, sizeof got, pattern, sizeof got, ACL_MEMCPY_HOST_TO_DEVICE);
    aclError r4 = aclrtMemcpyAsync(again, sizeof again, d2, sizeof again, ACL_MEMCPY_DEVICE_TO_HOST, s);
    aclError r5 = aclrtSynchronizeStream(s);
    int same = !memcmp(got, pattern, sizeof got) && !memcmp(again, pattern, sizeof again);
    if (r1 || r2 || r3 || r4 || r5 || !same) {
        fprintf(stderr, "child: %d %d %d %d %d bytes %s\n", r1, r2, r3, r4, r5, same ? "right" : "wrong");
        return 1;
    }
    return 0;
}
int main(int argc, char **argv) {
    int forks = argc > 1 ? atoi(argv[1]) : 20, failed = 0;
    unsigned char pattern[4096];
    void *dev;
    for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (unsigned char)(i * 31 + 5);
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtCreateStream(&s));
    CHECK(aclrtMalloc(&dev, sizeof pattern, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, sizeof pattern, pattern, sizeof pattern, ACL_MEMCPY_HOST_TO_DEVICE));
    pthread_t t;
    pthread_create(&t, NULL, busy, NULL);
    while (!started) usleep(1000);
    for (int i = 0; i < forks; i++) {
        usleep((i * 7919) % 3000);  /* (the fork lands anywhere in the helper's calls) */
        pid_t pid = fork();
        if (pid == 0) exit(child(pattern, dev));
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("fork %d: child status 0x%x\n", i, status);
            failed++;
        }
    }
    stop = 1;
    pthread_join(t, NULL);
    unsigned char got[4096] = {0};
    CHECK(aclrtMemcpy(got, sizeof got, dev, sizeof got, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("forks %d, failed %d, parent %s\n", forks, failed, memcmp(got, pattern, sizeof got) ? "wrong" : "ok");
    return failed != 0;
}
''',
    # Prints OPENBLAS_NUM_THREADS as the program sees it before and after its first ACL call (and in a child it runs).
    "blas_env": r'''
int main(void) {
    const char *before = getenv("OPENBLAS_NUM_THREADS");
    uint32_t n = 0;
    aclError r = aclrtGetDeviceCount(&n);
    const char *after = getenv("OPENBLAS_NUM_THREADS");
    printf("%d %s %s\n", r, before ? before : "unset", after ? after : "unset");
    fflush(stdout);
    return system("echo child ${OPENBLAS_NUM_THREADS:-unset}");
}
''',
    # The main thread forks 30 times while a pthread makes the program's first ACL call (the library starts); each
    # child makes an ACL call from the main thread, which never made one, and from a new thread.
    "fork_at_start": r'''
static void *first(void *arg) { uint32_t n = 0; *(aclError *)arg = aclrtGetDeviceCount(&n); return NULL; }
int main(void) {
    aclError r = 0, in_thread = 0;
    pthread_t t;
    pthread_create(&t, NULL, first, &r);
    int failed = 0;
    for (int i = 0; i < 30; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(20);
            uint32_t n = 0;
            aclError mine = aclrtGetDeviceCount(&n);
            pthread_t u;
            pthread_create(&u, NULL, first, &in_thread);
            pthread_join(u, NULL);
            exit(mine != 0 || in_thread != 0 || n != 8);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (status) { printf("fork %d: child status 0x%x\n", i, status); failed++; }
    }
    pthread_join(t, NULL);
    printf("failed %d, first call %d\n", failed, r);
    return failed != 0;
}
''',
    # Prints which signal actions its first ACL calls (one copies, which loads the kernels) changed: the handler,
    # or the flags but SA_RESTORER (which glibc's sigaction adds to any action set, SIG_DFL's too). SIGSEGV and
    # SIGBUS are left out: the library's handler names the ACL call a fault comes from, and outside ACL calls
    # gives the fault to the program's own action (test_the_programs_own_crash_names_no_acl_call).
    "dispositions": r'''
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif
int main(void) {
    static struct sigaction before[NSIG];
    for (int s = 1; s < NSIG; s++) sigaction(s, NULL, &before[s]);
    size_t n = 1 << 20;
    void *d, *h = malloc(n);
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMalloc(&d, n, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(d, n, h, n, ACL_MEMCPY_HOST_TO_DEVICE));
    int changed = 0;
    for (int s = 1; s < NSIG; s++) {
        struct sigaction now;
        sigaction(s, NULL, &now);
        if (s == SIGSEGV || s == SIGBUS)
            continue;
        if (now.sa_handler != before[s].sa_handler || (now.sa_flags ^ before[s].sa_flags) & ~SA_RESTORER) {
            printf("changed %d (%s)\n", s, strsignal(s));
            changed++;
        }
    }
    printf("%d changed\n", changed);
    return 0;
}
''',
    # ACL calls in a loop for up to 30 s, "ready" once the first has been made. With argument "own", its own SIGINT
    # handler (installed before its first ACL call) stops the loop; it then waits half a second (a second SIGINT
    # would count) and prints how many it got.
    "looping": r'''
static volatile sig_atomic_t interrupts;
static void on_int(int sig) { (void)sig; interrupts++; }
int main(int argc, char **argv) {
    int own = argc > 1 && !strcmp(argv[1], "own");
    if (own) signal(SIGINT, on_int);
    void *d;
    char h[256] = {0};
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMalloc(&d, sizeof h, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(d, sizeof h, h, sizeof h, ACL_MEMCPY_HOST_TO_DEVICE));  /* (one before "ready": its summary names it) */
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 3000 && !interrupts; i++) {
        aclError r = aclrtMemcpy(d, sizeof h, h, sizeof h, ACL_MEMCPY_HOST_TO_DEVICE);
        if (r != ACL_SUCCESS) { printf("aclrtMemcpy returned %d\n", r); fflush(stdout); }
        usleep(10000);
    }
    if (own) { usleep(500000); printf("interrupts %d\n", (int)interrupts); }
    return 0;
}
''',
    # A host pointer that points at nothing, given to aclrtMemcpy.
    "wild": r'''
int main(void) {
    void *d;
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("%d\n", aclrtMemcpy(d, 64, (void *)0x10, 64, ACL_MEMCPY_HOST_TO_DEVICE));
    return 0;
}
''',
    # The program's own crash, after ACL calls and outside them: a null pointer read in main (argument "main") or
    # in its callback, which aclrtProcessReport runs (argument "callback").
    "own_crash": r'''
static void cb(void *data) { (void)data; printf("%d\n", *(volatile int *)0); }
int main(int argc, char **argv) {
    aclrtStream s;
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtCreateStream(&s));
    if (argc > 1 && !strcmp(argv[1], "callback")) {
        CHECK(aclrtSubscribeReport((uint64_t)pthread_self(), s));
        CHECK(aclrtLaunchCallback(cb, NULL, ACL_CALLBACK_NO_BLOCK, s));
        aclrtProcessReport(1000);
    }
    return *(volatile int *)0;
}
''',
    # Ends as argv[1] says after ACL calls: "segv", "abort", "exit3" (exit(3)), "_exit3" (_exit(3): no exit handler).
    "ending": r'''
int main(int argc, char **argv) {
    void *d;
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMalloc(&d, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    const char *how = argc > 1 ? argv[1] : "";
    if (!strcmp(how, "segv")) raise(SIGSEGV);
    if (!strcmp(how, "abort")) abort();
    if (!strcmp(how, "_exit3")) _exit(3);
    return 3;
}
''',
    # Forks a child that outlives it: the child (or with argument "exec", this program executed again by the child)
    # waits until its parent has gone, makes an ACL call the parent never made (aclrtGetDeviceCount) and exits.
    "orphan": r'''
static int late(pid_t parent) {
    for (int i = 0; i < 1000 && getppid() == parent; i++) usleep(10000);
    usleep(300000);  /* (acl-emu run has read and removed its files by now) */
    uint32_t count = 0;
    aclError r = aclrtGetDeviceCount(&count);
    fprintf(stderr, "child: aclrtGetDeviceCount %d, %u devices\n", r, count);
    return 0;
}
int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "late"))
        return late((pid_t)atol(argv[2]));
    void *d;
    char h[64] = {0};
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMalloc(&d, sizeof h, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(d, sizeof h, h, sizeof h, ACL_MEMCPY_HOST_TO_DEVICE));
    pid_t parent = getpid();
    if (fork() == 0) {
        if (argc > 1 && !strcmp(argv[1], "exec")) {
            char pid[32];
            snprintf(pid, sizeof pid, "%ld", (long)parent);
            execl(argv[0], argv[0], "late", pid, (char *)NULL);
            perror("execl");
            _exit(8);
        }
        exit(late(parent));
    }
    return 0;
}
''',
    # Makes ACL calls, then replaces the folder argv[1] by a regular file (what it held moved aside): the files of
    # the run due there at its exit cannot be written. Exits with code 5.
    "spoiler": r'''
int main(int argc, char **argv) {
    void *d;
    char h[64] = {0};
    CHECK(aclrtSetDevice(0));
    CHECK(aclrtMalloc(&d, sizeof h, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(d, sizeof h, h, sizeof h, ACL_MEMCPY_HOST_TO_DEVICE));
    if (argc > 1) {
        char aside[4096];
        snprintf(aside, sizeof aside, "%s.aside", argv[1]);
        if (rename(argv[1], aside) != 0) { perror("rename"); return 8; }
        FILE *f = fopen(argv[1], "w");
        if (!f) { perror("fopen"); return 8; }
        fputs("not a folder\n", f);
        fclose(f);
    }
    return 5;
}
''',
}


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    """Each program of PROGRAMS built with `acl-emu cc -g`."""
    out = tmp_path_factory.mktemp("processes")
    for name, body in PROGRAMS.items():
        src = out / f"{name}.c"
        src.write_text(PRELUDE + body)
        assert commands.compile_command("cc", [str(src), "-o", str(out / name), "-g", "-Wall", "-Werror",
                                               "-lpthread"]) == 0, f"building {name} failed"
    return out


def _env(extra: dict | None = None) -> dict:
    """This process's environment without its ACL_EMU_ settings (a program runs on the defaults), and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.update(extra or {})
    return env


def _run(bins: Path, name: str, *args: str, env: dict | None = None, timeout: float = 120):
    return subprocess.run([str(bins / name), *args], cwd=bins, capture_output=True, text=True, timeout=timeout,
                          env=_env(env))


def _cli(*argv: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    return subprocess.run([sys.executable, "-m", "emu", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=_env(env))


def _start(command: list[str], cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """`command` started in a session (and process group) of its own, its stdout and stderr piped."""
    return subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(env), start_new_session=True)


def _await_line(stream, text: str, seconds: float = 60) -> str:
    """The lines of `stream` up to the first that holds `text` (an AssertionError after `seconds`)."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            if text in line:
                return "".join(seen)
    raise AssertionError(f"no line with {text!r} in {seconds} s; got {''.join(seen)!r}")


def _finish(proc: subprocess.Popen, seconds: float = 60) -> tuple[int, str, str]:
    """The process's exit code and the rest of its output, or (killed) an AssertionError after `seconds`."""
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"still running after {seconds} s: {out!r} {err!r}") from None
    return proc.returncode, out, err


# -- fork -----------------------------------------------------------------------------------------------------

def test_a_c_child_forked_while_a_thread_is_in_the_runtime_gets_a_working_runtime(bins):
    """fork() while a pthread is inside aclrtMemcpy / aclrtSynchronizeStream, 40 times: each child's calls return
    ACL_SUCCESS in bounded time with the right bytes (the parent's device memory as it was at the fork, its
    stream), its exit writes nothing and prints nothing; the parent and its helper thread go on unharmed."""
    done = _run(bins, "fork_busy", "40", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "forks 40, failed 0, parent ok" in done.stdout
    assert "Traceback" not in done.stderr and "acl-emu" not in done.stderr, done.stderr


def test_a_fork_while_the_first_call_starts_the_library_waits_for_it(bins):
    """fork() while another thread's first ACL call is starting the library (its interpreter, the emulator): the
    fork waits for the start to end, and each child's calls, from the forking thread (which never had a Python
    thread state) and from a new thread, return ACL_SUCCESS."""
    done = _run(bins, "fork_at_start", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "failed 0, first call 0" in done.stdout and "Fatal" not in done.stderr, done.stdout + done.stderr


@pytest.mark.parametrize("given", [None, "3"])
def test_the_programs_environment_is_as_it_was_after_the_first_call(bins, given):
    """The library keeps numpy's OpenBLAS to one thread while it starts (so that a fork meanwhile leaves the child
    no worker threads to hang on at exit) by OPENBLAS_NUM_THREADS, which it takes away again: the program, and
    what it runs, see the variable as they had it."""
    done = _run(bins, "blas_env", env=None if given is None else {"OPENBLAS_NUM_THREADS": given})
    shown = given or "unset"
    assert done.stdout.split() == ["0", shown, shown, "child", shown], done.stdout + done.stderr


FORK_SCRIPT = r'''
import os, signal, sys, threading, time
import warnings
import numpy as np
import emu
warnings.simplefilter("ignore", DeprecationWarning)  # (acl.util.numpy_to_ptr)
emu.configure(product="910B", host_time=sys.argv[2])
import emu.acl as acl
rt, util = acl.rt, acl.util

acl.init()
assert rt.set_device(0) == 0
stream, _ = rt.create_stream()
pattern = (np.arange(4096) * 31 + 5).astype(np.uint8)
dev, _ = rt.malloc(4096, 0)
assert rt.memcpy(dev, 4096, util.numpy_to_ptr(pattern), 4096, 1) == 0
stop, started = threading.Event(), threading.Event()

def busy():
    rt.set_device(0)
    n = 1 << 20
    h, back = np.full(n, 7, np.uint8), np.zeros(n, np.uint8)
    d, _ = rt.malloc(n, 0)
    while not stop.is_set():
        assert rt.memcpy(d, n, util.numpy_to_ptr(h), n, 1) == 0
        assert rt.memcpy_async(d, n, util.numpy_to_ptr(h), n, 1, stream) == 0
        assert rt.synchronize_stream(stream) == 0
        assert rt.memcpy(util.numpy_to_ptr(back), n, d, n, 2) == 0
        started.set()

def child():
    signal.alarm(10)
    got, again = np.zeros(4096, np.uint8), np.zeros(4096, np.uint8)
    codes = [rt.memcpy(util.numpy_to_ptr(got), 4096, dev, 4096, 2)]
    d2, code = rt.malloc(4096, 0)
    codes += [code, rt.memcpy(d2, 4096, util.numpy_to_ptr(pattern), 4096, 1),
              rt.memcpy_async(util.numpy_to_ptr(again), 4096, d2, 4096, 2, stream), rt.synchronize_stream(stream)]
    same = (got == pattern).all() and (again == pattern).all()
    if any(codes) or not same:
        print("child:", codes, "bytes", "right" if same else "wrong", file=sys.stderr)
        return 1
    return 0

t = threading.Thread(target=busy)
t.start()
started.wait(60)
forks, failed = int(sys.argv[1]), 0
for i in range(forks):
    time.sleep((i * 7919) % 3000 / 1e6)
    pid = os.fork()
    if pid == 0:
        os._exit(child())
    _, status = os.waitpid(pid, 0)
    if status:
        print(f"fork {i}: child status 0x{status:x}")
        failed += 1
stop.set()
t.join()
got = np.zeros(4096, np.uint8)
assert rt.memcpy(util.numpy_to_ptr(got), 4096, dev, 4096, 2) == 0
print(f"forks {forks}, failed {failed}, parent {'ok' if (got == pattern).all() else 'wrong'}")
'''


@pytest.mark.parametrize("host_time", ["calls", "wall"])
def test_a_python_child_forked_while_a_thread_is_in_the_runtime_gets_a_working_runtime(tmp_path, host_time):
    """os.fork() while another Python thread is inside the runtime (memcpy, synchronize), 100 times, in both
    host-time modes: each child's pyACL calls return 0 in bounded time with the right bytes (a child stuck for 10 s
    dies of SIGALRM); the parent goes on."""
    script = tmp_path / "fork_busy.py"
    script.write_text(FORK_SCRIPT)
    done = subprocess.run([sys.executable, str(script), "100", host_time], capture_output=True, text=True,
                          timeout=300, env=_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "forks 100, failed 0, parent ok" in done.stdout, done.stdout + done.stderr


# -- signals --------------------------------------------------------------------------------------------------

def test_the_programs_signal_actions_are_what_they_were_before_its_first_call(bins):
    """The library changes no signal action of a program run alone: importing the emulator (whose `signal` module
    installs Python's SIGINT handler when SIGINT is at its default) leaves them as they were, Ctrl-C included
    (SIGSEGV and SIGBUS aside: see the program)."""
    done = _run(bins, "dispositions")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0 changed", done.stdout


def test_sigint_stops_a_c_program_run_alone_as_without_the_emulator(bins):
    """SIGINT to a program looping on ACL calls kills it by SIGINT at once, with no KeyboardInterrupt, no
    traceback, no 500000 from its next call."""
    proc = _start([str(bins / "looping")], bins)
    _await_line(proc.stdout, "ready")
    os.kill(proc.pid, signal.SIGINT)
    code, out, err = _finish(proc, 20)
    assert code == -signal.SIGINT, out + err
    assert "KeyboardInterrupt" not in err and "Traceback" not in err and "500000" not in out


def test_a_programs_own_sigint_handler_runs_once(bins):
    """A program that installed its own SIGINT handler before its first ACL call gets SIGINT there, once."""
    proc = _start([str(bins / "looping"), "own"], bins)
    _await_line(proc.stdout, "ready")
    os.kill(proc.pid, signal.SIGINT)
    code, out, err = _finish(proc, 20)
    assert code == 0 and "interrupts 1" in out, out + err


def _summary_written(err: str, out_dir: Path) -> None:
    assert "[acl-emu] 910B: simulated time" in err, err
    assert "aclrtMemcpy" in err and (out_dir / "trace.json").is_file()
    assert json.loads((out_dir / "trace.json").read_text())


def test_sigterm_to_acl_emu_run_writes_the_c_programs_summary_and_trace(bins, tmp_path):
    """SIGTERM to `acl-emu run ./prog` (a CI timeout) is passed on; the program's library writes the summary and
    the trace, the program then dies of SIGTERM, and the exit code is 143, as the README says of a script."""
    proc = _start([sys.executable, "-m", "emu", "run", "--out", str(tmp_path), str(bins / "looping")], bins)
    _await_line(proc.stdout, "ready")
    os.kill(proc.pid, signal.SIGTERM)
    code, out, err = _finish(proc)
    assert code == 143, out + err
    _summary_written(err, tmp_path)
    assert "signal SIGTERM" in err


@pytest.mark.parametrize("send", [os.kill, os.killpg], ids=["to-acl-emu-run-alone", "to-the-group"])
def test_sigint_under_acl_emu_run_stops_the_run_with_its_summary(bins, tmp_path, send):
    """SIGINT sent to the `acl-emu run` process alone (not its group) is passed on; sent to the process group
    (`kill -INT -PGID`), the program dies of SIGINT, having written its summary and trace. Either way the run stops
    with its summary and trace, and `acl-emu run` exits 130."""
    proc = _start([sys.executable, "-m", "emu", "run", "--out", str(tmp_path), str(bins / "looping")], bins)
    _await_line(proc.stdout, "ready")
    send(proc.pid, signal.SIGINT)
    code, out, err = _finish(proc)
    assert code == 130, out + err
    _summary_written(err, tmp_path)


def test_ctrl_c_in_a_terminal_reaches_the_program_once(bins, tmp_path):
    """Ctrl-C typed in the terminal of `acl-emu run ./prog`: the program's own handler runs once (the terminal
    signalled the whole foreground group; `acl-emu run` passes on no second one), and the run ends with its
    summary."""
    master, slave = pty.openpty()

    def terminal():  # the pty is the session's controlling terminal, this group its foreground
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([sys.executable, "-m", "emu", "run", "--out", str(tmp_path), str(bins / "looping"), "own"],
                            cwd=bins, stdin=slave, stdout=slave, stderr=slave, env=_env(), preexec_fn=terminal)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"ready" not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                seen += os.read(master, 4096)
        assert b"ready" in seen, seen
        os.write(master, b"\x03")
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # (EIO: every process of the terminal has closed it)
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = seen.decode(errors="replace")
    assert code == 0 and "interrupts 1" in text, text
    assert "[acl-emu] 910B: simulated time" in text


@pytest.mark.parametrize("how, code, sig", [("segv", 128 + signal.SIGSEGV, "SIGSEGV"),
                                            ("abort", 128 + signal.SIGABRT, "SIGABRT"),
                                            ("_exit3", 3, None), ("exit3", 3, None)])
def test_acl_emu_run_json_prints_an_object_however_the_program_ends(bins, tmp_path, how, code, sig):
    """`acl-emu run --json ./prog` prints one JSON object whether the program dies of a signal, leaves by _exit
    (no exit handler: no summary) or exits non-zero: its exit code, its signal, what is known."""
    done = _cli("run", "--json", "--out", str(tmp_path), str(bins / "ending"), how, cwd=bins)
    assert done.returncode == code, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["exit_code"] == code and result["signal"] == sig and result["script"].endswith("ending")
    if how == "exit3":
        assert result["calls"]["aclrtMalloc"] == 1
    else:
        assert result["summary"] is False and result["made_acl_calls"] is True and result["error"]


# -- crashes and forked children ------------------------------------------------------------------------------

def test_a_wild_host_pointer_crash_names_the_call_and_the_address(bins):
    """aclrtMemcpy from (void *)0x10: the program dies of SIGSEGV as the real runtime's copy would make it, but the
    line before names the call and the address, never the same words as the program's own crash."""
    done = _run(bins, "wild")
    assert done.returncode == -signal.SIGSEGV, done.stdout + done.stderr
    assert "acl-emu: aclrtMemcpy read host address 0x10, which is not mapped" in done.stderr, done.stderr


@pytest.mark.parametrize("where", ["main", "callback"])
def test_the_programs_own_crash_names_no_acl_call(bins, where):
    """A null pointer read in the program's own code (main, or its callback that aclrtProcessReport runs) dies of
    SIGSEGV with no line of the emulator's."""
    done = _run(bins, "own_crash", where)
    assert done.returncode == -signal.SIGSEGV, done.stdout + done.stderr
    assert "acl-emu" not in done.stderr, done.stderr


def test_acl_emu_run_names_the_call_a_program_died_in(bins, tmp_path):
    """`acl-emu run` says which call a program died in and why; with --json, in the object too."""
    done = _cli("run", "--out", str(tmp_path), str(bins / "wild"), cwd=bins)
    assert done.returncode == 128 + signal.SIGSEGV
    assert "ended by signal SIGSEGV in aclrtMemcpy" in done.stderr and "0x10" in done.stderr, done.stderr
    as_json = _cli("run", "--json", "--out", str(tmp_path), str(bins / "wild"), cwd=bins)
    result = json.loads(as_json.stdout)
    assert result["crash"]["api"] == "aclrtMemcpy" and "0x10" in result["crash"]["what"]


@pytest.mark.parametrize("how", ["fork", "exec"])
def test_a_forked_child_that_outlives_its_parent_writes_none_of_its_files(bins, tmp_path, how):
    """A child forked by the program (or a program it executes) outlives it, makes an ACL call and exits: the
    parent's trace stays the parent's (no aclrtGetDeviceCount in it), and the child prints no traceback."""
    done = _cli("run", "--json", "--out", str(tmp_path), str(bins / "orphan"), how, cwd=bins)
    # (subprocess.run returns once the child, which holds the same stderr, has exited too)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "child: aclrtGetDeviceCount 0, 8 devices" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "acl-emu:" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["calls"] == {"aclrtSetDevice": 1, "aclrtMalloc": 1, "aclrtMemcpy": 1}
    assert "aclrtGetDeviceCount" not in (tmp_path / "trace.json").read_text()


# -- files that cannot be written -----------------------------------------------------------------------------

def test_a_summary_the_library_cannot_write_is_one_line_and_the_exit_code_stays(bins, tmp_path):
    """Under `acl-emu run`'s settings, a summary whose file cannot be written (its folder is a regular file): one
    line naming the file and the error, no traceback, the program's own exit code."""
    spec = {"out": str(tmp_path / "out"), "program": "spoiler", "result": "/etc/hostname/result.json"}
    done = _run(bins, "spoiler", env={"ACL_EMU_NATIVE_RUN": json.dumps(spec)})
    assert done.returncode == 5, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "/etc/hostname/result.json" in lines[0] and "Not a directory" in lines[0], done.stderr


def test_acl_emu_run_says_when_the_trace_could_not_be_written(bins, tmp_path):
    """--out made a regular file while the program runs: the summary is printed and says the trace could not be
    written and why; the program's exit code is kept."""
    out = tmp_path / "out"
    out.mkdir()
    done = _cli("run", "--out", str(out), str(bins / "spoiler"), str(out), cwd=bins)
    assert done.returncode == 5, done.stderr
    assert "[acl-emu] 910B: simulated time" in done.stderr and "Traceback" not in done.stderr
    assert f"could not write the trace {out / 'trace.json'}" in done.stderr, done.stderr
    assert "made no ACL call" not in done.stderr


def test_acl_emu_run_says_when_the_summary_could_not_be_written(bins, tmp_path):
    """The folder of the run's summary made a regular file while the program runs: `acl-emu run` says that the
    program could not write it (and why), not that it made no ACL call; the exit code is the program's."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = _cli("run", "--out", str(tmp_path / "out"), str(bins / "spoiler"), str(tmp), cwd=bins,
                env={"TMPDIR": str(tmp)})
    assert done.returncode == 5, done.stderr
    assert "made no ACL call" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if "summary" in line]
    assert len(lines) == 1 and "no summary: it could not be written to" in lines[0], done.stderr
    assert "result.json: Not a directory (exit code 5)" in lines[0], done.stderr
