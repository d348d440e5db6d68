"""The `acl-emu` command (also `python -m emu`).

    acl-emu run [SCRIPT] [ARGS...]    an unchanged pyACL script under the emulator, as python runs it,
    acl-emu run -m MODULE [ARGS...]   then a summary (--host-time wall, the default, or calls; --json:
                                      only the JSON on stdout; see `run --help`)
    acl-emu products                  the product configs and where their numbers come from
    acl-emu bandwidth                 H2D / D2H / D2D / peer bandwidth across message sizes
    acl-emu overlap                   plan copy/compute overlap: streams x chunks
    acl-emu compare                   one study side by side across products
    acl-emu sweep                     the overlap pipeline over a grid, one tidy table (parallel on Dask)
    acl-emu validate                  the model against public hardware measurements
    acl-emu calibrate FILE -o X.toml  a config fitted to your own server's measurements
    acl-emu replay PROFILE            a profiled step (msprof, task_time, MSPTI) re-timed on other products

Every subcommand takes --json. Exit codes: 0 success, 1 failure, 2 bad arguments.
"""
from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib.machinery
import importlib.util
import json
import logging
import math
import os
import runpy
import signal
import sys
import tempfile
import threading
import traceback
import types
from pathlib import Path

from . import config, files
from .config import ConfigError, load
from .modeldecl import MODELS_ENV
from .models.atomic import atomic_write, partial_path, sweep_stale
from .studies import (bandwidth, bandwidth_report, calibrate, calibrate_report, compare, compare_report, holdout,
                      overlap, overlap_report, products, products_report, replay, replay_report, sweep, validate,
                      validate_report)
from .studies.args import (microseconds, microseconds_list, names_arg, parse_ints, parse_sizes_arg, parse_steps,
                           parse_window, positive_int, positive_ints, product_arg, product_error, product_list, typed)
from .studies.common import SIZE_HELP, Progress, parse_size, parse_sizes

EXAMPLE = Path(__file__).parent / "examples" / "copy_pipeline.py"
LOG = logging.getLogger(__name__)


class StderrHandler(logging.StreamHandler):
    """Log records as their bare message on the sys.stderr of the moment (`acl-emu run --json` and pytest's
    capture replace it)."""

    def __init__(self):
        super().__init__()
        self.setFormatter(logging.Formatter("%(message)s"))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


_HANDLER = StderrHandler()


def set_verbosity(quiet: bool = False, verbose: bool = False) -> None:
    """The `emu` logger of the command: its informational lines (a run's summary, files written, progress bars)
    on stderr; -q/--quiet: warnings and errors only, no progress bar; -v/--verbose: debug lines too. It is the
    `emu` logger alone (not propagated): a script under `acl-emu run` keeps its own logging setup."""
    logger = logging.getLogger("emu")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    logger.propagate = False
    logger.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


