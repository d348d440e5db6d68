"""The API reference, docs/api.md, built from the docstrings.

    python -m emu.apidoc            # (re)write docs/api.md
    python -m emu.apidoc --check    # exit 1 if docs/api.md is not what the docstrings give

The page lists the names of `emu`, then every function of `emu.runtime` grouped by API family, each with
its signature, its ACL API, its pyACL name in the `emu.acl` facade and its docstring; then the helpers,
the classes and the inspection members of the runtime object. `render()` returns the page as a string.
"""
from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "api.md"
COMMAND = "python -m emu.apidoc"

# The emu.runtime API functions by family, in the page's order. Every ACL API method of Runtime belongs to
# exactly one group (`render` refuses otherwise, so a new API must be placed here).
GROUPS: list[tuple[str, list[str]]] = [
    ("Initialisation, devices and contexts", [
        "init", "finalize", "set_device", "reset_device", "reset_device_force", "get_device", "get_device_count",
        "get_run_mode", "synchronize_device", "get_soc_name", "create_context", "destroy_context", "set_context",
        "get_context"]),
    ("Streams", [
        "create_stream", "create_stream_with_config", "destroy_stream", "destroy_stream_force", "synchronize_stream",
        "synchronize_stream_with_timeout", "stream_query"]),
    ("Events", [
        "create_event", "create_event_with_flag", "create_event_ex_with_flag", "destroy_event", "record_event",
        "reset_event", "stream_wait_event", "synchronize_event", "query_event_status", "query_event_wait_status",
        "event_elapsed_time"]),
    ("Allocation", [
        "malloc", "malloc_with_cfg", "free", "malloc_host", "malloc_host_with_cfg", "free_host", "dvpp_malloc",
        "dvpp_free", "get_mem_info", "pointer_get_attributes"]),
    ("Copies", ["memcpy", "memcpy_async", "memcpy_async_with_condition"]),
    ("2D, batch and descriptor copies", [
        "memcpy2d", "memcpy2d_async", "memcpy_batch", "memcpy_batch_async", "memcpy_batch_v2",
        "memcpy_batch_async_v2", "get_memcpy_desc_size", "set_memcpy_desc", "memcpy_async_with_desc",
        "memcpy_async_with_offset"]),
    ("Fills", ["memset", "memset_async", "memset_d32", "memset_d32_async"]),
    ("Host memory registration", ["host_register", "host_register_v2", "host_get_device_pointer", "host_unregister"]),
    ("Peer access", [
        "device_can_access_peer", "device_enable_peer_access", "device_disable_peer_access",
        "device_peer_access_status"]),
    ("Graph capture", [
        "ri_capture_begin", "ri_capture_get_info", "ri_capture_end", "ri_capture_thread_exchange_mode",
        "ri_execute_async", "ri_destroy"]),
    ("Kernels and host callbacks", [
        "launch_kernel", "launch_device_code", "subscribe_report", "unsubscribe_report", "launch_callback",
        "process_report"]),
    ("Kernel binaries", [
        "binary_load_from_file", "binary_load_from_data", "create_binary", "binary_load", "destroy_binary",
        "binary_get_function", "binary_unload", "kernel_args_init", "kernel_args_append",
        "kernel_args_append_place_holder", "kernel_args_get_place_holder_buffer", "kernel_args_finalize",
        "launch_kernel_with_config"]),
    ("Models (aclmdl) and data buffers", [
        "load_from_file", "load_from_mem", "load_from_file_with_mem", "load_from_mem_with_mem", "query_size",
        "query_size_from_mem", "unload", "create_desc", "destroy_desc", "get_desc", "get_num_inputs",
        "get_num_outputs", "get_input_size_by_index", "get_output_size_by_index", "get_input_dims",
        "get_input_dims_v2", "get_output_dims", "get_cur_output_dims", "get_input_name_by_index",
        "get_output_name_by_index", "get_input_format", "get_output_format", "get_input_data_type",
        "get_output_data_type", "get_input_index_by_name", "get_output_index_by_name", "get_dynamic_batch",
        "get_dynamic_hw", "set_dynamic_batch_size", "set_dynamic_hw_size", "set_input_dynamic_dims",
        "create_dataset",
        "destroy_dataset", "add_dataset_buffer", "get_dataset_buffer", "get_dataset_num_buffers",
        "create_data_buffer", "destroy_data_buffer", "get_data_buffer_addr", "get_data_buffer_size_v2",
        "get_data_buffer_size", "update_data_buffer", "data_type_size", "execute", "execute_async"]),
]

# The helpers of emu.runtime that are no ACL API, and the facade functions built on them.
HELPERS: dict[str, list[str]] = {
    "register_host": ["acl.util.bytes_to_ptr", "acl.util.numpy_to_ptr"],
    "host_array": ["acl.util.ptr_to_numpy", "acl.util.ptr_to_bytes"],
    "device_array": [],
    "start_thread": ["acl.util.start_thread"],
    "stop_thread": ["acl.util.stop_thread"],
}

