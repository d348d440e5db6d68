"""Product configs: one TOML file per product of the support matrix.

A config says what the product supports (the APIs the runtime refuses on its
chip and the chip's feature flags: docs/conformance/products.md), its deployment
mode, its devices and their memory, and the hardware the timing model builds the
machine from (docs/hardware.md). Every number carries its source in a `source`
table beside it; a config without one, or with a field of the wrong type, fails
naming the file and the field. A source starts with its confidence: `C:`
confirmed, `3P:` third party, `A:` assumed, `fit:` fitted to a measurement
(docs/hardware.md#confidence-tags).

A user config may start with `inherit = "910B"` and override any field.
"""
from __future__ import annotations

import difflib
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from emu.models import AICore, DeviceLink, Hardware, Host, HostLink, PcieLink, Staging

from .files import CONFIG_BYTES, FileRefused, NotToml, load_toml
from .routes import ROUTES

def data_dir(name: str) -> Path:
    """A data folder of the package (configs, validation): inside the installed package (a wheel puts them
    in emu/), else the repository's top level (a checkout, an editable install)."""
    here = Path(__file__).resolve().parent
    inside = here / name
    return inside if inside.is_dir() else here.parent / name


CONFIG_DIR = Path(os.environ.get("ACL_EMU_CONFIG_DIR") or data_dir("configs"))
DEFAULT_PRODUCT = "910B"

FAMILIES = ("950", "A3", "A2", "200I", "310P", "910", "IPV350")

# Feature flags of the runtime's chip configs (docs/conformance/products.md#2-feature-gates-the-emulated-apis-depend-on).
FEATURES = frozenset({
    "p2p",             # DeviceCanAccessPeer / Enable / Disable
    "peer_copy_needs_enable",  # a cross-device copy needs EnablePeerAccess first
    "host_register",   # HostRegister / V2 / GetDevicePointer / Unregister
    "batch_copy",      # MemcpyBatch family
    "d2d_by_offset",   # MemcpyAsyncWithOffset
    "acl_graph",       # capture
    "stars",           # descriptor copies
    "memset_task",     # device memset as one task (950)
    "memcpy2d_async_d2d",
    "va_flag",         # MallocHostWithCfg VA_FLAG
    "huge1g",          # HUGE1G policies
    "huge_stream",     # ACL_STREAM_HUGE streams (RT_FEATURE_STREAM_HUGE_DEPTH)
    "memcpy2d_default_stream",  # a null stream in Memcpy2dAsync is the default stream (RT_FEATURE_DEVICE_CTRL_SQ)
    "ipc_event",       # ACL_EVENT_IPC events (RT_FEATURE_IPC_EVENT)
})


class ConfigError(ValueError):
    """A product config is missing, malformed, or names an unknown field."""

    def __init__(self, path, field: str, why: str):
        super().__init__(f"{path}: field '{field}': {why}")
        self.path = path
        self.field = field


@dataclass(frozen=True)
class Product:
    """One product config, loaded (`load`): what the runtime emulates (deployment mode, devices, memory,
    limits, the APIs and chip features it has) and the timing model's `Hardware`, with the source of every
    number (`sources`, `values`). Frozen: a what-if is a config that inherits this one and overrides a field."""

    name: str
    title: str
    family: str
    deployment: str  # "EP" (host drives a card), "RC" (application on the board) or "CTRL_CPU" (on the device's CPU)
    device_count: int
    memory_bytes: int  # device memory per device, as aclrtGetMemInfo reports total
    memory_kind: str  # "HBM" or "DDR"
    malloc_padding: int  # bytes aclrtMalloc adds after rounding to 32
    max_streams: int
    max_events: int
    memcpy_desc_size: int
    host_link: str  # "pcie", "hccs" or "ub": how the host reaches a device
    peer_groups: tuple  # groups of devices that can access each other (a switch, an HCCS mesh, ...)
    unsupported: frozenset  # C API names this product does not support
    features: frozenset
    hardware: Hardware
    sources: dict  # "section.field" -> source tag
    path: Path
    values: dict = field(default_factory=dict)  # "section.field" -> the value the config gives, for each cited field
    unvalidated: frozenset = frozenset(ROUTES)  # routes no independent measurement checks (emu.routes)
    aicore: AICore | None = None  # what device code sees of its AI Core ([aicore]); None: kernels do not run

    def supports(self, api: str) -> bool:
        return api not in self.unsupported

    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def ep_mode(self) -> bool:
        return self.deployment == "EP"

    @property
    def no_2d_copy(self) -> bool:
        """2D copies are refused on 200I/500 A2 in RC mode and on 310P with the control CPU open (the aclrtMemcpy2d
        notes of hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md)."""
        return (self.deployment == "RC" and self.family == "200I") or \
            (self.deployment == "CTRL_CPU" and self.family == "310P")

    @property
    def async_copy_unit(self) -> int:
        """Largest H2D / D2H task the runtime enqueues (docs/hardware.md#task-sizes)."""
        return (256 if self.host_link == "ub" else 64) << 20


