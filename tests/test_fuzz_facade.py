"""Bad input never crashes: random SEQUENCES of pyACL calls, with plausible and absurd arguments, on several
products, return a code (or raise the binding's documented TypeError / ValueError / OverflowError), never an
internal exception, never write a byte outside what a call names, never write read-only memory, and leave the
allocator consistent.

Each sequence starts a fresh emulated process (acl.init, device 0, a stream, an event, named device / DVPP /
page-locked / pageable / read-only buffers) beside guard allocations no call names: a device guard between the
named device buffers, a page-locked guard, a pageable guard the emulator knows and one it was never shown.
The calls draw their arguments from the named handles and pointers (their starts, interiors and ends), from
what earlier calls of the sequence returned (new streams, events, allocations, registration aliases), from
small and boundary integers and from wide random ones. After every call: the guards hold their pattern, the
read-only buffers their bytes, and `emu.current().space.invariant_violations()` is empty; after the sequence
the device is synchronized and the guards checked again.

Counted (printed, and written to fuzz_counts.json in pytest's base temp directory): calls fuzzed, crashes
(exceptions other than the binding's documented ones), out-of-bounds writes (a guard changed), read-only
writes and invariant violations. All four must be 0.

Size. The default (CI) runs 15000 calls in all, split over the products, in well under a minute. A longer run:

    pytest -q -s -p no:cacheprovider tests/test_fuzz_facade.py --fuzz-examples 100000 [--fuzz-seed 7]

or ACL_EMU_FUZZ_EXAMPLES=100000 (and ACL_EMU_FUZZ_SEED). --fuzz-examples is the number of calls in all; the
seed makes a run reproducible (a failure names its product, sequence and seed). Calls that reach a defect
known in another module are left out and counted as known_bug_skips (see `known_bug`).
"""
from __future__ import annotations

import json
import os
import random
import threading
import traceback
from dataclasses import dataclass, field

import numpy as np
import pytest

import emu
import emu.acl as acl

PRODUCTS = ["910B", "A3", "310P", "950PR", "200I_A2"]
CI_CALLS = 15000
SEQUENCE_LENGTH = (5, 60)

# the facade's integer-only functions and their arity (pyACL parses fixed C formats)
OTHER_ARGS = ("memcpy_batch", "memcpy_batch_async", "memcpy_batch_v2", "memcpy_batch_async_v2", "malloc_with_cfg",
              "malloc_host_with_cfg", "set_memcpy_desc", "launch_kernel", "launch_callback", "binary_load_from_file",
              "binary_load_from_data", "binary_get_function", "launch_kernel_with_config")
INT_FUNCS = {
    name: fn for name, fn in vars(acl.rt).items()
    if callable(fn) and getattr(fn, "__qualname__", "").startswith("acl.rt.") and name not in OTHER_ARGS
}
ARITY = {"set_device": 1, "reset_device": 1, "reset_device_force": 1, "get_device": 0, "get_device_count": 0,
         "get_run_mode": 0, "synchronize_device": 0, "create_context": 1, "destroy_context": 1, "set_context": 1,
         "get_context": 0, "create_stream": 0, "create_stream_with_config": 2, "destroy_stream": 1,
         "destroy_stream_force": 1, "synchronize_stream": 1, "synchronize_stream_with_timeout": 2,
         "stream_query": 1, "create_event": 0, "create_event_with_flag": 1, "destroy_event": 1, "record_event": 2,
         "reset_event": 2, "stream_wait_event": 2, "synchronize_event": 1, "query_event_status": 1,
         "event_elapsed_time": 2, "malloc": 2, "malloc_host": 1, "free": 1, "free_host": 1, "get_mem_info": 1,
         "pointer_get_attributes": 1, "memcpy": 5, "memcpy_async": 6, "memcpy_async_with_condition": 6,
         "memset": 4, "memset_async": 5, "memcpy2d": 7, "memcpy2d_async": 8, "memset_d32": 4,
         "memset_d32_async": 5, "get_memcpy_desc_size": 1, "memcpy_async_with_desc": 3,
         "memcpy_async_with_offset": 8, "host_register": 3, "host_register_v2": 3, "host_get_device_pointer": 2,
         "host_unregister": 1, "device_can_access_peer": 2, "device_enable_peer_access": 2,
         "device_disable_peer_access": 1, "device_peer_access_status": 2, "create_event_ex_with_flag": 1,
         "query_event_wait_status": 1, "subscribe_report": 2, "unsubscribe_report": 2, "process_report": 1,
         "create_binary": 2, "destroy_binary": 1, "binary_load": 1, "binary_unload": 1, "kernel_args_init": 1,
         "kernel_args_append": 3, "kernel_args_append_place_holder": 1, "kernel_args_get_place_holder_buffer": 3,
         "kernel_args_finalize": 1}
