"""Studies the `acl-emu` command runs: product tables, bandwidth sweeps, copy/compute overlap plans.

Each is a function returning plain data (dicts and lists) that the CLI prints,
writes as CSV / JSON / PNG, and that a notebook can call directly.
"""
