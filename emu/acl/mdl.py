"""acl.mdl: offline models run as declared stand-ins (emu.runtime.inference, emu.modeldecl), and graph capture of
copies and memsets (extensions for the C-only aclmdlRI* APIs).

Each function comes from its API's declaration, `@api(..., pyacl="acl.mdl.<name>", ...)` on the family function
in emu/runtime (`emu.runtime.APIS`), bound by `declared(__name__)`; the C functions that return their value and
no code (the getters of descriptions and datasets) are bound here by `value_entry`, as pyACL gives them: the value
alone, never a tuple.
"""
import textwrap as _textwrap

from .. import runtime as _rt
from ._bind import bind_declared as _bind_declared, declaration as _declaration, declared as _declared, \
    install_missing as _install_missing


def _value_entry(fn):
    """The pyACL entry of a runtime API whose C function returns its value and no code (aclmdlGetNumInputs,
    aclCreateDataBuffer, ...), declared `by_hand` with one output: the value alone; the declared output's value
    if the runtime refuses the call (the C function's null). Its arguments parse as the declaration says
    (TypeError "<name> args parse failed")."""
    d = _declaration(fn)
    inner, missing = _bind_declared(fn), d.outputs[0]

    def entry(*args):
        return inner(*args)[0]

    entry.__name__, entry.__qualname__, entry.api = d.name, d.pyacl, d
    call = inner.__doc__.partition("\n")[0].replace("value, ret = ", "value = ")
    runtime_doc = inner.__doc__[inner.__doc__.index("\nemu.runtime."):]
    text = (f"pyACL's form of emu.runtime.{d.name} ({d.acl}): ints in, the value out (no return code), never an "
            f"AclError; {missing!r} if the runtime refuses the call. Arguments of the wrong number or type raise "
            f"TypeError(\"{d.pyacl} args parse failed\").")
    entry.__doc__ = f"{call}\n\n{_textwrap.fill(text, 100)}\n{runtime_doc}"
    return entry


globals().update(_declared(__name__))  # every API declared pyacl="acl.mdl.<name>" but those by_hand

create_desc = _value_entry(_rt.create_desc)
get_num_inputs = _value_entry(_rt.get_num_inputs)
get_num_outputs = _value_entry(_rt.get_num_outputs)
get_input_size_by_index = _value_entry(_rt.get_input_size_by_index)
get_output_size_by_index = _value_entry(_rt.get_output_size_by_index)
get_input_name_by_index = _value_entry(_rt.get_input_name_by_index)
get_output_name_by_index = _value_entry(_rt.get_output_name_by_index)
get_input_format = _value_entry(_rt.get_input_format)
get_output_format = _value_entry(_rt.get_output_format)
get_input_data_type = _value_entry(_rt.get_input_data_type)
get_output_data_type = _value_entry(_rt.get_output_data_type)
create_dataset = _value_entry(_rt.create_dataset)
get_dataset_buffer = _value_entry(_rt.get_dataset_buffer)
get_dataset_num_buffers = _value_entry(_rt.get_dataset_num_buffers)

_install_missing(__name__)
