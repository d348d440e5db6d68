"""`acl-emu sweep`: the overlap pipeline over a grid of products, sizes, streams, chunks and compute times,
one tidy table out, run serially or in parallel on Dask.

A run is one `overlap.simulate` (a fresh timing-only runtime, deterministic), so runs are independent and
their order does not matter: the sweep maps them over workers and puts the rows back in grid order, which
makes a parallel sweep's table exactly the serial one. Parallel runs use Dask (`pip install acl-emu[sweep]`):
a local cluster of N worker processes by default, or an existing cluster by its scheduler address, so a
sweep grows past one machine without code changes.

    from emu.studies import sweep
    grid = sweep.Grid(products=["910B", "A3"], h2d=[64 << 20], d2h=[16 << 20], compute_us=[1500, 5000],
                      streams=[1, 2, 4], chunks=[1, 4, 16])
    rows = sweep.run(grid, workers=2)          # one dict per run, in grid order
    sweep.write(rows, "out")                   # sweep.csv and sweep.parquet

Columns: every swept parameter (product, h2d_bytes, d2h_bytes, compute_us, streams, chunks, pageable), then
the metrics with their units in their names (iteration_ms, exposed_copy_ms, floor_ms, vs_floor (ratio),
link_h2d_util / link_d2h_util / engine_util / compute_util (fractions of capacity), binding), and unvalidated:
the routes the run rests on that no independent measurement checks on its product (emu.routes), joined with
";" ("" when none).
"""
from __future__ import annotations

import bisect
import itertools
import math
import numbers
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from .. import routes as R
from . import overlap

PARAMETERS = ("product", "h2d_bytes", "d2h_bytes", "compute_us", "streams", "chunks", "pageable")
METRICS = ("iteration_ms", "exposed_copy_ms", "floor_ms", "vs_floor", "link_h2d_util", "link_d2h_util",
           "engine_util", "compute_util", "binding")
COLUMNS = PARAMETERS + METRICS + ("unvalidated",)
MAX_RUNS = 1_000_000  # a grid larger than this is a mistake, not a study
MAX_VALUES = 100_000  # values of one field: more is a mistake (and a slow check), not a study
MAX_SIZE = 1 << 40  # bytes per copy: 1 TiB, more than the device memory of any product