def find(name_or_path: str | os.PathLike) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        if not p.exists():
            raise ConfigError(p, "<file>", "no such config file")
        if p.is_dir():
            raise ConfigError(p, "<file>", "is a directory, not a config file")
        return p
    cand = CONFIG_DIR / f"{name_or_path}.toml"
    if not cand.exists():
        same = product_named(str(name_or_path))
        if same is not None:
            return CONFIG_DIR / f"{same}.toml"
        hint = suggestion(str(name_or_path))
        hint = f" (did you mean {hint}?)" if hint else ""
        raise ConfigError(cand, "<product>", f"unknown product {str(name_or_path)!r}{hint}; known: "
                                             f"{', '.join(available())}")
    return cand


def product_named(name: str) -> str | None:
    """The bundled product whose name is `name` up to case ('910b' -> '910B', 'a3' -> 'A3'), else None."""
    matches = [p for p in available() if p.casefold() == name.strip().casefold()]
    return matches[0] if len(matches) == 1 else None


def suggestion(name: str) -> str | None:
    """The bundled product a near miss means ('910 B', '91OB', 'A2-910B'), for an error message; None when
    none is close."""
    known = {p.casefold().replace("-", "").replace("_", ""): p for p in available()}
    key = name.casefold().replace(" ", "").replace("-", "").replace("_", "")
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return known[close[0]] if close else None


def available() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))


def _read(path: Path, seen=(), files: list | None = None) -> dict:
    """The TOML table of a config file, merged over the file it inherits from. `files` gets the (file, its
    stamp) of every file read, for `load`'s memo."""
    real = path.resolve()
    if real in seen:
        raise ConfigError(path, "inherit", "inheritance cycle: " + " -> ".join(str(p) for p in (*seen, real)))
    try:
        data = load_toml(path, CONFIG_BYTES, "a product config")
    except NotToml as e:
        raise ConfigError(path, "<syntax>", f"not TOML: {e}") from None
    except FileRefused as e:  # a FIFO, a device, a directory, over the bound, not UTF-8 text
        raise ConfigError(path, "<file>", e.why) from None
    if files is not None:
        files.append((real, _stamp(real)))
    parent = data.pop("inherit", None)
    for key in data:  # `inherits = "910B"` would otherwise fail later as a missing [product] table
        if difflib.get_close_matches(key.lower(), ["inherit"], n=1, cutoff=0.7):
            raise ConfigError(path, key, "unknown field; did you mean 'inherit'?")
    if parent is not None:
        if not isinstance(parent, str):
            raise ConfigError(path, "inherit", "must be a product name or a path")
        ppath = find(parent if not parent.endswith(".toml") else path.parent / parent)
        data = _merge(_read(ppath, seen + (real,), files), data)
    return data


def _stamp(path: Path) -> tuple | None:
    """What tells a file was changed: its modification time and size (None: it is gone)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


# path -> (the (file, stamp) of every file it read, its Product): a config loads once while its files
# are unchanged (a Product is frozen; each runtime builds its own machine from it)
_LOADED: dict[Path, tuple[tuple, "Product"]] = {}


def source_tables(name_or_path: str | os.PathLike = DEFAULT_PRODUCT) -> dict:
    """Every entry of every `source` table of a config, inherited ones included, as the loader merges them:
    "section.field" -> source string."""
    out: dict = {}

    def walk(table: dict, section: str) -> None:
        for key, value in table.items():
            if not isinstance(value, dict):
                continue
            if key == "source":
                out.update({f"{section}.{k}" if section else k: v for k, v in value.items()})
            else:
                walk(value, f"{section}.{key}" if section else key)

    walk(_read(find(name_or_path)), "")
    return out


def _merge(base: dict, over: dict) -> dict:
    """`over` on top of `base`, table by table. A number `over` sets without its own source loses the
    parent's: the parent's citation was for the parent's value."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    src = base.get("source")
    if isinstance(src, dict):
        mine = over.get("source") if isinstance(over.get("source"), dict) else {}
        stale = [k for k in over if k != "source" and not isinstance(over[k], dict) and k in src and k not in mine]
        if stale:
            out["source"] = {k: v for k, v in out["source"].items() if k not in stale}
    return out


