"""acl.mdl: graph capture of copies and memsets (extensions for the C-only aclmdlRI* APIs)."""
from .. import runtime as _rt
from ._bind import bind as _bind, install_missing as _install_missing

ri_capture_begin = _bind("acl.mdl.ri_capture_begin", _rt.ri_capture_begin, "ii")
ri_capture_get_info = _bind("acl.mdl.ri_capture_get_info", _rt.ri_capture_get_info, "i", (0, 0))
ri_capture_end = _bind("acl.mdl.ri_capture_end", _rt.ri_capture_end, "i", (0,))
ri_execute_async = _bind("acl.mdl.ri_execute_async", _rt.ri_execute_async, "ii")
ri_destroy = _bind("acl.mdl.ri_destroy", _rt.ri_destroy, "i")

_install_missing(__name__)
