"""A user's own `models` package: the name most ML repositories use. Installing acl-emu must not shadow it."""
MINE = True