class Parser(argparse.ArgumentParser):
    """Bad arguments: one line naming the argument, exit code 2."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


class UserError(Exception):
    """A mistake in a command's arguments or environment: `acl-emu <cmd>: error: <message>`, exit code 2."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI timeout or cancel) stopped the script: raised in it as SIGINT raises KeyboardInterrupt, so
    its own `finally` and `except KeyboardInterrupt` run and the summary and the trace are written; exit code
    143 (128 + SIGTERM)."""

    def __init__(self):
        super().__init__("SIGTERM: the run was stopped (a CI timeout or cancel?)")


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While the script runs (main thread only, where Python runs signal handlers), SIGTERM raises Terminated;
    the previous handler is back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def env_product() -> str | None:
    """$ACL_EMU_PRODUCT if set; a product that does not load is a UserError naming the variable."""
    text = os.environ.get("ACL_EMU_PRODUCT")
    if not text:
        return None
    try:
        load(text)
    except ConfigError as e:
        raise UserError(f"environment variable ACL_EMU_PRODUCT: {product_error(text, e)}") from None
    return text


def writable_dir(path: str | os.PathLike, what: str) -> Path:
    """`path` made absolute, once it is known that files can be written there: it is a directory (or can
    be made one under its nearest existing parent) and that directory takes a file. Otherwise a UserError
    naming `what` (the argument)."""
    target = Path(os.path.abspath(path))
    probe = target
    try:
        while not probe.exists():
            probe = probe.parent
        if not probe.is_dir():
            why = "is not a directory" if probe == target else "is a file, not a directory"
            raise UserError(f"{what}: {probe} {why}")
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as e:
        raise UserError(f"{what}: cannot write in {probe}: {e.strerror or e}") from None
    return target


def writable_file(path: str | os.PathLike, what: str) -> Path:
    """`path` made absolute, once it is known that a file can be written there (see writable_dir)."""
    target = Path(os.path.abspath(path))
    if target.is_dir():
        raise UserError(f"{what}: {target} is a directory, not a file")
    writable_dir(target.parent, what)
    return target


def os_error_text(e: OSError) -> str:
    """An OSError as one line: the reason and the file."""
    where = f": {e.filename}" if e.filename is not None else ""
    return f"{e.strerror or e}{where}"


def host_time_scale_arg(text: str) -> float:
    try:
        scale = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(scale) and scale >= 0):
        raise argparse.ArgumentTypeError(f"{text!r}: the scale must be a finite number >= 0")
    return scale


def run_script(script: str, args: list[str], product: str | None = None, out: str | None = None,
               as_json: bool = False, host_time: str | None = None, host_time_scale: float | None = None,
               module: bool = False, msprof: str | None = None, sanitize=None,
               sanitize_json: str | None = None) -> int:
    """Run an unchanged pyACL script with the emulator installed as `acl`, then summarise what it did.

    The script runs as `python script.py args` would run it (or `python -m module args` with
    module=True): its folder (for -m, the working directory) first on sys.path, sys.argv[0] the
    script path, __file__ set, __name__ "__main__". An exception in the script prints its traceback
    and exits 1; sys.exit(n) exits n; either way the summary and the trace are still written and the
    script's exit code is returned. With as_json, the script's own output (Python's sys.stdout and
    file descriptor 1) goes to stderr, so stdout carries only the JSON summary. Afterwards sys.path,
    sys.argv, sys.modules["__main__"], `acl` in sys.modules and the modules the script imported from
    its own folder are as they were.

    host_time ("wall" or "calls") and host_time_scale: see `emu.configure`. Without product, the run
    is a fresh process on the previous runtime's product, functional mode and (unless given) host
    time; otherwise host time defaults to $ACL_EMU_HOST_TIME, else "wall": the script's own work
    between ACL calls takes time, as it would on the hardware.

    sanitize: the sanitizer's checks (`emu.configure(sanitize=...)`): once the script has ended its queued
    work runs to its end, the report goes to stderr (its findings also into the JSON summary, the trace's
    arrows and, with sanitize_json, that file), and a finding makes the exit code 1 if the script's own was 0.

    A child the script forked (os.fork) that returns from the script writes none of the run's files and prints
    no summary: they are its parent's. It returns the script's exit code.
    """
    import emu
    from .studies.runsummary import run_result

    if _HANDLER not in logging.getLogger("emu").handlers:  # called from Python, not through main
        set_verbosity()
    _configure_for_script(product, host_time, host_time_scale, sanitize)
    pid = os.getpid()
    with _python_like_state(script, module):
        emu.install()
        with (_stdout_to_stderr() if as_json else contextlib.nullcontext()), sigterm_as_interrupt():
            code, error = _execute(script, args, module)
    sys.stdout.flush()
    if os.getpid() != pid:  # a forked child that returned from the script
        return code
    san = emu.current().sanitizer
    result = run_result(emu.current(), Path(out) if out else None, f"-m {script}" if module else script, code,
                        error, msprof)
    if san is not None and sanitize_json:
        with atomic_write(sanitize_json, "w") as f:
            json.dump(result["sanitizer"], f, indent=2)
    _summarise(result, as_json, msprof)
    if san is not None:
        code = _report_sanitizer(san, sanitize_json, code)
    return code


def _summarise(result: dict, as_json: bool, msprof: str | None) -> None:
    """The run's summary: the JSON on stdout, or its lines (and the msprof file's) through the `emu` logger on
    stderr (none under -q)."""
    from .studies.runsummary import print_summary, summary_text

    if as_json:
        print_summary(result, as_json=True)
        return
    LOG.info("%s", summary_text(result))
    if msprof:
        LOG.info("msprof timeline: %s (MindStudio Insight, Perfetto; acl-emu replay reads it)", result["msprof"])


def _configure_for_script(product: str | None, host_time: str | None, host_time_scale: float | None,
                          sanitize) -> None:
    """A fresh runtime for the script: without product, on the previous runtime's product, functional mode
    and (unless given) host time; otherwise on `product`, host time defaulting to $ACL_EMU_HOST_TIME, else
    "wall"."""
    import emu

    previous = emu.runtime.configured()
    if product is None and previous is not None:  # a fresh process on the product chosen before
        if host_time is None:
            host_time = previous.host_time
            if host_time_scale is None:
                host_time_scale = previous.host_time_scale
        emu.configure(product=previous.product.path, functional=previous.functional, host_time=host_time,
                      host_time_scale=host_time_scale, sanitize=sanitize)
    else:
        emu.configure(product=product, host_time=_host_time_or_wall(host_time), host_time_scale=host_time_scale,
                      sanitize=sanitize)


def _host_time_or_wall(host_time: str | None) -> str | None:
    """The host time a run on a product it names takes: `host_time` if given, else $ACL_EMU_HOST_TIME's (None
    here: the runtime reads it), else "wall"."""
    from .runtime import host_time_from_env

    return "wall" if host_time is None and host_time_from_env() is None else host_time


def _report_sanitizer(san, sanitize_json: str | None, code: int) -> int:
    """The sanitizer's report on stderr; the script's exit code, made 1 by a finding if it was 0."""
    print(san.report(), file=sys.stderr)
    if sanitize_json:
        LOG.info("sanitizer findings: %s", sanitize_json)
    if san.findings and code == 0:
        code = 1
    return code


def _execute(target: str, args: list[str], module: bool) -> tuple[int, str | None]:
    """Run the script as __main__: (exit code, the exception that stopped it as one line, or None)."""
    try:
        if module:
            sys.argv = [target, *args]  # run_module puts the module's file in argv[0], as python -m does
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            path = os.path.abspath(target)
            if os.path.isfile(path):
                _exec_file(path)
            else:  # a folder or zip file with a __main__.py
                runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        if e.code is None:
            return 0, None
        if isinstance(e.code, int):
            return e.code, None if e.code == 0 else f"SystemExit: {e.code}"
        print(e.code, file=sys.stderr)
        return 1, f"SystemExit: {e.code}"
    except BaseException as e:  # as python: the traceback (the script's frames only), then exit 1
        sys.stdout.flush()
        tb = e.__traceback__
        while tb is not None and _is_runner_frame(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb, file=sys.stderr)
        line = traceback.format_exception_only(type(e), e)[-1].strip()
        code = 128 + signal.SIGTERM if isinstance(e, Terminated) else 130 if isinstance(e, KeyboardInterrupt) else 1
        return code, line
    return 0, None


def _is_runner_frame(filename: str) -> bool:
    return filename in (__file__, runpy.__file__) or filename == "<frozen runpy>"


def _exec_file(path: str) -> None:
    """Run a source file as the __main__ module, the way `python path` does."""
    source = files.read_bytes(path, files.SCRIPT_BYTES, "a script")
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __builtins__=builtins,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


@contextlib.contextmanager
def _python_like_state(target: str, module: bool):
    """sys.path[0] as python sets it; afterwards sys.path, sys.argv, __main__, `acl` and the modules the
    script imported from its own folder are put back."""
    first = os.getcwd() if module else os.path.dirname(os.path.realpath(target))
    path, path_items, argv, argv_items = sys.path, list(sys.path), sys.argv, list(sys.argv)
    saved_modules = dict(sys.modules)
    sys.path.insert(0, first)
    try:
        yield
    finally:
        sys.path, sys.argv = path, argv
        path[:], argv[:] = path_items, argv_items
        folder = os.path.join(os.path.realpath(first), "")
        for name in [n for n in sys.modules if n not in saved_modules]:
            top = name.split(".", 1)[0]
            file = getattr(sys.modules[name], "__file__", None) or ""
            if top not in saved_modules and os.path.realpath(file).startswith(folder):
                del sys.modules[name]
        for name in [n for n in sys.modules if n == "acl" or n.startswith("acl.")]:
            del sys.modules[name]
        for name in ("__main__", *(n for n in saved_modules if n == "acl" or n.startswith("acl."))):
            if name in saved_modules:
                sys.modules[name] = saved_modules[name]


@contextlib.contextmanager
def _stdout_to_stderr():
    """The script's output, Python's and file descriptor 1's (C code, child processes), to stderr."""
    saved = sys.stdout
    for stream in (sys.stdout, sys.__stdout__):
        if stream is not None:
            stream.flush()
    try:
        fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        fd = None
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.__stdout__, sys.stderr):
            if stream is not None:
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
        sys.stdout = saved
        if fd is not None:
            os.dup2(fd, 1)
            os.close(fd)


def _run(args) -> int:
    sanitize, problem = _sanitize_arg(args)
    if problem:
        sys.stderr.write(f"acl-emu run: error: {problem}\n")
        return 2
    if args.module is not None:
        if not args.module:
            sys.stderr.write("acl-emu run: error: argument -m: expected a module name\n")
            return 2
        if args.script is not None:
            sys.stderr.write("acl-emu run: error: argument -m: give a script or -m MODULE, not both\n")
            return 2
        target, script_args = args.module[0], args.module[1:]
        if not _module_exists(target):
            sys.stderr.write(f"acl-emu run: error: argument -m: no module named {target!r}\n")
            return 2
        if target == "pytest":  # the pytest plugin, on the run's product and checks: as `pytest --acl-emu`
            script_args = ["--acl-emu", *(["--acl-emu-product", args.product] if args.product else []),
                           *([f"--acl-emu-sanitize={sanitize}"] if sanitize else []), *script_args]
    else:
        target, script_args = args.script or str(EXAMPLE), args.args
        if args.script is None and args.host_time_scale is None:  # the bundled example: its headline times
            args.host_time = _example_host_time(args.host_time)   # the calls and copies it prints
        if not Path(target).exists():
            sys.stderr.write(f"acl-emu run: error: argument SCRIPT: no such file {target!r}\n")
            return 2
        if Path(target).is_dir() and not (Path(target) / "__main__.py").is_file():
            sys.stderr.write(f"acl-emu run: error: argument SCRIPT: {target!r} is a directory with no "
                             f"__main__.py\n")
            return 2
        what = None if Path(target).is_dir() else files.kind(os.stat(target).st_mode)
        if what is not None:  # a FIFO would block, /dev/zero would be read without end
            sys.stderr.write(f"acl-emu run: error: argument SCRIPT: {target}: {what}, not a regular file: a script "
                             f"or program is run from a regular file\n")
            return 2
    if args.host_time is None:
        from .runtime import host_time_from_env
        try:
            host_time_from_env()
        except ValueError as e:
            sys.stderr.write(f"acl-emu run: error: {e}\n")
            return 2
    import emu

    if args.product is None and emu.runtime.configured() is None:
        env_product()  # the product run_script would take from the environment loads
    models = _models_arg(args.model)
    out = writable_dir(args.out, "argument --out")  # absolute: the script may change directory
    msprof = str(writable_file(args.msprof, "argument --msprof")) if args.msprof else None
    sanitize_json = str(writable_file(args.sanitize_json, "argument --sanitize-json")) if args.sanitize_json else None
    with _environment("ACL_EMU_NETWORK", "reference" if args.reference else None), _environment(MODELS_ENV, models):
        if args.module is None and _native(target):
            return _run_native(args, target, script_args, sanitize, str(out), msprof, sanitize_json)
        return run_script(target, script_args, args.product, str(out), args.json, args.host_time,
                          args.host_time_scale, module=args.module is not None, msprof=msprof, sanitize=sanitize,
                          sanitize_json=sanitize_json)


