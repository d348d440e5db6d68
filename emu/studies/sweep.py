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

import itertools
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .. import routes as R
from . import overlap

PARAMETERS = ("product", "h2d_bytes", "d2h_bytes", "compute_us", "streams", "chunks", "pageable")
METRICS = ("iteration_ms", "exposed_copy_ms", "floor_ms", "vs_floor", "link_h2d_util", "link_d2h_util",
           "engine_util", "compute_util", "binding")
COLUMNS = PARAMETERS + METRICS + ("unvalidated",)
MAX_RUNS = 1_000_000  # a grid larger than this is a mistake, not a study


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
            value = (value,) if isinstance(value, (str, int, float, bool)) else tuple(value)
            if not value:
                raise ValueError(f"sweep grid: {f.name} is empty")
            object.__setattr__(self, f.name, value)
        from .. import config

        for p in self.products:
            config.load(p)  # an unknown product fails here, before any run
        for h in self.h2d:
            for d in self.d2h:
                for s in self.streams:
                    for c in self.chunks:
                        if s <= c:
                            overlap._check(h, d, min(self.compute_us), s, c)
        if len(self) > MAX_RUNS:
            raise ValueError(f"sweep grid: {len(self)} runs (more than {MAX_RUNS})")
        if not len(self):
            raise ValueError("sweep grid: no combination has streams <= chunks")

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
        return len(self.runs())

    @classmethod
    def from_toml(cls, path) -> "Grid":
        """A grid from a TOML file whose [sweep] table (or top level) sets any of the fields; sizes may be
        strings as on the command line ("64M")."""
        from .common import parse_size

        with open(path, "rb") as f:
            data = tomllib.load(f)
        data = data.get("sweep", data)
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{path}: unknown sweep keys {sorted(unknown)}; expected some of {sorted(known)}")
        kwargs = {}
        for key, value in data.items():
            values = value if isinstance(value, list) else [value]
            if key in ("h2d", "d2h"):
                values = [parse_size(v) if isinstance(v, str) else int(v) for v in values]
            kwargs[key] = tuple(values)
        return cls(**kwargs)


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
