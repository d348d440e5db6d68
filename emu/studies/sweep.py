"""`acl-emu sweep`: the overlap pipeline over a grid of products, sizes, streams, chunks and compute times,
one tidy table out, run serially or in parallel on Dask.

A run is one `overlap.simulate` (a fresh timing-only runtime, deterministic), so runs are independent and
their order does not matter: the sweep maps them over workers and puts the rows back in grid order, which
makes a parallel sweep's table exactly the serial one. Parallel runs use Dask (`pip install acl-emu[sweep]`):
a local cluster of N worker processes by default, or an existing cluster by its scheduler address, so a
sweep grows past one machine without code changes. A run takes milliseconds, so runs travel in batches of
about TASK_S seconds of work per Dask task (the time of one run measured on a first few, spread over the grid),
and a grid too small to win back the cluster's start runs in this process (`Plan` says which, and why).

    from emu.studies import sweep
    grid = sweep.Grid(products=["910B", "A3"], h2d=[64 << 20], d2h=[16 << 20], compute_us=[1500, 5000],
                      streams=[1, 2, 4], chunks=[1, 4, 16])
    rows = sweep.run(grid, workers=2)          # one dict per run, in grid order
    sweep.best_per_workload(rows)              # the best streams x chunks of each product x sizes x compute
    sweep.write(rows, "out", grid=grid)        # sweep.csv and sweep.parquet (its metadata: version, grid)

Columns: every swept parameter (product, h2d_bytes, d2h_bytes, compute_us, streams, chunks, pageable), then
the metrics with their units in their names (iteration_ms, exposed_copy_ms, floor_ms, vs_floor (ratio),
link_h2d_util / link_d2h_util / engine_util / compute_util (fractions of capacity), binding), and unvalidated:
the routes the run rests on that no independent measurement checks on its product (emu.routes), joined with
";" ("" when none).
"""
from __future__ import annotations

import bisect
import itertools
import json
import math
import numbers
import random
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from .. import files
from .. import routes as R
from . import overlap
from .common import human_bytes

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
        overlap.check_plan(min(self.h2d), min(self.d2h), min(self.compute_us), min(self.streams), used)

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
            data = files.load_toml(path, files.CONFIG_BYTES, "a sweep config")
        except files.NotToml as e:
            raise ValueError(f"{path}: not a TOML file: {e}") from None
        except files.FileRefused as e:  # a FIFO, a device, a directory, over the bound, not UTF-8 text
            raise ValueError(str(e)) from None
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


def run_planned(grid: Grid, workers: int = 0, scheduler: str | None = None, progress=None,
                threshold_s: float | None = None) -> "Executed":
    """`run`, with how the runs were spread (`Executed.plan`: where, how many runs a task, why)."""
    return execute_planned(run_one, grid.runs(), workers, scheduler, progress, threshold_s)


# Batching: a run of the overlap pipeline takes about 1-10 ms, far less than what Dask spends on a task (a
# scheduler round trip, pickling, a result), so runs travel in batches of about TASK_S of work each; a first few
# runs, taken evenly across the grid and run in this process, give the time of one.
TASK_S = 0.4  # seconds of work a Dask task aims at (0.2-1 s: long enough to hide Dask's cost, short to balance)
PROBE_S = 0.25  # seconds of runs timed in this process before the rest are spread
PROBE_RUNS = 24  # at most this many runs timed first
TASKS_PER_WORKER = 3  # at least this many tasks a worker, so a slow batch does not hold the others up
LOCAL_START_S = 3.0  # starting a local cluster of worker processes (2-7 s measured on a 2-core machine)
CONNECT_S = 0.5  # connecting to a running scheduler and importing the study on its workers


@dataclass
class Plan:
    """How a sweep's runs were spread: `where` in words, the runs timed first in this process, the estimated
    seconds of one run, the runs a Dask task carries (0: no Dask), and `why` when a cluster was asked for and
    not used."""

    where: str
    probed: int
    run_s: float
    batch: int = 0
    tasks: int = 0
    why: str = ""

    @property
    def line(self) -> str:
        """One line for the printed summary."""
        text = self.where
        if self.batch:
            text += (f", {self.tasks} Dask tasks of {self.batch} runs (~{self.batch * self.run_s:.2f} s each; one run "
                     f"~{self.run_s * 1e3:.1f} ms)")
        return text + (f"; {self.why}" if self.why else "")


@dataclass
class Executed:
    """The rows of `execute_planned`, in the runs' order, and its `Plan`."""

    rows: list
    plan: Plan


def execute(fn, runs: list[dict], workers: int = 0, scheduler: str | None = None, progress=None) -> list[dict]:
    """[fn(params) for params in runs], in order, whatever runs them (see `execute_planned`)."""
    return execute_planned(fn, runs, workers, scheduler, progress).rows