def _example_host_time(host_time: str | None) -> str | None:
    """The host time of the bundled example (`acl-emu run` without a script): the one asked for (--host-time,
    $ACL_EMU_HOST_TIME, or wall by a --host-time-scale), else "calls". Under "wall" its headline would be
    mostly this machine's own time filling and comparing 64 MiB with numpy, where the example prints the time
    of its copies."""
    from .runtime import host_time_from_env

    try:
        given = host_time or host_time_from_env()
    except ValueError:
        return host_time  # (the caller says what is wrong with $ACL_EMU_HOST_TIME)
    return host_time if given else "calls"


def _models_arg(pairs: list[str] | None) -> str | None:
    """--model X.om=DECL.toml (repeatable) as $ACL_EMU_MODELS, paths made absolute and ahead of what the
    environment already names; a malformed pair or a missing declaration is a UserError."""
    if not pairs:
        return None
    items = []
    for pair in pairs:
        om, sep, decl = pair.partition("=")
        if not sep or not om or not decl:
            raise UserError(f"argument --model: {pair!r} is not MODEL.om=DECLARATION.toml")
        if not Path(decl).exists():
            raise UserError(f"argument --model: no declaration file {decl!r}")
        what = files.kind(os.stat(decl).st_mode)
        if what is not None:
            raise UserError(f"argument --model: {decl}: {what}, not a regular file: a model declaration is read from "
                            f"a regular file")
        items.append(f"{os.path.abspath(om)}={os.path.abspath(decl)}")
    return ";".join(items + [os.environ[MODELS_ENV]] if os.environ.get(MODELS_ENV) else items)


def _native(target: str) -> bool:
    from .capi.commands import is_native
    return is_native(target)


def _run_native(args, program: str, program_args: list[str], sanitize, out: str, msprof: str | None,
                sanitize_json: str | None) -> int:
    """`acl-emu run ./prog ARGS`: the program runs on the emulator's libascendcl.so (emu.capi), configured as a
    script's run would be; its summary, trace, msprof timeline and sanitizer report as for a script."""
    from .capi import BuildError
    from .capi.commands import run_native

    host_time = _host_time_or_wall(args.host_time)
    product = args.product
    if product is not None and os.path.exists(product):
        product = os.path.abspath(product)
    spec = {"product": product, "host_time": host_time, "host_time_scale": args.host_time_scale,
            "sanitize": sanitize, "out": out, "msprof": msprof, "program": program}
    try:
        ended, result, told = run_native(program, program_args, spec, args.json)
    except BuildError as e:
        raise UserError(str(e)) from None
    code, name = ended.code, ended.signal_name  # (an exit status of 129-255 is an exit, not a signal)
    if result is None:
        why = _no_summary_why(code, name, told)
        LOG.warning("[acl-emu] %s: no summary: %s (exit code %d)", program, why, code)
        if args.json:  # what is known, as one JSON object still
            crash = {"api": told.crash[0], "what": told.crash[1]} if told.crash else None
            print(json.dumps({"script": program, "exit_code": code, "signal": name, "error": why, "crash": crash,
                              "made_acl_calls": told.started, "summary": False}, indent=2))
        return code
    result["exit_code"] = code
    result["signal"] = name
    if name is not None:
        result["error"] = f"signal {name}"
    _summarise(result, args.json, msprof)
    return _report_native_sanitizer(result, sanitize_json, code)


def _no_summary_why(code: int, name: str | None, told) -> str:
    """Why a C program under `acl-emu run` left no summary, from its exit and what its library told the run
    (`emu.capi.commands.Status`)."""
    if told.crash is not None:
        api, what = told.crash
        return f"it ended by signal {name or code} in {api}: it {what}"
    if told.unwritten is not None:  # ("it could not be written to PATH: the reason")
        return told.unwritten
    if name is not None:
        return f"it ended by signal {name}" + ("" if told.started else ", before any ACL call")
    if told.started:
        return "it made ACL calls but ended without running its exit handlers (_exit, or an exec)"
    return "it made no ACL call"


def _report_native_sanitizer(result: dict, sanitize_json: str | None, code: int) -> int:
    """The C program's sanitizer report on stderr (and its findings in `sanitize_json`); a finding makes the
    exit code 1 if the program's was 0."""
    if "sanitizer_report" not in result:
        return code
    print(result["sanitizer_report"], file=sys.stderr)
    if sanitize_json:
        with atomic_write(sanitize_json) as f:
            json.dump(result["sanitizer"], f, indent=2)
        LOG.info("sanitizer findings: %s", sanitize_json)
    return 1 if result["sanitizer_findings"] and code == 0 else code


@contextlib.contextmanager
def _environment(name: str, value: str | None):
    """`name` set to `value` in the environment while the block runs (nothing changed when value is None)."""
    if value is None:
        yield
        return
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _sanitize_arg(args):
    """(the checks of --sanitize, None without it; an error message, None if all is well)."""
    from .sanitize import parse_tools

    value = args.sanitize
    if value is None:
        return ("all" if args.sanitize_json else None), None
    try:
        return ",".join(sorted(parse_tools(value))), None
    except ValueError as e:
        return None, f"argument --sanitize: {e}"


_RUN_VALUE_OPTIONS = ("--product", "--host-time", "--host-time-scale", "--out", "--msprof", "--sanitize-json",
                      "--model")


def _bare_sanitize(argv: list[str]) -> list[str]:
    """`acl-emu run --sanitize script.py ARGS`: a bare --sanitize followed by something that is not a list of
    checks means all of them (argparse would take the script for the option's value)."""
    from .sanitize import parse_tools

    if "run" not in argv:
        return argv
    argv = list(argv)
    i = argv.index("run") + 1
    while i < len(argv):
        token = argv[i]
        if token == "--sanitize":
            following = argv[i + 1] if i + 1 < len(argv) else None
            try:
                is_checks = following is not None and not following.startswith("-") and bool(parse_tools(following))
            except ValueError:
                is_checks = False
            if not is_checks:
                argv[i] = "--sanitize=all"
            i += 2 if is_checks else 1
        elif token in _RUN_VALUE_OPTIONS:
            i += 2
        elif token.startswith("-") and token != "-m":
            i += 1
        else:
            break  # the script, or -m MODULE: the rest is the script's
    return argv


def _module_exists(name: str) -> bool:
    """Whether -m NAME can be found from the working directory (its top-level package; nothing is imported)."""
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name.split(".", 1)[0]) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)


# -- the studies' commands --------------------------------------------------------------------------------------
# Each study has an add_<study>(sub) that declares its arguments and a <study>_command(args) that checks what
# argparse cannot (sizes that fit the product, chunk counts that fit the bytes), runs the study (it returns
# plain data), has its report module write the files and draw the text, and prints.

