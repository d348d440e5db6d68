"""Declared kernel times: a kernel's time per product, written beside the program or its kernel binary, so that its
timeline does not depend on the host that runs it (an estimate from the blocks' own CPU time does).

    # kernels.toml
    [LongOPf]
    910B = 1500000.0                      # microseconds, whatever the launch
    A3 = "1200000 + 20 * blockDim"        # or an expression of blockDim (+ - * / ** ( ), min, max, ceil, floor)

A launch looks for its kernel in the first of these files that exists: $ACL_EMU_KERNEL_TIMES; beside a kernel
binary, `<binary>.toml`; beside the program, `<program>.kernels.toml`, then `kernels.toml` in its folder. A kernel
the file does not name, or a product its table does not name, is estimated (models.aicore). A file that cannot be
read or a wrong entry is a `DeclarationError`, one line naming the file and the entry.
"""
from __future__ import annotations

import ast
import math
import operator
import os
from pathlib import Path

from .. import files

ENV = "ACL_EMU_KERNEL_TIMES"

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCTIONS = {"min": min, "max": max, "ceil": math.ceil, "floor": math.floor}


class DeclarationError(ValueError):
    """A kernel-time declaration that cannot be used: one line naming the file and the entry."""


def _evaluate(node, block_dim: int) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, block_dim)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == "blockDim":
        return float(block_dim)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left, block_dim), _evaluate(node.right, block_dim))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand, block_dim))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
            and node.args and not node.keywords):
        return float(_FUNCTIONS[node.func.id](*(_evaluate(a, block_dim) for a in node.args)))
    raise ValueError(f"{ast.unparse(node)!r} is not a number, blockDim, + - * / ** or min, max, ceil, floor")


def microseconds(value, block_dim: int) -> float:
    """A declared time (a number, or an expression of blockDim) for a launch of `block_dim` blocks."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        us = float(value)
    elif isinstance(value, str) and len(value) <= 1000:
        try:
            us = _evaluate(ast.parse(value, mode="eval"), block_dim)
        except (SyntaxError, ZeroDivisionError, OverflowError) as e:
            raise ValueError(f"{value!r}: {e}") from None
    else:
        raise ValueError(f"{value!r}: expected microseconds (a number) or an expression of blockDim")
    if not (math.isfinite(us) and us >= 0):
        raise ValueError(f"{value!r} gives {us} us for blockDim {block_dim}: expected a time of 0 or more")
    return us


_loaded: dict[Path, tuple[float, dict]] = {}


def _table(path: Path) -> dict:
    """The declarations of `path`, read once while the file is unchanged."""
    try:
        stamp = path.stat().st_mtime
    except OSError as e:
        raise DeclarationError(f"{path}: {e.strerror or e} (${ENV} names it)") from None
    hit = _loaded.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        data = files.load_toml(path, files.CONFIG_BYTES, "a declaration of kernel times")
    except (files.FileRefused, files.NotToml) as e:
        raise DeclarationError(f"{path}: {getattr(e, 'why', e)}") from None
    _loaded[path] = (stamp, data)
    return data


_where: dict[tuple, Path | None] = {}  # (the variable's value, the binary): the file found, once per process


def where(binary: Path | None = None) -> Path | None:
    """The declaration a launch reads (see the module's docstring), None when there is none: looked for once
    per process, variable and binary."""
    key = (os.environ.get(ENV), binary)
    if key not in _where:
        _where[key] = _find(*key)
    return _where[key]


def _find(chosen: str | None, binary: Path | None) -> Path | None:
    if chosen:
        return Path(chosen)
    candidates = [Path(f"{binary}.toml")] if binary is not None else []
    try:
        program = Path(os.readlink("/proc/self/exe"))
        candidates += [program.with_name(program.name + ".kernels.toml"), program.with_name("kernels.toml")]
    except OSError:
        pass
    return next((p for p in candidates if p.is_file()), None)


def declared(name: str, product: str, block_dim: int, binary: Path | None = None) -> tuple[float, str] | None:
    """(seconds, how) of kernel `name` on `product` for `block_dim` blocks, as declared; None when undeclared."""
    path = where(binary)
    if path is None:
        return None
    entry = _table(path).get(name)
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise DeclarationError(f"{path}: [{name}] must be a table of product = microseconds")
    value = entry.get(product)
    if value is None:
        return None
    try:
        us = microseconds(value, block_dim)
    except ValueError as e:
        raise DeclarationError(f"{path}: [{name}] {product} = {e}") from None
    return us * 1e-6, f"declared in {path.name}: {us:g} us"
