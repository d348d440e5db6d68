"""acl.mdl: graph capture of copies and memsets (extensions for the C-only aclmdlRI* APIs).

Each function comes from its API's declaration, `@api(..., pyacl="acl.mdl.<name>", ...)` on the family function
in emu/runtime (`emu.runtime.APIS`), bound by `declared(__name__)`.
"""
from ._bind import declared as _declared, install_missing as _install_missing

globals().update(_declared(__name__))  # every API declared pyacl="acl.mdl.<name>"

_install_missing(__name__)