def _argument_error(command: str, message: str) -> int:
    """A bad argument found after parsing: one line `acl-emu <command>: error: <message>`, exit code 2."""
    sys.stderr.write(f"acl-emu {command}: error: {message}\n")
    return 2


def _env_or_default_product() -> str:
    return os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT


def add_products(sub) -> None:
    p = sub.add_parser("products", help="the product configs and where their numbers come from")
    p.add_argument("--products", type=typed(product_list, "products"),
                   help="comma-separated product names (default: all)")
    p.add_argument("--sources", action="store_true", help="list the source of every number")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=products_command)


def products_command(args) -> int:
    rows = products.products(args.products)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(products_report.report(rows, sources=args.sources))
    return 0


def add_bandwidth(sub) -> None:
    p = sub.add_parser("bandwidth", help="H2D / D2H / D2D / peer bandwidth across message sizes",
                       description="What nvbandwidth and ascend-dmi's bandwidth test report, from the model: ACL "
                                   "copies in timing-only mode, timed with events.")
    p.add_argument("--product", type=product_arg, help="product name or TOML path (default: $ACL_EMU_PRODUCT or "
                                                       f"{config.DEFAULT_PRODUCT})")
    p.add_argument("--sizes", type=typed(parse_sizes_arg, "sizes"), default=None,
                   help=f"message sizes: a range of powers of two or a list (default: {bandwidth.DEFAULT_SIZES}); {SIZE_HELP}")
    p.add_argument("--peer-size", type=typed(parse_size, "size"), default=None,
                   help="message size of the device-to-device matrix (default: the largest size, at most 256M)")
    p.add_argument("--reps", type=typed(positive_int, "count"), default=bandwidth.REPETITIONS,
                   help=f"copies per measurement (default: {bandwidth.REPETITIONS})")
    p.add_argument("--out", help="directory for the CSV, JSON and PNG files (default: "
                                 "acl-emu-out/bandwidth-<product>)")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    p.set_defaults(func=bandwidth_command)


# the argument behind each kind of size a bandwidth study refuses (bandwidth.SizeError.argument)
_SIZE_FLAGS = {"sizes": "--sizes", "peer_sizes": "--peer-size"}


def _peer_sizes(sizes: list[int], peer: int | None) -> list[int] | None:
    """--peer-size: the sizes below it and it (None: the study's default)."""
    return None if peer is None else [s for s in sizes if s < peer] + [peer]


def bandwidth_command(args) -> int:
    product = getattr(args, "product", None) or _env_or_default_product()
    name = load(product).name
    sizes = getattr(args, "sizes", None) or parse_sizes(bandwidth.DEFAULT_SIZES)
    peer_sizes = _peer_sizes(sizes, getattr(args, "peer_size", None))
    reps = getattr(args, "reps", None) or bandwidth.REPETITIONS
    try:
        sizes, peer_sizes = bandwidth.check(product, sizes, peer_sizes)
    except bandwidth.SizeError as e:
        return _argument_error("bandwidth", f"argument {_SIZE_FLAGS[e.argument]}: {e}")
    with Progress(bandwidth.count_steps(product, sizes, peer_sizes), f"bandwidth {name}") as bar:
        result = bandwidth.measure(product, sizes, peer_sizes=peer_sizes, progress=bar, repetitions=reps,
                                   peer_repetitions=min(reps, bandwidth.PEER_REPETITIONS))
    out = getattr(args, "out", None)
    bandwidth_report.write(result, Path(out) if out else Path("acl-emu-out") / f"bandwidth-{name}")
    if getattr(args, "json", False):
        print(json.dumps(result, indent=2))
        return 0
    print(bandwidth_report.report(result))
    return 0


COMPUTE_FROM_HELP = ("take the compute time from a kernel a run measured: RUN.json is what `acl-emu run --json` "
                     "printed, KERNEL a kernel's name (default: the one with the most time); the compute per "
                     "iteration is its mean time per launch in that run, times --launches")


def add_compute_from(p) -> None:
    """--compute-from RUN.json[:KERNEL] and --launches N (`overlap.compute_from_run`), for overlap and sweep."""
    p.add_argument("--compute-from", metavar="RUN.json[:KERNEL]", default=None, help=COMPUTE_FROM_HELP)
    p.add_argument("--launches", type=typed(positive_int, "count"), default=None, metavar="N",
                   help="with --compute-from: the kernel's launches per iteration (default 1)")


def compute_from_arg(args, given: bool) -> tuple[dict | None, str | None]:
    """(the `overlap.compute_from_run` of --compute-from, or None; the argument error, or None). `given`:
    whether --compute-us was given too (one or the other)."""
    if args.compute_from is None:
        return None, ("argument --launches: only with --compute-from" if args.launches is not None else None)
    if given:
        return None, "argument --compute-from: give --compute-us or --compute-from, not both"
    try:
        return overlap.compute_from_run(args.compute_from, args.launches or 1), None
    except ValueError as e:
        return None, f"argument --compute-from: {e}"


def add_overlap_arguments(p, required: bool = True, compute_from: bool = False) -> None:
    """The overlap study's options, shared by `acl-emu overlap` and `acl-emu compare overlap` (compute_from: with
    --compute-from and --launches, --compute-us then one way of two)."""
    p.add_argument("--h2d", type=typed(parse_size, "size"), required=required, metavar="BYTES",
                   help=f"bytes copied host to device per iteration (4096, 4K, 64M, 1GiB; {SIZE_HELP})")
    p.add_argument("--d2h", type=typed(parse_size, "size"), required=required, metavar="BYTES",
                   help="bytes copied device to host per iteration (as --h2d)")
    p.add_argument("--compute-us", type=typed(microseconds, "microseconds"), required=required and not compute_from,
                   metavar="US", help="kernel time per iteration, in microseconds (split evenly across the chunks)"
                   + ("; or --compute-from" if compute_from else ""))
    if compute_from:
        add_compute_from(p)
    p.add_argument("--streams", type=typed(positive_ints(overlap.MAX_STREAMS, "streams"), "ints"),
                   default=parse_ints(overlap.DEFAULT_STREAMS), metavar="N",
                   help=f"stream counts to try: 1..8 or 1,2,4 (default {overlap.DEFAULT_STREAMS})")
    p.add_argument("--chunks", type=typed(positive_ints(overlap.MAX_CHUNKS, "chunks"), "ints"),
                   default=parse_ints(overlap.DEFAULT_CHUNKS), metavar="N",
                   help=f"chunk counts to try (default {overlap.DEFAULT_CHUNKS})")
    p.add_argument("--pageable", action="store_true",
                   help="copy from pageable host memory (the copies become synchronous) instead of page-locked")
    p.add_argument("--grid-only", action="store_true",
                   help=f"try the grid only; by default, while the best setting is on the grid's edge, twice as "
                        f"many chunks or streams are tried until the time stops improving (at most "
                        f"{overlap.SEARCH_MAX_CHUNKS} chunks, {overlap.SEARCH_MAX_STREAMS} streams)")