class _Fields:
    """Typed access to one table of a config, naming the field on error. Every table read through it is
    remembered, so that a key nothing reads (a misspelled field) can be refused (`check_unknown`)."""

    def __init__(self, path: Path, table, section: str, sources: dict, opened: list | None = None,
                 values: dict | None = None):
        self.path, self.section, self.sources = path, section, sources
        self.values = {} if values is None else values
        if not isinstance(table, dict):
            raise ConfigError(path, section, "missing table")
        self.table = table
        src = table.get("source", {})
        if not isinstance(src, dict):
            raise ConfigError(path, f"{section}.source", "must be a table of field -> source")
        self.src = src
        self.read = {"source"}
        self.opened = [] if opened is None else opened
        self.opened.append(self)

    def sub(self, key: str) -> "_Fields":
        """The sub-table `key` (e.g. hardware.host_link)."""
        self.read.add(key)
        section = f"{self.section}.{key}" if self.section else key
        return _Fields(self.path, self.table.get(key), section, self.sources, self.opened, self.values)

    def get(self, key: str, typ, *, choices=None, positive=False, cited=True, maximum=None, minimum=None):
        name = f"{self.section}.{key}"
        self.read.add(key)
        if key not in self.table:
            raise ConfigError(self.path, name, "missing")
        v = self.table[key]
        ok = isinstance(v, typ) and not (typ in (int, float) and isinstance(v, bool))
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            v, ok = float(v), True
        if not ok:
            raise ConfigError(self.path, name, f"expected {typ.__name__}, got {type(v).__name__} {v!r}")
        if choices is not None and v not in choices:
            raise ConfigError(self.path, name, f"{v!r} is not one of {sorted(choices)}")
        if typ in (int, float):
            _check_number(self.path, name, v, positive, maximum, minimum)
        tag = self.src.get(key)
        if cited and typ in (int, float) and (not isinstance(tag, str) or not tag.strip()):
            raise ConfigError(self.path, f"{self.section}.source.{key}",
                              "every number needs its source (or 'A: assumed ...')")
        if isinstance(tag, str) and tag.strip() and (cited or typ not in (int, float)):
            self.sources[name] = tag  # a number's source, and that of any other field the config cites
            self.values[name] = self.table[key]
        return v

    def opt(self, key: str, typ, default, **checks):
        """A field the config may leave out; `default` means the mechanism is absent (no limit, no cost)."""
        self.read.add(key)
        return self.get(key, typ, **checks) if key in self.table else default


# a field's unit, by the end of its name, for the bounds its errors say
_UNITS = (("_gbps", " GB/s"), ("_us", " us"), ("_ns", " ns"), ("_tflops", " TFLOPS"), ("_bytes", " bytes"),
          ("_padding", " bytes"))


def _bound(name: str, bound) -> str:
    key = "_" + name.rsplit(".", 1)[-1]  # `gbps` as well as `copy_gbps`
    unit = next((u for end, u in _UNITS if key.endswith(end)), "")
    text = f"{bound:g}{unit}" if isinstance(bound, float) else f"{bound}{unit}"
    if unit == " bytes" and bound >= 1024:
        text += next(f" ({bound >> s} {u})" for s, u in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB"))
                     if bound >= 1 << s)
    elif unit == " us" and bound >= 1000:
        text += f" ({bound / 1e6:g} s)"
    elif unit == " ns" and bound >= 1000:
        text += f" ({bound / 1e6:g} ms)"
    return text


