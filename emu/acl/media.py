"""acl.media: the DVPP memory functions sample scripts use beside copies."""
from .. import runtime as _rt
from ._bind import bind, install_missing

dvpp_malloc = bind("acl.media.dvpp_malloc", _rt.dvpp_malloc, "i", (0,))
dvpp_free = bind("acl.media.dvpp_free", _rt.dvpp_free, "i")

install_missing(__name__)