# Module-level functions of emu.runtime besides the delegators.
RUNTIME_FUNCTIONS = ["configure", "configured", "current", "host_time_from_env", "parse_host_time", "correct_kind", "ends", "api"]
RUNTIME_CLASSES = ["Runtime", "Context", "Device", "Stream", "Event", "Capture", "Model", "PointerAttributes",
                   "CallbackError", "CallbackDeadlock", "StreamHandle", "EventHandle", "DevicePointer", "HostPointer"]
# What a program may ask the runtime object (`emu.current()`) about its run, besides the APIs.
RUNTIME_MEMBERS = ["records", "record_totals", "flush_records", "write_trace", "calls", "host_calls", "clock",
                   "host_time", "host_time_scale"]

INTRO = """\
# API reference

Generated from the docstrings by `{command}` (`{command} --check` says whether this page
is up to date); edit the docstrings, not this page. `tests/test_api_reference.py` fails when the two
differ.

The emulated runtime has two faces over the same semantics:

- **`emu.runtime`** (`from emu import runtime as rt`), Pythonic: results are returned, failures raise
  `emu.errors.AclError` (its `code` is the ACL error code, its `message` says why; batch copies raise
  its subclass `BatchError`, with `fail_index`). Handles, addresses and sizes are ints; host and device
  times are simulated seconds, except where a docstring says milliseconds. Each function calls the
  method of the same name on the current runtime (`emu.current()`).
- **`emu.acl`** (`import emu.acl as acl`, or `emu.install()` then `import acl`), pyACL's form: see
  [the pyACL facade](#the-pyacl-facade-emuacl).

Error codes in the docstrings are the ACL codes of `emu.errors` (e.g. 100000 ACL_ERROR_INVALID_PARAM,
107000 ACL_ERROR_RT_PARAM_INVALID, 107002 ACL_ERROR_RT_CONTEXT_NULL, 107003 ACL_ERROR_RT_STREAM_CONTEXT,
107017 ACL_ERROR_RT_INVALID_HANDLE, 207000 ACL_ERROR_RT_FEATURE_NOT_SUPPORT); each API's full order of
checks and codes is in the [conformance tables](conformance/README.md).
"""

FACADE = """\
## The pyACL facade (emu.acl)

Same module tree, names, argument order and return convention as pyACL. Arguments are positional;
a function with outputs returns `(outputs..., ret)`, any other returns `ret`: 0 on success, the ACL
error code on failure (an ACL failure is never an exception). Arguments of the wrong number or type
raise `TypeError("acl.<module>.<name> args parse failed")`; a name the emulator does not provide
raises AttributeError saying so. `help(acl.rt.<name>)` shows the call form and the runtime's docstring.

The C-only APIs (batch, 2D async, descriptor, offset, D32 and capture) follow the same conventions,
with these Python forms of their C arguments:

- an array is a list of ints, or None for a null pointer; a list whose length disagrees with its
  count argument is ACL_ERROR_INVALID_PARAM (100000), as mismatched arrays are in C;
- a batch attribute is a dict `{"dst_loc": {"id": int, "type": int}, "src_loc": {"id": int, "type":
  int}, "rsv": bytes}`: rsv (bytes, or a list of ints 0..255) may be omitted or shorter than its 16
  bytes (zero-filled);
- a malloc config is a list of `{"attr": int, "value": int}` dicts;
- for `memcpy_async_with_offset`, `dst` and `src` are the addresses of 8-byte slots in device memory
  that hold the base addresses (the C API's second-level pointers), read when the copy executes.
"""


def _facade(name: str) -> list[str]:
    """The facade functions that call emu.runtime's `name`: an API's declared pyACL entry, a helper's HELPERS."""
    if name in HELPERS:
        return HELPERS[name]
    from emu import runtime as rt
    pyacl = getattr(rt.Runtime, name).api.pyacl
    return [pyacl] if pyacl else []


def signature(fn, name: str | None = None) -> str:
    """`name(params) -> return` of a function or method: no self, no parameter annotations."""
    name = name or fn.__name__
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return f"{name}(...)"
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values() if p.name not in ("self", "rt")]
    ret = sig.return_annotation
    text = f"{name}{sig.replace(parameters=params, return_annotation=inspect.Signature.empty)}"
    if ret is not inspect.Signature.empty:
        text += f" -> {ret if isinstance(ret, str) else inspect.formatannotation(ret)}"
    return text


def _docblock(obj) -> list[str]:
    doc = inspect.getdoc(obj)
    if not doc:
        raise ValueError(f"{getattr(obj, '__qualname__', obj)} has no docstring")
    return ["```text", *doc.splitlines(), "```", ""]


def _anchor(title: str) -> str:
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")


def _api_entry(rt, name: str) -> list[str]:
    fn = getattr(rt, name)
    acl_name = getattr(getattr(rt.Runtime, name), "acl_name", None)
    facade = _facade(name)
    where = [f"ACL: `{acl_name}`" if acl_name else "not an ACL API",
             "pyACL: " + (", ".join(f"`{f}`" for f in facade) if facade else "none")]
    return [f"### `rt.{signature(fn, name)}`", "", " · ".join(where), "", *_docblock(fn)]