MEDIA = {"dvpp_malloc": (acl.media.dvpp_malloc, 1), "dvpp_free": (acl.media.dvpp_free, 1)}
# calls whose timeout is wall time where a subscription exists: kept short
TIMEOUTS = {"synchronize_stream_with_timeout": 1, "process_report": 0}
PATTERN = {"dev": 0xA5, "pinned": 0x5A, "pageable": 0xC3, "unseen": 0x3C}


def test_every_integer_function_has_a_known_arity():
    assert set(INT_FUNCS) <= set(ARITY), set(INT_FUNCS) - set(ARITY)
    for name, roles in ROLES.items():
        assert len(roles) == (MEDIA[name][1] if name in MEDIA else ARITY[name]), name


# =========================================================================================== the world

@dataclass
class World:
    """One fresh emulated process: what calls may name, and the guards they may not."""
    named: list[int] = field(default_factory=list)  # pointers and handles calls draw from
    ptrs: list[int] = field(default_factory=list)  # the pointers among them
    streams: list[int] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    sizes: dict[int, int] = field(default_factory=dict)  # named pointer -> its size (for interior / end values)
    guards: dict[str, np.ndarray] = field(default_factory=dict)  # name -> host view of the guard's bytes
    device_guards: list[int] = field(default_factory=list)
    readonly: list[tuple[np.ndarray, bytes]] = field(default_factory=list)  # (array, its bytes)
    readonly_ranges: list[tuple[int, int]] = field(default_factory=list)
    keep: list = field(default_factory=list)  # host buffers the process must keep alive

    def remember(self, name: str, args: list, ret) -> None:
        """A handle or an allocation a successful call returned: later calls of the sequence may use it."""
        if not (isinstance(ret, tuple) and len(ret) == 2 and ret[1] == 0 and isinstance(ret[0], int)
                and ret[0] > 0xFFFF):
            return
        value = ret[0]
        self.named.append(value)
        short = name.rsplit(".", 1)[1]
        if short.startswith("create_stream"):
            self.streams.append(value)
        elif short.startswith("create_event"):
            self.events.append(value)
        elif short in ("malloc", "malloc_host", "dvpp_malloc", "malloc_with_cfg", "malloc_host_with_cfg",
                       "host_register", "host_get_device_pointer"):
            self.ptrs.append(value)
            size = args[0] if short != "host_register" else args[1]
            if short != "host_get_device_pointer" and isinstance(size, int) and 0 < size <= 1 << 20:
                self.sizes[value] = size


