"""acl.mdl: offline models run as declared stand-ins (emu.runtime.inference, emu.modeldecl), and graph capture of
copies and memsets (extensions for the C-only aclmdlRI* APIs).

Each function comes from its API's declaration, `@api(..., pyacl="acl.mdl.<name>", ...)` on the family function
in emu/runtime (`emu.runtime.APIS`), bound by `declared(__name__)`; the C functions that return their value and
no code (the getters of descriptions and datasets) are bound here by `value_entry` (emu/acl/_bind.py), as pyACL
gives them: the value alone, never a tuple.
"""
from .. import runtime as _rt
from ._bind import declared as _declared, install_missing as _install_missing, value_entry as _value_entry

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
