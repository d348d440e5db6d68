"""acl.media: the DVPP memory functions sample scripts use beside copies.

Each function comes from its API's declaration, `@api(..., pyacl="acl.media.<name>", ...)` on the family function
in emu/runtime (`emu.runtime.APIS`), bound by `declared(__name__)`.
"""
from ._bind import declared as _declared, install_missing as _install_missing

globals().update(_declared(__name__))  # every API declared pyacl="acl.media.<name>"

_install_missing(__name__)