def add_overlap(sub) -> None:
    p = sub.add_parser("overlap", help="plan copy/compute overlap: streams x chunks",
                       description="Simulate the chunked H2D / kernel / D2H pipeline over N streams, sweep streams "
                                   "and chunks (and past the grid's edge while the time improves), and name the "
                                   "best setting, its distance from the floor (the busiest resource's time), "
                                   "the resource that sets it and what would go faster.")
    p.add_argument("--product", type=product_arg, help="product name or TOML path (default: $ACL_EMU_PRODUCT "
                                                       "or 910B)")
    add_overlap_arguments(p, compute_from=True)
    p.add_argument("--out", metavar="DIR", help="output directory (default: acl-emu-out/overlap-<product>)")
    p.add_argument("--msprof", metavar="PATH", help="also write the best schedule in the msprof timeline layout "
                                                     "(opens in MindStudio Insight and Perfetto)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=overlap_command)


def _overlap_mistake(args, products: list[config.Product], flag: str) -> str | None:
    """What makes the overlap sweep impossible on these products, as an argument error; None if it can run."""
    for p in products:
        missing = overlap.missing_apis(p, args.pageable)
        if missing:
            return (f"argument {flag}: {p.name} does not support {', '.join(missing)}: the overlap pipeline cannot "
                    f"run on it")
        try:
            overlap.check_memory(p, args.h2d, args.d2h)
        except ValueError as e:
            return f"argument --h2d/--d2h: {e}"
    try:
        overlap.check_work(args.streams, args.chunks)
    except ValueError as e:
        return f"argument --streams/--chunks: {e}"
    limit = min(args.h2d, args.d2h)
    if max(args.chunks) > limit:
        return f"argument --chunks: {max(args.chunks)} chunks of {limit} bytes leave a chunk empty"
    if min(args.streams) > max(args.chunks):
        return f"argument --streams: every setting has more streams than chunks (at most {max(args.chunks)} chunks)"
    return None


def _overlap_settings(args) -> int:
    """How many streams x chunks settings the sweep runs (streams <= chunks), for a progress bar."""
    return len(overlap.grid_settings(args.streams, args.chunks))


def overlap_runs(product, result: dict) -> dict[str, dict]:
    """`overlap.timelines`, and the planner's within-1% setting as "near_best" when the best has more chunks than
    a Gantt chart can show (overlap_report.READABLE_CHUNKS): the chart draws that one in its place."""
    runs = overlap.timelines(product, result)
    near, best = result["near_best"], result["best"]
    if best["chunks"] > overlap_report.READABLE_CHUNKS and near["chunks"] < best["chunks"]:
        runs["near_best"] = overlap.timelines(product, {**result, "best": near})["best"]
    return runs


def overlap_command(args) -> int:
    product = load(args.product or _env_or_default_product())
    source, mistake = compute_from_arg(args, args.compute_us is not None)
    if source is None and args.compute_us is None and mistake is None:
        mistake = "the following arguments are required: --compute-us (or --compute-from)"
    mistake = mistake or _overlap_mistake(args, [product], "--product")
    if mistake:
        return _argument_error("overlap", mistake)
    compute_us = source["compute_us"] if source else args.compute_us
    msprof = writable_file(args.msprof, "argument --msprof") if args.msprof else None
    with Progress(_overlap_settings(args), "overlap") as progress:
        result = overlap.plan(product, args.h2d, args.d2h, compute_us, args.streams, args.chunks,
                              args.pageable, progress, extend=not args.grid_only, compute_from=source)
    out = Path(args.out) if args.out else Path("acl-emu-out") / f"overlap-{product.name}"
    overlap_report.write_outputs(out, result, overlap_runs(product, result))
    if msprof is not None:
        result["files"]["msprof"] = str(replay.write_msprof_overlap(product, result, msprof))
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    print(overlap_report.report(result))
    return 0


def _compare_common(p, top: bool) -> None:
    """--products, --out and --json, accepted before the study name and after it."""
    pre = "compare_" if top else ""
    p.add_argument("--products", type=typed(product_list, "products"), default=None,
                   dest="products" if top else "study_products",
                   help=f"comma-separated product names or TOML paths (default: {compare.DEFAULT_PRODUCTS})")
    p.add_argument("--out", dest=f"{pre}out", metavar="DIR",
                   help="output directory (default: acl-emu-out/compare-<study>)")
    p.add_argument("--json", dest=f"{pre}json", action="store_true", help="machine-readable output")


def add_compare(sub) -> None:
    p = sub.add_parser("compare", help="one study side by side across products",
                       description="Run the bandwidth or the overlap study on several products; one table of "
                                   "headline numbers and one figure.")
    _compare_common(p, top=True)
    studies = p.add_subparsers(dest="study", required=True, metavar="{bandwidth,overlap}")
    bw = studies.add_parser("bandwidth", help="peak H2D / D2H / D2D / peer GB/s per product")
    bw.add_argument("--sizes", type=typed(parse_sizes_arg, "sizes"), default=None,
                    help=f"message sizes: a range of powers of two or a list (default: {compare.DEFAULT_SIZES}); {SIZE_HELP}")
    bw.add_argument("--peer-size", type=typed(parse_size, "size"), default=None,
                    help="message size of the device-to-device matrix (default: the largest size, at most 256M)")
    bw.add_argument("--reps", type=typed(positive_int, "count"), default=None,
                    help="copies per measurement (default: the bandwidth study's)")
    _compare_common(bw, top=False)
    ov = studies.add_parser("overlap", help="best streams x chunks, its time, the naive time and the floor")
    add_overlap_arguments(ov)
    _compare_common(ov, top=False)
    p.set_defaults(func=compare_command, study_products=None, out=None, json=False)


def _compare_bandwidth(args, names: list[str]) -> dict | int:
    sizes = args.sizes or parse_sizes(compare.DEFAULT_SIZES)
    peer_sizes = _peer_sizes(sizes, args.peer_size)
    steps = 0
    for name in names:
        try:
            sizes, peer_sizes = bandwidth.check(name, sizes, peer_sizes)
        except bandwidth.SizeError as e:
            return _argument_error("compare", f"argument {_SIZE_FLAGS[e.argument]}: {e}")
        steps += bandwidth.count_steps(name, sizes, peer_sizes)
    with Progress(steps, "compare bandwidth") as bar:
        return compare.compare_bandwidth(names, sizes, peer_sizes=peer_sizes, repetitions=args.reps, progress=bar)


def _compare_overlap(args, names: list[str]) -> dict | int:
    mistake = _overlap_mistake(args, [load(n) for n in names], "--products")
    if mistake:
        return _argument_error("compare", mistake)
    with Progress(_overlap_settings(args) * len(names), "compare overlap") as bar:
        return compare.compare_overlap(names, args.h2d, args.d2h, args.compute_us, args.streams, args.chunks,
                                       args.pageable, bar, extend=not args.grid_only)


def compare_command(args) -> int:
    names = args.study_products or args.products or names_arg(compare.DEFAULT_PRODUCTS)
    result = (_compare_bandwidth if args.study == "bandwidth" else _compare_overlap)(args, names)
    if isinstance(result, int):  # an argument error, said
        return result
    out = args.out or args.compare_out
    compare_report.write_outputs(result, Path(out) if out else Path("acl-emu-out") / f"compare-{args.study}")
    if args.json or args.compare_json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    print(compare_report.report(result))
    return 0


def add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="the overlap pipeline over a grid of products, sizes, streams, chunks and "
                                     "compute times; one table, serial or on Dask",
                       description="Run the overlap pipeline (acl-emu overlap's H2D / kernel / D2H chunks on N "
                                   "streams) for every combination of the given products, sizes, compute times, "
                                   "streams and chunks (streams <= chunks), from the command line or a TOML "
                                   "file, and write one tidy table: sweep.csv and sweep.parquet, one row per "
                                   "run with every swept parameter, every metric (units in the column "
                                   "names) and the unvalidated routes it rests on. --workers N runs on a local Dask cluster of N processes; "
                                   "--scheduler ADDRESS on an existing Dask cluster; runs travel there in batches "
                                   "of about 0.4 s of work, and a grid too small to win back the cluster's start "
                                   "runs in this process (the output says so). The summary names the best streams "
                                   "x chunks of each workload (product x sizes x compute time); sweep.parquet's "
                                   "schema metadata carries the acl-emu version and the grid.")
    p.add_argument("--config", metavar="FILE", help="a TOML file with a [sweep] table setting any of products, "
                                                      "h2d, d2h, compute_us, streams, chunks, pageable; "
                                                      "command-line options override it")
    p.add_argument("--products", type=typed(product_list, "products"), default=None, metavar="P1,P2",
                   help="products (default: $ACL_EMU_PRODUCT or 910B)")
    p.add_argument("--h2d", type=typed(parse_sizes_arg, "sizes"), default=None, metavar="BYTES,...",
                   help="H2D bytes per iteration (64M,256M; default 64M)")
    p.add_argument("--d2h", type=typed(parse_sizes_arg, "sizes"), default=None, metavar="BYTES,...",
                   help="D2H bytes per iteration (default 16M)")
    p.add_argument("--compute-us", type=typed(microseconds_list, "microseconds"), default=None, metavar="US,...",
                   help="compute time per iteration in microseconds (default 1500; or --compute-from)")
    add_compute_from(p)
    p.add_argument("--streams", type=typed(positive_ints(overlap.MAX_STREAMS, "streams"), "ints"), default=None,
                   metavar="N", help="stream counts (1..8 or 1,2,4; default 1,2,4)")
    p.add_argument("--chunks", type=typed(positive_ints(overlap.MAX_CHUNKS, "chunks"), "ints"), default=None,
                   metavar="N", help="chunk counts (default 1,4,16)")
    p.add_argument("--pageable", choices=("no", "yes", "both"), default=None,
                   help="host memory: page-locked (no, the default), pageable (yes) or both")
    p.add_argument("--workers", type=typed(_workers, "workers"), default=0, metavar="N",
                   help="run on a local Dask cluster of N worker processes (default 0: in this process)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run on an existing Dask cluster (tcp://host:8786); overrides --workers")
    p.add_argument("--format", type=typed(_formats, "formats"), default=None, metavar="F1,F2",
                   help="output formats: csv, parquet (default: both when pyarrow is installed, else csv)")
    p.add_argument("--out", metavar="DIR", help="output directory (default: acl-emu-out/sweep)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=sweep_command)


def _workers(text: str) -> int:
    n = int(text)
    if not 0 <= n <= 1024:
        raise ValueError(f"{text}: expected 0..1024 workers")
    return n


def _formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    bad = [f for f in formats if f not in ("csv", "parquet")]
    if bad or not formats:
        raise ValueError(f"{text!r}: expected csv, parquet or both")
    return formats


def _sweep_grid(args, source: dict | None = None) -> sweep.Grid:
    """The grid of the config and the options (the options win); `source`: --compute-from's compute time, in
    place of any compute_us."""
    base = sweep.Grid.from_toml(args.config) if args.config else None
    compute_us = [source["compute_us"]] if source else args.compute_us
    given = {"products": args.products, "h2d": args.h2d, "d2h": args.d2h, "compute_us": compute_us,
             "streams": args.streams, "chunks": args.chunks,
             "pageable": None if args.pageable is None else {"no": [False], "yes": [True], "both": [False, True]}[
                 args.pageable]}
    if base is None and args.products is None:
        given["products"] = [_env_or_default_product()]
    kwargs = {k: v for k, v in given.items() if v is not None}
    return sweep.Grid(**{**(sweep.grid_dict(base) if base else {}), **kwargs})


def sweep_command(args) -> int:
    source, mistake = compute_from_arg(args, args.compute_us is not None)
    if mistake:
        return _argument_error("sweep", mistake)
    try:
        grid = _sweep_grid(args, source)
    except (ValueError, OSError) as e:
        return _argument_error("sweep", str(e))
    parquet = sweep.can_write_parquet()
    formats = args.format or (("csv", "parquet") if parquet else ("csv",))
    if "parquet" in formats and not parquet:  # said before the runs, not after
        return _argument_error("sweep", "argument --format: Parquet needs pyarrow: pip install 'acl-emu[sweep]'")
    if args.workers > 1 or args.scheduler:
        try:
            sweep.dask_distributed()
        except RuntimeError as e:
            return _argument_error("sweep", str(e))
    out = Path(args.out) if args.out else Path("acl-emu-out") / "sweep"
    with Progress(len(grid), "sweep") as bar:
        try:
            done = sweep.run_planned(grid, workers=args.workers, scheduler=args.scheduler, progress=bar)
        except RuntimeError as e:
            if "Dask" in str(e):
                return _argument_error("sweep", str(e))
            raise
    rows, best = done.rows, sweep.best_per_workload(done.rows)
    files = sweep.write(rows, out, formats, grid)
    if args.json:
        print(json.dumps({"rows": rows, "best": best, "plan": done.plan.line, "files": files,
                          "compute_from": source}, indent=2))
        return 0
    print(f"{len(rows)} runs {done.plan.line}")
    if source:
        print(source["line"])
    print(sweep.best_table(best))
    print(sweep.unvalidated_line(rows))
    more = "" if parquet else "  (Parquet too: pip install 'acl-emu[sweep]')"
    print("files: " + ", ".join(files.values()) + more)
    return 0


def add_validate(sub) -> None:
    p = sub.add_parser("validate", help="replay the public hardware measurements on the model and show the error")
    p.add_argument("--measurements", help="a measurements TOML (default: the bundled validation/measurements.toml)")
    p.add_argument("--product", type=names_arg, help="only the rows of these products (comma separated)")
    p.add_argument("--config", type=product_arg, help="replay every row on this config instead of its product's "
                                                      "(a calibrated server, a what-if)")
    p.add_argument("--targets", action="store_true", help="only the calibration targets")
    p.add_argument("--out", default="acl-emu-out/validate", help="directory for CSV, JSON and the plot")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=validate_command)


