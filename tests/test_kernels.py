"""Tests for emu.kernels: results against numpy references, memmove overlap
semantics, argument validation, both store paths (cached and streaming) and the
on-disk compilation cache.  (tests/test_lazy_jit.py: Numba is imported only
when a kernel first runs.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu import kernels

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNG = np.random.default_rng(12345)


def random_bytes(n, rng=RNG):
    return rng.integers(0, 256, size=n, dtype=np.uint8)


@pytest.fixture(params=["default", "streaming"])
def nt_mode(request, monkeypatch):
    """Run a test with the normal store paths and again with streaming (non-temporal) stores forced on
    at every size and row width."""
    if request.param == "streaming":
        monkeypatch.setattr(kernels, "COPY_STORES", kernels.Crossover(0, 0))  # streaming from 0 bytes up
        monkeypatch.setattr(kernels, "FILL_STORES", kernels.Crossover(0, 0))
        monkeypatch.setattr(kernels, "COPY_2D_STORES", kernels.Crossover(0, 0))
        monkeypatch.setattr(kernels, "NT_2D_MIN_WIDTH", 0)
    return request.param


def ref_copy_2d(dst_buf, doff, dst_pitch, src_buf, soff, src_pitch, width, height):
    """Row-by-row reference; rows are read completely before any write (memmove of the region)."""
    rows = [src_buf[soff + r * src_pitch: soff + r * src_pitch + width].copy() for r in range(height)]
    for r, row in enumerate(rows):
        dst_buf[doff + r * dst_pitch: doff + r * dst_pitch + width] = row


def u32_pattern(value, nbytes):
    return np.frombuffer((value & 0xFFFFFFFF).to_bytes(4, "little") * (nbytes // 4), dtype=np.uint8)


# --------------------------------------------------------------------------- copy

@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 15, 16, 31, 33, 63, 64, 65, 127, 128, 129, 191, 192, 255, 256, 257,
                               1000, 4095, 8191, 8192, 8192 + 64, 8192 + 191, 16384, 16384 + 77, 70001, 300000])
def test_copy_matches_numpy(n, nt_mode):
    src_buf = random_bytes(n + 200)
    for soff, doff in [(0, 0), (1, 0), (0, 3), (13, 57), (64, 63)]:
        dst_buf = random_bytes(n + 200)
        expected = dst_buf.copy()
        expected[doff:doff + n] = src_buf[soff:soff + n]
        kernels.copy(dst_buf[doff:doff + n], src_buf[soff:soff + n])
        np.testing.assert_array_equal(dst_buf, expected)


@pytest.mark.parametrize("n", [1, 5, 64, 100, 1000, 70000])
@pytest.mark.parametrize("distance", [1, 3, 8, 31, 32, 63, 64, 200, 256, 4097])
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_copy_overlap_is_memmove(n, distance, direction):
    buf = random_bytes(n + distance + 64)
    lo, hi = 16, 16 + distance
    src_off, dst_off = (hi, lo) if direction == "forward" else (lo, hi)
    if dst_off + n > buf.size or src_off + n > buf.size:
        pytest.skip("does not fit")
    expected = buf.copy()
    expected[dst_off:dst_off + n] = buf[src_off:src_off + n].copy()
    kernels.copy(buf[dst_off:dst_off + n], buf[src_off:src_off + n])
    np.testing.assert_array_equal(buf, expected)


def test_copy_same_view_and_readonly_src():
    buf = random_bytes(300)
    before = buf.copy()
    kernels.copy(buf[10:200], buf[10:200])
    np.testing.assert_array_equal(buf, before)

    src = random_bytes(300)
    src.flags.writeable = False
    dst = np.zeros(300, dtype=np.uint8)
    kernels.copy(dst, src)
    np.testing.assert_array_equal(dst, src)


# ------------------------------------------------------------------------ copy_2d

@st.composite
def regions_2d(draw):
    width = draw(st.one_of(st.integers(0, 70), st.integers(0, 300)))
    height = draw(st.integers(0, 12))
    dst_pitch = width + draw(st.sampled_from([0, 1, 7, 64, draw(st.integers(0, 200))]))
    src_pitch = width + draw(st.sampled_from([0, 3, 64, draw(st.integers(0, 200))]))
    d_need = (height - 1) * dst_pitch + width if width and height else 0
    s_need = (height - 1) * src_pitch + width if width and height else 0
    size = max(d_need, s_need) + draw(st.integers(0, 300))
    doff = draw(st.integers(0, size - d_need))
    soff = draw(st.integers(0, size - s_need))
    return size, doff, dst_pitch, soff, src_pitch, width, height


_FIXTURE_OK = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FIXTURE_OK
@given(regions_2d(), st.integers(0, 2**32 - 1))
def test_copy_2d_matches_reference(nt_mode, region, seed):
    size, doff, dst_pitch, soff, src_pitch, width, height = region
    rng = np.random.default_rng(seed)
    src_buf, dst_buf = random_bytes(size, rng), random_bytes(size, rng)
    src_before = src_buf.copy()
    expected = dst_buf.copy()
    ref_copy_2d(expected, doff, dst_pitch, src_buf, soff, src_pitch, width, height)
    kernels.copy_2d(dst_buf[doff:], dst_pitch, src_buf[soff:], src_pitch, width, height)
    np.testing.assert_array_equal(dst_buf, expected)
    np.testing.assert_array_equal(src_buf, src_before)


@_FIXTURE_OK
@given(regions_2d(), st.integers(0, 2**32 - 1))
def test_copy_2d_overlap_in_one_buffer(nt_mode, region, seed):
    size, doff, dst_pitch, soff, src_pitch, width, height = region
    buf = random_bytes(size, np.random.default_rng(seed))
    expected = buf.copy()
    ref_copy_2d(expected, doff, dst_pitch, buf.copy(), soff, src_pitch, width, height)
    kernels.copy_2d(buf[doff:], dst_pitch, buf[soff:], src_pitch, width, height)
    np.testing.assert_array_equal(buf, expected)


@pytest.mark.parametrize("width,pitch", [(16, 80), (64, 128), (1000, 1064), (4096, 4160), (5000, 5003)])
@pytest.mark.parametrize("shift", [-3 * 1064 - 5, -1, 1, 70, 2 * 1064])
def test_copy_2d_overlap_equal_pitch(width, pitch, shift):
    height = 7
    need = (height - 1) * pitch + width
    buf = random_bytes(need + abs(shift) + 64)
    soff = 32 + max(0, -shift)
    doff = soff + shift
    expected = buf.copy()
    ref_copy_2d(expected, doff, pitch, buf.copy(), soff, pitch, width, height)
    kernels.copy_2d(buf[doff:], pitch, buf[soff:], pitch, width, height)
    np.testing.assert_array_equal(buf, expected)


@pytest.mark.parametrize("width,height,dst_pitch,src_pitch", [(20000, 5, 20001, 20100), (700, 9, 765, 700),
                                                              (8192 + 100, 3, 8192 + 163, 8192 + 100)])
def test_copy_2d_wide_rows_disjoint(width, height, dst_pitch, src_pitch, nt_mode):
    src = random_bytes((height - 1) * src_pitch + width + 11)
    dst = random_bytes((height - 1) * dst_pitch + width + 29)
    expected = dst.copy()
    ref_copy_2d(expected, 29, dst_pitch, src, 11, src_pitch, width, height)
    kernels.copy_2d(dst[29:], dst_pitch, src[11:], src_pitch, width, height)
    np.testing.assert_array_equal(dst, expected)


# ---------------------------------------------------------------------------- fill

@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 17, 63, 64, 65, 100, 255, 256, 1000, 70001])
@pytest.mark.parametrize("offset", [0, 1, 5])
def test_fill_masks_value(n, offset, nt_mode):
    buf = random_bytes(n + 16)
    expected = buf.copy()
    expected[offset:offset + n] = 0xFF
    kernels.fill(buf[offset:offset + n], 0x1FF)
    np.testing.assert_array_equal(buf, expected)
    kernels.fill(buf[offset:offset + n], -2)  # -2 & 0xFF == 0xFE
    expected[offset:offset + n] = 0xFE
    np.testing.assert_array_equal(buf, expected)


@pytest.mark.parametrize("n", [4, 8, 12, 60, 64, 68, 124, 256, 260, 4096, 70000])
@pytest.mark.parametrize("offset", range(8))
def test_fill_u32_any_alignment(n, offset, nt_mode):
    buf = random_bytes(n + 16)
    expected = buf.copy()
    value = 0x11223344
    expected[offset:offset + n] = u32_pattern(value, n)
    kernels.fill_u32(buf[offset:offset + n], value)
    np.testing.assert_array_equal(buf, expected)


def test_fill_u32_masks_value_and_matches_uint32_view():
    buf = np.zeros(1024 + 4, dtype=np.uint8)
    kernels.fill_u32(buf[4:], 0x1_DEADBEEF)
    assert (buf[4:].view(np.uint32) == np.uint32(0xDEADBEEF).astype("<u4")).all()
    assert (buf[:4] == 0).all()
    kernels.fill_u32(buf[4:], -1)
    assert (buf[4:] == 0xFF).all()


# -------------------------------------------------------------- validation, no-ops

def _bufs():
    return random_bytes(256), random_bytes(256)


def _bad_calls():
    d, s = _bufs()
    ro = s.copy()
    ro.flags.writeable = False
    return d, s, [
        ("copy length mismatch", lambda: kernels.copy(d[:10], s[:11])),
        ("copy wrong dtype", lambda: kernels.copy(d.view(np.int8), s.view(np.int8))),
        ("copy uint16", lambda: kernels.copy(d.view(np.uint16), s.view(np.uint16))),
        ("copy 2-D", lambda: kernels.copy(d.reshape(16, 16), s.reshape(16, 16))),
        ("copy strided", lambda: kernels.copy(d[::2], s[::2])),
        ("copy read-only dst", lambda: kernels.copy(ro, d)),
        ("copy list", lambda: kernels.copy(d, list(range(256)))),
        ("2d width > dst_pitch", lambda: kernels.copy_2d(d, 8, s, 16, 9, 2)),
        ("2d width > src_pitch", lambda: kernels.copy_2d(d, 16, s, 8, 9, 2)),
        ("2d dst too short", lambda: kernels.copy_2d(d, 100, s, 10, 60, 3)),
        ("2d src too short", lambda: kernels.copy_2d(d, 10, s, 100, 60, 3)),
        ("2d one byte too short", lambda: kernels.copy_2d(d, 64, s, 64, 65, 4)),
        ("2d negative height", lambda: kernels.copy_2d(d, 16, s, 16, 8, -1)),
        ("2d negative pitch", lambda: kernels.copy_2d(d, -16, s, 16, 8, 2)),
        ("2d float width", lambda: kernels.copy_2d(d, 16, s, 16, 8.0, 2)),
        ("2d huge pitch", lambda: kernels.copy_2d(d, 2**70, s, 16, 8, 2)),
        ("2d read-only dst", lambda: kernels.copy_2d(ro, 16, d, 16, 8, 2)),
        ("fill wrong dtype", lambda: kernels.fill(d.view(np.uint32), 1)),
        ("fill non-integer", lambda: kernels.fill(d, 1.5)),
        ("fill read-only", lambda: kernels.fill(ro, 1)),
        ("fill_u32 length", lambda: kernels.fill_u32(d[:254], 1)),
        ("fill_u32 2-D", lambda: kernels.fill_u32(d.reshape(16, 16), 1)),
        ("fill_u32 non-integer", lambda: kernels.fill_u32(d, "1")),
    ]


@pytest.mark.parametrize("index", range(len(_bad_calls()[2])), ids=[c[0] for c in _bad_calls()[2]])
def test_bad_arguments_raise_and_leave_buffers_unchanged(index):
    d, s, calls = _bad_calls()
    d_before, s_before = d.copy(), s.copy()
    with pytest.raises(ValueError):
        calls[index][1]()
    np.testing.assert_array_equal(d, d_before)
    np.testing.assert_array_equal(s, s_before)


def test_compiled_kernels_check_bounds_themselves():
    d, s = _bufs()
    d_before = d.copy()
    k = kernels.KERNELS["copy_2d"]
    for args in [(d, 64, s, 64, 64, 5),      # dst and src one row too short
                 (d, 64, s[:200], 64, 64, 4),  # src too short
                 (d[:255], 64, s, 64, 64, 4),  # dst one byte too short
                 (d, 10, s, 10, 11, 2),       # width > pitch
                 (d, 16, s, 16, 8, -1),       # negative height
                 (d, -16, s, 16, 8, 2)]:      # negative pitch
        for nt in (0, 1 << 40):
            with pytest.raises(ValueError):
                k(*args, nt, 0)
    for nt in (0, 1 << 40):
        with pytest.raises(ValueError):
            kernels.KERNELS["copy"](d[:100], s[:101], nt, kernels.NEVER)
        with pytest.raises(ValueError):
            kernels.KERNELS["fill"](d[:254], 1, 4, nt, kernels.NEVER)  # not a multiple of 4
    np.testing.assert_array_equal(d, d_before)


def test_compiled_kernels_take_only_their_signature():
    """Argument types the compiled kernels were not built for raise TypeError (the public functions then
    explain them) rather than compiling a new specialization."""
    d, s = _bufs()
    k = kernels.KERNELS
    for call in (lambda: k["copy"](d.view(np.int8), s, 0, kernels.NEVER),
                 lambda: k["copy"](d[::2], s[::2], 0, kernels.NEVER),
                 lambda: k["fill"](d.reshape(16, 16), 1, 1, 0, kernels.NEVER)):
        with pytest.raises(TypeError):
            call()
    ro = s.copy()
    ro.flags.writeable = False
    with pytest.raises(TypeError):
        k["copy"](ro, d, 0, kernels.NEVER)
    for name, dispatcher in k.items():
        assert len(dispatcher.overloads) == 1, name


def test_integer_like_arguments_and_array_subclasses():
    src = random_bytes(4096)
    dst = np.zeros(4096, dtype=np.uint8)
    kernels.copy_2d(dst, np.int64(64), src, np.uint16(64), np.int32(40), True)  # height True == 1
    np.testing.assert_array_equal(dst[:40], src[:40])
    assert not dst[40:].any()
    kernels.fill(dst, np.uint8(7))
    assert (dst == 7).all()
    kernels.fill(dst, 2**70 + 5)
    assert (dst == 5).all()
    kernels.fill_u32(dst, np.int64(-1))
    assert (dst == 0xFF).all()

    class Sub(np.ndarray):
        pass

    kernels.copy(dst.view(Sub), src.view(Sub))
    np.testing.assert_array_equal(dst, src)
    kernels.fill(dst.view(Sub)[1:], 3)
    assert dst[0] == src[0] and (dst[1:] == 3).all()


def test_copy_2d_single_row_ignores_huge_pitches():
    src = random_bytes(100)
    dst = np.zeros(100, dtype=np.uint8)
    kernels.copy_2d(dst, 2**70, src, 2**65, 100, 1)
    np.testing.assert_array_equal(dst, src)


def test_zero_lengths_are_noops():
    d, s = _bufs()
    d_before = d.copy()
    empty = np.empty(0, dtype=np.uint8)
    kernels.copy(empty, empty)
    kernels.copy(d[5:5], s[7:7])
    kernels.copy_2d(d, 16, s, 16, 0, 1000)       # width 0: nothing to fit
    kernels.copy_2d(d, 16, s, 16, 8, 0)          # height 0
    kernels.copy_2d(empty, 0, empty, 0, 0, 5)
    kernels.fill(empty, 7)
    kernels.fill_u32(d[3:3], 7)
    np.testing.assert_array_equal(d, d_before)


# ------------------------------------------------------------------ on-disk cache

_PROBE = f"""
import json, sys
sys.path.insert(0, {REPO!r})
import emu.kernels as k
k.warmup()
print(json.dumps({{name: [sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())]
                  for name, d in k.KERNELS.items()}}))
