"""Reading a file a user names: a product config, a sweep config, a measurements file, a model declaration, a
profile, a script, aclInit's JSON. Every such read goes through `read_bytes` (or `read_text`, `load_toml`).

- The path is opened without blocking (O_NONBLOCK | O_NOCTTY): a FIFO does not wait for a writer and a terminal
  does not become the process's.
- Only a regular file is read. A FIFO, a device (/dev/zero, /dev/urandom), a directory or a socket is refused,
  checked before the open and again on the open descriptor (the path may have been replaced in between), so
  nothing waits forever or reads without end.
- At most `limit` bytes are read: a file larger than that is refused by its size before a byte is read, and one
  that grows while it is read is refused at `limit` + 1 bytes.

Each refusal is a `FileRefused` (a ValueError) whose `why` is one line saying what the file is and what is read,
without the path; `str()` puts the path first. Callers turn it into their own error type. `parse_toml` is
tomllib.loads with what tomllib raises besides TOMLDecodeError (nesting past the recursion limit, an integer of
thousands of digits, memory running out) as a `NotToml`, also one line.
"""
from __future__ import annotations

import hashlib
import os
import stat
import tomllib

MiB = 1 << 20
CONFIG_BYTES = 4 * MiB  # a product config, a sweep config, a model declaration, aclInit's JSON (the bundled ones: < 12 KiB)
TABLE_BYTES = 16 * MiB  # a measurements file: validate's TOML table, calibrate's ascend-dmi output or CSV
PROFILE_BYTES = 256 * MiB  # a profile (msprof timeline, task_time CSV, MSPTI records): held whole with its parse
SCRIPT_BYTES = 64 * MiB  # a Python script `acl-emu run` runs
SOURCE_BYTES = 16 * MiB  # a kernel source `acl-emu c++` and ascendc_library rewrite
BINARY_BYTES = 256 * MiB  # a kernel binary aclrtBinaryLoadFromFile reads

# FileRefused.reason
MISSING, UNREADABLE, NOT_REGULAR, TOO_LARGE, NOT_TEXT = "missing", "unreadable", "not regular", "too large", "not text"


class FileRefused(ValueError):
    """A file that is not read: `path`, `why` (one line, without the path), `reason` (MISSING, UNREADABLE,
    NOT_REGULAR, TOO_LARGE or NOT_TEXT)."""

    def __init__(self, path, why: str, reason: str):
        super().__init__(f"{os.fspath(path)}: {why}")
        self.path, self.why, self.reason = os.fspath(path), why, reason


class NotToml(ValueError):
    """Text that tomllib cannot read, with why in one line."""


def kind(mode: int) -> str | None:
    """What a file of this mode is when it is not a regular file (a FIFO, a device, a directory), else None."""
    if stat.S_ISREG(mode):
        return None
    return ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a directory" if stat.S_ISDIR(mode) else "not a regular file")


def size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= MiB and n % MiB == 0 else f"{n} bytes"


def _refuse_kind(path, mode: int, what: str) -> None:
    found = kind(mode)
    if found is not None:
        raise FileRefused(path, f"{found}, not a regular file: {what} is read from a regular file", NOT_REGULAR)


def _refuse_size(path, size: int | None, limit: int, what: str) -> None:
    said = f"{size} bytes, over" if size is not None else "over"
    raise FileRefused(path, f"{said} the {size_text(limit)} {what} may have", TOO_LARGE)


def _os_error(path, e: OSError) -> FileRefused:
    if isinstance(e, FileNotFoundError):
        return FileRefused(path, "no such file or directory", MISSING)
    return FileRefused(path, e.strerror or str(e), UNREADABLE)


def _open(path, what: str) -> int:
    """A read-only descriptor of the regular file `path`, opened without blocking; FileRefused otherwise."""
    try:
        _refuse_kind(path, os.stat(path).st_mode, what)  # a device or a FIFO is not even opened
        return os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                       | getattr(os, "O_BINARY", 0))
    except FileRefused:
        raise
    except OSError as e:
        raise _os_error(path, e) from None
    except ValueError as e:  # a NUL in the path
        raise FileRefused(path, f"not a file name ({e})", UNREADABLE) from None


def read_bytes(path, limit: int, what: str) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; `what` ("a product config") names the
    file's role in the refusals."""
    fd = _open(path, what)
    try:
        st = os.fstat(fd)
        _refuse_kind(path, st.st_mode, what)  # (replaced since the stat)
        if st.st_size > limit:
            _refuse_size(path, st.st_size, limit, what)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise _os_error(path, e) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        _refuse_size(path, None, limit, what)
    return data


def head(path, n: int) -> bytes:
    """The first `n` bytes (or fewer) of the regular file `path`, whatever its size (is it an ELF program?)."""
    fd = _open(path, "a program")
    try:
        _refuse_kind(path, os.fstat(fd).st_mode, "a program")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(n)
    except OSError as e:
        raise _os_error(path, e) from None
    finally:
        os.close(fd)


def read_text(path, limit: int, what: str) -> str:
    """`read_bytes`, decoded as UTF-8 (a leading BOM dropped); bytes that are not UTF-8 are refused (NOT_TEXT)."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FileRefused(path, f"not UTF-8 text (byte {e.start}): {what} is a text file", NOT_TEXT) from None


def parse_toml(text: str) -> dict:
    """tomllib.loads; anything tomllib cannot read is a NotToml of one line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise NotToml(" ".join(str(e).split())) from None
    except RecursionError:
        raise NotToml("arrays or tables nested too deeply to read") from None
    except MemoryError:
        raise NotToml("too large to read (out of memory)") from None
    except ValueError as e:  # an integer over sys.get_int_max_str_digits(): "Exceeds the limit (4300 digits) ..."
        raise NotToml(f"a number too long to read ({' '.join(str(e).split(';')[0].split())[:160]})") from None


def load_toml(path, limit: int, what: str) -> dict:
    """The TOML table of the file `path` (`read_text`, then `parse_toml`): FileRefused or NotToml."""
    return parse_toml(read_text(path, limit, what))


def sha256(path) -> str | None:
    """The SHA-256 (hex) of the regular file `path`, read in blocks; None when it is not one or cannot be read."""
    try:
        fd = _open(path, "a model file")
    except FileRefused:
        return None
    try:
        if kind(os.fstat(fd).st_mode) is not None:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)