def validate_command(args) -> int:
    try:
        rows = validate.load(args.measurements)
    except validate.MeasurementError as e:
        return _argument_error("validate", f"argument --measurements: {e}")
    if args.product:
        rows = [r for r in rows if r["product"] in args.product]
        if not rows:
            return _argument_error("validate", f"argument --product: no rows for {','.join(args.product)}")
    if args.targets:
        rows = [r for r in rows if r["calibration"]]
    with Progress(len(rows), "validate") as bar:
        result = validate.validate(rows, args.config, bar)
    if args.config is None:  # each source predicted from the others (on the products' own configs)
        result["leave_one_source_out"] = holdout.leave_one_source_out(rows)
    files = validate_report.write(result, Path(args.out))
    if args.json:
        print(json.dumps({**result, "files": files}, indent=2))
    else:
        print(validate_report.report(result, files))
    return 0


def add_calibrate(sub) -> None:
    p = sub.add_parser("calibrate", help="fit a product config to your own server's measurements",
                       description="Fit a config to ascend-dmi --bw output or a CSV (size, direction, memory, "
                                   "gbps or us); writes an inheriting config whose fitted numbers cite the fit.")
    p.add_argument("measurements", help="ascend-dmi --bw output (text) or a CSV with size and gbps or us columns")
    p.add_argument("--product", type=product_arg, default=config.DEFAULT_PRODUCT,
                   help=f"the config to start from (default: {config.DEFAULT_PRODUCT})")
    p.add_argument("-o", "--output", required=True, help="the config file to write (TOML)")
    p.add_argument("--name", help="the calibrated product's name (default: the output file's stem)")
    p.add_argument("--direction", choices=("h2d", "d2h", "d2d", "p2p", "h2h"),
                   help="direction of rows that do not say (an ascend-dmi run with -t)")
    p.add_argument("--memory", choices=validate.MEMORY, help="host memory of rows that do not say (default: pinned)")
    p.add_argument("--fit", type=names_arg,
                   help="only these fields (comma separated); refuses if the data cannot determine one")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=calibrate_command)


