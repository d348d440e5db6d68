"""Things said once: each rule names the one place that says it, and the test shows the others follow it."""
from __future__ import annotations

import emu
from emu.memory import FREED_KEPT


def _sanitized():
    rt = emu.configure("910B", functional=True, sanitize=True, host_time="calls")
    rt.set_device(0)
    return rt


def test_the_sanitizer_remembers_as_many_frees_as_the_address_space_one_limit_freed_kept():
    """emu.memory.FREED_KEPT bounds both records: the oldest free the address space still knows is one the
    sanitizer can name, so a use of that memory is reported with its free."""
    rt = _sanitized()
    assert rt.sanitizer._frees.maxlen == rt.space.freed_recently.maxlen == FREED_KEPT
    ptrs = [rt.malloc(64) for _ in range(FREED_KEPT + 10)]  # all live at once: no address is used twice
    for p in ptrs:
        rt.free(p)
    oldest = rt.space.freed_recently[0][0]
    assert oldest == int(ptrs[10])
    try:
        rt.free(oldest)
    except emu.AclError:
        pass
    assert [f.kind for f in rt.sanitizer.findings] == ["double-free"]


def test_a_finding_found_again_is_counted_and_keeps_its_ops_a_possible_hazard_is_only_counted():
    """One `_report` files both: a finding seen again at the same call sites is counted with its ops kept (the
    first 8); a possible hazard (an undeclared kernel argument) seen again is only counted."""
    rt = _sanitized()
    a, b = rt.create_stream(), rt.create_stream()
    n = 1 << 12
    x, h = rt.malloc(n), rt.malloc_host(n)
    rt.memset(x, n, 1, n)
    for _ in range(2):
        rt.launch_kernel(lambda v: v.sum(), [(x, n)], a, duration_us=50)
        rt.launch_kernel(lambda v: v.sum(), [(x, n)], b, duration_us=50)
    (p,) = rt.sanitizer.possible
    assert p.count >= 2 and p.again == []
    for _ in range(2):
        rt.memcpy_async(x, n, h, n, 1, a)
        rt.memcpy_async(x, n, h, n, 1, b)
    (f,) = [f for f in rt.sanitizer.findings if {op.api for op in f.ops} == {"aclrtMemcpyAsync"}]
    assert f.kind == "race" and f.count >= 2 and len(f.again) == min(f.count - 1, 8)


def _private_imports(path) -> list[str]:
    """`from <module> import _name` statements of a file: another module's private names it reaches."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.name}:{n.lineno}: from {'.' * n.level}{n.module or ''} import {a.name}" for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) for a in n.names if a.name.startswith("_") and not a.name.startswith("__")]


def test_the_facade_modules_import_no_private_name_of_another_module_value_entry_lives_in_bind():
    """emu.acl's modules share their helpers through emu/acl/_bind.py's public names: the value-returning
    entries (acl.create_data_buffer, acl.mdl.get_num_inputs, ...) are all made by `_bind.value_entry`."""
    from pathlib import Path

    import emu.acl as acl
    from emu.acl import _bind

    facade = Path(acl.__file__).parent
    assert [line for p in sorted(facade.glob("*.py")) for line in _private_imports(p)] == []
    for entry in (acl.create_data_buffer, acl.data_type_size, acl.mdl.get_num_inputs, acl.mdl.create_dataset):
        assert entry.__module__ == _bind.__name__ and entry.__code__ is acl.get_data_buffer_addr.__code__


def _private_attributes_of_imported_modules(path) -> list[str]:
    """`module._name` uses in a file, where `module` came in by `from . import module`."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1
               and n.module is None for a in n.names}
    return [f"{path.name}:{n.lineno}: {n.value.id}.{n.attr}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in modules
            and n.attr.startswith("_") and not n.attr.startswith("__")]


def test_inference_allocates_through_allocations_public_alloc_by_policy():
    """emu.runtime.inference (aclmdlExecute's output buffers) allocates device memory by
    `allocation.alloc_by_policy`, the helper aclrtMalloc, acldvppMalloc and aclrtMallocWithCfg use: it reaches
    no private name of another family module."""
    from pathlib import Path

    from emu.runtime import allocation, inference

    assert _private_attributes_of_imported_modules(Path(inference.__file__)) == []
    assert not hasattr(allocation, "_alloc_device") and callable(allocation.alloc_by_policy)
    rt = emu.configure("910B", functional=True, host_time="calls")
    rt.set_device(0)
    r = allocation.alloc_by_policy(rt, 0, 100, 99, origin="malloc")  # an unknown policy is the default
    assert r.size == 128 and r.device == 0 and r.origin == "malloc"
    rt.free(r.base)


def test_whole_numbers_are_read_by_one_parser_common_parse_whole_each_caller_keeping_its_messages():
    """emu.studies.common.parse_whole reads the command line's counts and lists (emu.studies.args) and
    calibrate's CSV counts; each caller keeps its own lower bound and message."""
    import pytest

    from emu.studies import args, calibrate, common

    assert args.parse_whole is calibrate.parse_whole is common.parse_whole
    assert common.parse_whole(" 12 ", 100) == 12 and common.parse_whole("+7", 100) == 7
    with pytest.raises(ValueError, match=r"^'1\.5': '1\.5' is not a whole number$"):
        common.parse_whole("1.5", 100)
    with pytest.raises(common.TooLarge, match=r"^'1,900': 900 is more than 100$"):
        common.parse_whole("900", 100, "1,900")
    with pytest.raises(ValueError, match=r"^'0': expected at least 1$"):
        args.positive_int("0")
    with pytest.raises(ValueError, match=r"^'1\.\.99999999999999999999': at most 64 streams$"):
        args.positive_ints(64, "streams")("1..99999999999999999999")
    with pytest.raises(ValueError, match=r"^'0\.\.-3': expected positive integers"):
        args.parse_ints("0..-3")
    assert args.parse_ints("1..4") == [1, 2, 3, 4]
    for bad in ("abc", "0", "11", "-2", "99999999999999999"):
        with pytest.raises(ValueError, match=rf"^count '{bad}' is not a whole number from 1 to 10$"):
            calibrate._whole(bad, "count", 10)
    assert calibrate._whole(" 10 ", "count", 10) == 10


def _private_reaches(path, root) -> list[str]:
    """A file's uses of another emu module's private names: `from <emu module> import _name` and `module._name`
    where `module` is an emu (or emu.models) module it imported."""
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(root)
    out, modules = [], set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith(("emu", "models"))):
            for a in n.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    out.append(f"{where}:{n.lineno}: from {n.module} import {a.name}")
                modules.add(a.asname or a.name)
        elif isinstance(n, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in n.names if a.name.startswith("emu"))
    out += [f"{where}:{n.lineno}: {n.value.id}.{n.attr}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in modules
            and n.attr.startswith("_") and not n.attr.startswith("__")]
    return out


def test_no_emu_module_reaches_another_modules_private_names():
    """Public names are defined where grep finds them, and a module's private names are its own: no module of
    emu imports or reads another emu module's `_name` (streams.drain, transfer.mover, core.new_handle,
    overlap.Schedule, sweep.dask_distributed... are public for that)."""
    from pathlib import Path

    root = Path(emu.__file__).parent
    assert [line for p in sorted(root.rglob("*.py")) for line in _private_reaches(p, root.parent)] == []
