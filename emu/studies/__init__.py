"""Studies the `acl-emu` command runs: product tables, bandwidth sweeps, copy/compute overlap plans.

Each study is a module whose functions return plain data (dicts and lists) - `bandwidth.measure`,
`overlap.plan`, `compare.compare_overlap`, ... - and a `<study>_report` module that draws that data: tables
as text, matplotlib Figures, and the CSV / JSON / PNG files. A notebook can call either directly; the CLI
(`emu.cli`) parses the arguments, runs the study, writes with its report and prints. The studies ask the
runtime through its API and `emu.runtime.queries`, and never import the CLI (`args` holds the argument
parsers both use).
"""