def calibrate_command(args) -> int:
    """Fit, replay and draw; the config and its plot appear at -o (and beside it) only when all of that
    succeeded: each is written to a temporary file in the same folder and moved into place at the end."""
    out = Path(args.output)
    name = args.name or out.stem
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(out.parent)  # what a killed run left
    temps: list[Path] = []
    try:
        try:
            rows = calibrate.read(args.measurements, args.direction, args.memory)
            result = calibrate.calibrate(rows, args.product, str(args.measurements), args.fit)
            inherit = args.product if not Path(args.product).exists() else str(Path(args.product).resolve())
            draft = calibrate.config_text(result, name, {k: 0.0 for k in result["fields"]}, inherit)
            tmp_config = _calibrate_temp(out, ".toml", temps)
            tmp_config.write_text(draft, encoding="utf-8")  # the rows are replayed on the config itself
            table, per_field = calibrate.residuals(result, str(tmp_config))
            tmp_config.write_text(calibrate.config_text(result, name, per_field, inherit), encoding="utf-8")
            load(tmp_config)  # it loads, with every number cited
        except (calibrate.CalibrationError, ConfigError) as e:
            return _argument_error("calibrate", str(e))
        except calibrate.FIT_FAILURES as e:
            return _argument_error("calibrate", f"{args.measurements}: the fit failed ({e}): the rows disagree "
                                                f"with a fixed cost plus bytes over a rate")
        plot_path = out.with_suffix(".png")
        tmp_plot = calibrate_report.plot(table, _calibrate_temp(out, ".png", temps),
                                         f"{name} (from {result['base']})")
        os.replace(tmp_config, out)
        os.replace(tmp_plot, plot_path)
        temps.clear()
    finally:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink()
    summary = {"config": str(out), "plot": str(plot_path), "base": result["base"], "fields": result["fields"],
               "residual_pct": per_field, "kept": result["kept"], "rows": table}
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(calibrate_report.report(result, table, per_field, out, plot_path))
    return 0


def _calibrate_temp(out: Path, suffix: str, temps: list[Path]) -> Path:
    """A fresh temporary name beside `out` (same folder, so os.replace is atomic; written as any file, so
    the umask's permissions; a partial file, so a later write in that folder removes it if this process is
    killed first), recorded in `temps` for removal if the run fails."""
    temps.append(partial_path(out.with_suffix(suffix)))
    return temps[-1]


def add_replay(sub) -> None:
    p = sub.add_parser("replay", help="a profiled step (msprof, task_time CSV, MSPTI) re-timed on other products",
                       description="Read a profile (an msprof timeline msprof_*.json, a PROF_* directory, a "
                                   "task_time_*.csv, or MSPTI activity records), rebuild its task graph (stream "
                                   "order, copies with their bytes, kernels and other tasks with their measured "
                                   "durations, host calls with their gaps, event dependencies, or dependencies "
                                   "inferred from the timeline, each listed) and re-time it on each product: the "
                                   "measured and replayed step side by side, per resource, which copies got "
                                   "faster or slower and why, and the model's residuals on the measured product.")
    p.add_argument("profile", help="msprof_*.json, a PROF_* directory, task_time_*.csv, or MSPTI records (the "
                                   "samples' printed lines, JSON, JSON lines or CSV)")
    p.add_argument("--product", type=typed(product_list, "products"), default=None, metavar="P1,P2",
                   help="products or what-if configs (TOML paths) to replay on, comma separated (default: "
                        "$ACL_EMU_PRODUCT or 910B)")
    p.add_argument("--measured-on", type=product_arg, default=config.DEFAULT_PRODUCT, metavar="PRODUCT",
                   help=f"the product the profile was measured on: the model's copy times there are shown next "
                        f"to the measured ones (default: {config.DEFAULT_PRODUCT})")
    p.add_argument("--host-memory", choices=replay.HOST_MEMORY, default="as-profiled",
                   help="host buffers of the H2D and D2H copies: as the profile says (page-locked unless it marks "
                        "a copy pageable), pinned or pageable")
    p.add_argument("--tolerance-us", type=typed(_tolerance_us, "microseconds"), default=None,
                   metavar="US", help=f"times this close count as at once when inferring dependencies from the "
                                      f"timeline (default: {replay.TOLERANCE * 1e6:g} when the profile has event "
                                      f"rows, else read from its timeline's gaps and shown)")
    p.add_argument("--window", type=typed(parse_window, "window"), default=None, metavar="START:END",
                   help="replay only the tasks and host calls starting in this window, microseconds since the "
                        "profile's first event (1500:9000, 1500: or :9000): skip a long idle or the warm-up")
    p.add_argument("--steps", type=typed(parse_steps, "steps"), default=None, metavar="N[:M]",
                   help="replay only steps N to M (the Iteration IDs of msprof's step trace)")
    p.add_argument("--out", metavar="DIR", help="output directory (default: acl-emu-out/replay)")
    p.add_argument("--msprof", metavar="PATH", help="also write the replay on the first product in the msprof "
                                                     "timeline layout")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=replay_command)