def execute_planned(fn, runs: list[dict], workers: int = 0, scheduler: str | None = None, progress=None,
                    threshold_s: float | None = None) -> Executed:
    """[fn(params) for params in runs], in order, and how they ran. workers 0 (or 1) and no scheduler: in this
    process; workers N > 1: a local Dask cluster of N worker processes; scheduler: an existing Dask cluster's
    address (tcp://host:8786). A few runs taken evenly across `runs` are timed in this process first; the rest
    go to the cluster in batches of about TASK_S seconds each, unless they would take less than `threshold_s`
    seconds in this process (default: twice the cluster's start, LOCAL_START_S for a local one, CONNECT_S for a
    scheduler's: below that two workers cannot win their start back), then they run here and the plan says why. `fn` must be importable by the workers (a
    module-level function) and deterministic. progress: a `common.Progress`-like object advanced once per run."""
    rows: list = [None] * len(runs)
    if scheduler is None and workers <= 1:
        _run_here(fn, runs, range(len(runs)), rows, progress)
        return Executed(rows, Plan("in this process", 0, 0.0))
    probe = _probe_indices(len(runs))
    t0 = time.perf_counter()
    done = []
    for i in probe:
        _run_here(fn, runs, [i], rows, progress)
        done.append(i)
        if time.perf_counter() - t0 >= PROBE_S:
            break
    run_s = (time.perf_counter() - t0) / max(len(done), 1)
    rest = [i for i in range(len(runs)) if rows[i] is None]
    cluster = f"the Dask cluster at {scheduler}" if scheduler else f"a local Dask cluster of {workers} workers"
    start_s = CONNECT_S if scheduler else LOCAL_START_S
    threshold = start_s * 2 if threshold_s is None else threshold_s
    if not rest or len(rest) * run_s < threshold:
        _run_here(fn, runs, rest, rows, progress)
        why = (f"{cluster} not used: the {len(runs)} runs take ~{len(runs) * run_s:.1f} s here, less than "
               f"starting it and spreading them would save (~{start_s:g} s to start)")
        return Executed(rows, Plan("in this process", len(done), run_s, why=why))
    batch = batch_size(run_s, len(rest), workers if scheduler is None else 0)
    tasks = _run_dask(fn, runs, rest, rows, batch, workers, scheduler, progress)
    return Executed(rows, Plan(f"on {cluster}", len(done), run_s, batch, tasks))


