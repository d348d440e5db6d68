"""What each function of libascendcl.so does: the C ABI turned into calls of the emulator's runtime.

native.c calls `handlers(names)` once, with the name of every function the headers declare, and then each
function's handler with its arguments as Python ints (pointers, integers, enums) or floats. A handler
returns the function's result as an int: the return code for an aclError function.

An API the runtime declares (`@api("aclrtMemcpy", ...)`, `emu.runtime.APIS`) is called through the same
module function pyACL's facade calls, so a C program gets pyACL's codes and bytes. Its C parameters map
onto the runtime function's in order: a pointer to a scalar (`size_t *`, `aclrtStream *`, `void **`, ...) is
an output, written from the function's result (several outputs: the tuple's items in order); a
`const char *` is read as a string; the rest are passed as ints. The APIs whose C form differs (arrays,
structs, callbacks, strings returned) have their own handlers below (`SPECIAL`). A function the headers
declare but the emulator does not emulate fails with a message naming it (`_not_emulated`).

Host memory: a C program's own memory (malloc'ed, on the stack, `new`ed) is pageable host memory at its
real address (`emu.memory.AddressSpace.adopt_raw_host`); page-locked memory from aclrtMallocHost is real
memory the program writes directly; device addresses stay emulated, above the user address space, so a
program that dereferences one faults, as on hardware.
"""
from __future__ import annotations

import inspect
import sys
import threading

from .. import runtime as _runtime
from ..errors import ACL_ERROR_API_NOT_SUPPORT, AclError, set_recent_error
from . import build, marshal, session, special

def generic(proto: build.Prototype, fn, types: dict[str, str], failed=0):
    """The handler of an API whose C parameters map onto `fn`'s in order (see the module's docstring), its
    outputs written as the headers' types are (`types`: build.typedefs). A function returning no code returns
    `fn`'s value (a handle, a size, a string), or `failed` (the API's declared value on failure: 0, -1, "")
    when `fn` raises."""
    outputs = []
    reads = []  # (position, how the value is read): None passes the int as it is
    for i, p in enumerate(proto.params):
        pointee = marshal.pointee(p, types)
        if pointee is not None:
            outputs.append(marshal.Output(i, pointee))
        else:
            reads.append((i, marshal.string if p.ctype == "const char *" else None))
    plain = all(read is None for _, read in reads)
    positions = [i for i, _ in reads]
    name = proto.name
    value_of = None if proto.returns == "aclError" else (
        marshal.c_string if proto.returns == "const char *" else marshal.double_bits if proto.kind == "f" else int)

    judges_null = "null_out" in inspect.signature(fn).parameters  # (the API judges a NULL output itself)

    def handler(*args):
        null = next((proto.params[out.index].name for out in outputs if args[out.index] == 0), None)
        if null is not None and not judges_null:
            return marshal.null_output(name, null)
        values = [args[i] for i in positions] if plain else [args[i] if read is None else read(args[i])
                                                             for i, read in reads]
        try:
            result = fn(*values, null_out=null) if null is not None else fn(*values)
        except AclError as e:
            return e.code if value_of is None else value_of(failed)
        if null is not None:  # (an API that judges a NULL output never succeeds with one)
            return marshal.null_output(name, null)
        if value_of is not None:
            return value_of(result)
        if len(outputs) == 1:
            marshal.write(args[outputs[0].index], outputs[0].ctype, result)
        elif outputs:
            for out, value in zip(outputs, result):
                marshal.write(args[out.index], out.ctype, value)
        return 0

    handler.__name__ = name
    return handler


# What a function outside the emulator's scope that returns no aclError gives back, beside its message: the
# reference's own value for the only argument a program can hold from the emulator, which makes no tensor
# description (aclCreateTensorDesc fails, NULL): a null one (hicann/ge api/acl/acl_model/types/
# acl_model_tensor_desc_internal.cpp, aclGetTensorDesc*Impl's `desc == nullptr` branches). A function returning a
# pointer gives NULL, the reference's failure value (aclCreateTensorDescImpl, aclrtCreateBinary...); one returning
# nothing does nothing. Any other function the headers declare that returns a number must be emulated or listed
# here (`_not_emulated` refuses to make a handler otherwise, and tests/test_conformance_capi_computed.py says so).
NOT_EMULATED_VALUES = {
    "aclGetTensorDescType": -1,  # ACL_DT_UNDEFINED
    "aclGetTensorDescFormat": -1,  # ACL_FORMAT_UNDEFINED
    "aclGetTensorDescSize": 0,
    "aclGetTensorDescElementCount": 0,
    "aclGetTensorDescNumDims": 0,
    "aclGetTensorDescName": "",  # (aclGetTensorDescNameImpl: "" for a null description)
}

SCOPE = ("acl-emu runs ACL's devices, contexts, streams, events, memory, copies, fills, host registration, peer "
         "access, graph capture, callbacks, declared models, kernel binaries and device code; see docs/api.md, "
         "'The C library'")


def not_emulated_value(proto: build.Prototype):
    """What the handler of a function outside the scope returns: ACL_ERROR_API_NOT_SUPPORT for an aclError
    function, NOT_EMULATED_VALUES' value, NULL (0) for a pointer, None for nothing; a ValueError for a function
    returning a number with no value listed (the library would otherwise make one up)."""
    if proto.returns == "aclError":
        return ACL_ERROR_API_NOT_SUPPORT
    if proto.name in NOT_EMULATED_VALUES:
        return NOT_EMULATED_VALUES[proto.name]
    if proto.kind == "p":
        return 0
    if proto.kind == "v":
        return None
    raise ValueError(f"{proto.name} returns {proto.returns}: emulate it, or list the reference's failure value in "
                     f"emu.capi.bridge.NOT_EMULATED_VALUES")


