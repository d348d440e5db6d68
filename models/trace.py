"""What happened, where and when: task and host-call logs, records as numpy arrays, Chrome / Perfetto traces.

A long run must not grow without bound, so nothing here keeps a `Task` once it has completed: the machine
hands completed tasks to a `TaskLog`, which turns them, a chunk at a time, into compact columnar rows
(interned strings, fixed-size numbers: 63 bytes a task, 22 a call) and drops the objects. What a log keeps is its
`keep` policy (`parse_keep`):

    "all"            every row (the default)
    N (an int >= 0)  the last N rows
    None             no row
    a path or file   no row: each one is written to the file as a JSON line (`Sink`)

Whatever it keeps, a log counts as it goes what summaries need (tasks and bytes by route, the latest
end), so totals are right under every policy. `CallLog` does the same for the host's API calls.
"""
from __future__ import annotations

import atexit
import json
import math
import os
import weakref
from collections import deque
from operator import attrgetter
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np

from . import chrome
from .atomic import atomic_write

if TYPE_CHECKING:
    from .machine import Task

RECORD = np.dtype([
    ("api", "U64"), ("kind", "U8"), ("stream", "U48"), ("device", "i2"), ("engine", "i2"), ("route", "U10"),
    ("links", "U64"), ("bytes", "i8"), ("tasks", "i4"), ("submit", "f8"), ("start", "f8"), ("end", "f8"),
    ("kind_asked", "i1"), ("kind_used", "i1"),
])
# kind_asked / kind_used: a copy's direction code as its caller gave it and as it ran (emu: aclrtMemcpyKind, the
# runtime correcting it from where the pointers are); -1 where the caller gave none.
CALL = np.dtype([("api", "U48"), ("thread", "i8"), ("start", "f8"), ("end", "f8")])

CHUNK = 4096  # host calls converted to rows at a time; rows kept in chunks of about this many
# Completed tasks held before they are converted to rows. Fewer than CHUNK: the tasks held are what survives the
# collector's young generations (nothing else a call makes outlives it), and a full collection, tens of ms in a
# process with Numba loaded, comes once enough have; holding at most 1024 halves the collector's time per call
# (64 B blocking copies: 3.4-3.8 us to 2.2-2.3 us a call, 64 x 64 KiB batches 39 to 18 us; gc.callbacks, 910B,
# 2026-12-01 VM) for 0.15 us more a task to convert (1.55 us a task against 1.41 at 4096).
PENDING = 1024
ALL = "all"

# The rows a log keeps: small ints for the strings (indices into the log's tables), -1 for "none".
_TASK_ROW = np.dtype([
    ("kind", "u1"), ("label", "u4"), ("stream", "u4"), ("device", "i2"), ("engine", "i2"), ("route", "u1"),
    ("links", "u4"), ("bytes", "i8"), ("chunk", "i8"), ("src", "i2"), ("dst", "i2"),
    ("part", "?"), ("submit", "f8"), ("start", "f8"), ("end", "f8"), ("kind_asked", "i1"), ("kind_used", "i1"),
])
_CALL_ROW = np.dtype([("api", "u2"), ("thread", "u4"), ("start", "f8"), ("end", "f8")])
_serial = attrgetter("serial")