def make_world(product: str, rng: random.Random) -> World:
    emu.configure(product)
    w = World()
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    s, ret = acl.rt.create_stream()
    w.remember("acl.rt.create_stream", [], (s, ret))
    ev, ret = acl.rt.create_event()
    w.remember("acl.rt.create_event", [], (ev, ret))
    w.remember("acl.rt.get_context", [], acl.rt.get_context())

    def name(ptr: int, size: int) -> None:
        w.named.append(ptr)
        w.ptrs.append(ptr)
        w.sizes[ptr] = size

    size = rng.choice([64, 4096, 8192])
    # device: named, guard, named (a spill past either named buffer lands in the guard)
    d1, _ = acl.rt.malloc(size, 0)
    g, _ = acl.rt.malloc(4096, 0)
    d2, _ = acl.rt.malloc(size, rng.choice([0, 1, 2]))
    name(d1, size), name(d2, size)
    fill = np.full(4096, PATTERN["dev"], dtype=np.uint8)
    assert acl.rt.memcpy(g, 4096, emu.runtime.register_host(fill), 4096, 1) == 0
    w.device_guards.append(g)
    dv, ret = acl.media.dvpp_malloc(size)
    if ret == 0:
        name(dv, size)
    # page-locked: named, guard, named
    h1, ret = acl.rt.malloc_host(size)
    if ret == 0:
        name(h1, size)
        gh, _ = acl.rt.malloc_host(4096)
        guard = acl.util.ptr_to_numpy(gh, (4096,), 2)
        guard[:] = PATTERN["pinned"]
        w.guards["pinned"] = guard
        h2, _ = acl.rt.malloc_host(size)
        name(h2, size)
    # pageable: a named buffer, a guard the emulator knows, one it was never shown
    buf = np.zeros(size, dtype=np.uint8)
    gp = np.full(4096, PATTERN["pageable"], dtype=np.uint8)
    unseen = np.full(4096, PATTERN["unseen"], dtype=np.uint8)
    name(emu.runtime.register_host(buf), size)
    emu.runtime.register_host(gp)
    w.guards["pageable"], w.guards["unseen"] = gp, unseen
    # read-only memory calls may name: never written
    ro = np.arange(size, dtype=np.uint64).astype(np.uint8)
    ro.flags.writeable = False
    one = bytes([0x41])
    for obj in (ro, one):
        ptr = emu.runtime.register_host(obj)
        name(ptr, len(obj) if isinstance(obj, bytes) else obj.nbytes)
        w.readonly.append((obj, bytes(obj)))
        w.readonly_ranges.append((ptr, ptr + w.sizes[ptr]))
    w.keep += [buf, gp, unseen, ro, one, fill]
    return w


def guard_changes(w: World) -> list[str]:
    space = emu.current().space
    out = []
    for g in w.device_guards:
        r = space.find(g)
        if r is None or r.base != g or r.freed:
            out.append(f"device guard 0x{g:x} was freed")
        elif not (r.buffer()[:4096] == PATTERN["dev"]).all():
            out.append(f"device guard 0x{g:x} changed")
    for key, arr in w.guards.items():
        if not (arr == PATTERN[key]).all():
            out.append(f"{key} guard changed")
    return out


def readonly_changes(w: World) -> list[str]:
    return [f"read-only {type(obj).__name__} at index {i} changed" for i, (obj, before) in enumerate(w.readonly)
            if bytes(obj) != before]


# ===================================================================================== the arguments

BOUNDARY = [0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 31, 32, 63, 64, 100, 4095, 4096, 4097, 8192, 1 << 20,
            -1, -2, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64,
            0xDEAD0000, 1 << 48, (1 << 48) + (1 << 42)]


NOT_INTS = [1.5, "0", None, b"\x00", [], float("nan")]  # pyACL's parser refuses them