"""


def _probe():
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          cwd=REPO, timeout=240)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="JIT disabled")
def test_second_process_loads_every_kernel_from_cache():
    _probe()  # populates the cache if needed
    stats = _probe()
    assert set(stats) == set(kernels.KERNELS)
    for name, (hits, misses) in stats.items():
        assert misses == 0, f"{name} was recompiled"
        assert hits >= 1, f"{name} was not loaded"


# --------------------------------------------------------------------------- where streaming starts to pay
MiB = 1 << 20


def test_crossover_caches_below_its_band_and_streams_from_its_top():
    """Outside its band a Crossover never looks at timings: the cached path below `low`, streaming from `high`."""
    c = kernels.Crossover(2 * MiB, 256 * MiB)
    assert not c.streams(2 * MiB - 1) and c.streams(256 * MiB) and c.streams(1 << 30)
    assert c.bands == {}


def teach(c, n, seconds_if):
    """One call of a Crossover: the path it picks for n bytes, taught `seconds_if(path)`."""
    s = c.streams(n)
    c.took(n, s, seconds_if(s))
    return s


def test_crossover_starts_cached_then_tries_streaming_and_streams_only_when_clearly_faster():
    """In a band, the first two calls are cached (numpy's own path), the next two streaming; from the pair they
    time on, the band streams only where streaming took at most MARGIN of the cached path's time."""
    n = 8 * MiB
    for streaming, chosen in ((0.5, True), (0.95, False), (2.0, False)):
        c = kernels.Crossover(2 * MiB, 256 * MiB)
        picks = [teach(c, n, lambda s: streaming if s else 1.0) for _ in range(4)]
        assert picks == [False, False, True, True]
        assert [c.streams(n) for _ in range(5)] == [chosen] * 5
    assert kernels.Crossover.MARGIN == 0.9
    assert not c.streams(3 * MiB)  # another band keeps its own timings: cached first again


def test_crossover_never_learns_from_a_call_after_one_of_the_other_path():
    """Streaming stores leave the destination out of the cache: the cached call after them runs cold. Such a
    call (the first on a path after the other one) teaches nothing, however slow it was."""
    c = kernels.Crossover(2 * MiB, 256 * MiB)
    n = 4 * MiB
    for seconds in (9.0, 1.0, 50.0, 2.0):  # cached (nothing before it), cached, streaming (cold), streaming
        c.took(n, c.streams(n), seconds)
    band = c.bands[n.bit_length()]
    assert band.cost == [1.0 / n, 2.0 / n] and band.path == "cached"
    c.took(n, c.streams(n), 50.0)  # cached right after streaming: cold, untaught
    assert band.cost[0] == 1.0 / n


def test_crossover_compares_only_timings_made_a_few_calls_apart():
    """A shared machine's speed changes from one minute to the next: a cached timing is compared only with a
    streaming one at most PAIRED calls away, never with one from long before."""
    c = kernels.Crossover(2 * MiB, 256 * MiB, explore=1000)
    n = 16 * MiB
    for _ in range(4 + kernels.Crossover.PAIRED):
        teach(c, n, lambda s: 1.0)  # pairs: equal
    band = c.bands[n.bit_length()]
    assert band.log_ratio == 0.0
    for _ in range(20):
        teach(c, n, lambda s: 4.0)  # the machine slows: only the cached path runs, nothing pairs
    assert band.log_ratio == 0.0 and band.path == "cached"


def test_crossover_moves_to_the_other_path_when_it_becomes_faster():
    """When the machine's load changes so that streaming wins, the band switches after a few of its tries show
    it (each try pairs with the cached calls either side of it)."""
    c = kernels.Crossover(2 * MiB, 256 * MiB, explore=8)
    n = 16 * MiB
    for _ in range(4):
        teach(c, n, lambda s: 1.0 if s else 0.5)  # streaming 1 s, cached 0.5 s
    picks = [teach(c, n, lambda s: 0.2 if s else 0.5) for _ in range(80)]  # now streaming takes 0.2 s
    assert picks[0] is False  # at first it keeps the cached path ...
    assert picks[-40:].count(True) == 30  # ... at the end it streams, but for its two tries in every 8 calls


def test_crossover_tries_the_other_path_for_two_calls_in_every_explore():
    """Once a pair is timed, exactly TRIAL calls in a row in every `explore` take the other path: the first
    finds the cache as the chosen path left it, the second is timed warm."""
    c = kernels.Crossover(2 * MiB, 256 * MiB, explore=8)
    n = 32 * MiB
    for _ in range(4):
        teach(c, n, lambda s: 1.0 if s else 2.0)  # streaming is the faster
    picks = "".join("S" if c.streams(n) else "C" for _ in range(64))  # (no more timings: the average stays)
    assert kernels.Crossover.TRIAL == 2
    assert picks.count("C") == 16 and "CC" in picks and "SCS" not in picks


def test_stores_for_places_the_band_by_the_cache_size():
    """Cached while the working set (twice a copy's size, a fill's size) fits in half the last-level cache,
    streaming from 128 times the cache; so a machine with four times the cache has each bound four times as
    high."""
    for cache in (8 * MiB, 32 * MiB, 128 * MiB):
        copy, fill = kernels.stores_for(cache, 2), kernels.stores_for(cache, 1)
        assert (copy.low, copy.high) == (cache // 4, 64 * cache)
        assert (fill.low, fill.high) == (cache // 2, 128 * cache)
    assert kernels.COPY_STORES.low == kernels.CACHE_BYTES // 4 and kernels.FILL_STORES.high == 128 * kernels.CACHE_BYTES


def test_cache_bytes_reads_the_highest_data_cache_and_falls_back(tmp_path):
    """The last-level cache is the highest level of data or unified cache sysfs lists (not an instruction
    cache); with no sysfs it comes from sysconf, else FALLBACK_CACHE; this machine's is a sane size."""
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                             (3, "Unified", "32768K"), (4, "Instruction", "999M")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (d / name).write_text(f"{value}\n")
    assert kernels.cache_bytes(str(tmp_path)) == 32 << 20
    assert kernels.cache_bytes(str(tmp_path / "none")) > 0
    assert 256 << 10 <= kernels.CACHE_BYTES <= 4 << 30


def test_a_2d_copy_of_wide_rows_in_its_band_teaches_its_crossover_and_moves_the_same_bytes(monkeypatch):
    """kernels.copy_2d of rows at least NT_2D_MIN_WIDTH wide, in COPY_2D_STORES' band, times both paths (each
    once warm) and gives the same bytes on each; narrow rows never stream and teach nothing."""
    stores = kernels.Crossover(64 << 10, 1 << 30)
    monkeypatch.setattr(kernels, "COPY_2D_STORES", stores)
    width, pitch, height = 1024, 1100, 128  # 128 KiB of payload
    src = random_bytes(pitch * height)
    for _ in range(4):
        dst = np.zeros(pitch * height + 1, dtype=np.uint8)[1:]
        kernels.copy_2d(dst, pitch, src, pitch, width, height)
        want = np.zeros_like(dst)
        ref_copy_2d(want, 0, pitch, src, 0, pitch, width, height)
        assert np.array_equal(dst, want)
    (band,) = stores.bands.values()
    assert None not in band.cost and band.log_ratio is not None and band.calls == 4
    narrow = kernels.NT_2D_MIN_WIDTH - 1
    kernels.copy_2d(dst, pitch, src, pitch, narrow, height)
    assert len(stores.bands) == 1 and band.calls == 4


@pytest.mark.parametrize("op", ["copy", "fill", "fill_u32"])
def test_a_copy_or_fill_in_the_band_teaches_its_crossover_and_moves_the_same_bytes(op, monkeypatch):
    """kernels.copy / fill / fill_u32 in a Crossover's band time both paths, each once warm, on their first four
    calls (the band has a pair) and give the same bytes on each."""
    stores = kernels.Crossover(64 << 10, 1 << 30)
    monkeypatch.setattr(kernels, "COPY_STORES" if op == "copy" else "FILL_STORES", stores)
    n = 128 << 10  # (the band of 128 KiB to 256 KiB; no band starts below 64 KiB here)
    src = random_bytes(n)
    for k in range(4):
        dst = np.zeros(n + 64, dtype=np.uint8)[1:n + 1]  # unaligned, as buffers are
        if op == "copy":
            kernels.copy(dst, src)
            assert np.array_equal(dst, src)
        elif op == "fill":
            kernels.fill(dst, 0x1FF + k)
            assert (dst == (0xFF + k) % 256).all()
        else:
            kernels.fill_u32(dst, 0xA1B2C3D4)
            assert np.array_equal(dst, u32_pattern(0xA1B2C3D4, n))
    (band,) = stores.bands.values()
    assert None not in band.cost and band.log_ratio is not None and band.calls == 4


def test_an_overlapping_copy_in_the_band_is_memmove_and_teaches_nothing(monkeypatch):
    """A copy between overlapping ranges is always memmove (streaming would read what it already wrote): it
    does not count as a timing of either path."""
    stores = kernels.Crossover(64 << 10, 1 << 30)
    monkeypatch.setattr(kernels, "COPY_STORES", stores)
    buf = random_bytes(400 << 10)
    want = buf.copy()
    want[1000:1000 + (256 << 10)] = buf[0:256 << 10]
    kernels.copy(buf[1000:1000 + (256 << 10)], buf[0:256 << 10])
    assert np.array_equal(buf, want) and stores.bands == {}


def test_from_defer_from_bytes_up_the_kernels_return_the_size_and_move_nothing():
    """The compiled copy and fill leave a size of at least `defer_from` to their caller (which picks its store
    path): they return it and touch nothing; below it they do the work and return 0."""
    k = kernels.KERNELS
    d, s = np.zeros(256, dtype=np.uint8), random_bytes(256)
    assert k["copy"](d, s, 0, 256) == 256 and not d.any()
    assert k["fill"](d, 7, 1, 0, 256) == 256 and not d.any()
    assert k["copy"](d, s, kernels.NEVER, 257) == 0 and np.array_equal(d, s)
    assert k["fill"](d, 7, 1, kernels.NEVER, 257) == 0 and (d == 7).all()


def test_crossover_learns_nothing_outside_its_band():
    """A timing of a size below `low` or from `high` up teaches no band, even one of the same power of two."""
    c = kernels.Crossover(3 * MiB, 256 * MiB)
    n = 3 * MiB + 1  # (the band of 2 MiB to 4 MiB, from 3 MiB)
    c.streams(n)
    c.took(2 * MiB + 1, False, 1.0)  # below low, in the same power of two
    c.took(300 * MiB, True, 1.0)
    assert c.bands[n.bit_length()].cost == [None, None]
