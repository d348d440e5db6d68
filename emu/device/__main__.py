"""python -m emu.device prepare SOURCE --out-dir DIR [--include-dir DIR]: a kernel source for the host compiler
(emu.device.rewrite.prepare), as the toolkit's ascendc_library runs it. A construct that is not emulated, or a
source that cannot be read, is one line on stderr and exit status 1."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .rewrite import NotEmulated, prepare


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emu.device", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="rewrite a kernel source for the host compiler")
    p.add_argument("source", type=Path)
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--include-dir", type=Path)
    args = ap.parse_args(argv)
    try:
        prepare(args.source, args.out_dir, args.include_dir)
    except NotEmulated as e:
        print(f"acl-emu: {e}", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as e:
        print(f"acl-emu: {args.source}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
