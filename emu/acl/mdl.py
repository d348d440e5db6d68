"""acl.mdl: offline models run as declared stand-ins (emu.runtime.inference, emu.modeldecl), and graph capture of
copies and memsets (extensions for the C-only aclmdlRI* APIs).

Each function comes from its API's declaration, `@api(..., pyacl="acl.mdl.<name>", ...)` on the family function
in emu/runtime (`emu.runtime.APIS`), bound by `declared(__name__)`; the C functions that return their value and
no code (the getters of descriptions and datasets) are bound here by `value_entry` (emu/acl/_bind.py), as pyACL
gives them: the value alone, never a tuple. `set_input_dynamic_dims` reads its aclmdlIODims dict here, as pyACL
does, and passes the runtime the dims' values.
"""
import operator as _operator

from .. import runtime as _rt
from ._bind import (INT_END as _INT_END, INT_MIN as _INT_MIN, bind_declared as _bind_declared, by_hand as _by_hand,
                    declared as _declared, install_missing as _install_missing, value_entry as _value_entry)

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

_MAX_DIM_CNT = 128  # ACL_MAX_DIM_CNT: the dims an aclmdlIODims holds
_NAME = "acl.mdl.set_input_dynamic_dims"
_set_input_dynamic_dims = _bind_declared(_rt.set_input_dynamic_dims)


def _io_dims(value) -> list:
    """The values of pyACL's aclmdlIODims dict, read as pyACL's WrapAclMdlSetInputDynamicDims reads it: a dict
    whose "dims" is a list of ints (int64) with at least "dimCount" items, and "name", if given, a str (unused).
    Its errors are pyACL's, after the function's name (as every facade error begins)."""
    if not isinstance(value, dict):
        raise TypeError(f"{_NAME}: argument 4 is not dict")
    name = value.get("name")
    if name is not None and not isinstance(name, str):
        raise RuntimeError(f"{_NAME}: PyUnicode_AsUTF8String failed")
    dims, count = value.get("dims"), value.get("dimCount")
    if not isinstance(dims, list):
        raise TypeError(f"{_NAME}: The dims of parameter 4 is not a list.")
    if not isinstance(count, int) or not 0 <= count <= min(len(dims), _MAX_DIM_CNT):
        raise TypeError(f"{_NAME}: dimCount {count!r} is not a count of the list's dims (at most {_MAX_DIM_CNT})")
    values = dims[:count]
    if not all(isinstance(d, int) for d in values):
        raise TypeError(f"{_NAME}: the dims of fourth parameter is not list of int")
    if not all(_INT_MIN <= d < -_INT_MIN for d in values):
        raise ValueError(f"{_NAME}: PyLong_AsLongLong failed")
    return [int(d) for d in values]


@_by_hand(_rt.set_input_dynamic_dims)
def set_input_dynamic_dims(*args) -> int:
    """ret = acl.mdl.set_input_dynamic_dims(model_id, dataset, index, dims): set a dataset's ND gear
    (aclmdlSetInputDynamicDims); dims is {"dimCount": n, "dims": [...] (every dim of the model's inputs, in
    order), "name": ""} as pyACL takes it. See emu.runtime.set_input_dynamic_dims."""
    if len(args) != 4:
        raise TypeError(f"{_NAME} args parse failed")
    try:  # ("IkkO": the three ints first, then the dict)
        ints = [_operator.index(a) for a in args[:3]]
    except TypeError:
        raise TypeError(f"{_NAME} args parse failed") from None
    if not all(_INT_MIN <= a < _INT_END for a in ints):
        raise TypeError(f"{_NAME} args parse failed")
    return _set_input_dynamic_dims(*ints, _io_dims(args[3]))


_install_missing(__name__)