@dataclass(frozen=True)
class Grid:
    """The values of each swept parameter; the sweep runs every combination with streams <= chunks."""

    products: tuple = ("910B",)
    h2d: tuple = (64 << 20,)
    d2h: tuple = (16 << 20,)
    compute_us: tuple = (1500.0,)
    streams: tuple = (1, 2, 4)
    chunks: tuple = (1, 4, 16)
    pageable: tuple = (False,)

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (str, bytes, int, float, bool)):
                value = (value,)
            else:
                try:
                    value = tuple(value)
                except TypeError:
                    raise ValueError(f"sweep grid: {f.name}: expected a value or a list of values, "
                                     f"not {type(value).__name__}") from None
            if not value:
                raise ValueError(f"sweep grid: {f.name} is empty")
            if len(value) > MAX_VALUES:
                raise ValueError(f"sweep grid: {f.name}: {len(value)} values (more than {MAX_VALUES})")
            object.__setattr__(self, f.name, tuple(_value(f.name, v) for v in value))
        n = self._count()
        if n > MAX_RUNS:
            raise ValueError(f"sweep grid: {n} runs (more than {MAX_RUNS})")
        if not n:
            raise ValueError("sweep grid: no combination has streams <= chunks")
        from .. import config

        for p in dict.fromkeys(self.products):
            config.load(p)  # an unknown product fails here, before any run
            try:  # and sizes its devices cannot hold
                overlap.check_memory(p, max(self.h2d), max(self.d2h))
            except ValueError as e:
                raise ValueError(f"sweep grid: {e}") from None
        # the one check across fields: no run copies fewer bytes than it has chunks
        used = max(c for c in self.chunks if c >= min(self.streams))
        overlap._check(min(self.h2d), min(self.d2h), min(self.compute_us), min(self.streams), used)

    def _count(self) -> int:
        """len(self), without listing the runs: pairs with streams <= chunks times every other field."""
        chunks = sorted(self.chunks)
        pairs = sum(len(chunks) - bisect.bisect_left(chunks, s) for s in self.streams)
        return (pairs * len(self.products) * len(self.h2d) * len(self.d2h) * len(self.compute_us)
                * len(self.pageable))

    def runs(self) -> list[dict]:
        """Every run's parameters, in grid order (products outermost, pageable innermost)."""
        out = []
        for product, h2d, d2h, compute, streams, chunks, pageable in itertools.product(
                self.products, self.h2d, self.d2h, self.compute_us, self.streams, self.chunks, self.pageable):
            if streams <= chunks:
                out.append({"product": product, "h2d_bytes": int(h2d), "d2h_bytes": int(d2h),
                            "compute_us": float(compute), "streams": int(streams), "chunks": int(chunks),
                            "pageable": bool(pageable)})
        return out

    def __len__(self) -> int:
        return self._count()

    @classmethod
    def from_toml(cls, path) -> "Grid":
        """A grid from a TOML file whose [sweep] table (or top level) sets any of the fields; sizes may be
        strings as on the command line ("64M")."""
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except RecursionError:
            raise ValueError(f"{path}: arrays nested too deeply") from None
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: not a TOML file: {e}") from None
        except UnicodeDecodeError:
            raise ValueError(f"{path}: not a TOML file (not UTF-8 text)") from None
        data = data.get("sweep", data)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: sweep: expected a table, not {_kind(data)}")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{path}: unknown sweep keys {sorted(unknown)}; expected some of {sorted(known)}")
        kwargs = {}
        for key, value in data.items():
            values = value if isinstance(value, list) else [value]
            try:
                kwargs[key] = tuple(_value(key, v) for v in values)
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
        try:
            return cls(**kwargs)
        except ValueError as e:
            message = str(e)
            raise ValueError(message if message.startswith(f"{path}") else f"{path}: {message}") from None


def _kind(v) -> str:
    return {list: "a list", dict: "a table", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(v), type(v).__name__)


def _value(field: str, v):
    """One value of a grid field, checked: its type and its range, refused with a message naming the field."""
    where = f"sweep grid: {field}"
    if field == "products":
        if isinstance(v, (list, dict, bool, int, float)):
            raise ValueError(f"{where}: expected a product name, not {_kind(v)}")
        return v
    if field == "pageable":
        if not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"{where}: expected true or false, not {_kind(v)}")
        return bool(v)
    if field in ("h2d", "d2h"):
        from .common import parse_size

        if isinstance(v, str):
            try:
                return parse_size(v, MAX_SIZE)
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise ValueError(f"{where}: expected a size in bytes (an integer or a string such as \"64M\"), "
                             f"not {_kind(v)}")
        if not 1 <= v <= MAX_SIZE:
            raise ValueError(f"{where}: {v} bytes: expected 1..{MAX_SIZE} (1 TiB, more than any product's "
                             "device memory)")
        return int(v)
    if field == "compute_us":
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise ValueError(f"{where}: expected a number of microseconds, not {_kind(v)}")
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{where}: {v}: expected a finite number of microseconds >= 0")
        return float(v)
    limit = {"streams": overlap.MAX_STREAMS, "chunks": overlap.MAX_CHUNKS}[field]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise ValueError(f"{where}: expected a whole number, not {_kind(v)}")
    if not 1 <= v <= limit:
        raise ValueError(f"{where}: {v}: expected 1..{limit}")
    return int(v)