def _tasks(nbytes: np.ndarray, chunk: np.ndarray) -> np.ndarray:
    """The runtime's DMA tasks each row stands for (Task.chunks, vectorised)."""
    out = np.ones(len(nbytes), dtype=np.int64)
    split = (chunk > 0) & (nbytes > 0)
    out[split] = -(-nbytes[split] // chunk[split])
    return out


# What a row reads of a task, in one pass over the tasks: its shape (every field but its size and times; the tasks
# of a chunk come in a few shapes, the same kind of copy on the same stream and engine again and again), and its
# size and times.
_SHAPE = ("kind", "route", "chunk", "label", "stream", "links", "device", "engine", "src", "dst", "kind_asked",
          "kind_used", "_parent")
_read_shape = attrgetter(*_SHAPE)
_read_own = attrgetter("nbytes", "submit", "start", "end")
_SAMPLE = 64  # tasks whose shapes tell whether a chunk's shapes repeat


def _shapes(tasks: list) -> tuple[dict[str, tuple], np.ndarray | slice]:
    """The distinct shapes of `tasks` ({field of _SHAPE: its values, one per shape, in order of first
    appearance}) and each task's shape (an index into them), so that a shape's fields are converted once.
    Where shapes hardly repeat (more than half of the first _SAMPLE tasks' differ: a stream for each pair of
    devices) or a field cannot be hashed (a task made by hand), every task is a shape of its own
    (the index: slice(None)): finding the shapes would cost more than it saves."""
    shapes = list(map(_read_shape, tasks))
    n = len(shapes)
    first: dict = {}
    try:
        repeat = len(set(shapes[:_SAMPLE])) * 2 <= min(n, _SAMPLE)
        at = np.fromiter(map(first.setdefault, shapes, range(n)), dtype=np.intp, count=n) if repeat else None
    except TypeError:  # a field that cannot be hashed
        at = None
    if at is None:
        return dict(zip(_SHAPE, zip(*shapes))), slice(None)
    index = np.empty(n, dtype=np.intp)  # first appearance -> shape number
    index[list(first.values())] = np.arange(len(first))
    return dict(zip(_SHAPE, zip(*first))), index[at]


def _own(tasks: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, submit, start, end) of every task (nan where a task has no time)."""
    nbytes, *times = zip(*map(_read_own, tasks))
    return (_numbers(nbytes, np.int64), *(_numbers(col, np.float64) for col in times))


_MINUS_ONE = {None: -1}  # .get(v, v): v, or -1 for None


def _numbers(values: tuple, dtype) -> np.ndarray:
    """A numeric field as an array (None: -1 for ints, nan for floats)."""
    try:
        return np.fromiter(values, dtype=dtype, count=len(values))
    except TypeError:  # a None among them
        if np.dtype(dtype).kind == "f":
            return np.array(values, dtype=dtype)  # (None reads as nan)
        return np.fromiter(map(_MINUS_ONE.get, values, values), dtype=dtype, count=len(values))


# -- keep policies and sinks ----------------------------------------------------------------------------------------
class Sink:
    """Writes rows as JSON lines, one object a line: {"type": "task", <RECORD fields>} or
    {"type": "call", "api", "thread", "start", "end"}. A path is opened (and closed at exit) here; a file
    object is written to and left open. Rows arrive a chunk at a time: `flush` the logs (the runtime's
    `flush_records`) before reading a file mid-run."""

    def __init__(self, target):
        self.path = None
        self.users = 0  # logs writing here; a file this sink opened is closed when the last one is gone
        if isinstance(target, (str, os.PathLike)):
            self.path = os.fspath(target)
            self.file = open(self.path, "w")
            _close_at_exit(self)
        else:
            self.file = target
        self._encode = json.JSONEncoder().encode

    def write(self, kind: str, rows: np.ndarray) -> None:
        if not len(rows):
            return
        names = rows.dtype.names
        enc = self._encode
        lines = []
        for row in rows.tolist():
            obj = {"type": kind}
            for k, v in zip(names, row):
                obj[k] = None if v.__class__ is float and math.isnan(v) else v
            lines.append(enc(obj))
        self.file.write("\n".join(lines) + "\n")

    def flush(self) -> None:
        if not getattr(self.file, "closed", False):
            self.file.flush()

    def close(self) -> None:
        if self.path is not None and not self.file.closed:
            self.file.close()
        _open_sinks.discard(self)

    def attach(self) -> "Sink":
        """A log writes here from now on."""
        self.users += 1
        return self

    def detach(self) -> None:
        """A log is gone (its last rows written): the file closes with the last one."""
        self.users -= 1
        if self.users <= 0:
            self.close()

    def __repr__(self) -> str:
        return f"Sink({self.path or self.file!r})"


# Sinks that opened a file, held strongly until their logs are gone: a log dropped with its runtime writes its
# last rows from __del__, which must find the file still open (in one garbage cycle, the file could be
# finalized, and closed, first).
_open_sinks: "set[Sink]" = set()
_logs: "weakref.WeakSet" = weakref.WeakSet()


def _close_at_exit(sink: Sink) -> None:
    _open_sinks.add(sink)


@atexit.register
def _flush_all() -> None:
    """At exit, what the logs still hold goes to their sinks, and the files this module opened are closed."""
    for log in list(_logs):
        try:
            log.flush()
        except Exception:  # an exit hook must not raise
            pass
    for sink in list(_open_sinks):
        try:
            sink.close()
        except Exception:
            pass


def parse_keep(keep) -> tuple[str | int | None, Sink | None]:
    """(policy, sink) of a `records=` value: "all", an int N >= 0 (the last N), None (none), or a path or a
    writable file object (none kept, each written). A `Sink` may be passed to share one file between logs."""
    if isinstance(keep, Sink):
        return None, keep
    if keep is None or keep == ALL:
        return keep, None
    if isinstance(keep, bool):
        raise ValueError(f"records={keep!r}: expected 'all', an int >= 0, None, a path or a file")
    if isinstance(keep, int):
        if keep < 0:
            raise ValueError(f"records={keep}: the number of rows to keep must be >= 0")
        return keep, None
    if isinstance(keep, (str, os.PathLike)) or hasattr(keep, "write"):
        return None, Sink(keep)
    raise ValueError(f"records={keep!r}: expected 'all', an int >= 0, None, a path or a file")


class _Table:
    """Strings (or tuples) <-> small ints."""

    __slots__ = ("index", "values")

    def __init__(self, *first):
        self.values: list = list(first)
        self.index: dict = {v: i for i, v in enumerate(first)}

    def of(self, values: tuple, dtype) -> np.ndarray:
        """The ids of `values` as an array (one pass when every value is known)."""
        try:
            return np.fromiter(map(self.index.__getitem__, values), dtype=dtype, count=len(values))
        except KeyError:
            return np.array(self.ids(values), dtype=dtype)

    def ids(self, values: Iterable) -> list[int]:
        values = values if isinstance(values, (list, tuple)) else list(values)
        try:
            return list(map(self.index.__getitem__, values))  # the common case: every value known
        except KeyError:
            pass
        index, vals = self.index, self.values
        # new values get ids in the order they first appear: a pass over the distinct values, not every row
        for v in dict.fromkeys(values):
            if v not in index:
                index[v] = len(vals)
                vals.append(v)
        return list(map(index.__getitem__, values))

    def __len__(self) -> int:
        return len(self.values)

    def remap(self, used: np.ndarray) -> np.ndarray:
        """Keep only the values at `used` (sorted unique ids); returns old id -> new id (or 0)."""
        keep = [0, *(int(u) for u in used if u)]
        new = np.zeros(len(self.values), dtype=np.int64)
        new[keep] = np.arange(len(keep))
        self.values = [self.values[i] for i in keep]
        self.index = {v: i for i, v in enumerate(self.values)}
        return new


class _Rows:
    """The rows a log keeps: structured chunks, bounded to the last `limit` rows (None: all)."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.chunks: deque[np.ndarray] = deque()
        self.count = 0  # rows in the chunks (may exceed limit by less than a chunk)

    def add(self, rows: np.ndarray) -> None:
        if self.limit is not None and len(rows) > self.limit:
            rows = rows[len(rows) - self.limit:].copy()
        if not len(rows):
            return
        if self.chunks and len(self.chunks[-1]) < CHUNK:  # small flushes (a test asking after each call) merge
            last = self.chunks.pop()
            self.count -= len(last)
            rows = np.concatenate([last, rows])
        self.chunks.append(rows)
        self.count += len(rows)
        if self.limit is not None:
            while self.chunks and self.count - len(self.chunks[0]) >= self.limit:
                self.count -= len(self.chunks.popleft())

    def array(self) -> np.ndarray | None:
        """The kept rows, oldest first (None when there are none)."""
        if not self.chunks:
            return None
        rows = self.chunks[0] if len(self.chunks) == 1 else np.concatenate(list(self.chunks))
        if self.limit is not None and len(rows) > self.limit:
            rows = rows[len(rows) - self.limit:]
        return rows

    def __len__(self) -> int:
        return min(self.count, self.limit) if self.limit is not None else self.count


class GoneStream:
    """The stream of a kept record once the stream itself is gone (destroyed, its runtime dropped): its name
    and device, the one object for every record of that stream."""

    __slots__ = ("name", "device")

    def __init__(self, name: str, device: int):
        self.name, self.device = name, device

    def __repr__(self) -> str:
        return f"<gone stream {self.name}>"


PART = "part"  # Row._parent of a DMA part of a batch or staged copy (the parent itself is not kept with it)


def chunk_count(nbytes: int, chunk: int) -> int:
    """How many DMA tasks the runtime issues for a copy of `nbytes` split into `chunk`-byte tasks (0: unsplit)."""
    return -(-nbytes // chunk) if chunk and nbytes else 1


def chunk_sizes(nbytes: int, chunk: int) -> list[int]:
    """The sizes of those tasks."""
    if not chunk:
        return [nbytes]
    return [min(chunk, nbytes - off) for off in range(0, nbytes, chunk)] or [0]


class Row:
    """One kept record, read as the `Task` it was: kind, label, stream, device, engine, route, links, nbytes,
    chunk, chunks, src, dst, submit, start, end (None where the task had none)."""

    __slots__ = ("kind", "label", "stream", "device", "engine", "route", "links", "nbytes", "chunk", "src",
                 "dst", "part", "submit", "start", "end", "kind_asked", "kind_used")
    completed = True

    @property
    def chunks(self) -> int:
        return chunk_count(self.nbytes, self.chunk)

    def chunk_sizes(self) -> list[int]:
        return chunk_sizes(self.nbytes, self.chunk)

    @property
    def _parent(self):
        """None for a task of its own; PART for a part of a batch or of a staged copy."""
        return PART if self.part else None

    def __repr__(self) -> str:
        return (f"Row({self.kind}, {self.label!r}, route={self.route}, bytes={self.nbytes}, "
                f"submit={self.submit}, start={self.start}, end={self.end})")


class _Streams:
    """Stream ids for task rows: id 0 is no stream. A live stream is returned as itself (weakly held); a
    gone one as a `GoneStream`."""

    def __init__(self):
        self.index: dict[int, int] = {}  # Stream.serial -> id
        self.serials: list[int] = [0]
        self.names: list[str] = [""]
        self.devices: list[int] = [-1]
        self.refs: list = [None]
        self.gone: list = [None]

    def of(self, streams: tuple) -> np.ndarray:
        """The ids of `streams` as an array (one pass when every stream is known)."""
        try:
            return np.fromiter(map(self.index.__getitem__, map(_serial, streams)), dtype=np.uint32,
                               count=len(streams))
        except (KeyError, AttributeError):  # a new stream, or none
            return np.array(self.ids(streams), dtype=np.uint32)

    def ids(self, streams: Iterable) -> list[int]:
        streams = streams if isinstance(streams, (list, tuple)) else list(streams)
        try:
            return list(map(self.index.__getitem__, map(_serial, streams)))  # every stream known
        except (KeyError, AttributeError):
            pass
        index = self.index
        # new streams get ids in the order they first appear: a pass over the distinct streams, not every row
        for s in dict.fromkeys(streams):
            if s is not None and s.serial not in index:
                index[s.serial] = len(self.serials)
                self.serials.append(s.serial)
                self.names.append(s.name)
                self.devices.append(s.device)
                self.refs.append(weakref.ref(s))
                self.gone.append(None)
        return [0 if s is None else index[s.serial] for s in streams]

    def get(self, i: int):
        if i == 0:
            return None
        s = self.refs[i]()
        if s is None:
            s = self.gone[i]
            if s is None:
                s = self.gone[i] = GoneStream(self.names[i], self.devices[i])
        return s

    def __len__(self) -> int:
        return len(self.serials)

    def remap(self, used: np.ndarray) -> np.ndarray:
        keep = [0, *(int(u) for u in used if u)]
        new = np.zeros(len(self.serials), dtype=np.int64)
        new[keep] = np.arange(len(keep))
        for name in ("serials", "names", "devices", "refs", "gone"):
            old = getattr(self, name)
            setattr(self, name, [old[i] for i in keep])
        self.index = {s: i for i, s in enumerate(self.serials) if i}
        return new


class TaskLog:
    """The machine's completed tasks: compact rows kept by policy (`parse_keep`), running totals always.

    Reads like the list of tasks it replaces: len, iteration, indexing and reversed give `Row`s (oldest
    first); `array()` is the numpy RECORD array; `totals()` the counters."""

    def __init__(self, keep=ALL):
        self.policy, self.sink = parse_keep(keep)
        if self.sink is not None:
            self.sink.attach()
        self.pending: list = []  # completed Tasks not yet turned into rows (at most PENDING); cleared in place
        self.rows = _Rows(None if self.policy == ALL else (self.policy or 0))
        self.kinds, self.routes = _Table(), _Table(None)
        self.labels, self.links = _Table(""), _Table(())
        self.streams = _Streams()
        self.count = 0  # every completed task, kept or not
        self.end = 0.0  # the latest completion
        self.route_bytes: dict[str, int] = {}  # copies and fills: bytes and DMA tasks by route ("memset": fills)
        self.route_tasks: dict[str, int] = {}
        _logs.add(self)

    @property
    def keeps(self) -> bool:
        return self.sink is None and self.rows.limit != 0

    def add(self, task: "Task") -> None:
        self.pending.append(task)
        if len(self.pending) >= PENDING:
            self.flush()

    def flush(self) -> None:
        """Turn the pending tasks into rows (kept, written or only counted). Each distinct shape (`_shapes`)
        is made into a row once; the rows of the tasks are copies of their shape's, with their own size and
        times."""
        buf = self.pending
        if not buf:
            return
        f, shape = _shapes(buf)
        nb, submit, start, end = _own(buf)
        ch = _numbers(f["chunk"], np.int64)
        kid, rid = self.kinds.of(f["kind"], np.uint8), self.routes.of(f["route"], np.uint8)
        tasks = _tasks(nb, ch[shape])
        self._count(kid[shape], rid[shape], nb, tasks, end)
        if self.sink is not None:
            rec = np.zeros(len(ch), dtype=RECORD)
            rec["api"], rec["kind"] = f["label"], f["kind"]
            rec["stream"] = ["" if s is None else s.name for s in f["stream"]]
            rec["device"], rec["engine"] = _numbers(f["device"], np.int16), _numbers(f["engine"], np.int16)
            rec["route"], rec["links"] = [r or "" for r in f["route"]], [",".join(ls) for ls in f["links"]]
            rec["kind_asked"], rec["kind_used"] = _numbers(f["kind_asked"], np.int8), _numbers(f["kind_used"], np.int8)
            rec = rec[shape]
            rec["bytes"], rec["tasks"] = nb, tasks
            rec["submit"], rec["start"], rec["end"] = submit, start, end
            buf.clear()  # the same list: the machine appends to it
            self.sink.write("task", rec)
            return
        if self.rows.limit == 0:
            buf.clear()
            return
        row = np.empty(len(ch), dtype=_TASK_ROW)
        row["kind"], row["route"], row["chunk"] = kid, rid, ch
        row["label"] = self.labels.of(f["label"], np.uint32)
        row["stream"] = self.streams.of(f["stream"])
        row["links"] = self.links.of(f["links"], np.uint32)
        for name, dt in (("device", np.int16), ("engine", np.int16), ("src", np.int16), ("dst", np.int16),
                         ("kind_asked", np.int8), ("kind_used", np.int8)):
            row[name] = _numbers(f[name], dt)
        row["part"] = np.fromiter(map(bool, f["_parent"]), dtype=np.bool_, count=len(ch))
        out = row[shape]
        out["bytes"], out["submit"], out["start"], out["end"] = nb, submit, start, end
        buf.clear()  # the same list: the machine appends to it
        self.rows.add(out)
        if self.rows.limit is not None:
            self._prune()

    def _count(self, kid, rid, nb, tasks, ends) -> None:
        self.count += len(kid)
        if len(ends):
            self.end = max(self.end, float(ends.max()))
        moving = [i for k, i in self.kinds.index.items() if k in ("copy", "fill")]
        mask = np.isin(kid, moving)
        if not mask.any():
            return
        r, b, t = rid[mask], nb[mask], tasks[mask]
        for u in np.unique(r):
            sel = r == u
            key = self.routes.values[u] or "memset"
            self.route_bytes[key] = self.route_bytes.get(key, 0) + int(b[sel].sum())
            self.route_tasks[key] = self.route_tasks.get(key, 0) + int(t[sel].sum())

    def _prune(self) -> None:
        """Bounded: drop the strings and streams no kept row names any more, once they outnumber the rows."""
        bound = 2 * (len(self.rows) + CHUNK)
        for col, table in (("label", self.labels), ("links", self.links), ("stream", self.streams)):
            if len(table) > bound:
                used = np.unique(np.concatenate([c[col] for c in self.rows.chunks]))
                new = table.remap(used)
                for c in self.rows.chunks:
                    c[col] = new[c[col]]

    # -- reading -----------------------------------------------------------------------------------------------
    def _kept(self) -> np.ndarray | None:
        self.flush()
        return self.rows.array()

    def array(self) -> np.ndarray:
        """The kept records as a RECORD array, oldest completion first."""
        rows = self._kept()
        if rows is None:
            return np.zeros(0, dtype=RECORD)
        out = np.zeros(len(rows), dtype=RECORD)
        out["api"] = np.array(self.labels.values, dtype=RECORD["api"])[rows["label"]]
        out["kind"] = np.array(self.kinds.values or [""], dtype=RECORD["kind"])[rows["kind"]]
        out["stream"] = np.array(self.streams.names, dtype=RECORD["stream"])[rows["stream"]]
        out["route"] = np.array([r or "" for r in self.routes.values], dtype=RECORD["route"])[rows["route"]]
        out["links"] = np.array([",".join(x) for x in self.links.values], dtype=RECORD["links"])[rows["links"]]
        for f in ("device", "engine", "bytes", "submit", "start", "end", "kind_asked", "kind_used"):
            out[f] = rows[f]
        out["tasks"] = _tasks(rows["bytes"], rows["chunk"])
        return out

    def totals(self) -> dict:
        """Counters over every completed task, whatever is kept: tasks, the latest end (simulated seconds),
        bytes and DMA tasks of copies and fills by route ("memset" for fills)."""
        self.flush()
        return {"tasks": self.count, "end": self.end, "bytes_by_route": dict(self.route_bytes),
                "tasks_by_route": dict(self.route_tasks)}

    def _views(self, rows: np.ndarray) -> Iterator[Row]:
        kinds, labels, routes, links, streams = (self.kinds.values, self.labels.values, self.routes.values,
                                                 self.links.values, self.streams)
        nan = math.isnan
        for off in range(0, len(rows), CHUNK):
            for (k, lab, s, dev, eng, rt, ln, nb, ch, src, dst, part, sub, st, en, ka, ku) in \
                    rows[off:off + CHUNK].tolist():
                v = Row.__new__(Row)
                v.kind, v.label, v.stream, v.device = kinds[k], labels[lab], streams.get(s), dev
                v.engine, v.route, v.links = None if eng < 0 else eng, routes[rt], links[ln]
                v.nbytes, v.chunk = nb, ch
                v.src, v.dst, v.part = None if src < 0 else src, None if dst < 0 else dst, part
                v.submit, v.start, v.end = None if nan(sub) else sub, None if nan(st) else st, en
                v.kind_asked, v.kind_used = None if ka < 0 else ka, None if ku < 0 else ku
                yield v

    def __iter__(self) -> Iterator[Row]:
        rows = self._kept()
        return iter(()) if rows is None else self._views(rows)

    def __reversed__(self) -> Iterator[Row]:
        rows = self._kept()
        if rows is None:
            return
        for end in range(len(rows), 0, -CHUNK):
            yield from reversed(list(self._views(rows[max(end - CHUNK, 0):end])))

    def __len__(self) -> int:
        self.flush()
        return len(self.rows)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getitem__(self, i):
        rows = self._kept()
        if rows is None:
            rows = np.zeros(0, dtype=_TASK_ROW)
        if isinstance(i, slice):
            return list(self._views(rows[i]))
        if not -len(rows) <= i < len(rows):
            raise IndexError(f"record {i} of {len(rows)} kept")
        i %= len(rows)
        return next(self._views(rows[i:i + 1]))

    def __del__(self):
        if self.sink is not None:  # a runtime dropped before its last rows were written
            try:
                self.flush()
                self.sink.detach()
            except Exception:
                pass

    def __repr__(self) -> str:
        return f"<TaskLog keep={self.policy if self.sink is None else self.sink!r}: {len(self)} kept of {self.count}>"


class CallLog:
    """The host's API calls (name, thread, start, end; simulated seconds), kept by policy like `TaskLog`,
    with a running count by API. `pending` is appended to directly (tuples); `flush` when it holds CHUNK."""

    def __init__(self, keep=ALL):
        self.policy, self.sink = parse_keep(keep)
        if self.sink is not None:
            self.sink.attach()
        self.pending: list[tuple] = []
        self.rows = _Rows(None if self.policy == ALL else (self.policy or 0))
        self.apis, self.threads = _Table(), _Table()
        self.counts = np.zeros(0, dtype=np.int64)  # by api id
        _logs.add(self)

    def flush(self) -> None:
        buf = self.pending
        if not buf:
            return
        n = len(buf)
        names, threads, start, end = zip(*buf)
        aid = self.apis.of(names, np.int64)
        counts = np.bincount(aid, minlength=len(self.apis))
        counts[:len(self.counts)] += self.counts
        self.counts = counts
        if self.sink is None and self.rows.limit == 0:
            buf.clear()
            return
        start = np.fromiter(start, dtype=np.float64, count=n)
        end = np.fromiter(end, dtype=np.float64, count=n)
        buf.clear()  # the same list: the runtime appends to it
        if self.sink is not None:
            rec = np.zeros(n, dtype=CALL)
            rec["api"], rec["thread"], rec["start"], rec["end"] = names, threads, start, end
            self.sink.write("call", rec)
        else:
            out = np.empty(n, dtype=_CALL_ROW)
            out["api"], out["thread"] = aid, self.threads.of(threads, np.uint32)
            out["start"], out["end"] = start, end
            self.rows.add(out)

    def __del__(self):
        if self.sink is not None:
            try:
                self.flush()
                self.sink.detach()
            except Exception:
                pass

    def counter(self) -> dict[str, int]:
        """Calls by API name, over every call made."""
        self.flush()
        return {name: int(c) for name, c in zip(self.apis.values, self.counts.tolist()) if c}

    def array(self) -> np.ndarray:
        """The kept calls as a CALL array (api, thread, start, end), in call order."""
        self.flush()
        rows = self.rows.array()
        if rows is None:
            return np.zeros(0, dtype=CALL)
        out = np.zeros(len(rows), dtype=CALL)
        out["api"] = np.array(self.apis.values or [""], dtype=CALL["api"])[rows["api"]]
        out["thread"] = np.array(self.threads.values or [0], dtype=np.int64)[rows["thread"]]
        out["start"], out["end"] = rows["start"], rows["end"]
        return out

    def __len__(self) -> int:
        self.flush()
        return len(self.rows)


# -- records and traces ------------------------------------------------------------------------------------------------
def to_array(tasks) -> np.ndarray:
    """One row per completed task (times in simulated seconds; engine -1 when none was held; `tasks`: the
    runtime's DMA tasks a split copy stands for). `tasks`: a TaskLog, or Tasks / Rows."""
    if isinstance(tasks, TaskLog):
        return tasks.array()
    tasks = list(tasks)
    out = np.zeros(len(tasks), dtype=RECORD)
    for i, t in enumerate(tasks):
        out[i] = (t.label, t.kind, t.stream.name if t.stream is not None else "", t.device,
                  -1 if t.engine is None else t.engine, t.route or "", ",".join(t.links), t.nbytes, t.chunks,
                  t.submit if t.submit is not None else np.nan, t.start if t.start is not None else np.nan, t.end,
                  -1 if t.kind_asked is None else t.kind_asked, -1 if t.kind_used is None else t.kind_used)
    return out


def chrome_trace(records, host_calls: Iterable[tuple] | np.ndarray = (), findings=None) -> dict:
    """A Chrome trace (ui.perfetto.dev, chrome://tracing) of the run: host threads, then a process per device
    (streams, DMA engines, AI core, its links), lanes so that no two slices of a track overlap, counters
    (link GB/s, busy engines) and arrows from each host call to the task it enqueued (`models.chrome`).

    records: a RECORD array (or a TaskLog, or Tasks). host_calls: a CALL array, or (name, thread, start, end)
    tuples of the host's API calls, in simulated seconds. findings: hazards to draw as arrows between their
    calls (see `models.chrome.build`).
    """
    if not isinstance(records, np.ndarray):
        records = to_array(records)
    return chrome.build(records, host_calls, findings)


def write_chrome_trace(path, records, host_calls: Iterable[tuple] | np.ndarray = (), findings=None) -> None:
    """The trace as a JSON file, renamed into place only once complete (an interrupted write keeps the
    previous file)."""
    with atomic_write(path, "w") as f:
        json.dump(chrome_trace(records, host_calls, findings), f)


def read_jsonl(path) -> tuple[np.ndarray, np.ndarray]:
    """(RECORD array, CALL array) of a file a `Sink` wrote."""
    tasks, calls = [], []
    with open(path) as f:
        for line in f:
            if line.strip():
                obj = json.loads(line)
                (tasks if obj.pop("type") == "task" else calls).append(obj)

    def table(rows: list[dict], dtype: np.dtype) -> np.ndarray:
        out = np.zeros(len(rows), dtype=dtype)
        for name in dtype.names:
            missing = -1 if dtype[name].kind == "i" else np.nan  # (files written before a field existed)
            out[name] = [missing if r.get(name) is None else r[name] for r in rows]
        return out

    return table(tasks, RECORD), table(calls, CALL)
