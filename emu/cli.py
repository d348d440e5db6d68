"""The `acl-emu` command (also `python -m emu`).

    acl-emu run [SCRIPT] [ARGS...]    an unchanged pyACL script under the emulator, as python runs it,
    acl-emu run -m MODULE [ARGS...]   then a summary (--host-time wall, the default, or calls; --json:
                                      only the JSON on stdout; see `run --help`)
    acl-emu products                  the product configs and where their numbers come from
    acl-emu bandwidth                 H2D / D2H / D2D / peer bandwidth across message sizes
    acl-emu overlap                   plan copy/compute overlap: streams x chunks
    acl-emu compare                   one study side by side across products
    acl-emu validate                  the model against public hardware measurements
    acl-emu calibrate FILE -o X.toml  a config fitted to your own server's measurements

Every subcommand takes --json. Exit codes: 0 success, 1 failure, 2 bad arguments.
"""
from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib.machinery
import importlib.util
import math
import os
import runpy
import sys
import tempfile
import traceback
import types
from pathlib import Path

from .config import ConfigError, available, load

EXAMPLE = Path(__file__).parent / "examples" / "copy_pipeline.py"


class Parser(argparse.ArgumentParser):
    """Bad arguments: one line naming the argument, exit code 2."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


class UserError(Exception):
    """A mistake in a command's arguments or environment: `acl-emu <cmd>: error: <message>`, exit code 2."""


def product_error(text: str, e: ConfigError) -> str:
    """What is wrong with a product name or config path, on one line."""
    if e.field == "<product>" and Path(e.path).stem == str(text):  # the name itself, not a parent it inherits
        return f"unknown product {text!r} (known: {', '.join(available())})"
    return str(e)


def product_arg(text: str) -> str:
    """A product name or config path that loads: a broken config is a bad argument, found before any work."""
    try:
        load(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(product_error(text, e)) from None
    return text


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


def typed(fn, what: str):
    """An argparse type from a parser that raises ValueError."""

    def parse(text: str):
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = what
    return parse


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
               module: bool = False) -> int:
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
    """
    import emu
    from .studies.runsummary import summary, print_summary

    previous = emu.runtime._current
    if product is None and previous is not None:  # a fresh process on the product chosen before
        if host_time is None:
            host_time = previous.host_time
            if host_time_scale is None:
                host_time_scale = previous.host_time_scale
        emu.configure(product=previous.product.path, functional=previous.functional, host_time=host_time,
                      host_time_scale=host_time_scale)
    else:
        if host_time is None and emu.runtime.host_time_from_env() is None:
            host_time = "wall"
        emu.configure(product=product, host_time=host_time, host_time_scale=host_time_scale)
    with _python_like_state(script, module):
        emu.install()
        with (_stdout_to_stderr() if as_json else contextlib.nullcontext()):
            code, error = _execute(script, args, module)
    sys.stdout.flush()
    result = summary(emu.current(), Path(out) if out else None,
                     script=f"-m {script}" if module else script, exit_code=code, error=error)
    print_summary(result, as_json)
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
        return (130 if isinstance(e, KeyboardInterrupt) else 1), line
    return 0, None


def _is_runner_frame(filename: str) -> bool:
    return filename in (__file__, runpy.__file__) or filename == "<frozen runpy>"


def _exec_file(path: str) -> None:
    """Run a source file as the __main__ module, the way `python path` does."""
    with open(path, "rb") as f:
        source = f.read()
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
    else:
        target, script_args = args.script or str(EXAMPLE), args.args
        if not Path(target).exists():
            sys.stderr.write(f"acl-emu run: error: argument SCRIPT: no such file {target!r}\n")
            return 2
        if Path(target).is_dir() and not (Path(target) / "__main__.py").is_file():
            sys.stderr.write(f"acl-emu run: error: argument SCRIPT: {target!r} is a directory with no "
                             f"__main__.py\n")
            return 2
    if args.host_time is None:
        from .runtime import host_time_from_env
        try:
            host_time_from_env()
        except ValueError as e:
            sys.stderr.write(f"acl-emu run: error: {e}\n")
            return 2
    import emu

    if args.product is None and emu.runtime._current is None:
        env_product()  # the product run_script would take from the environment loads
    out = writable_dir(args.out, "argument --out")  # absolute: the script may change directory
    return run_script(target, script_args, args.product, str(out), args.json, args.host_time,
                      args.host_time_scale, module=args.module is not None)


def _module_exists(name: str) -> bool:
    """Whether -m NAME can be found from the working directory (its top-level package; nothing is imported)."""
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(name.split(".", 1)[0]) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path.pop(0)


def build_parser() -> Parser:
    from .studies import bandwidth, calibrate, compare, overlap, products, validate

    parser = Parser(prog="acl-emu", description="The CANN ACL runtime's memory APIs, emulated, with a timing "
                                                "model of each product.")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"acl-emu {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = sub.add_parser("run", help="run an unchanged pyACL script under the emulator",
                         description="Run an unchanged pyACL script under the emulator, then summarise its "
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
                          "$ACL_EMU_HOST_TIME, else wall)")
    run.add_argument("--host-time-scale", type=host_time_scale_arg, default=None, metavar="X",
                     help="with wall host time, count the time between calls times X, e.g. 0.5 for host "
                          "work 2x faster; 0 counts none (default: 1, or the scale in $ACL_EMU_HOST_TIME "
                          "as wall:X)")
    run.add_argument("--out", help="directory for the trace file (default: acl-emu-out)", default="acl-emu-out")
    run.add_argument("--json", action="store_true",
                     help="print the summary as JSON, and only it, on stdout: the script's own output "
                          "(print, sys.stdout, file descriptor 1) goes to stderr, so `acl-emu run --json "
                          "s.py | jq` works")
    run.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE [ARGS]", default=None,
                     help="run a module as `python -m MODULE ARGS` does (the working directory first on "
                          "sys.path); the rest of the line is the module's arguments")
    run.add_argument("script", nargs="?", default=None, help="the script (default: the bundled example)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    run.set_defaults(func=_run)
    for study in (products, bandwidth, overlap, compare, validate, calibrate):
        study.add_parser(sub)
    return parser


# Where each subcommand writes: (argument, dest, default), checked before any work is done.
_OUTPUT_DIRS = {
    "bandwidth": [("--out", "out", "acl-emu-out")],
    "overlap": [("--out", "out", "acl-emu-out")],
    "compare": [("--out", "out", "acl-emu-out"), ("--out", "compare_out", None)],
    "validate": [("--out", "out", None)],
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
    args = parser.parse_args(argv)
    prog = f"acl-emu {args.command}"
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