def run_one(params: dict) -> dict:
    """One run: the parameters and the metrics of `overlap.simulate`, in COLUMNS order."""
    r = overlap.simulate(params["product"], params["h2d_bytes"], params["d2h_bytes"], params["compute_us"],
                         params["streams"], params["chunks"], params["pageable"])
    lim = overlap.limits(params["product"], params["h2d_bytes"], params["d2h_bytes"], params["compute_us"])
    row = {**params, **{k: r[k] for k in METRICS if k in r}, "floor_ms": lim["floor_ms"],
           "binding": lim["binding"], "unvalidated": ";".join(r["unvalidated_routes"])}
    return {k: row[k] for k in COLUMNS}


def unvalidated_line(rows: list[dict]) -> str:
    """One line for the printed summary: the unvalidated routes any run rests on, by product."""
    by_product: dict[str, set] = {}
    for r in rows:
        by_product.setdefault(r["product"], set()).update(r["unvalidated"].split(";"))
    parts = [f"{product}: {', '.join(r for r in R.ROUTES if r in routes)}"
             for product, routes in by_product.items() if routes - {""}]
    if not parts:
        return "every route these runs depend on is checked against an independent measurement"
    return "unvalidated routes (no independent measurement; see acl-emu validate): " + "; ".join(parts)


def run(grid: Grid, workers: int = 0, scheduler: str | None = None, progress=None) -> list[dict]:
    """Every run of `grid` (the overlap pipeline), as rows in grid order (see `execute`)."""
    return execute(run_one, grid.runs(), workers, scheduler, progress)


def execute(fn, runs: list[dict], workers: int = 0, scheduler: str | None = None, progress=None) -> list[dict]:
    """[fn(params) for params in runs], in order, whatever runs them. workers 0 (or 1) and no scheduler: in
    this process; workers N > 1: a local Dask cluster of N worker processes; scheduler: an existing Dask
    cluster's address (tcp://host:8786). `fn` must be importable by the workers (a module-level function)
    and deterministic. progress: a `common.Progress`-like object advanced once per run."""
    if scheduler is None and workers <= 1:
        rows = []
        for params in runs:
            rows.append(fn(params))
            if progress is not None:
                progress.advance(1, _note(params))
        return rows
    return _run_dask(fn, runs, workers, scheduler, progress)


def _note(params: dict) -> str:
    return " ".join(str(v) for v in list(params.values())[:3])


def _dask():
    try:
        from dask import distributed
    except ImportError:
        raise RuntimeError("parallel sweeps run on Dask: pip install 'acl-emu[sweep]' (or dask[distributed]), "
                           "or run with --workers 0") from None
    return distributed


def _run_dask(fn, runs: list[dict], workers: int, scheduler: str | None, progress) -> list[dict]:
    distributed = _dask()
    if scheduler is not None:
        client, cluster = distributed.Client(scheduler), None
    else:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        futures = client.map(fn, runs, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        rows: list = [None] * len(runs)
        for future in distributed.as_completed(futures):
            i = index[future.key]
            rows[i] = future.result()
            if progress is not None:
                progress.advance(1, _note(runs[i]))
        return rows
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def write(rows: list[dict], out, formats=("csv", "parquet")) -> dict:
    """sweep.csv and sweep.parquet (Parquet needs pyarrow: `pip install 'acl-emu[sweep]'`) in `out`; returns
    their paths."""
    from .common import Landing, write_csv

    names = {fmt: f"sweep.{fmt}" for fmt in formats}
    with Landing(Path(out)) as land:
        if "csv" in names:
            write_csv(land(names["csv"]), rows)
        if "parquet" in names:
            _write_parquet(land(names["parquet"]), rows)
        return {k: str(land.dir / v) for k, v in names.items()}


def can_write_parquet() -> bool:
    """Whether pyarrow is installed (Parquet tables)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def _write_parquet(path, rows: list[dict]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise RuntimeError("Parquet output needs pyarrow: pip install 'acl-emu[sweep]', or ask for --format csv") \
            from None
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, path)


def grid_dict(grid: Grid) -> dict:
    return asdict(grid)
