"""acl.media: the DVPP memory functions sample scripts use beside copies."""
from .. import runtime as _rt
from ._bind import bind as _bind, install_missing as _install_missing

dvpp_malloc = _bind("acl.media.dvpp_malloc", _rt.dvpp_malloc, "i", (0,))
dvpp_free = _bind("acl.media.dvpp_free", _rt.dvpp_free, "i")

_install_missing(__name__)