def batch_size(run_s: float, runs: int, workers: int = 0) -> int:
    """Runs a Dask task carries: about TASK_S seconds of work at `run_s` seconds a run, no more than leaves each
    of `workers` (0: unknown, taken as 2) TASKS_PER_WORKER tasks, at least 1."""
    per_task = max(1, round(TASK_S / run_s)) if run_s > 0 else runs
    spread = max(1, -(-runs // (TASKS_PER_WORKER * (workers or 2))))
    return max(1, min(per_task, spread))


def _probe_indices(n: int) -> list[int]:
    """Up to PROBE_RUNS indices of range(n), drawn at random with a fixed seed (the same on every sweep): evenly
    spaced ones would fall in step with the grid's innermost fields and time only their cheap or dear corner."""
    return sorted(random.Random(0).sample(range(n), min(n, PROBE_RUNS)))


def _run_here(fn, runs: list[dict], indices, rows: list, progress) -> None:
    for i in indices:
        rows[i] = fn(runs[i])
        if progress is not None:
            progress.advance(1, _note(runs[i]))


def run_batch(fn, batch: list[dict]) -> list[dict]:
    """One Dask task: fn over a batch of runs, in order."""
    return [fn(params) for params in batch]


def _note(params: dict) -> str:
    """The progress bar's note for a run: its product and sizes, as people write them ("910B 64 MiB 16 MiB")."""
    return " ".join([str(params["product"]), human_bytes(params["h2d_bytes"]), human_bytes(params["d2h_bytes"])])


def dask_distributed():
    """dask.distributed, which parallel sweeps run on; RuntimeError saying how to install it when it is not."""
    try:
        from dask import distributed
    except ImportError:
        raise RuntimeError("parallel sweeps run on Dask: pip install 'acl-emu[sweep]' (or dask[distributed]), "
                           "or run with --workers 0") from None
    return distributed


def _run_dask(fn, runs: list[dict], rest: list[int], rows: list, batch: int, workers: int, scheduler: str | None,
              progress) -> int:
    """Run runs[rest] on Dask in batches of about `batch` runs, each taking every count-th run of `rest` (so
    each holds runs from all over the grid, and the tasks take about as long), filling rows in place; returns the
    number of tasks."""
    distributed = dask_distributed()
    if scheduler is not None:
        client, cluster = distributed.Client(scheduler), None
    else:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        count = -(-len(rest) // batch)
        groups = [rest[k::count] for k in range(count)]  # interleaved: each mixes the grid's cheap and dear runs
        futures = [client.submit(run_batch, fn, [runs[i] for i in g], pure=False) for g in groups]
        index = {f.key: g for f, g in zip(futures, groups)}
        for future in distributed.as_completed(futures):
            group = index[future.key]
            for i, row in zip(group, future.result()):
                rows[i] = row
            if progress is not None:
                progress.advance(len(group), _note(runs[group[-1]]))
        return len(groups)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


WORKLOAD = ("product", "h2d_bytes", "d2h_bytes", "compute_us")
SETTING = ("streams", "chunks", "pageable")


def best_per_workload(rows: list[dict]) -> list[dict]:
    """The best setting of each workload (product x sizes x compute time, in the rows' order): its streams,
    chunks and host memory, iteration_ms and vs_floor, the runs of the workload, and the speed-up over one
    stream and one chunk when the grid has it. Ties go to fewer streams, then fewer chunks, then pinned."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in WORKLOAD), []).append(r)
    out = []
    for key, runs in groups.items():
        best = min(runs, key=lambda r: (r["iteration_ms"], r["streams"], r["chunks"], r["pageable"]))
        serial = next((r for r in runs if r["streams"] == 1 and r["chunks"] == 1
                       and r["pageable"] == best["pageable"]), None)
        out.append({**dict(zip(WORKLOAD, key)), **{k: best[k] for k in SETTING},
                    "iteration_ms": best["iteration_ms"], "vs_floor": best["vs_floor"], "runs": len(runs),
                    "speedup_vs_1x1": serial["iteration_ms"] / best["iteration_ms"]
                    if serial is not None and best["iteration_ms"] > 0 else None})
    return out


BEST_SHOWN = 24  # workloads listed in the printed table


def best_table(best: list[dict], shown: int = BEST_SHOWN) -> str:
    """The best setting of each workload (`best_per_workload`) as a text table, the first `shown` workloads."""
    from .common import format_table

    pageable = len({b["pageable"] for b in best}) > 1
    rows = [{"product": b["product"], "h2d": human_bytes(b["h2d_bytes"]), "d2h": human_bytes(b["d2h_bytes"]),
             "compute": f"{b['compute_us']:g}", "setting": f"{b['streams']} x {b['chunks']}"
             + (" pageable" if b["pageable"] and pageable else ""), "ms": f"{b['iteration_ms']:.3f}",
             "floor": f"{b['vs_floor']:.3f}", "speedup": "-" if b["speedup_vs_1x1"] is None
             else f"{b['speedup_vs_1x1']:.2f}x"} for b in best[:shown]]
    text = ("best setting per workload (product x sizes x compute time; streams x chunks, the fastest of its runs):\n"
            + format_table(rows, [("product", "product"), ("h2d", "H2D"), ("d2h", "D2H"), ("compute", "compute us"),
                                  ("setting", "streams x chunks"), ("ms", "iteration ms"), ("floor", "x floor"),
                                  ("speedup", "vs 1 x 1")]))
    if len(best) > shown:
        text += f"\n... and {len(best) - shown} more workloads (--json, or group sweep.csv by the workload columns)"
    return text


def write(rows: list[dict], out, formats=("csv", "parquet"), grid: Grid | None = None) -> dict:
    """sweep.csv and sweep.parquet (Parquet needs pyarrow: `pip install 'acl-emu[sweep]'`) in `out`; returns
    their paths. The Parquet schema's metadata carries the acl-emu version and the grid (`parquet_metadata`)."""
    from .common import Landing, write_csv

    names = {fmt: f"sweep.{fmt}" for fmt in formats}
    with Landing(Path(out)) as land:
        if "csv" in names:
            write_csv(land(names["csv"]), rows)
        if "parquet" in names:
            _write_parquet(land(names["parquet"]), rows, grid)
        return {k: str(land.dir / v) for k, v in names.items()}


def can_write_parquet() -> bool:
    """Whether pyarrow is installed (Parquet tables)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def parquet_metadata(grid: Grid | None) -> dict[bytes, bytes]:
    """The schema metadata of sweep.parquet: b"acl-emu version" (emu.__version__) and b"acl-emu grid" (the grid's
    fields as JSON; null when the rows came without their grid)."""
    from .. import __version__

    grid_json = json.dumps(grid_dict(grid) if grid is not None else None)
    return {b"acl-emu version": __version__.encode(), b"acl-emu grid": grid_json.encode()}


def _write_parquet(path, rows: list[dict], grid: Grid | None = None) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise RuntimeError("Parquet output needs pyarrow: pip install 'acl-emu[sweep]', or ask for --format csv") \
            from None
    table = pa.Table.from_pylist(rows)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **parquet_metadata(grid)})
    pq.write_table(table, path)


def grid_dict(grid: Grid) -> dict:
    """The grid's fields as plain lists (the TOML keys of `Grid.from_toml`)."""
    return {k: list(v) for k, v in asdict(grid).items()}
