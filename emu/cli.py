"""The `acl-emu` command (also `python -m emu`)."""
from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path


def run_script(script: str, args: list[str], product: str | None = None) -> int:
    """Run an unchanged pyACL script with the emulator installed as `acl`."""
    import emu

    if product:
        emu.configure(product=product)
    emu.install()
    rt = emu.current()
    old_argv = sys.argv
    sys.argv = [script, *args]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    finally:
        sys.argv = old_argv
    rt = emu.current()
    sys.stdout.flush()
    print(f"[acl-emu] {rt.product.name}: simulated time {rt.clock * 1e3:.3f} ms, "
          f"{sum(rt.calls.values())} ACL calls, {len(rt.machine.records)} device tasks", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="acl-emu", description="Emulated CANN ACL runtime")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an unchanged pyACL script under the emulator")
    run.add_argument("--product", help="product config name or TOML path (default: $ACL_EMU_PRODUCT or 910B)")
    run.add_argument("script", nargs="?", default=None,
                     help="the script (default: the bundled example, examples/copy_pipeline.py)")
    run.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.command == "run":
        script = ns.script or str(Path(__file__).parent / "examples" / "copy_pipeline.py")
        return run_script(script, ns.args, ns.product)
    return 2


if __name__ == "__main__":
    sys.exit(main())
