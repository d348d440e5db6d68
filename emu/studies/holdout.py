"""Leave one source out: how well the model predicts a publication it was not fitted to.

For each source (a publication: `validate.source_key`), product and route, the config fields that source's
rows set (`use = "fit"`, `fitted`) are refitted from every other source's rows of that route with
`acl-emu calibrate`'s fit, and the source's rows are predicted on the refitted config. A source that set no
field is predicted as the config stands. Where no other source determines a field, its rows are not
predicted, and `why` says so. `acl-emu validate` prints the result beside the table.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from . import calibrate as C
from . import validate as V


def leave_one_source_out(rows: list[dict]) -> list[dict]:
    """One entry per row that is not context: its source, product, route, use, the fields refitted, the
    prediction and its error, or `why` it was not predicted (the module docstring says how)."""
    usable = [r for r in rows if r["use"] != "context"]
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="acl-emu-loso-") as tmp:
        for key in sorted({V.source_key(r) for r in usable}):
            _predict_source(usable, key, Path(tmp), out)
    return out


def _predict_source(usable: list[dict], key: str, tmp: Path, out: list) -> None:
    """The rows of one source, route by route: the fields its fit rows of that route set are refitted."""
    mine = [r for r in usable if V.source_key(r) == key]
    for product, route in sorted({(r["product"], V.route_of(r)) for r in mine}):
        held = [r for r in mine if r["product"] == product and V.route_of(r) == route]
        fields = sorted({r["fitted"] for r in held if r["use"] == "fit"})
        rest = [r for r in usable if V.source_key(r) != key and r["product"] == product and V.route_of(r) == route]
        cfg, why = _refit(rest, product, fields, tmp / f"{len(out)}.toml")
        for r in held:
            entry = {"source": key, "product": product, "id": r["id"], "route": route, "use": r["use"],
                     "refit": fields, "measured": r["value"], "unit": r["unit"], "model": None,
                     "error_pct": None, "why": why or ""}
            if why is None:
                model = V.predict(r, cfg)
                entry.update(model=model, error_pct=100 * (model / r["value"] - 1))
            out.append(entry)


def _refit(rest: list[dict], product: str, fields: list[str], path: Path) -> tuple[str | None, str | None]:
    """(a config with `fields` refitted from `rest`, None), or (None, why not)."""
    if not fields:
        return None, None
    if not rest:
        return None, f"no other source measures this route on {product}: {', '.join(fields)} cannot be refitted"
    try:
        fit = C.calibrate(rest, product, "leave-one-source-out")
    except C.CalibrationError as e:
        return None, f"the other sources fit nothing: {e}"
    missing = [f for f in fields if f not in fit["fields"]]
    if missing:
        return None, f"no other source determines {', '.join(missing)}"
    path.write_text(C.override(product, {f: fit["fields"][f] for f in fields}))
    return str(path), None
