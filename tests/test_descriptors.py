"""Descriptor copies and copies by offset (docs/conformance/copy2d_batch_descriptors.md#descriptor-copies,
docs/conformance/copy2d_batch_descriptors.md#aclrtmemcpyasyncwithoffset).

aclrtGetMemcpyDescSize / aclrtSetMemcpyDesc / aclrtMemcpyAsyncWithDesc and
aclrtMemcpyAsyncWithOffset: every check of their chains with its exact code,
the record SetMemcpyDesc writes into device memory, and the rule that both
APIs read their addresses from device memory when the task runs, not when it
is enqueued. Support follows the chip tables of docs/conformance/products.md (descriptor copies: 950, A3, A2,
200I/500A2; copies by offset: 950, A3, A2, 910). "UT <name>" is the test <name> of
hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp; the descriptor's size and record are those of
hicann/runtime src/runtime/api/api.hpp:54-56 (MEMCPY_DESC_SIZE, MEMCPY_DESC_SIZE_V2, MEMCPY_DESC_LENGTH_OFFSET).
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

import emu.acl as acl
from emu import AclError
from helpers import code, device, peek, read_device

MiB, GiB = 1 << 20, 1 << 30
H2D, D2H, INNER_D2D, INTER_D2D = 1, 2, 6, 7
NORMAL_ONLY = 2
OLD = 0xEE
RECORD = struct.Struct("<3IIQQ")  # resv0..2, len at 12, src at 16, dst at 24 (see the module docstring)


def pattern(n, seed=0):
    """n bytes of a period-251 pattern, different per seed."""
    return np.resize(((np.arange(251) * 7 + seed * 31 + 1) % 251).astype(np.uint8), n)


def write_device(rt, ptr, data):
    src = np.ascontiguousarray(data).view(np.uint8).ravel()
    rt.memcpy(ptr, src.nbytes, rt.register_host(src), src.nbytes, H2D)


def on(fresh, product):
    r = fresh(product)
    r.set_device(0)
    return r


def long_h2d(rt, stream, nbytes=8 * MiB):
    """Queue a long H2D (page-locked source, so truly asynchronous) that keeps `stream` busy."""
    h = rt.malloc_host(nbytes)
    d = rt.malloc(nbytes, NORMAL_ONLY)
    rt.memcpy_async(d, nbytes, h, nbytes, H2D, stream)


# ---------------------------------------------------------------------------
# aclrtGetMemcpyDescSize (docs/conformance/copy2d_batch_descriptors.md#descriptor-copies)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("product,size", [("910B", 32), ("A3", 32), ("200I_A2", 32), ("950PR", 64), ("950DT", 64)])
def test_get_memcpy_desc_size_is_32_on_v1_and_64_on_950(fresh, product, size):
    """descriptor copy / sizes: the descriptor is 32 B (V1: A2, A3, 200I/500A2) or 64 B (V2: 950)."""
    r = on(fresh, product)
    assert r.get_memcpy_desc_size(INNER_D2D) == size
    assert acl.rt.get_memcpy_desc_size(INNER_D2D) == (size, 0)


@pytest.mark.parametrize("kind", [8, 9, 0x7FFFFFFF])
def test_get_memcpy_desc_size_kind_8_or_more_is_invalid_param(rt, kind):
    """descriptor copy: ACL layer: kind >= 8 -> 100000."""
    assert code(rt.get_memcpy_desc_size, kind) == 100000


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4, 5, 7])
def test_get_memcpy_desc_size_kind_not_inner_d2d_is_207000(rt, kind):
    """descriptor copy: runtime: kind != 6 (INNER_D2D) -> 207000."""
    assert code(rt.get_memcpy_desc_size, kind) == 207000


@pytest.mark.parametrize("product", ["310P", "910"])
def test_get_memcpy_desc_size_unsupported_product_is_207000(fresh, product):
    """descriptor copy / products: descriptor copies are not supported on 310P and 910 -> 207000."""
    r = on(fresh, product)
    assert code(r.get_memcpy_desc_size, INNER_D2D) == 207000
    assert acl.rt.get_memcpy_desc_size(INNER_D2D)[1] == 207000


# ---------------------------------------------------------------------------
# aclrtSetMemcpyDesc (docs/conformance/copy2d_batch_descriptors.md#descriptor-copies)
# ---------------------------------------------------------------------------

@pytest.fixture
def desc_args(rt):
    """(desc, src, dst): a 64-byte-aligned device descriptor and two device buffers of device 0."""
    return rt.malloc(64, NORMAL_ONLY), device(rt, 256, 0x11), device(rt, 256, 0x22)


@pytest.mark.parametrize("which", ["desc_null", "kind_8", "src_null", "dst_null", "count_0", "config"])
def test_set_memcpy_desc_acl_checks_are_invalid_param(rt, desc_args, which):
    """descriptor copy / UT aclrtSetMemcpyDesc_failed_with_invalid_args: ACL layer: desc null, kind >= 8, src null,
    dst null, count 0 (UT aclrtSetMemcpyDesc_failed_with_invalid_args) or a non-null config -> 100000 each."""
    desc, src, dst = desc_args
    args = dict(desc=desc, kind=INNER_D2D, src=src, dst=dst, count=16, config=None)
    args.update({"desc_null": {"desc": 0}, "kind_8": {"kind": 8}, "src_null": {"src": 0},
                 "dst_null": {"dst": 0}, "count_0": {"count": 0}, "config": {"config": {"rsv": 0}}}[which])
    assert code(rt.set_memcpy_desc, *args.values()) == 100000
    assert acl.rt.set_memcpy_desc(*args.values())[1] == 100000


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4, 5, INTER_D2D])
def test_set_memcpy_desc_kind_not_inner_d2d_is_207000(rt, desc_args, kind):
    """descriptor copy: runtime: kind != 6 -> 207000."""
    desc, src, dst = desc_args
    assert code(rt.set_memcpy_desc, desc, kind, src, dst, 16) == 207000


def test_set_memcpy_desc_count_over_4gib_is_107000(rt, desc_args):
    """descriptor copy / sizes: count > 4 GiB (the largest descriptor copy) -> 107000."""
    desc, src, dst = desc_args
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, src, dst, 4 * GiB + 1) == 107000


def test_set_memcpy_desc_unaligned_desc_is_107000(rt, desc_args):
    """descriptor copy: desc not 64-byte aligned -> 107000 (desc 32 bytes into a 64-aligned allocation)."""
    _, src, dst = desc_args
    base = rt.malloc(128, NORMAL_ONLY)
    assert base % 64 == 0
    assert code(rt.set_memcpy_desc, base + 32, INNER_D2D, src, dst, 16) == 107000


def test_set_memcpy_desc_desc_in_host_memory_is_107000(rt, desc_args):
    """descriptor copy: desc not DEVICE memory (page-locked host memory, 64-byte aligned) -> 107000."""
    _, src, dst = desc_args
    h = rt.malloc_host(64)
    assert h % 64 == 0
    assert code(rt.set_memcpy_desc, h, INNER_D2D, src, dst, 16) == 107000


@pytest.mark.parametrize("case", ["src_on_device_1", "dst_on_device_1", "src_host", "dst_host"])
def test_set_memcpy_desc_src_dst_not_both_device_of_one_device_is_107000(rt, desc_args, case):
    """descriptor copy: src and dst not both DEVICE memory of the same device -> 107000."""
    desc, src, dst = desc_args
    rt.set_device(1)
    other = device(rt, 256)
    rt.set_device(0)
    host = rt.malloc_host(256)
    s, d = {"src_on_device_1": (other, dst), "dst_on_device_1": (src, other),
            "src_host": (host, dst), "dst_host": (src, host)}[case]
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, s, d, 16) == 107000


def test_set_memcpy_desc_writes_record_into_device_memory(rt, desc_args):
    """descriptor copy / record: the record written into desc is {resv0..2 = 0 (u32), len u32 at 12, src u64 at 16,
    dst u64 at 24}, 32 bytes on A2; read back with a D2H copy."""
    desc, src, dst = desc_args
    rt.memset(desc, 64, OLD, 64)
    assert rt.set_memcpy_desc(desc, INNER_D2D, src, dst, 100) == desc
    raw = read_device(rt, desc, 64)
    assert RECORD.unpack(raw[:32].tobytes()) == (0, 0, 0, 100, src, dst)
    assert raw[:12].tobytes() == bytes(12)
    assert raw[12:16].tobytes() == (100).to_bytes(4, "little")
    assert raw[16:24].tobytes() == src.to_bytes(8, "little")
    assert raw[24:32].tobytes() == dst.to_bytes(8, "little")
    assert (raw[32:] == OLD).all()  # a V1 record is 32 bytes: nothing after it is written


@pytest.mark.parametrize("product", ["310P", "910"])
def test_set_memcpy_desc_unsupported_product_is_207000(fresh, product):
    """descriptor copy / products: SetMemcpyDesc is not supported on 310P and 910 -> 207000."""
    r = on(fresh, product)
    desc, src, dst = r.malloc(64, NORMAL_ONLY), r.malloc(64, NORMAL_ONLY), r.malloc(64, NORMAL_ONLY)
    assert code(r.set_memcpy_desc, desc, INNER_D2D, src, dst, 16) == 207000


def test_set_memcpy_desc_supported_on_200i_a2(fresh):
    """products: descriptor copies are supported on 200I/500A2: set + async copy move the bytes."""
    r = on(fresh, "200I_A2")
    desc, src, dst = r.malloc(64, NORMAL_ONLY), device(r, 64, 0), device(r, 64, 0)
    write_device(r, src, pattern(64))
    r.set_memcpy_desc(desc, INNER_D2D, src, dst, 64)
    s = r.create_stream()
    r.memcpy_async_with_desc(desc, INNER_D2D, s)
    r.synchronize_stream(s)
    assert (read_device(r, dst, 64) == pattern(64)).all()


# ---------------------------------------------------------------------------
# aclrtMemcpyAsyncWithDesc (docs/conformance/copy2d_batch_descriptors.md#descriptor-copies)
# ---------------------------------------------------------------------------

@pytest.fixture
def ready(rt, desc_args):
    """(desc, src, dst, stream): src holds pattern(256), dst is OLD, desc copies 256 bytes src -> dst."""
    desc, src, dst = desc_args
    write_device(rt, src, pattern(256))
    rt.memset(dst, 256, OLD, 256)
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst, 256)
    return desc, src, dst, rt.create_stream()


def test_memcpy_async_with_desc_null_stream_is_invalid_param(rt, ready):
    """descriptor copy / UT aclrtMemcpyAsyncWithDesc_failed_with_invalid_args / default stream: a null stream ->
    100000: there is no default stream for this API; nothing is copied."""
    desc, _, dst, _ = ready
    assert code(rt.memcpy_async_with_desc, desc, INNER_D2D, 0) == 100000
    assert acl.rt.memcpy_async_with_desc(desc, INNER_D2D, 0) == 100000
    rt.synchronize_device()
    assert (read_device(rt, dst, 256) == OLD).all()


def test_memcpy_async_with_desc_null_desc_is_invalid_param(rt, ready):
    """descriptor copy: ACL layer: desc null -> 100000."""
    *_, s = ready
    assert code(rt.memcpy_async_with_desc, 0, INNER_D2D, s) == 100000


def test_memcpy_async_with_desc_destroyed_stream_is_107017(rt, ready):
    """descriptor copy / bad handle: a destroyed stream handle -> 107017."""
    desc, *_, s = ready
    rt.destroy_stream(s)
    assert code(rt.memcpy_async_with_desc, desc, INNER_D2D, s) == 107017


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4, 5, INTER_D2D])
def test_memcpy_async_with_desc_kind_not_inner_d2d_is_207000(rt, ready, kind):
    """descriptor copy: runtime: kind != 6 -> 207000."""
    desc, *_, s = ready
    assert code(rt.memcpy_async_with_desc, desc, kind, s) == 207000


def test_memcpy_async_with_desc_kind_8_is_invalid_param(rt, ready):
    """descriptor copy: ACL layer: kind >= 8 -> 100000."""
    desc, *_, s = ready
    assert code(rt.memcpy_async_with_desc, desc, 8, s) == 100000


def test_memcpy_async_with_desc_copies_len_bytes_after_synchronize(rt, ready):
    """descriptor copy: the task copies len bytes src -> dst on the stream: the bytes are there after
    aclrtSynchronizeStream, not when the call returns; bytes past len are untouched."""
    desc, src, dst, s = ready
    rt.set_memcpy_desc(desc, INNER_D2D, src, dst, 200)
    assert acl.rt.memcpy_async_with_desc(desc, INNER_D2D, s) == 0
    assert (peek(rt, dst, 256) == OLD).all()
    rt.synchronize_stream(s)
    out = read_device(rt, dst, 256)
    assert (out[:200] == pattern(256)[:200]).all()
    assert (out[200:] == OLD).all()


@pytest.mark.parametrize("how", ["set_memcpy_desc", "memcpy"])
def test_memcpy_async_with_desc_reads_descriptor_when_task_runs(rt, ready, how):
    """descriptor copy (inferred; the API reference says the parameters can be reused: aclrtSetMemcpyDesc in
    hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md): the task reads len/src/dst from device
    memory when it executes. Queued behind a long H2D on the same stream, the descriptor is rewritten
    synchronously (SetMemcpyDesc again, or a raw record written with aclrtMemcpy) before the task
    runs; the rewritten record (other src, shorter len) is what gets copied."""
    desc, src, dst, s = ready
    src2 = device(rt, 256, 0)
    write_device(rt, src2, pattern(256, seed=5))
    long_h2d(rt, s)
    rt.memcpy_async_with_desc(desc, INNER_D2D, s)
    if how == "set_memcpy_desc":
        rt.set_memcpy_desc(desc, INNER_D2D, src2, dst, 100)
    else:
        write_device(rt, desc, np.frombuffer(RECORD.pack(0, 0, 0, 100, src2, dst), dtype=np.uint8))
    assert rt.stream_query(s) == 1  # ACL_STREAM_STATUS_NOT_READY: the rewrite came before the task
    rt.synchronize_stream(s)
    out = read_device(rt, dst, 256)
    assert (out[:100] == pattern(256, seed=5)[:100]).all()
    assert (out[100:] == OLD).all()


def test_memcpy_async_with_desc_descriptor_reused_many_times(rt, ready):
    """descriptor copy (reused parameters): one descriptor set once serves many copies; each copies src's current
    bytes."""
    desc, src, dst, s = ready
    for i in range(6):
        write_device(rt, src, pattern(256, seed=10 + i))
        rt.memcpy_async_with_desc(desc, INNER_D2D, s)
        rt.synchronize_stream(s)
        assert (read_device(rt, dst, 256) == pattern(256, seed=10 + i)).all()


def test_memcpy_async_with_desc_desc_in_host_memory_is_107000(rt, ready):
    """descriptor copy: runtime: desc not DEVICE memory -> 107000."""
    *_, s = ready
    assert code(rt.memcpy_async_with_desc, rt.malloc_host(64), INNER_D2D, s) == 107000


def test_memcpy_async_with_desc_unaligned_desc_is_107000(rt, ready):
    """descriptor copy: runtime: desc not 64-byte aligned -> 107000."""
    *_, s = ready
    base = rt.malloc(128, NORMAL_ONLY)
    assert code(rt.memcpy_async_with_desc, base + 32, INNER_D2D, s) == 107000


@pytest.mark.parametrize("product", ["310P", "910"])
def test_memcpy_async_with_desc_unsupported_product_is_207000(fresh, product):
    """descriptor copy / products: not supported on 310P and 910 -> 207000."""
    r = on(fresh, product)
    s = r.create_stream()
    assert code(r.memcpy_async_with_desc, r.malloc(64, NORMAL_ONLY), INNER_D2D, s) == 207000


# ---------------------------------------------------------------------------
# aclrtMemcpyAsyncWithOffset (docs/conformance/copy2d_batch_descriptors.md#aclrtmemcpyasyncwithoffset)
# ---------------------------------------------------------------------------

def slots(rt, dst_base, src_base):
    """Two 8-byte device slots holding dst_base and src_base (written with an H2D copy)."""
    slot = rt.malloc(64, NORMAL_ONLY)
    write_device(rt, slot, np.array([dst_base, src_base], dtype=np.uint64))
    return slot, slot + 8


@pytest.fixture
def offset_args(rt):
    """(dst_slot, src_slot, dst_base, src_base, stream): src_base holds pattern(256), dst_base is OLD."""
    src_base, dst_base = device(rt, 256, 0), device(rt, 256)
    write_device(rt, src_base, pattern(256))
    dslot, sslot = slots(rt, dst_base, src_base)
    return dslot, sslot, dst_base, src_base, rt.create_stream()


@pytest.mark.parametrize("product", ["910B", "310P"])
def test_memcpy_async_with_offset_count_0_is_0_with_anything(fresh, product):
    """copy by offset / UT aclrtMemcpyAsyncWithOffset: count 0 -> 0 before any other check (null pointers, bad kind,
    null stream), even on a product without the API."""
    r = on(fresh, product)
    assert code(r.memcpy_async_with_offset, 0, 0, 0, 0, 0, 0, INNER_D2D, 0) == 0
    assert code(r.memcpy_async_with_offset, 0, 0, 1 << 60, 0, 0, 1 << 60, 0x7FFFFFFF, 0x1234) == 0
    assert acl.rt.memcpy_async_with_offset(0, 0, 0, 0, 0, 0, INNER_D2D, 0) == 0


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4, 5, INTER_D2D, 8])
def test_memcpy_async_with_offset_kind_not_inner_d2d_is_107000(rt, offset_args, kind):
    """copy by offset: kind != INNER_D2D -> 107000 (not 207000 as for descriptors)."""
    dslot, sslot, *_, s = offset_args
    assert code(rt.memcpy_async_with_offset, dslot, 256, 0, sslot, 16, 0, kind, s) == 107000


@pytest.mark.parametrize("product", ["310P", "200I_A2"])
def test_memcpy_async_with_offset_unsupported_product_is_207000(fresh, product):
    """copy by offset / products: no D2D-by-offset feature on 310P and 200I/500A2 -> 207000."""
    r = on(fresh, product)
    slot = r.malloc(64, NORMAL_ONLY)
    assert code(r.memcpy_async_with_offset, slot, 256, 0, slot + 8, 16, 0, INNER_D2D, 0) == 207000
    assert acl.rt.memcpy_async_with_offset(slot, 256, 0, slot + 8, 16, 0, INNER_D2D, 0) == 207000


@pytest.mark.parametrize("product", ["910B", "910"])
def test_memcpy_async_with_offset_copies_from_src_slot_plus_offset_to_dst_slot_plus_offset(fresh, product):
    """copy by offset: dst and src are device words holding base addresses; the copy moves count bytes from
    *src + srcOffset to *dst + dstOffset (supported on A2 and on 910). Bytes arrive after synchronize."""
    r = on(fresh, product)
    src_base, dst_base = device(r, 256, 0), device(r, 256)
    write_device(r, src_base, pattern(256))
    dslot, sslot = slots(r, dst_base, src_base)
    s = r.create_stream()
    assert acl.rt.memcpy_async_with_offset(dslot, 256, 16, sslot, 32, 8, INNER_D2D, s) == 0
    assert (peek(r, dst_base, 256) == OLD).all()
    r.synchronize_stream(s)
    out = read_device(r, dst_base, 256)
    assert (out[16:48] == pattern(256)[8:40]).all()
    assert (out[:16] == OLD).all() and (out[48:] == OLD).all()
    assert (read_device(r, src_base, 256) == pattern(256)).all()


def test_memcpy_async_with_offset_same_slot_is_not_skipped(rt):
    """copy by offset: there is no dst == src shortcut: with one slot as both dst and src, the copy moves bytes
    inside the buffer it points to (srcOffset 0 -> dstOffset 128)."""
    base = device(rt, 256, 0)
    write_device(rt, base, pattern(256))
    slot = rt.malloc(64, NORMAL_ONLY)
    write_device(rt, slot, np.array([base], dtype=np.uint64))
    s = rt.create_stream()
    rt.memcpy_async_with_offset(slot, 256, 128, slot, 64, 0, INNER_D2D, s)
    rt.synchronize_stream(s)
    out = read_device(rt, base, 256)
    assert (out[128:192] == pattern(256)[:64]).all()
    assert (out[:128] == pattern(256)[:128]).all() and (out[192:] == pattern(256)[192:]).all()


def test_memcpy_async_with_offset_reads_slots_when_task_runs(rt, offset_args):
    """copy by offset (inferred detail) / facade (emu/acl/rt.py): the slots are read when the task executes. Queued
    behind a long H2D, the src slot is rewritten (synchronous H2D) to another base before the task runs; the
    copy reads from the new base."""
    dslot, sslot, dst_base, _, s = offset_args
    src2 = device(rt, 256, 0)
    write_device(rt, src2, pattern(256, seed=7))
    long_h2d(rt, s)
    rt.memcpy_async_with_offset(dslot, 256, 0, sslot, 64, 0, INNER_D2D, s)
    write_device(rt, sslot, np.array([src2], dtype=np.uint64))
    assert rt.stream_query(s) == 1  # not ready: the slot changed before the task ran
    rt.synchronize_stream(s)
    out = read_device(rt, dst_base, 256)
    assert (out[:64] == pattern(256, seed=7)[:64]).all()
    assert (out[64:] == OLD).all()


@pytest.mark.parametrize("which", ["dst", "src"])
def test_memcpy_async_with_offset_null_dst_or_src_is_107000(rt, offset_args, which):
    """copy by offset: dst or src null -> 107000 (there is no ACL-layer null check)."""
    dslot, sslot, *_, s = offset_args
    d, sp = (0, sslot) if which == "dst" else (dslot, 0)
    assert code(rt.memcpy_async_with_offset, d, 256, 0, sp, 16, 0, INNER_D2D, s) == 107000


def test_memcpy_async_with_offset_destroyed_stream_is_107017(rt, offset_args):
    """aclrtMemcpyAsyncWithOffset / bad handle: a destroyed stream handle -> 107017."""
    dslot, sslot, *_, s = offset_args
    rt.destroy_stream(s)
    assert code(rt.memcpy_async_with_offset, dslot, 256, 0, sslot, 16, 0, INNER_D2D, s) == 107017


def test_memcpy_async_with_offset_count_over_dest_max_is_107000(rt, offset_args):
    """copy by offset: count > destMax -> 107000."""
    dslot, sslot, *_, s = offset_args
    assert code(rt.memcpy_async_with_offset, dslot, 16, 0, sslot, 17, 0, INNER_D2D, s) == 107000


def test_memcpy_async_with_offset_count_over_4gib_is_107000(rt, offset_args):
    """copy by offset: count > 4 GiB -> 107000, even with a larger destMax."""
    dslot, sslot, *_, s = offset_args
    assert code(rt.memcpy_async_with_offset, dslot, 1 << 40, 0, sslot, 4 * GiB + 1, 0, INNER_D2D, s) == 107000


@pytest.mark.parametrize("which", ["dst", "src"])
def test_memcpy_async_with_offset_offset_over_48_bits_is_107000(rt, offset_args, which):
    """copy by offset: an offset > 0xFFFF_FFFF_FFFF -> 107000."""
    dslot, sslot, *_, s = offset_args
    big = 0xFFFF_FFFF_FFFF + 1
    doff, soff = (big, 0) if which == "dst" else (0, big)
    assert code(rt.memcpy_async_with_offset, dslot, 1 << 62, doff, sslot, 16, soff, INNER_D2D, s) == 107000


@pytest.mark.parametrize("doff", [256, 257])
def test_memcpy_async_with_offset_dst_offset_at_or_past_dest_max_is_107000(rt, offset_args, doff):
    """copy by offset: dstDataOffset >= destMax -> 107000."""
    dslot, sslot, *_, s = offset_args
    assert code(rt.memcpy_async_with_offset, dslot, 256, doff, sslot, 1, 0, INNER_D2D, s) == 107000


def test_memcpy_async_with_offset_count_over_remaining_dest_is_107000(rt, offset_args):
    """copy by offset: count > destMax - dstDataOffset -> 107000; count == destMax - dstDataOffset is accepted."""
    dslot, sslot, *_, s = offset_args
    assert code(rt.memcpy_async_with_offset, dslot, 256, 200, sslot, 57, 0, INNER_D2D, s) == 107000
    assert code(rt.memcpy_async_with_offset, dslot, 256, 200, sslot, 56, 0, INNER_D2D, s) == 0
    rt.synchronize_stream(s)


# ---------------------------------------------------------------------------
# Order: the ACL layer's checks come before the runtime's product gate
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("call", ["desc_size_kind_8", "set_desc_null", "with_desc_null_stream"])
def test_descriptor_acl_checks_come_before_product_gate(fresh, call):
    """call chain / product gate / descriptor copy / UT aclrtMemcpyAsyncWithDesc_failed_with_invalid_args,
    aclrtSetMemcpyDesc_failed_with_invalid_args: the call chain is ACL checks, then the runtime's C entry with its
    chip-feature gate. On 310P (no descriptor copies) a call failing an ACL-layer check still gets the ACL code
    100000: GetMemcpyDescSize(kind 8), SetMemcpyDesc(NULL desc), MemcpyAsyncWithDesc(NULL stream)."""
    r = on(fresh, "310P")
    buf = r.malloc(64, NORMAL_ONLY)
    result = {"desc_size_kind_8": lambda: code(r.get_memcpy_desc_size, 8),
              "set_desc_null": lambda: code(r.set_memcpy_desc, 0, INNER_D2D, buf, buf, 16),
              "with_desc_null_stream": lambda: code(r.memcpy_async_with_desc, buf, INNER_D2D, 0)}[call]()
    assert result == 100000