def _check_groups(rt) -> None:
    """Every API of emu.runtime sits in exactly one of GROUPS, and every name there is an API."""
    grouped = [n for _, names in GROUPS for n in names]
    missing = sorted(set(rt.API_NAMES) - set(grouped))
    unknown = sorted(set(grouped) - set(rt.API_NAMES))
    doubled = sorted({n for n in grouped if grouped.count(n) > 1})
    if missing or unknown or doubled:
        raise ValueError(f"emu.apidoc.GROUPS: APIs in no group {missing}, names that are no API {unknown}, "
                         f"APIs in two groups {doubled}")


def _contents() -> list[str]:
    """The intro and the contents list; its titles are the page's "## " sections, in order."""
    sections = ["emu", "The pyACL facade (emu.acl)", "emu.runtime: module functions",
                *(title for title, _ in GROUPS), "Helpers (not ACL APIs)", "Classes", "The runtime object",
                "The C library (libascendcl.so)"]
    out = [INTRO.format(command=COMMAND), "## Contents", ""]
    return out + [f"- [{t}](#{_anchor(t)})" for t in sections] + [""]


def _package_section(emu, rt) -> list[str]:
    """`emu.__all__`, in its order; a runtime function re-exported there links to its rt. entry."""
    out = ["## emu", "", "`import emu`: the package's own names.", ""]
    for name in emu.__all__:
        obj = getattr(emu, name)
        if getattr(rt, name, None) is obj and name in RUNTIME_FUNCTIONS:
            out += [f"### `emu.{signature(obj, name)}`", "",
                    f"`emu.runtime.{name}`, re-exported: see [rt.{name}](#{_anchor('rt.' + name)}).", ""]
        elif name == "__version__":
            out += ["### `emu.__version__`", "", "The installed acl-emu version (\"0+unknown\" in a checkout that "
                    "was never installed).", ""]
        elif inspect.isclass(obj):
            out += [f"### class `emu.{name}`", "", *_docblock(obj)]
        else:
            out += [f"### `emu.{signature(obj, name)}`", "", *_docblock(obj)]
    return out


def _runtime_functions_section(rt) -> list[str]:
    """RUNTIME_FUNCTIONS, each with the anchor `_package_section` links to."""
    out = ["## emu.runtime: module functions", ""]
    for name in RUNTIME_FUNCTIONS:
        out += [f"### `rt.{signature(getattr(rt, name), name)}`", "", f'<a id="{_anchor("rt." + name)}"></a>', "",
                *_docblock(getattr(rt, name))]
    return out


def _api_sections(rt) -> list[str]:
    """One section per group of GROUPS, then the helpers; HELPERS must be exactly emu.runtime's helpers."""
    out = []
    for title, names in GROUPS:
        out += [f"## {title}", ""]
        for name in names:
            out += _api_entry(rt, name)
    out += ["## Helpers (not ACL APIs)", ""]
    if set(HELPERS) != set(rt.HELPERS):
        raise ValueError(f"emu.runtime's helpers {sorted(rt.HELPERS)} and the page's {sorted(HELPERS)} differ")
    for name in HELPERS:
        out += _api_entry(rt, name)
    return out


def _classes_section(rt, errors) -> list[str]:
    out = ["## Classes", ""]
    for name in RUNTIME_CLASSES:
        out += [f"### class `rt.{name}`", "", *_docblock(getattr(rt, name))]
    return out + ["### class `emu.errors.BatchError`", "", *_docblock(errors.BatchError)]


def _runtime_object_section(rt) -> list[str]:
    """RUNTIME_MEMBERS of `Runtime`, read statically so a property shows as one."""
    out = ["## The runtime object", "",
           "`emu.current()` (or the value `emu.configure` returns) is the process's `Runtime`; besides the",
           "APIs above it answers these.", ""]
    for name in RUNTIME_MEMBERS:
        member = inspect.getattr_static(rt.Runtime, name)
        if isinstance(member, property):
            out += [f"### `Runtime.{name}` (property)", "", *_docblock(member)]
        else:
            out += [f"### `Runtime.{signature(member, name)}`", "", *_docblock(member)]
    return out


def render() -> str:
    """docs/api.md as the docstrings give it."""
    import emu
    import emu.acl  # noqa: F401  (the facade modules, for the pyACL names)
    from emu import errors
    from emu import runtime as rt

    _check_groups(rt)
    from emu.capi import bridge

    out = [*_contents(), *_package_section(emu, rt), FACADE, *_runtime_functions_section(rt), *_api_sections(rt),
           *_classes_section(rt, errors), *_runtime_object_section(rt), *bridge.api_section()]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Write docs/api.md from the docstrings.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs, writing nothing")
    parser.add_argument("--output", type=Path, default=PAGE, help=f"the page (default {PAGE})")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
        if current != text:
            print(f"{args.output} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        print(f"{args.output} is up to date")
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