def _check_number(path: Path, name: str, v, positive: bool, maximum, minimum=None) -> None:
    """Numbers are finite and not negative (rates, latencies, sizes, counts); > 0 where asked; at least
    `minimum` and at most `maximum` (bounds every shipped config meets with a wide margin: a value past
    them is a typo or a units mistake, and would break the studies' arithmetic)."""
    if not math.isfinite(v):
        raise ConfigError(path, name, f"must be a finite number, got {v!r}")
    if v < 0 or (positive and v == 0):
        raise ConfigError(path, name, f"must be {'> 0' if positive else '>= 0'}, got {v!r}")
    if minimum is not None and v < minimum:
        raise ConfigError(path, name, f"{v!r} is less than the minimum {_bound(name, minimum)}: not a plausible value")
    if maximum is not None and v > maximum:
        raise ConfigError(path, name, f"{v!r} is more than the maximum {_bound(name, maximum)}: not a plausible value")


def check_unknown(opened: list) -> None:
    """A key no field reads is a mistake (`genn = 4` would silently keep the parent's `gen`): refuse it,
    naming the nearest known field."""
    for f in opened:
        for table, what in ((f.table, ""), (f.src, "source.")):
            for key in table:
                if key not in f.read:
                    near = difflib.get_close_matches(key, sorted(f.read - {"source"}), n=1)
                    hint = f"; did you mean '{near[0]}'?" if near else ""
                    name = f"{f.section}.{what}{key}" if f.section else f"{what}{key}"
                    raise ConfigError(f.path, name, f"unknown field{hint}")


# a PCIe host link's fields (efficiency: the share of the pcie-bench rate a DMA reaches); a link given by its
# effective rate has gbps / up_gbps instead
PCIE_FIELDS = ("gen", "lanes", "mps", "mrrs", "efficiency", "read_efficiency")


_US, _GBPS = 1e-6, 1e9  # the config's units (us, GB/s) in the model's (s, B/s)

# Bounds of the numeric fields (issue 30): wide around every shipped config, tight enough that the studies'
# arithmetic stays finite and nonzero (a rate of 1e-300 GB/s divides by zero, a latency of 1e300 us overflows).
RATE = dict(positive=True, minimum=1e-3, maximum=1e5)  # GB/s: 1 MB/s .. 100 TB/s (shipped: 3 .. 4000);
# also peak_tflops: 0.001 .. 100,000 TFLOPS (shipped: 1 .. 500)
COST = dict(maximum=1e6)  # us: a latency or fixed cost of 0 .. 1 s (shipped: at most 11.5 us)
COUNT = dict(positive=True, maximum=64)  # engines, kernel slots, devices per link or CPU (shipped: at most 4)
EFFICIENCY = dict(positive=True, minimum=0.01, maximum=1.0)  # a share of a link's rate (shipped: 0.888, 0.96)


def _host_link(f: _Fields) -> HostLink:
    """hardware.host_link: a PCIe link by its generation and lanes, or any kind by its effective rate; the
    other way's fields are marked read, so a table inherited from another kind is not refused."""
    host = f.sub("host_link")
    kind = host.get("kind", str, choices=("pcie", "hccs", "ub", "soc"))
    host.read.update(("gbps", "up_gbps") if kind == "pcie" else PCIE_FIELDS)  # inherited from another kind
    common = dict(latency=host.get("latency_us", float, **COST) * _US,
                  shared_by=host.get("shared_by", int, **COUNT),
                  per_engine=host.opt("per_engine_gbps", float, 0.0, **RATE) * _GBPS)
    if kind == "pcie":
        fields = {k: host.get(k, int) for k in ("gen", "lanes", "mps", "mrrs")}
        try:
            pcie = PcieLink(**fields)
        except ValueError as e:
            raise ConfigError(f.path, "hardware.host_link", str(e)) from None
        return HostLink(kind, pcie=pcie, efficiency=host.opt("efficiency", float, 1.0, **EFFICIENCY),
                        read_efficiency=host.opt("read_efficiency", float, 0.0, **EFFICIENCY),
                        **common)
    return HostLink(kind, bandwidth=host.get("gbps", float, **RATE) * _GBPS,
                    bandwidth_up=host.opt("up_gbps", float, 0.0, **RATE) * _GBPS, **common)


def _device_link(f: _Fields, name: str, topology: bool) -> DeviceLink | None:
    """hardware.<name> (peer_link, pair_link), or None without that table; topology=False: always "mesh"."""
    if name not in f.table:
        return None
    t = f.sub(name)
    return DeviceLink(kind=t.get("kind", str, choices=("hccs", "ub", "sio")),
                      bandwidth=t.get("gbps", float, **RATE) * _GBPS,
                      latency=t.get("latency_us", float, **COST) * _US,
                      topology=t.get("topology", str, choices=("mesh", "switch")) if topology else "mesh",
                      per_engine=t.opt("per_engine_gbps", float, 0.0, **RATE) * _GBPS)