def value(rng: random.Random, w: World):
    roll = rng.random()
    if roll < 0.01:
        return rng.choice(NOT_INTS)
    if roll < 0.45 and w.named:
        v = rng.choice(w.named)
        size = w.sizes.get(v)
        if size and rng.random() < 0.35:  # an interior pointer, the last byte (never past it: the guards lie
            v += rng.choice([1, 4, size // 2, size - 1])  # there, and a pointer to a guard would name it)
        return v
    if roll < 0.85:
        return rng.choice(BOUNDARY)
    return rng.randint(-2 ** 70, 2 ** 70)


# argument roles of the calls drawn with plausible arguments: p pointer, n size or count, k copy kind,
# s stream, e event, d device id, v fill value, f flag, z a flag that is mostly 0
ROLES = {"memcpy": "pnpnk", "memcpy_async": "pnpnks", "memcpy_async_with_condition": "pnpnks", "memset": "pnvn",
         "memset_async": "pnvns", "memset_d32": "pnvn", "memset_d32_async": "pnvns", "memcpy2d": "pnpnnnk",
         "memcpy2d_async": "pnpnnnks", "memcpy_async_with_offset": "pnnpnnks", "memcpy_async_with_desc": "pks",
         "host_register": "pnz", "host_register_v2": "pnf", "host_get_device_pointer": "pz", "host_unregister": "p",
         "malloc": "nf", "malloc_host": "n", "free": "p", "free_host": "p", "pointer_get_attributes": "p",
         "record_event": "es", "reset_event": "es", "stream_wait_event": "se", "synchronize_stream": "s",
         "synchronize_event": "e", "query_event_status": "e", "event_elapsed_time": "ee", "destroy_stream": "s",
         "destroy_event": "e", "stream_query": "s", "set_device": "d", "reset_device": "d", "create_context": "d",
         "device_enable_peer_access": "dz", "device_disable_peer_access": "d", "device_can_access_peer": "dd",
         "device_peer_access_status": "dd", "get_mem_info": "f", "dvpp_malloc": "n", "dvpp_free": "p"}
SIZES = [0, 1, 2, 4, 8, 31, 32, 33, 64, 100, 4095, 4096, 4097, 8192, 8193, 1 << 20]
FLAGS = [0, 1, 2, 3, 4, 6, 7, 8, 0xC, 0x10000000, 0x10000002, 0xFF, -1]


# allocations, frees and registrations come up more often: they make the states the other calls meet
LIFECYCLE = {"malloc", "malloc_host", "dvpp_malloc", "free", "free_host", "dvpp_free", "host_register",
             "host_register_v2", "host_unregister", "host_get_device_pointer"}
WEIGHTED = sorted(ROLES) + sorted(LIFECYCLE) * 2


def plausible_args(rng: random.Random, w: World, roles: str) -> list:
    """A size or count after a pointer mostly fits what is left of the pointer's buffer, or just misses."""
    args, room = [], None
    for r in roles:
        if rng.random() < 0.1:
            args.append(value(rng, w))
            continue
        if r == "p":  # what the sequence made last comes up more often: alloc -> use -> free chains
            v = rng.choice(w.ptrs[-2:] if rng.random() < 0.3 else w.ptrs) if w.ptrs else value(rng, w)
            size = w.sizes.get(v)
            off = rng.choice([0, 0, 0, 1, 4, size // 2, size - 1]) if size else 0
            room = size - off if size else None
            args.append(v + off)
        elif r == "n" and room is not None and rng.random() < 0.7:
            args.append(max(rng.choice([room, room, room // 2, room + 1, 1]), 0))
        else:
            args.append(role(rng, w, r))
    return args


def role(rng: random.Random, w: World, r: str):
    if r == "p":
        return rng.choice(w.ptrs) if w.ptrs else value(rng, w)
    if r == "n":
        if w.sizes and rng.random() < 0.3:
            return rng.choice(list(w.sizes.values())) + rng.choice([-1, 0, 0, 1])
        return rng.choice(SIZES)
    if r == "k":
        return rng.choice([0, 1, 2, 3, 4, 5, 5, 6, 7, -1])
    if r in "se":
        pool = w.streams if r == "s" else w.events
        return rng.choice(pool) if pool and rng.random() < 0.8 else rng.choice([0, 1, -1])
    if r == "d":
        return rng.choice([0, 0, 1, 1, 2, 3, 7, 15, 16, 63, 64, -1])
    if r == "z":
        return rng.choice([0, 0, 0, 0, 1, 2, 4, -1])
    if r == "v":
        return rng.choice([0, 1, 0x7F, 0xFF, 0x100, -1, 0xDEADBEEF, 2 ** 32])
    return rng.choice(FLAGS)


def cfg(rng: random.Random, w: World):
    return rng.choice([None, [], [{"attr": rng.choice([0, 1, 2, 3, 4, -1]), "value": value(rng, w)}
                                  for _ in range(rng.randint(1, 3))], "junk", [{"attr": "x"}], [None]])


def batch_args(rng: random.Random, w: World, name: str) -> list:
    n = rng.choice([0, 1, 2, 3])

    def ints(k):
        return rng.choice([None, [value(rng, w) for _ in range(k)], [value(rng, w) for _ in range(k + 1)]])

    loc = lambda: {"type": rng.choice([0, 1, 2, 4, 9]), "id": rng.choice([0, 1, -1])}  # noqa: E731
    num_attrs = rng.choice([0, 1, n])
    attrs = rng.choice([None, [{"dst_loc": loc(), "src_loc": loc(), "rsv": bytes(16)} for _ in range(num_attrs)],
                        [{"rsv": b"x"}], "junk"])
    args = [ints(n), ints(n), ints(n), ints(n), rng.choice([n, value(rng, w)]), attrs,
            rng.choice([None, [0, 1][:num_attrs], [value(rng, w)]]), rng.choice([num_attrs, value(rng, w)])]
    if "async" in name:
        args.append(value(rng, w))
    return args


def draw_call(rng: random.Random, w: World):
    """(qualified name, function, args)."""
    roll = rng.random()
    if roll < 0.05:
        name = rng.choice(sorted(MEDIA))
        fn, arity = MEDIA[name]
        return f"acl.media.{name}", fn, [value(rng, w) for _ in range(arity)]
    if roll < 0.10:
        name = rng.choice(OTHER_ARGS[:7])
        fn = getattr(acl.rt, name)
        if name == "malloc_with_cfg":
            args = [value(rng, w), value(rng, w), cfg(rng, w)]
        elif name == "malloc_host_with_cfg":
            args = [value(rng, w), cfg(rng, w)]
        elif name == "set_memcpy_desc":
            args = [value(rng, w) for _ in range(5)] + [rng.choice([None, 0, {}])]
        else:
            args = batch_args(rng, w, name)
        return f"acl.rt.{name}", fn, args
    if roll < 0.65:  # plausible: each argument of the right kind, from the sequence's own handles
        name = rng.choice(WEIGHTED)
        fn, qual = (MEDIA[name][0], f"acl.media.{name}") if name in MEDIA else (INT_FUNCS[name], f"acl.rt.{name}")
        return qual, fn, plausible_args(rng, w, ROLES[name])
    name = rng.choice(sorted(INT_FUNCS))
    args = [value(rng, w) for _ in range(ARITY[name])]
    if name in TIMEOUTS:
        i = TIMEOUTS[name]
        if isinstance(args[i], int):
            args[i] = rng.choice([-2, -1, 0, 1, 5]) if name == "process_report" else min(abs(args[i]), 10)
    return f"acl.rt.{name}", INT_FUNCS[name], args


def keep_guards(name: str, args: list):
    """The guards live on device 0: a reset of device 0 releases them (as the runtime does), so it is drawn
    as a reset of another id."""
    if name in ("acl.rt.reset_device", "acl.rt.reset_device_force") and args[0] is not None and args[0] == 0:
        return [1]
    return args


def known_bug(name: str, args: list, w: World) -> str | None:
    """Calls that hit a defect reported against another module, left out of the fuzz (and counted) until it
    is fixed, each with an xfail regression test; none at present. ACL_EMU_FUZZ_NO_SKIP=1 fuzzes them too."""
    return None


def documented(exc: BaseException) -> bool:
    """The binding's own refusals: pyACL's parser (TypeError 'acl.x.y args parse failed') and the facade's
    ValueError / OverflowError for values no C type holds."""
    if isinstance(exc, OverflowError):
        return True
    return isinstance(exc, (TypeError, ValueError)) and str(exc).startswith("acl.")


# ========================================================================================= the run

def fuzz_calls(config) -> int:
    n = config.getoption("--fuzz-examples", default=None) or os.environ.get("ACL_EMU_FUZZ_EXAMPLES")
    return int(n) if n else CI_CALLS


def fuzz_seed(config) -> int:
    s = config.getoption("--fuzz-seed", default=None) or os.environ.get("ACL_EMU_FUZZ_SEED")
    return int(s) if s else 20240611


_LOCK = threading.Lock()


def record(tmp_root, product: str, counts: dict) -> dict:
    """Merge this product's counts into fuzz_counts.json; return the totals so far."""
    path = tmp_root / "fuzz_counts.json"
    with _LOCK:
        data = json.loads(path.read_text()) if path.exists() else {"products": {}}
        data["products"][product] = counts
        keys = [k for k in counts if isinstance(counts[k], int)]
        data["total"] = {k: sum(p[k] for p in data["products"].values()) for k in keys}
        path.write_text(json.dumps(data, indent=2))
    return data


@pytest.mark.parametrize("product", PRODUCTS)
def test_random_call_sequences_never_crash_spill_or_corrupt(product, request, tmp_path_factory):
    budget = fuzz_calls(request.config) // len(PRODUCTS)
    seed = fuzz_seed(request.config)
    rng = random.Random(f"{seed}/{product}")
    counts = {"calls": 0, "sequences": 0, "ok": 0, "acl_errors": 0, "parser_refusals": 0, "known_bug_skips": 0,
              "crashes": 0, "out_of_bounds_writes": 0, "read_only_writes": 0, "invariant_violations": 0}
    failures: list[str] = []
    while counts["calls"] < budget:
        counts["sequences"] += 1
        seq = counts["sequences"]
        w = make_world(product, rng)
        steps: list[str] = []
        for _ in range(min(rng.randint(*SEQUENCE_LENGTH), budget - counts["calls"])):
            name, fn, args = draw_call(rng, w)
            args = keep_guards(name, args)
            if known_bug(name, args, w):
                counts["known_bug_skips"] += 1
                continue
            steps.append(f"{name}{tuple(args)}")
            counts["calls"] += 1
            where = f"{product} seed {seed} sequence {seq}: " + " -> ".join(steps[-6:])
            try:
                ret = fn(*args)
            except Exception as e:  # noqa: BLE001 - what the fuzz looks for
                if documented(e):
                    counts["parser_refusals"] += 1
                else:
                    counts["crashes"] += 1
                    failures.append(f"CRASH {where}: {''.join(traceback.format_exception_only(e)).strip()}")
                    break  # the process may be inconsistent: start a fresh one
            else:
                code = ret if isinstance(ret, int) else ret[-1] if isinstance(ret, tuple) and ret else None
                if not isinstance(code, int) or code < 0:
                    counts["crashes"] += 1
                    failures.append(f"BAD RETURN {where}: {ret!r}")
                    break
                counts["ok" if code == 0 else "acl_errors"] += 1
                w.remember(name, args, ret)
            if not check(w, where, counts, failures):
                break
        else:
            try:
                acl.rt.synchronize_device()  # queued copies land: they must not spill either
            except Exception as e:  # noqa: BLE001
                counts["crashes"] += 1
                failures.append(f"CRASH {product} seed {seed} sequence {seq}: synchronize_device: {e!r}")
            check(w, f"{product} seed {seed} sequence {seq} after synchronize_device", counts, failures)
    data = record(tmp_path_factory.getbasetemp(), product, counts)
    print(f"\nfuzz {product}: {json.dumps(counts)}\nfuzz total so far: {json.dumps(data['total'])}")
    assert not failures, "\n".join(failures[:10])
    assert counts["calls"] >= budget


def check(w: World, where: str, counts: dict, failures: list[str]) -> bool:
    ok = True
    for what, found in (("out_of_bounds_writes", guard_changes(w)), ("read_only_writes", readonly_changes(w)),
                        ("invariant_violations", emu.current().space.invariant_violations())):
        if found:
            counts[what] += 1
            failures.append(f"{what.upper()} {where}: {found}")
            ok = False
    return ok
