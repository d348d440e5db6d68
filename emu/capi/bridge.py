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
        marshal.c_string if proto.returns == "const char *" else int)

    def handler(*args):
        for out in outputs:
            if args[out.index] == 0:
                return marshal.null_output(name, proto.params[out.index].name)
        values = [args[i] for i in positions] if plain else [args[i] if read is None else read(args[i])
                                                             for i, read in reads]
        try:
            result = fn(*values)
        except AclError as e:
            return e.code if value_of is None else value_of(failed)
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


def _not_emulated(proto: build.Prototype):
    """The handler of a function outside the emulator's scope: a message naming it on the first call, and
    ACL_ERROR_API_NOT_SUPPORT (or a null pointer / zero for a function returning no code)."""
    told = []
    message = (f"acl-emu: {proto.name} is not emulated (acl-emu covers ACL's memory, stream, event, device and "
               f"callback APIs; see its README, 'C and C++ programs')")

    def handler(*args):
        set_recent_error(message)
        if not told:
            told.append(True)
            print(message, file=sys.stderr, flush=True)
        return ACL_ERROR_API_NOT_SUPPORT if proto.returns == "aclError" else 0

    handler.__name__ = proto.name
    return handler


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