def _not_emulated(proto: build.Prototype):
    """The handler of a function outside the emulator's scope: a message naming it on the first call (on every call
    from aclGetRecentErrMsg), and `not_emulated_value`."""
    told = []
    message = f"acl-emu: {proto.name} is not emulated ({SCOPE})"
    value = not_emulated_value(proto)
    result = marshal.c_string(value) if isinstance(value, str) else 0 if value is None else value

    def handler(*args):
        set_recent_error(message)
        if not told:
            told.append(True)
            print(message, file=sys.stderr, flush=True)
        return result

    handler.__name__ = proto.name
    return handler


def scope() -> dict[str, str]:
    """{name: how the library answers it} for every function the headers declare, in their order: "runtime" (the
    runtime function pyACL's facade calls, `emu.runtime.APIS`), "library" (a handler of its own: special.SPECIAL;
    aclAppLog, written in native.c) or "not emulated"."""
    declared = {d.acl for d in _runtime.APIS}
    out = {p.name: ("not emulated" if p.name in special.NOT_EMULATED else "library" if p.name in special.SPECIAL
                    else "runtime" if p.name in declared else "not emulated")
           for p in build.prototypes()}
    out["aclAppLog"] = "library"
    return out


def _value_text(proto: build.Prototype) -> str:
    value = not_emulated_value(proto)
    if value == ACL_ERROR_API_NOT_SUPPORT and proto.returns == "aclError":
        return "200001"
    if value is None:
        return "nothing done"
    if isinstance(value, str):
        return f'"{value}"'
    return "NULL" if proto.kind == "p" else str(value)


def api_section() -> list[str]:
    """docs/api.md's section on the C library (emu.apidoc): what each function the headers declare does, made from
    the headers and `scope`, so that the page lists every function that is not emulated and what it returns."""
    protos = {p.name: p for p in build.prototypes()}
    kinds = scope()
    runtime = [n for n, k in kinds.items() if k == "runtime"]
    library = sorted(n for n, k in kinds.items() if k == "library")
    missing = [protos[n] for n, k in kinds.items() if k == "not emulated"]
    by_value: dict[str, list[str]] = {}
    for p in missing:
        by_value.setdefault(_value_text(p), []).append(p.name)
    out = ["## The C library (libascendcl.so)", "",
           f"`emu/capi`: every function the shipped headers declare ({len(kinds)}) links. Each one either computes its",
           "result or fails saying so; none returns a value it did not compute.", "",
           f"- **Through the runtime** ({len(runtime)}): the functions of the sections above, by their ACL name, with "
           "pyACL's codes and bytes.",
           f"- **In the library** ({len(library)}): C arrays, structs, callbacks and strings read or written by a "
           "handler of their own, or computed there: " + ", ".join(f"`{n}`" for n in library) + ". "
           "`aclFloatToFloat16` and `aclFloat16ToFloat` convert as the reference does (emu/runtime/fp16.py: the "
           "half saturates at 65504, and an infinity or NaN half reads as 65536 or more); the exception-info "
           "getters read the `rtExceptionInfo` they are given (0xFFFFFFFF for a null one).",
           f"- **Not emulated** ({len(missing)}): each call sets aclGetRecentErrMsg to `acl-emu: <name> is not emulated "
           "(...)`, and the first also prints it on stderr. What each returns:", ""]
    for value, names in by_value.items():
        out += [f"  - {value}: " + ", ".join(f"`{n}`" for n in names)]
    return out + [""]


def handlers(names: tuple[str, ...]) -> list:
    """One handler per exported function, in the order of `names` (native.c's)."""
    session.start()
    texts = build.header_texts()
    protos = {p.name: p for p in build.prototypes(texts)}
    types = build.typedefs(texts)
    declared = {d.acl: d for d in _runtime.APIS}
    out = []
    for name in names:
        proto = protos[name]
        if name in special.SPECIAL:
            out.append(special.SPECIAL[name](proto, types))
        elif name in declared:
            d = declared[name]
            out.append(generic(proto, getattr(_runtime, d.name), types, d.outputs[0] if d.outputs else 0))
        else:
            out.append(_not_emulated(proto))
    return out


def thread_started() -> None:
    """A thread of the program made its first ACL call: Python's threading module learns of it, so the runtime
    sees it as a running thread (a callback thread named by aclrtSubscribeReport, say)."""
    threading.current_thread()
    _runtime.current().foreign_thread(threading.get_ident(), running=True)


def thread_ended() -> None:
    """A thread of the program that made ACL calls has ended: it is no longer a running thread (a wait on a
    callback only it could run fails, as through pyACL, rather than waiting forever)."""
    ident = threading.get_ident()
    threading._active.pop(ident, None)  # the _DummyThread current_thread() registered
    _runtime.current().foreign_thread(ident, running=False)


def finish(signum: int = 0) -> None:
    """At the program's exit (signum 0), or stopped by SIGTERM or SIGINT (signum): what `acl-emu run` asked for
    (the summary, the trace, the sanitizer's report)."""
    session.finish(signum)


def status_fd() -> int:
    """`acl-emu run`'s status socket, where native.c's fault handler names the call a program died in; -1 when
    there is none."""
    return session.status_fd()
