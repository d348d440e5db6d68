"""Cross-cutting hooks live in one place each (issue 29): the sanitizer's hooks are `Core` methods (the one
`is not None` test is in core.py), and a chip feature an API needs as a whole is declared on it
(`api(..., feature=...)`) and checked by `Core.feature_gate`."""
from __future__ import annotations

import pathlib
import re

import pytest

import emu
import emu.acl as acl
from emu.config import load
from emu.runtime import APIS
from helpers import code, device, pageable

RUNTIME = pathlib.Path(emu.__file__).parent / "runtime"
PRODUCTS = ("910B", "910", "310P", "200I_A2", "IPV350")


def test_no_family_module_tests_the_sanitizer_itself():
    for path in sorted(RUNTIME.glob("*.py")):
        if path.name == "core.py":
            continue
        src = path.read_text()
        assert not re.search(r"\b(san|sanitizer) is (not )?None", src), path.name
        assert not re.search(r"\bsan = rt\.sanitizer\b", src), path.name


def test_no_family_module_tests_a_feature_by_hand():
    """Product.has is read in core.py's gates; family modules call feature_gate / require_feature, except
    for features that choose how work runs rather than refuse it."""
    # (stars: aclrtSubscribeReport creates an event first on a STARS chip, which needs a context: it
    # chooses what the call does, it refuses no API)
    behaviour = {"memset_task", "memcpy2d_default_stream", "peer_copy_needs_enable", "stars"}
    for path in sorted(RUNTIME.glob("*.py")):
        if path.name == "core.py":
            continue
        for feature in re.findall(r"\.has\(\"(\w+)\"\)", path.read_text()):
            assert feature in behaviour, (path.name, feature)


def test_sanitizer_hooks_do_nothing_when_off(fresh):
    rt = fresh("910B")
    assert rt.sanitizer is None
    assert rt.sanitize("trace_findings") is None
    rt.sanitize_host_access("x", 1, lambda _: 1 / 0)  # the builder is not called


def _lacking(feature: str) -> str:
    return next(p for p in PRODUCTS if not load(p).has(feature))


def _peer(rt):
    return code(rt.device_can_access_peer, 0, 1)


CALLS = {
    "aclrtMemcpyBatch": lambda rt: acl.rt.memcpy_batch([device(rt, 64)], [16], [pageable(64)[0]], [16], 1, [], [],
                                                       0)[1],
    "aclmdlRICaptureBegin": lambda rt: code(rt.ri_capture_begin, rt.create_stream(), 0),
    "aclmdlRICaptureGetInfo": lambda rt: code(rt.ri_capture_get_info, rt.create_stream()),
    "aclmdlRICaptureEnd": lambda rt: code(rt.ri_capture_end, rt.create_stream()),
    "aclmdlRICaptureThreadExchangeMode": lambda rt: code(rt.ri_capture_thread_exchange_mode, 0),
    "aclrtGetMemcpyDescSize": lambda rt: code(rt.get_memcpy_desc_size, 6),
    "aclrtHostRegister": lambda rt: code(rt.host_register, pageable(64)[0], 64),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_declared_feature_gate_refuses_the_api_with_207000(fresh, name):
    decl = next(d for d in APIS if d.acl == name)
    assert decl.feature is not None
    rt = fresh(_lacking(decl.feature))
    rt.set_device(0)
    assert CALLS[name](rt) == 207000


def test_the_declared_features():
    declared = {d.acl: d.feature for d in APIS if d.feature is not None}
    assert set(declared.values()) == {"batch_copy", "acl_graph", "stars", "d2d_by_offset", "host_register", "p2p"}
    assert set(CALLS) <= set(declared)


def test_feature_gate_fires_only_for_the_declared_api(fresh):
    rt = fresh(_lacking("p2p"))
    rt.set_device(0)
    rt.feature_gate()  # outside an API call nothing is pending
    assert code(rt.require_feature, "p2p", "peer") == 207000
    assert code(rt.require_feature, "p2p", "peer", 100000) == 100000
