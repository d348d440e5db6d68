"""Files that appear whole or not at all: `atomic_write` writes to a temporary file beside the final one and
renames it into place (`os.replace`) only once it is complete, so an interrupted write (an error, Ctrl-C,
kill -9) leaves the previous file as it was. Temporary files are named `.partial-<PID>-...`; those left by a
process that is no longer running (killed before it could clean up) are removed by `sweep_stale`, which
`atomic_write` calls on the folder it writes in."""
from __future__ import annotations

import itertools
import os
import re
from contextlib import contextmanager
from pathlib import Path

PREFIX = ".partial-"
_PARTIAL = re.compile(re.escape(PREFIX) + r"(\d+)-")
_count = itertools.count()


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (one we may not signal counts as running)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill there terminates the process: never sweep on a guess
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (PermissionError among them: it runs, as another user's)
        return True
    return True


def sweep_stale(directory) -> list[Path]:
    """Remove `.partial-<PID>-*` files in `directory` whose process is gone; return what was removed."""
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    me = os.getpid()
    for entry in entries:
        m = _PARTIAL.match(entry.name)
        if not m:
            continue
        pid = int(m.group(1))
        if pid == me or pid_alive(pid):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # another sweeper got there first, or not ours to remove
            pass
    return removed


def partial_path(path) -> Path:
    """A fresh temporary name beside `path`, keeping its name (and so its extension) at the end."""
    final = Path(path)
    return final.with_name(f"{PREFIX}{os.getpid()}-{next(_count)}-{final.name}")


@contextmanager
def atomic_write(path, mode: str = "w", **open_kwargs):
    """Open a temporary file beside `path` for writing; on a clean exit it replaces `path`, on an exception
    it is removed and `path` is left as it was. A `path` that exists and is not a regular file (a FIFO,
    /dev/stdout) is written in place; a symlink's target is the file replaced."""
    if not any(c in mode for c in "wx") or "+" in mode:
        raise ValueError(f"atomic_write needs a write mode ('w', 'wb', ...), not {mode!r}")
    final = Path(path)
    if final.is_symlink():
        final = Path(os.path.realpath(final))
    if final.exists() and not final.is_file():
        with open(final, mode, **open_kwargs) as f:
            yield f
        return
    sweep_stale(final.parent)
    tmp = partial_path(final)
    try:
        with open(tmp, mode.replace("x", "w"), **open_kwargs) as f:
            yield f
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