def _host_side(f: _Fields) -> Host:
    """hardware.host: the host's CPUs and memory; without that table, `Host()`'s defaults."""
    if "host" not in f.table:
        return Host()
    h = f.sub("host")
    return Host(cpu=h.get("cpu", str), devices_per_cpu=h.get("devices_per_cpu", int, **COUNT),
                bandwidth=h.opt("gbps", float, 0.0, **RATE) * _GBPS,
                register=h.get("register_us", float, **COST) * _US,
                pin_bandwidth=h.get("pin_gbps", float, **RATE) * _GBPS)


def _staging(st: _Fields) -> Staging:
    """hardware.staging: the bounce buffers a pageable copy goes through."""
    return Staging(chunk_bytes=st.get("chunk_bytes", int, positive=True, minimum=4 << 10, maximum=1 << 30),
                   buffers=st.get("buffers", int, positive=True, maximum=1024),
                   setup=st.get("setup_us", float, **COST) * _US,
                   copy_bandwidth=st.get("copy_gbps", float, **RATE) * _GBPS)


def _aicore(f: _Fields) -> AICore:
    return AICore(
        npu_arch=f.get("npu_arch", int, positive=True, maximum=99999),
        ub_bytes=f.get("ub_bytes", int, positive=True, minimum=1024, maximum=1 << 24),
        vector_cores=f.get("vector_cores", int, positive=True, maximum=4096),
        clock_hz=f.get("clock_mhz", float, positive=True, maximum=10000.0) * 1e6,
        vector_bytes_per_cycle=f.get("vector_bytes_per_cycle", float, positive=True, maximum=65536.0),
        gm_bytes_per_cycle=f.get("gm_bytes_per_cycle", float, positive=True, maximum=65536.0),
        scalar_cycles_per_ns=f.get("scalar_cycles_per_ns", float, positive=True, maximum=1000.0),
    )


def _hardware(f: _Fields, devices: int, peer_groups: tuple) -> Hardware:
    """The [hardware] table as a `Hardware`, its fields read in the order the errors name them."""
    host_link = _host_link(f)
    st = f.sub("staging")
    host_side = _host_side(f)
    return Hardware(
        num_devices=devices,
        engines_per_device=f.get("engines_per_device", int, **COUNT),
        call_overhead=f.get("call_overhead_us", float, **COST) * _US,
        host_memcpy_bandwidth=f.get("host_memcpy_gbps", float, **RATE) * _GBPS,
        host_memset_bandwidth=f.get("host_memset_gbps", float, **RATE) * _GBPS,
        memory_bandwidth=f.get("memory_gbps", float, **RATE) * _GBPS,
        peak_flops=f.get("peak_tflops", float, **RATE) * 1e12,
        sdma_latency=f.get("sdma_latency_us", float, **COST) * _US,
        row_overhead=f.get("row_overhead_ns", float, maximum=1e6) * 1e-9,
        kernel_slots=f.get("kernel_slots", int, **COUNT),
        host_link=host_link,
        peer_link=_device_link(f, "peer_link", topology=True),
        pair_link=_device_link(f, "pair_link", topology=False),
        staging=_staging(st),
        sync_copy=f.get("sync_copy_us", float, **COST) * _US,
        sync_wait=f.opt("sync_wait_us", float, 0.0, **COST) * _US,
        copy_submit=f.opt("copy_submit_us", float, 0.0, **COST) * _US,
        launch=f.opt("launch_us", float, 0.0, **COST) * _US,
        kernel_dispatch=f.opt("kernel_dispatch_us", float, 0.0, **COST) * _US,
        host=host_side,
        peer_groups=peer_groups,
    )


def _device_count(path: Path, dv: _Fields) -> int:
    n = dv.get("count", int, positive=True)
    if n > 64:
        raise ConfigError(path, "devices.count", f"{n} > 64 (RT_MAX_DEV_NUM)")
    return n


