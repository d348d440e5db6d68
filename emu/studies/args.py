"""What a user types on the command line, parsed: sizes, counts, microseconds, product names, a profile's
window and steps.

The parsers raise ValueError with a one-line message; `typed` makes one an argparse type, so argparse
prints `argument --X: <message>` and exits 2. `emu.cli` builds its parsers from these; they read sizes and
whole numbers with `common.parse_size` and `common.parse_whole`, which a study reading the same text uses too
(calibrate reads sizes and counts from a CSV).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..config import ConfigError, available, load, product_named, suggestion
from .common import TooLarge, parse_sizes, parse_whole


def typed(fn, what: str):
    """An argparse type from a parser that raises ValueError."""

    def parse(text: str):
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        except (OverflowError, MemoryError, RecursionError):  # a last guard: a bad argument, never a traceback
            raise argparse.ArgumentTypeError(f"{str(text)[:40]!r}: too large") from None

    parse.__name__ = what
    return parse


def product_error(text: str, e: ConfigError) -> str:
    """What is wrong with a product name or config path, on one line."""
    if e.field == "<product>" and Path(e.path).stem == str(text):  # the name itself, not a parent it inherits
        near = suggestion(str(text))
        hint = f"did you mean {near}? " if near else ""
        return f"unknown product {text!r} ({hint}known: {', '.join(available())}; names match in any case)"
    return str(e)


def product_arg(text: str) -> str:
    """A product name or config path that loads: a broken config is a bad argument, found before any work."""
    try:
        load(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(product_error(text, e)) from None
    return canonical(text)


def canonical(text: str) -> str:
    """A bundled product's own name for `text` typed in another case ('910b' -> '910B'); a path, or a name
    already right, as given."""
    if Path(text).exists() or str(text).endswith(".toml"):
        return text
    return product_named(text) or text


def names_arg(text: str) -> list[str]:
    """'910B, A3' -> ['910B', 'A3']: the names of a comma-separated list, unchecked."""
    return [t.strip() for t in text.split(",") if t.strip()]


def product_list(text: str) -> list[str]:
    """A comma-separated list of product names or config paths, at least one, each loading."""
    names = names_arg(text)
    if not names:
        raise ValueError(f"{text!r}: expected a comma-separated list of products")
    for n in names:
        try:
            load(n)  # a broken config is a bad argument, found before any work
        except ConfigError as e:
            raise ValueError(product_error(n, e)) from None
    return [canonical(n) for n in names]


def parse_sizes_arg(text: str) -> list[int]:
    """parse_sizes for a command-line argument: at least one size."""
    sizes = parse_sizes(text)
    if not sizes:
        raise ValueError(f"{text!r}: no sizes (e.g. 4K..1G or 4K,1M,64M)")
    return sizes


MAX_COUNT = 10_000  # repetitions and other counts: the model is deterministic, so more is only a long run
MAX_INT = 1_000_000  # the largest value any list of whole numbers (streams, chunks) may name before its own limit


def positive_int(text: str, limit: int = MAX_COUNT) -> int:
    """A whole number from 1 to `limit` (default MAX_COUNT)."""
    v = parse_whole(text, limit)
    if v < 1:
        raise ValueError(f"{text!r}: expected at least 1")
    return v


def parse_ints(text: str, limit: int = MAX_INT) -> list[int]:
    """'1..8' -> [1, 2, ..., 8]; '1,2,4' -> [1, 2, 4]. Every value at most `limit`, checked on a range's bounds
    before the range is built."""
    if ".." in text:
        lo, hi = (parse_whole(t, limit, text) for t in text.split("..", 1))
        if lo < 1:
            raise ValueError(f"{text!r}: expected positive integers, e.g. 1..8 or 1,2,4")
        if lo > hi:
            raise ValueError(f"{text!r}: the range runs backwards")
        values = list(range(lo, hi + 1))
    else:
        values = [parse_whole(t, limit, text) for t in text.split(",") if t.strip()]
    if not values or min(values) < 1:
        raise ValueError(f"{text!r}: expected positive integers, e.g. 1..8 or 1,2,4")
    return values


def positive_ints(limit: int, what: str):
    """A parser of `parse_ints` lists whose largest value is at most `limit` (`what`: the values' name)."""

    def parse(text: str) -> list[int]:
        try:
            return parse_ints(text, limit)
        except TooLarge:
            raise ValueError(f"{text[:40]!r}: at most {limit} {what}") from None

    return parse


def microseconds(text: str) -> float:
    """A finite number of microseconds >= 0."""
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of microseconds") from None
    if not v >= 0 or v == float("inf"):
        raise ValueError(f"{text!r}: compute time must be a finite number of microseconds >= 0")
    return v


def microseconds_list(text: str) -> list[float]:
    """Comma-separated `microseconds` ("1500,5000"); an empty list is refused as `microseconds` refuses it."""
    return [microseconds(t) for t in text.split(",") if t.strip()] or [microseconds(text)]


def parse_window(text: str) -> tuple[float | None, float | None]:
    """"START:END" in microseconds since the profile's first event (either may be left out: "2000:", ":5000") ->
    (start, end); a ValueError saying the form otherwise."""
    parts = str(text).split(":")
    if len(parts) != 2:
        raise ValueError(f"{text!r}: expected START:END in microseconds since the profile's first event "
                         f"(1500:9000, 1500: or :9000)")
    out = []
    for part in parts:
        if not part.strip():
            out.append(None)
            continue
        try:
            v = float(part)
        except ValueError:
            raise ValueError(f"{text!r}: {part!r} is not a number of microseconds") from None
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{text!r}: expected finite microseconds >= 0")
        out.append(v)
    if out[0] is not None and out[1] is not None and out[1] <= out[0]:
        raise ValueError(f"{text!r}: the window ends before it starts")
    return out[0], out[1]


def parse_steps(text: str) -> tuple[int, int]:
    """"N" or "N:M" (step ids, inclusive) -> (first, last); a ValueError otherwise."""
    parts = str(text).split(":")
    try:
        ids = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"{text!r}: expected a step id N or a range N:M (the Iteration IDs of msprof's step "
                         f"trace)") from None
    if len(ids) not in (1, 2) or ids[-1] < ids[0]:
        raise ValueError(f"{text!r}: expected a step id N or a range N:M with M >= N")
    return ids[0], ids[-1]