def _tolerance_us(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of microseconds") from None
    if not (0 <= v < math.inf):
        raise ValueError(f"{text!r}: expected a finite number of microseconds >= 0")
    return v


def replay_command(args) -> int:
    names = args.product or [_env_or_default_product()]
    msprof = writable_file(args.msprof, "argument --msprof") if args.msprof else None
    tolerance = None if args.tolerance_us is None else args.tolerance_us * 1e-6
    try:
        result = replay.replay(args.profile, names, args.measured_on, args.host_memory, tolerance, args.window,
                               args.steps, msprof)
    except (replay.ProfileError, replay.ReplayError) as e:
        return _argument_error("replay", str(e))
    replay_report.write_outputs(Path(args.out) if args.out else Path("acl-emu-out") / "replay", result,
                                {"msprof": msprof} if msprof is not None else None)
    if args.json:
        replay_report.dump_json(result, sys.stdout)
        return 0
    print(replay_report.report(result))
    return 0


def build_parser() -> Parser:
    parser = Parser(prog="acl-emu", description="The CANN ACL runtime's memory APIs, emulated, with a timing "
                                                "model of each product.",
                    epilog=f"Sizes (--h2d, --sizes, ...): {SIZE_HELP}. Product names match in any case (910b is "
                           f"910B). -q / -v go before the command: acl-emu -q overlap ...")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"acl-emu {__version__}")
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_true",
                      help="only warnings and errors on stderr: no progress bar, no run summary, no informational "
                           "lines (results on stdout, --json and files as usual)")
    loud.add_argument("-v", "--verbose", action="store_true",
                      help="debug lines too on stderr (the product configs loaded, each study's steps and time)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_run(sub)
    for add in (add_products, add_bandwidth, add_overlap, add_compare, add_sweep, add_validate, add_calibrate,
                add_replay, add_c_tools):
        add(sub)
    return parser


def add_run(sub) -> None:
    run = sub.add_parser("run", allow_abbrev=False,  # the script's own --h is its, never our --help / --host-time
                         help="run an unchanged pyACL script, or a C/C++ program, under the emulator",
                         description="Run an unchanged pyACL script (or a C/C++ program built against "
                                     "libascendcl: an executable runs on the emulator's library) under the "
                                     "emulator, then summarise its "
                                     "ACL calls, bytes by route and simulated time. Host time: by default "
                                     "(--host-time wall) the script's real wall time between ACL calls advances "
                                     "the host's virtual clock, so a time.sleep(2) between two recorded events "
                                     "shows ~2000 ms; --host-time calls counts only the calls' own costs, the "
                                     "same on every run. The script runs as `python script.py ARGS` "
                                     "would: its folder first on sys.path (sibling imports work), "
                                     "sys.argv[0] the script, __file__ set. If it raises, the traceback "
                                     "is printed and the exit code is 1; sys.exit(n) exits n; either way "
                                     "the summary and the trace are still written.")
    run.add_argument("--product", type=product_arg, help="product name or TOML path (default: "
                                                          "$ACL_EMU_PRODUCT or 910B)")
    run.add_argument("--host-time", choices=("wall", "calls"), default=None,
                     help="wall: the script's wall time between ACL calls advances the host clock (times "
                          "--host-time-scale); calls: only the calls' own costs, reproducible (default: "
                          "$ACL_EMU_HOST_TIME, else wall; calls for the bundled example)")
    run.add_argument("--host-time-scale", type=host_time_scale_arg, default=None, metavar="X",
                     help="with wall host time, count the time between calls times X, e.g. 0.5 for host "
                          "work 2x faster; 0 counts none (default: 1, or the scale in $ACL_EMU_HOST_TIME "
                          "as wall:X)")
    run.add_argument("--out", help="directory for the trace file (default: acl-emu-out)", default="acl-emu-out")
    run.add_argument("--model", action="append", metavar="X.om=DECL.toml",
                     help="the declaration the emulator runs in place of model X.om (inputs, outputs, compute "
                          "time per product; default: X.om.toml beside X.om); repeatable")
    run.add_argument("--reference", action="store_true",
                     help="time the run on the max-min reference network, which recomputes every rate at every "
                          "change: the same times, far slower; to check the model on your own script (as "
                          "ACL_EMU_NETWORK=reference)")
    run.add_argument("--msprof", metavar="PATH", help="also write the run in the msprof timeline layout (opens in "
                                                       "MindStudio Insight and Perfetto; acl-emu replay reads it)")
    run.add_argument("--json", action="store_true",
                     help="print the summary as JSON, and only it, on stdout: the script's own output "
                          "(print, sys.stdout, file descriptor 1) goes to stderr, so `acl-emu run --json "
                          "s.py | jq` works")
    run.add_argument("--sanitize", nargs="?", const="all", default=None, metavar="CHECKS",
                     help="check the script for the hazards of asynchronous work: race (accesses no event, "
                          "synchronize or stream order orders, across streams, devices and host threads), host "
                          "(the host and its queued work: reading a destination or changing a source before the "
                          "copy completed, freeing memory in use, destroying a stream with work pending, waiting "
                          "on an event never recorded), init (device bytes read that nothing wrote). CHECKS: a "
                          "comma-separated list, --sanitize=race,host (default: all). The report goes to stderr; "
                          "a finding makes the exit code non-zero (1 where the script's own is 0)")
    run.add_argument("--sanitize-json", metavar="PATH", help="write the sanitizer's findings as JSON to PATH "
                                                             "(implies --sanitize)")
    run.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE [ARGS]", default=None,
                     help="run a module as `python -m MODULE ARGS` does (the working directory first on "
                          "sys.path); the rest of the line is the module's arguments")
    run.add_argument("script", nargs="?", default=None, help="the script (default: the bundled example)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    run.set_defaults(func=_run)


_COMPILERS = ("cc", "c++")


def add_c_tools(sub) -> None:
    """`cc` and `c++` (compiler wrappers: every argument passed through, `main` hands them over before argparse)
    and `config` (the flags and variables a C build needs)."""
    for language in _COMPILERS:
        sub.add_parser(language, add_help=False,
                       help=f"compile and link a C{'++' if language == 'c++' else ''} ACL program against the "
                            f"emulator: `acl-emu {language} prog.c -o prog` ({language} with every argument "
                            f"passed through; --show prints the command)")
    p = sub.add_parser("config", help="the compiler flags and CANN toolkit variables of a C/C++ build against the "
                                      "emulator (pkg-config style)",
                       description="Print what a C/C++ build against the emulator needs: --cflags and --libs as "
                                   "pkg-config does; --env the `export` lines of the variables Ascend's build "
                                   "files read (DDK_PATH, NPU_HOST_LIB, INSTALL_DIR, ASCEND_HOME_PATH, "
                                   "ASCENDC_CMAKE_DIR, SOC_VERSION, LD_LIBRARY_PATH): eval \"$(acl-emu config "
                                   "--env)\" and build a sample as its README says; --prefix the toolkit folder. "
                                   "With none, all of it. Builds the library on first use.")
    p.add_argument("--cflags", action="store_true", help="the include flag")
    p.add_argument("--libs", action="store_true", help="the library, its folder and an rpath")
    p.add_argument("--env", action="store_true", help="export lines for a POSIX shell")
    p.add_argument("--prefix", action="store_true", help="the CANN-like toolkit folder")
    p.set_defaults(func=_config)


def _config(args) -> int:
    from .capi.commands import config_command
    return config_command(args.cflags, args.libs, args.env, args.prefix)


# Where each subcommand writes: (argument, dest, default), checked before any work is done.
_OUTPUT_DIRS = {
    "bandwidth": [("--out", "out", "acl-emu-out")],
    "overlap": [("--out", "out", "acl-emu-out")],
    "compare": [("--out", "out", "acl-emu-out"), ("--out", "compare_out", None)],
    "validate": [("--out", "out", None)],
    "sweep": [("--out", "out", "acl-emu-out")],
    "replay": [("--out", "out", "acl-emu-out")],
}


def _check_outputs(args) -> None:
    """Each output directory (and calibrate's output file) can be written; ACL_EMU_PRODUCT loads where a
    study would use it."""
    for flag, dest, default in _OUTPUT_DIRS.get(args.command, ()):
        given = getattr(args, dest, None)
        if given is not None or default is not None:
            writable_dir(given if given is not None else default,
                         f"argument {flag}" if given is not None else f"argument {flag} (default {default})")
    if args.command == "calibrate":
        writable_file(args.output, "argument -o/--output")
    if args.command in ("bandwidth", "overlap") and args.product is None:
        env_product()


def main(argv: list[str] | None = None) -> int:
    """The command. A user mistake (arguments, a product config, an output path, the environment) is one
    line `acl-emu <cmd>: error: ...` and exit code 2, never a traceback."""
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):  # a bare `acl-emu`: what it can do
        parser.print_help(sys.stderr)
        return 2
    argv = sys.argv[1:] if argv is None else argv
    command = next((i for i, a in enumerate(argv) if a not in ("-q", "--quiet", "-v", "--verbose")), None)
    if command is not None and argv[command] in _COMPILERS:  # a compiler's arguments are not ours to parse
        from .capi.commands import compile_command
        return compile_command(argv[command], list(argv[command + 1:]))
    args = parser.parse_args(_bare_sanitize(argv))
    set_verbosity(args.quiet, args.verbose)
    prog = f"acl-emu {args.command}"
    LOG.debug("%s: %s", prog, " ".join(argv))
    try:
        _check_outputs(args)
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`acl-emu products | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (so the exit's own flush is silent)
        return 141
    except UserError as e:
        message = str(e)
    except ConfigError as e:
        message = str(e)
    except OSError as e:
        message = os_error_text(e)
    sys.stdout.flush()
    sys.stderr.write(f"{prog}: error: {message}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