def _peer_groups(path: Path, dv: _Fields) -> tuple:
    """devices.peer_groups: lists of device ids that can access each other; default: all of them."""
    n = dv.get("count", int, positive=True)
    dv.read.add("peer_groups")
    groups = dv.table.get("peer_groups", [list(range(n))])
    ok = isinstance(groups, list) and all(isinstance(g, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d < n for d in g) for g in groups)
    if not ok:
        raise ConfigError(path, "devices.peer_groups", f"expected lists of device ids in 0..{n - 1}")
    tag = dv.src.get("peer_groups")
    if "peer_groups" in dv.table and isinstance(tag, str) and tag.strip():
        dv.sources["devices.peer_groups"], dv.values["devices.peer_groups"] = tag, groups
    return tuple(frozenset(g) for g in groups)


def _unvalidated(top: _Fields) -> frozenset:
    """validation.unvalidated: the routes (emu.routes.ROUTES) no independent measurement checks on this
    product; a config without the table checks none."""
    top.read.add("validation")
    if "validation" not in top.table:
        return frozenset(ROUTES)
    routes = top.sub("validation").get("unvalidated", list)
    for i, r in enumerate(routes):
        if r not in ROUTES:
            raise ConfigError(top.path, f"validation.unvalidated[{i}]", f"unknown route {r!r}; known: {list(ROUTES)}")
    return frozenset(routes)


def load(name_or_path: str | os.PathLike = DEFAULT_PRODUCT) -> Product:
    """The Product a config describes: a product name (configs/<name>.toml) or a path. Read, checked and
    built once while the file (and what it inherits from) is unchanged; the same Product after that."""
    path = find(name_or_path)
    key = path.resolve()
    hit = _LOADED.get(key)
    if hit is not None and all(_stamp(f) == stamp for f, stamp in hit[0]):
        return hit[1]
    files: list = []
    product = _load(path, _read(path, files=files))
    _LOADED[key] = (tuple(files), product)
    logging.getLogger(__name__).debug("product %s: %s", product.name, ", ".join(str(f) for f, _ in files))
    return product


def _load(path: Path, data: dict) -> Product:
    sources: dict = {}
    values: dict = {}
    top = _Fields(path, data, "", sources, values=values)  # the file itself: its known tables are the subs read below
    p, dv, api = top.sub("product"), top.sub("devices"), top.sub("api")
    unsupported = api.get("unsupported", list)
    features = api.get("features", list)
    for i, x in enumerate(unsupported):
        if not isinstance(x, str) or not x.startswith("acl"):
            raise ConfigError(path, f"api.unsupported[{i}]", f"expected an ACL API name, got {x!r}")
    for i, x in enumerate(features):
        if x not in FEATURES:
            raise ConfigError(path, f"api.features[{i}]", f"unknown feature {x!r}; known: {sorted(FEATURES)}")
    device_count = _device_count(path, dv)
    peer_groups = _peer_groups(path, dv)
    host_link = dv.get("host_link", str, choices=("pcie", "hccs", "ub"))
    hardware = _hardware(top.sub("hardware"), device_count, peer_groups)
    if hardware.host_link.kind not in ("soc", host_link):
        raise ConfigError(path, "hardware.host_link.kind",
                          f"{hardware.host_link.kind!r} disagrees with devices.host_link {host_link!r}")
    product = Product(
        name=p.get("name", str),
        title=p.get("title", str),
        family=p.get("family", str, choices=FAMILIES),
        deployment=p.get("deployment", str, choices=("EP", "RC", "CTRL_CPU")),
        device_count=device_count,
        memory_bytes=dv.get("memory_bytes", int, positive=True, minimum=1 << 20, maximum=1 << 42),
        memory_kind=dv.get("memory_kind", str, choices=("HBM", "DDR")),
        malloc_padding=dv.get("malloc_padding", int, maximum=1 << 20),
        max_streams=dv.get("max_streams", int, positive=True, minimum=2, maximum=1 << 16),
        max_events=dv.get("max_events", int, positive=True, maximum=1 << 20),
        memcpy_desc_size=dv.get("memcpy_desc_size", int, choices=(32, 64)),
        host_link=host_link,
        peer_groups=peer_groups,
        unsupported=frozenset(unsupported),
        features=frozenset(features),
        hardware=hardware,
        sources=sources,
        path=path,
        values=values,
        unvalidated=_unvalidated(top),
        aicore=_aicore(top.sub("aicore")) if "aicore" in data else None,
    )
    check_unknown(top.opened)
    return product
