"""The `acl-emu` command (also `python -m emu`).

    acl-emu run [SCRIPT] [ARGS...]    an unchanged pyACL script under the emulator, then a summary
                                      (--host-time wall, the default, or calls: see `run --help`)
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
import math
import runpy
import sys
from pathlib import Path

from .config import ConfigError, available, find

EXAMPLE = Path(__file__).parent / "examples" / "copy_pipeline.py"


class Parser(argparse.ArgumentParser):
    """Bad arguments: one line naming the argument, exit code 2."""

    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def product_arg(text: str) -> str:
    try:
        find(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(f"unknown product {text!r} (known: {', '.join(available())})") from e
    return text


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
               as_json: bool = False, host_time: str | None = None, host_time_scale: float | None = None) -> int:
    """Run an unchanged pyACL script with the emulator installed as `acl`, then summarise what it did.

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
    emu.install()
    old_argv = sys.argv
    sys.argv = [script, *args]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    finally:
        sys.argv = old_argv
    sys.stdout.flush()
    result = summary(emu.current(), Path(out) if out else None)
    print_summary(result, as_json)
    return code


def _run(args) -> int:
    script = args.script or str(EXAMPLE)
    if not Path(script).exists():
        sys.stderr.write(f"acl-emu run: error: argument SCRIPT: no such file {script!r}\n")
        return 2
    if args.host_time is None:
        from .runtime import host_time_from_env
        try:
            host_time_from_env()
        except ValueError as e:
            sys.stderr.write(f"acl-emu run: error: {e}\n")
            return 2
    return run_script(script, args.args, args.product, args.out, args.json, args.host_time, args.host_time_scale)


def build_parser() -> Parser:
    from .studies import bandwidth, calibrate, compare, overlap, products, validate

    parser = Parser(prog="acl-emu", description="The CANN ACL runtime's memory APIs, emulated, with a timing "
                                                "model of each product.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = sub.add_parser("run", help="run an unchanged pyACL script under the emulator",
                         description="Run an unchanged pyACL script under the emulator, then summarise its "
                                     "ACL calls, bytes by route and simulated time. Host time: by default "
                                     "(--host-time wall) the script's real wall time between ACL calls advances "
                                     "the host's virtual clock, so a time.sleep(2) between two recorded events "
                                     "shows ~2000 ms; --host-time calls counts only the calls' own costs, the "
                                     "same on every run.")
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
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument("script", nargs="?", default=None, help="the script (default: the bundled example)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    run.set_defaults(func=_run)
    for study in (products, bandwidth, overlap, compare, validate, calibrate):
        study.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
