"""Model declarations: what the emulator runs in place of an offline model (`.om`).

The emulator cannot run an offline model, and need not: the copies and the schedule need each model's inputs and
outputs and how long it runs on each product. A declaration says that, in TOML (`TEMPLATE` shows every field):

    [[input]]
    name = "data"
    dtype = "float16"            # numpy names or ACL names: float32/float, float16, bfloat16/bf16, int8, ...
    shape = [1, 3, 224, 224]
    format = "NCHW"              # optional: NCHW, NHWC, ND (the default) or another aclFormat name

    [[output]]
    name = "prob"
    dtype = "float32"
    shape = [1, 1000]

    [compute_us]                 # execution time per product (microseconds); or compute_us = 4000 for all
    910B = 4000
    A3 = 1000

Where a program's `aclmdlLoadFromFile("X.om")` finds its declaration, first found first: one registered from
Python (`emu.declare_model("X.om", "decl.toml" or a dict)`), one named in $ACL_EMU_MODELS
("X.om=decl.toml;Y.om=other.toml", which `acl-emu run --model` sets), else `X.om.toml` beside `X.om`.
`aclmdlLoadFromMem` takes the declaration registered for the bytes' SHA-256 (`declare_model` of an existing `.om`
file registers its bytes too), or bytes that are a declaration's TOML text.

Beyond the minimal form:
- `dynamic_batch = [1, 2, 4, 8]`: the batch gears; inputs (and outputs) have -1 in their first dim. As the ATC
  compiler does, the model gets one more input, "ascend_mbatch_shape_data" (int64, shape [1]), and the sizes of
  the tensors with -1 are those of the largest gear.
- `dynamic_hw = [[224, 224], [448, 448]]`: the image-size gears; inputs have -1 as H and W (format NCHW or NHWC);
  the extra input is int64 of shape [2]. Outputs are static. Not together with dynamic_batch.
- `dynamic_dims = [[1, 200, 200], [2, 224, 224]]`: ND gears (ATC's --dynamic_dims): each gear gives the value of
  every -1 dim of the inputs, in input order (input_shape "data:-1,3,-1,-1" has three). An output's -1 dims take
  the gear's first values, in order ([-1, 1000] is the gear's first value by 1000). The extra input is int64, one
  value per -1 dim. One kind of gear per model.
- Sizes and dims at the largest gear: each tensor's size is its largest over the gears (what a program allocates
  from aclmdlGetInputSizeByIndex / aclmdlGetOutputSizeByIndex); an output's dims in its description are those of
  that gear (aclmdlGetOutputDims), an input's keep their -1 (aclmdlGetInputDims).
- compute_us that scales: `{base = 200, per_batch = 950}` is base + per_batch x batch (the gear set for the
  execution, else the first input's first dim); `{base = 200, per_pixel = 0.01}` is base + per_pixel x H x W of
  the image-size gear (with ND gears: the first input's first dim is the batch and its H x W, by its format, or
  its last two dims for ND, the pixels). A product's value, or the value for all (`compute_us = {...}`), or
  `default = ...` beside the products. `{msprof = "profile.json", executions = 1}` (or "msprof:profile.json"):
  the sum of the durations of the kernel (AI_CORE) tasks of an msprof timeline, a task_time CSV or MSPTI records
  (`emu.studies.profiles`), divided by the number of executions it holds; a relative path is relative to the
  declaration's folder.
- `work_size`, `weight_size` (bytes): what aclmdlQuerySize reports; by default both are the sum of the byte
  sizes of the inputs and outputs (placeholders: a compiled model's own sizes are in its .om).
- `name`: the model's name in traces and summaries (default: the .om file's name without .om).

Every number fits the C type a program reads it as: a dim (and so a gear) is an int64, each tensor's bytes at its
largest gear and work_size / weight_size are a size_t, each time is a finite number of microseconds. The file is
read through `emu.files` (a regular file of at most 4 MiB).

Problems are one-paragraph `ModelDeclarationError`s naming the file and showing the template (`problem`: the
paragraph alone, one line, the message a failed aclmdlLoad* leaves); nothing is guessed (a product missing from
compute_us is an error naming the products given, unless `default` or one value for all is given). Parsing is
pure: `parse(data, source)` gives a frozen `ModelDecl`.
"""
from __future__ import annotations

import hashlib
import math
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from . import files

MODELS_ENV = "ACL_EMU_MODELS"
DYNAMIC_INPUT = "ascend_mbatch_shape_data"  # ACL_DYNAMIC_TENSOR_NAME (ge_acl_mdl.h)
MAX_GEARS = 128  # ACL_MAX_BATCH_NUM, ACL_MAX_HW_NUM (ge_acl_mdl.h)
MAX_DIMS = 128  # ACL_MAX_DIM_CNT
INT64_MAX = 2**63 - 1  # a dim (aclmdlIODims.dims: int64_t), and so a gear, which becomes one
SIZE_MAX = 2**64 - 1  # a size (aclmdlGetInputSizeByIndex, aclmdlQuerySize: size_t)
_FLOAT_MAX = int(1.7976931348623157e308)  # the largest finite float, as an int
DECLARATION_BYTES = files.CONFIG_BYTES  # a declaration's TOML, in a file or as a model's bytes

TEMPLATE = """\
# resnet50.om.toml: what the emulator runs in place of resnet50.om
name = "resnet50"                  # optional: the name traces show (default: the file's)
# dynamic_batch = [1, 2, 4, 8]     # optional: batch gears (inputs with -1 as their first dim)
# dynamic_hw = [[224, 224], [448, 448]]  # optional: image-size gears (-1 as H and W, NCHW or NHWC)
# dynamic_dims = [[1, 224, 224], [2, 224, 224]]  # optional: ND gears, the values of the inputs' -1 dims in order

[[input]]
name = "data"
dtype = "float16"                  # float32 (float), float16, bfloat16, int8, uint8, int32, int64, bool, ...
shape = [1, 3, 224, 224]
format = "NCHW"                    # optional: NCHW, NHWC, ND (default)

[[output]]
name = "prob"
dtype = "float32"
shape = [1, 1000]

[compute_us]                       # microseconds per execution; or compute_us = 4000 for every product
910B = 4000
A3 = 1000
# 950PR = {base = 200, per_batch = 950}     # base + per_batch x batch
# default = {msprof = "PROF_1/msprof.json", executions = 10}   # kernel time of a profile, per execution
"""

# aclDataType (acl_base_rt.h): value by name; numpy's names and ACL's both work (`_DTYPE_ALIASES`).
DTYPES = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "uint8": 4, "int16": 6, "uint16": 7, "uint32": 8,
          "int64": 9, "uint64": 10, "float64": 11, "bool": 12, "string": 13, "complex64": 16, "complex128": 17,
          "bfloat16": 27, "int4": 29, "uint1": 30, "complex32": 33, "hifloat8": 34, "float8_e5m2": 35,
          "float8_e4m3fn": 36, "float8_e8m0": 37}
_DTYPE_ALIASES = {"float": "float32", "fp32": "float32", "half": "float16", "fp16": "float16", "double": "float64",
                  "bf16": "bfloat16", "dt_bf16": "bfloat16"}
UNDEFINED = -1  # ACL_DT_UNDEFINED, ACL_FORMAT_UNDEFINED

# aclDataTypeSize (hicann/runtime src/acl/aclrt_impl/data_buffer.cpp aclDataTypeSizeImpl): bytes per element;
# STRING and UNDEFINED 0, sub-byte types 1, and 8 for a type it does not list.
_TYPE_SIZES = {13: 0, -1: 0, 30: 1, 29: 1, 12: 1, 2: 1, 4: 1, 34: 1, 35: 1, 36: 1, 37: 1, 1: 2, 6: 2, 7: 2, 27: 2,
               0: 4, 3: 4, 8: 4, 33: 4, 17: 16}
_OTHER_TYPE_SIZE = 8

# aclFormat (acl_base_rt.h): value by name.
FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "NC1HWC0_C04": 12, "HWCN": 16,
           "NDHWC": 27, "FRACTAL_NZ": 29, "NCDHW": 30, "NDC1HWC0": 32, "FRACTAL_Z_3D": 33, "NC": 35, "NCL": 47}
_HW_DIMS = {FORMATS["NCHW"]: (2, 3), FORMATS["NHWC"]: (1, 2)}  # where H and W are, in the formats dynamic_hw takes

_TOP_KEYS = {"name", "format", "dynamic_batch", "dynamic_hw", "dynamic_dims", "work_size", "weight_size", "input",
             "output", "compute_us"}
_TENSOR_KEYS = {"name", "dtype", "shape", "format"}
_SCALING_KEYS = {"base", "per_batch", "per_pixel"}
_PROFILE_KEYS = {"msprof", "executions"}


class ModelDeclarationError(ValueError):
    """A model declaration is missing or wrong: one paragraph naming the file, then the template. `problem` is
    the paragraph alone, one line (what a failed ACL call leaves as its message)."""

    def __init__(self, message: str, problem: str):
        super().__init__(message)
        self.problem = problem


def type_size(dtype: int) -> int:
    """Bytes per element of an aclDataType, as aclDataTypeSize gives them (0 for STRING and UNDEFINED, 8 for a
    type the runtime does not list)."""
    return _TYPE_SIZES.get(dtype, _OTHER_TYPE_SIZE)


@dataclass(frozen=True)
class Tensor:
    """One input or output: name, dtype (aclDataType), dtype_name (the canonical name), shape (-1: set by the
    gear), format (aclFormat), nbytes (its largest over the gears), offset (with ND gears: the gear value its
    first -1 dim takes) and max_shape (its dims at the gear of its largest size: a description's output dims)."""

    name: str
    dtype: int
    dtype_name: str
    shape: tuple[int, ...]
    format: int
    nbytes: int
    offset: int = 0
    max_shape: tuple[int, ...] = ()

    def dims_at(self, batch: int | None = None, hw: tuple[int, int] | None = None,
                dims: tuple[int, ...] | None = None) -> tuple[int, ...]:
        """The shape with its -1 dims set: the batch (first dim), the image size (H and W by format) or the ND
        gear's values from `offset` on, in order."""
        shape = list(self.shape)
        if batch is not None and shape and shape[0] == -1:
            shape[0] = batch
        if hw is not None and -1 in shape:
            h, w = _HW_DIMS.get(self.format, (1, 2))  # (parse lets only NCHW and NHWC have -1 H and W)
            shape[h], shape[w] = hw
        if dims is not None:
            values = iter(dims[self.offset:])
            shape = [next(values) if d == -1 else d for d in shape]  # (parse makes sure the gear has enough)
        return tuple(shape)

    def nbytes_at(self, batch: int | None = None, hw: tuple[int, int] | None = None,
                  dims: tuple[int, ...] | None = None) -> int:
        return _nbytes(self.dims_at(batch, hw, dims), self.dtype)


@dataclass(frozen=True)
class Timing:
    """An execution's time, microseconds: base + per_batch x batch + per_pixel x H x W."""

    base: float
    per_batch: float = 0.0
    per_pixel: float = 0.0

    def us(self, batch: int, pixels: int) -> float:
        return self.base + self.per_batch * batch + self.per_pixel * pixels


@dataclass(frozen=True)
class ModelDecl:
    """A parsed declaration. inputs include the dynamic-gear input when the model has gears. compute: (product,
    Timing) pairs, product "*" for every product and "default" for the others. A gear is a tuple: (batch,),
    (height, width) or the ND gear's values (`gears`, GE's batch_info)."""

    name: str
    source: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    batches: tuple[int, ...]
    hws: tuple[tuple[int, int], ...]
    compute: tuple[tuple[str, Timing], ...]
    work_size: int
    weight_size: int
    dims: tuple[tuple[int, ...], ...] = ()

    @property
    def kind(self) -> str | None:
        """The model's kind of gear: "batch", "hw", "dims", or None (a static model)."""
        return gear_kind(self.batches, self.hws, self.dims)

    @property
    def gears(self) -> tuple[tuple[int, ...], ...]:
        """The gears, in the order the model lists them (GE's batch_info): (batch,), (h, w) or ND values."""
        return gear_list(self.batches, self.hws, self.dims)

    @property
    def data_inputs(self) -> tuple[Tensor, ...]:
        """The inputs the program's data goes to: all but the gear input (ascend_mbatch_shape_data)."""
        return self.inputs[:-1] if self.kind is not None else self.inputs

    @property
    def largest(self) -> tuple[int, ...] | None:
        """The gear at which the inputs are largest (the first of them), None for a static model: what an
        execution with no gear set runs at."""
        gears = self.gears
        if not gears:
            return None
        return max(gears, key=lambda g: sum(t.nbytes_at(*self.args(g)) for t in self.data_inputs))

    def args(self, gear: tuple[int, ...] | None) -> tuple:
        """(batch, hw, dims), the arguments of `Tensor.dims_at` and `seconds`, of a gear of this model."""
        return gear_args(self.kind, gear)

    def timing(self, product: str) -> Timing:
        """The Timing for `product`; ModelDeclarationError naming the products given when it has none."""
        table = dict(self.compute)
        for key in (product, "*", "default"):
            if key in table:
                return table[key]
        given = ", ".join(k for k, _ in self.compute)
        raise _error(self.source, f"compute_us gives no time for product {product} (it gives {given}); add "
                                  f"`{product} = <microseconds>` or `default = <microseconds>` to [compute_us]")

    def seconds(self, product: str, batch: int | None = None, hw: tuple[int, int] | None = None,
                dims: tuple[int, ...] | None = None) -> float:
        """How long one execution runs on `product`, at a batch, image-size or ND gear (else the static shape)."""
        return self.timing(product).us(*_batch_pixels(self.inputs, batch, hw, dims)) * 1e-6


def gear_kind(batches, hws, dims) -> str | None:
    return "batch" if batches else "hw" if hws else "dims" if dims else None


def gear_list(batches, hws, dims) -> tuple[tuple[int, ...], ...]:
    return tuple((b,) for b in batches) or tuple(tuple(g) for g in hws) or tuple(tuple(g) for g in dims)


def gear_args(kind: str | None, gear: tuple[int, ...] | None) -> tuple:
    """(batch, hw, dims) of a gear of a model of this kind; (None, None, None) for no gear."""
    if gear is None or kind is None:
        return None, None, None
    if kind == "batch":
        return gear[0], None, None
    if kind == "hw":
        return None, tuple(gear), None
    return None, None, tuple(gear)


def _batch_pixels(inputs, batch, hw, dims) -> tuple[int, int]:
    """(batch, pixels) a Timing scales with: the batch gear (else the first input's first dim, at the ND gear if
    one is given, 1 if it has none); the image-size gear's H x W, or with an ND gear the first input's H x W by its
    format (its last two dims for ND), else 0."""
    first = inputs[0].dims_at(dims=dims) if inputs and dims is not None else inputs[0].shape if inputs else ()
    if batch is None:
        batch = first[0] if first and first[0] > 0 else 1
    if hw is not None:
        return batch, hw[0] * hw[1]
    if dims is None or len(first) < 2:
        return batch, 0
    h, w = _HW_DIMS.get(inputs[0].format, (-2, -1)) if len(first) == 4 else (-2, -1)
    return batch, first[h] * first[w]


def _error(source, problem: str) -> ModelDeclarationError:
    where = f"model declaration {source}: {' '.join(problem.split())}"  # (one line, whatever a value held)
    return ModelDeclarationError(f"{where}. A declaration is a TOML file (X.om.toml beside X.om, "
                                 f"emu.declare_model(\"X.om\", \"decl.toml\"), or {MODELS_ENV}=\"X.om=decl.toml\") "
                                 f"like this one:\n{TEMPLATE}",
                                 f"{where} (a declaration's form: emu.modeldecl.TEMPLATE)")


def _show(value) -> str:
    """A value as an error message shows it: its repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:50] + "..." + text[-7:]


def _nbytes(dims, dtype: int) -> int:
    return math.prod(max(d, 0) for d in dims) * type_size(dtype)


def _dtype(source, where: str, value) -> tuple[int, str]:
    if not isinstance(value, str):
        raise _error(source, f"{where}.dtype {_show(value)} is not a string")
    key = value.strip().lower().removeprefix("acl_").removeprefix("dt_")
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPES:
        raise _error(source, f"{where}.dtype {_show(value)} is not one of {', '.join(DTYPES)} (or float, float16, "
                             f"bf16, double)")
    return DTYPES[key], key


def _format(source, where: str, value) -> int:
    if not isinstance(value, str) or value.strip().upper().removeprefix("ACL_FORMAT_") not in FORMATS:
        raise _error(source, f"{where}.format {_show(value)} is not one of {', '.join(FORMATS)}")
    return FORMATS[value.strip().upper().removeprefix("ACL_FORMAT_")]


def _shape(source, where: str, value) -> tuple[int, ...]:
    if (not isinstance(value, list) or len(value) > MAX_DIMS
            or not all(isinstance(d, int) and not isinstance(d, bool) and (0 <= d <= INT64_MAX or d == -1)
                       for d in value)):
        raise _error(source, f"{where}.shape {_show(value)} is not a list of at most {MAX_DIMS} dims, each -1 or "
                             f"from 0 to 2**63 - 1 (an int64)")
    return tuple(value)


def _tensor_fields(source, where: str, table, default_format: int) -> tuple[str, int, str, tuple, int]:
    if not isinstance(table, dict):
        raise _error(source, f"{where} is not a table")
    unknown = sorted(set(table) - _TENSOR_KEYS)
    if unknown:
        hint = "" if not set(unknown) & _TOP_KEYS else (
            " (in TOML a key after a [[...]] header belongs to that table: write the model's own keys, such as "
            "compute_us, before the first [[input]], or as a [compute_us] table)")
        raise _error(source, f"{where} has unknown keys {_show(unknown)} (it takes {sorted(_TENSOR_KEYS)}){hint}")
    missing = [k for k in ("name", "dtype", "shape") if k not in table]
    if missing:
        raise _error(source, f"{where} lacks {', '.join(missing)}")
    name = table["name"]
    if not isinstance(name, str) or not name:
        raise _error(source, f"{where}.name {_show(name)} is not a non-empty string")
    dtype, dtype_name = _dtype(source, where, table["dtype"])
    fmt = _format(source, where, table["format"]) if "format" in table else default_format
    return name, dtype, dtype_name, _shape(source, where, table["shape"]), fmt


def _tensors(source, data: dict, side: str, default_format: int) -> list[tuple]:
    tables = data.get(side)
    if not isinstance(tables, list) or not tables:
        raise _error(source, f"no [[{side}]] table: a model has at least one {side}")
    fields = [_tensor_fields(source, f"{side}[{i}]", t, default_format) for i, t in enumerate(tables)]
    seen: set = set()
    doubled = sorted({f[0] for f in fields if f[0] in seen or seen.add(f[0])})
    if doubled:
        raise _error(source, f"{side} names {_show(doubled)} are given twice")
    return fields


def _gears(source, data: dict) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...], tuple[tuple[int, ...], ...]]:
    batches, hws, nd = data.get("dynamic_batch", []), data.get("dynamic_hw", []), data.get("dynamic_dims", [])
    given = [k for k in ("dynamic_batch", "dynamic_hw", "dynamic_dims") if data.get(k)]
    if len(given) > 1:
        raise _error(source, f"{' and '.join(given)} are given together: a model has one kind of gear")
    if (not isinstance(batches, list) or len(batches) > MAX_GEARS
            or not all(isinstance(b, int) and not isinstance(b, bool) and 0 < b <= INT64_MAX for b in batches)
            or len(set(batches)) != len(batches)):
        raise _error(source, f"dynamic_batch {_show(batches)} is not a list of at most {MAX_GEARS} distinct sizes "
                             f"from 1 to 2**63 - 1 (a gear is a dim: an int64)")
    ok = isinstance(hws, list) and len(hws) <= MAX_GEARS and all(
        isinstance(g, list) and len(g) == 2 and all(isinstance(x, int) and not isinstance(x, bool) and
                                                    0 < x <= INT64_MAX for x in g) for g in hws)
    if not ok or len({tuple(g) for g in hws}) != len(hws):
        raise _error(source, f"dynamic_hw {_show(hws)} is not a list of at most {MAX_GEARS} distinct [H, W] pairs "
                             f"from 1 to 2**63 - 1 (a gear is a dim: an int64)")
    ok = isinstance(nd, list) and len(nd) <= MAX_GEARS and all(
        isinstance(g, list) and 0 < len(g) <= MAX_DIMS and len(g) == len(nd[0]) and all(
            isinstance(x, int) and not isinstance(x, bool) and 0 < x <= INT64_MAX for x in g) for g in nd)
    if not ok or len({tuple(g) for g in nd}) != len(nd):
        raise _error(source, f"dynamic_dims {_show(nd)} is not a list of at most {MAX_GEARS} distinct gears of as "
                             f"many values each (at most {MAX_DIMS}), from 1 to 2**63 - 1 (a gear's value is a dim: "
                             f"an int64)")
    return tuple(batches), tuple(tuple(g) for g in hws), tuple(tuple(g) for g in nd)


def _check_dynamic_dims(source, fields: list, side: str, batches, hws, nd=()) -> None:
    """-1 dims: the first dim with batch gears, H and W (by format) of 4-D NCHW/NHWC inputs with image-size gears,
    any dim with ND gears (the inputs' -1 dims as many as a gear's values, an output's at most as many)."""
    if nd:
        counts = [f[3].count(-1) for f in fields]
        size = len(nd[0])
        if side == "input" and sum(counts) != size:
            raise _error(source, f"the inputs have {sum(counts)} dims of -1 and each dynamic_dims gear gives {size} "
                                 f"values: a gear gives the value of every -1 dim of the inputs, in order")
        if side == "output" and any(c > size for c in counts):
            name = fields[next(i for i, c in enumerate(counts) if c > size)][0]
            raise _error(source, f"output {_show(name)} has more dims of -1 than a dynamic_dims gear has values "
                                 f"({size}): an output's -1 dims take the gear's first values")
        return
    for name, _, _, shape, fmt in fields:
        if -1 not in shape:
            continue
        where = f"{side} {_show(name)} shape {_show(list(shape))}"
        if batches:
            if shape.index(-1) != 0 or shape.count(-1) != 1:
                raise _error(source, f"{where}: with dynamic_batch only the first dim may be -1")
        elif hws:
            hw = _HW_DIMS.get(fmt)
            minus = [i for i, d in enumerate(shape) if d == -1]
            if side != "input" or hw is None or len(shape) != 4 or minus != list(hw):
                raise _error(source, f"{where}: with dynamic_hw only inputs of format NCHW or NHWC may have -1, as "
                                     f"their H and W")
        else:
            raise _error(source, f"{where}: a -1 dim needs dynamic_batch, dynamic_hw or dynamic_dims (the gears it "
                                 f"takes)")
    if side == "input" and (batches or hws) and not any(-1 in f[3] for f in fields):
        raise _error(source, "the gears (dynamic_batch / dynamic_hw) need an input with -1 dims")


def _build_tensors(source, fields: list, side: str, batches, hws, nd=()) -> tuple[Tensor, ...]:
    """The tensors, each sized at the gear where it is largest (GE gives the data nodes their largest gear's
    shape): a size past what a size_t holds is refused, naming the tensor."""
    kind, gears = gear_kind(batches, hws, nd), gear_list(batches, hws, nd) or (None,)
    out, offset = [], 0
    for f in fields:  # (name, dtype, dtype_name, shape, format): _tensor_fields
        t = Tensor(*f, nbytes=0, offset=offset if side == "input" else 0)
        offset += f[3].count(-1) if side == "input" else 0
        sizes = [t.nbytes_at(*gear_args(kind, g)) for g in gears]
        at = gear_args(kind, gears[sizes.index(max(sizes))])
        if max(sizes) > SIZE_MAX:
            raise _error(source, f"{side} {_show(t.name)} shape {_show(list(t.dims_at(*at)))} is over 2**64 - 1 "
                                 f"bytes of {t.dtype_name}: its size is a size_t")
        out.append(replace(t, nbytes=max(sizes), max_shape=t.dims_at(*at)))
    return tuple(out)


def _dynamic_input(batches, hws, nd=()) -> tuple[Tensor, ...]:
    """The input the ATC compiler adds to a model with gears: ascend_mbatch_shape_data, int64, one value per
    gear dim."""
    gears = gear_list(batches, hws, nd)
    if not gears:
        return ()
    shape = (len(gears[0]),)
    return (Tensor(DYNAMIC_INPUT, DTYPES["int64"], "int64", shape, FORMATS["ND"], _nbytes(shape, DTYPES["int64"]),
                   max_shape=shape),)


def _number(source, where: str, value, minimum: float = 0.0) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and value >= minimum
    if ok and not (isinstance(value, float) and math.isfinite(value)):  # (an int past a float's range: 10**400)
        ok = isinstance(value, int) and value <= _FLOAT_MAX
    if not ok:
        raise _error(source, f"{where} {_show(value)} is not a finite number >= {minimum:g}")
    return float(value)


def _profile_us(source, base_dir: Path, where: str, path, executions) -> float:
    """The kernel time of one execution in a profile (`emu.studies.profiles`): its kernel tasks' summed
    durations over `executions`, microseconds."""
    from .studies import profiles  # (reading a profile is a study's job; the declaration only asks it)

    if not isinstance(path, str) or not path:
        raise _error(source, f"{where}.msprof {_show(path)} is not a path")
    n = _number(source, f"{where}.executions", executions, 1.0)
    file = Path(path) if Path(path).is_absolute() else base_dir / path
    try:
        profile = profiles.load(file)
    except (OSError, ValueError) as e:
        raise _error(source, f"{where}: the profile {file} cannot be read ({e})") from None
    kernels = [t.duration for t in profile.tasks if t.kind == "kernel"]
    if not kernels:
        raise _error(source, f"{where}: the profile {file} has no kernel (AI_CORE) task to take a time from")
    return sum(kernels) / n * 1e6


def _timing(source, base_dir: Path, where: str, value) -> Timing:
    if isinstance(value, str) and value.startswith("msprof:"):
        return Timing(_profile_us(source, base_dir, where, value[len("msprof:"):], 1))
    if isinstance(value, dict) and value and set(value) <= _PROFILE_KEYS and "msprof" in value:
        return Timing(_profile_us(source, base_dir, where, value["msprof"], value.get("executions", 1)))
    if isinstance(value, dict) and value and set(value) <= _SCALING_KEYS:
        return Timing(*(_number(source, f"{where}.{k}", value.get(k, 0)) for k in ("base", "per_batch", "per_pixel")))
    if isinstance(value, dict):
        raise _error(source, f"{where} {_show(value)}: a time is a number, {{base = .., per_batch = .., per_pixel = ..}}, "
                             f"{{msprof = \"profile.json\", executions = N}} or \"msprof:profile.json\"")
    return Timing(_number(source, where, value))


def _compute(source, base_dir: Path, data: dict) -> tuple[tuple[str, Timing], ...]:
    if "compute_us" not in data:
        raise _error(source, "no compute_us: how long the model runs, per product or for all")
    value = data["compute_us"]
    if not isinstance(value, dict) or set(value) <= _SCALING_KEYS | _PROFILE_KEYS:
        return (("*", _timing(source, base_dir, "compute_us", value)),)
    return tuple((str(k), _timing(source, base_dir, f"compute_us.{k}", v)) for k, v in value.items())


def _size(source, data: dict, key: str, derived: int) -> int:
    if key not in data and derived > SIZE_MAX:
        raise _error(source, f"the inputs and outputs add up to over 2**64 - 1 bytes, so {key}, their sum by default, "
                             f"is past a size_t: give {key}")
    value = data.get(key, derived)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= SIZE_MAX:
        raise _error(source, f"{key} {_show(value)} is not a number of bytes from 0 to 2**64 - 1 (a size_t)")
    return value


def _check_times(source, compute, batches, hws, inputs, nd=()) -> None:
    """Each time, at every gear (or the static shape), is a finite number of microseconds."""
    kind = gear_kind(batches, hws, nd)
    points = [_batch_pixels(inputs, *gear_args(kind, g)) for g in gear_list(batches, hws, nd) or (None,)]
    batch, pixels = max(points)[0], max(p for _, p in points)
    for product, timing in compute:
        if not math.isfinite(timing.us(batch, pixels)):
            where = "compute_us" if product == "*" else f"compute_us.{product}"
            raise _error(source, f"{where} is not a finite time at the largest gear (batch {batch}, {pixels} pixels)")


def parse(data: dict, source: str = "<declaration>", base_dir=None, default_name: str = "model") -> ModelDecl:
    """The declaration in `data` (a TOML document as a dict), checked; `source` names it in errors, `base_dir`
    anchors relative profile paths, `default_name` is its name when it gives none."""
    if not isinstance(data, dict):
        raise _error(source, f"a declaration is a table, not {type(data).__name__}")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _error(source, f"unknown keys {_show(unknown)} (it takes {sorted(_TOP_KEYS)})")
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise _error(source, f"name {_show(name)} is not a non-empty string")
    default_format = _format(source, "the model", data["format"]) if "format" in data else FORMATS["ND"]
    batches, hws, nd = _gears(source, data)
    fields = {side: _tensors(source, data, side, default_format) for side in ("input", "output")}
    for side, f in fields.items():
        _check_dynamic_dims(source, f, side, batches, hws, nd)
    inputs = _build_tensors(source, fields["input"], "input", batches, hws, nd) + _dynamic_input(batches, hws, nd)
    outputs = _build_tensors(source, fields["output"], "output", batches, hws, nd)
    compute = _compute(source, Path(base_dir or "."), data)
    _check_times(source, compute, batches, hws, inputs, nd)
    total = sum(t.nbytes for t in inputs + outputs)
    return ModelDecl(name, source, inputs, outputs, batches, hws, compute, _size(source, data, "work_size", total),
                     _size(source, data, "weight_size", total), nd)


def load(path, default_name: str = "model") -> ModelDecl:
    """The declaration in the TOML file `path`."""
    path = Path(path)
    try:
        data = files.load_toml(path, DECLARATION_BYTES, "a model declaration")
    except files.FileRefused as e:  # missing, a FIFO, a device, a directory, over the bound, not UTF-8 text
        raise _error(path, "the file does not exist" if e.reason == files.MISSING else e.why) from None
    except files.NotToml as e:
        raise _error(path, f"it cannot be read as TOML ({e})") from None
    return parse(data, str(path), path.parent, default_name)


# -- where a loaded model's declaration comes from --------------------------------------------------------------
_registered: dict[str, object] = {}  # realpath of X.om -> a declaration file or dict (declare_model)
_by_digest: dict[str, tuple[str, object]] = {}  # sha256 of an .om file's bytes -> (its path, its declaration)
_lock = threading.Lock()


def _key(path) -> str:
    return os.path.realpath(os.fspath(path))


def model_name(om_path) -> str:
    """A model's default name: its file's name without `.om`."""
    name = os.path.basename(os.fspath(om_path))
    return name[:-3] if name.endswith(".om") else name or "model"


def declare_model(om_path, declaration) -> ModelDecl:
    """Register `declaration` (a TOML file's path or a dict as TOML would give) for the model file `om_path`:
    loading that path (and, when the file exists, loading its bytes from memory) runs this declaration. Checked
    now: returns the parsed declaration, or raises ModelDeclarationError."""
    decl = _resolve(declaration, model_name(om_path))
    with _lock:
        _registered[_key(om_path)] = declaration
        digest = files.sha256(om_path)  # (None: no regular file there)
        if digest is not None:
            _by_digest[digest] = (os.fspath(om_path), declaration)
    return decl


def forget_models() -> None:
    """Drop every declaration `declare_model` registered."""
    with _lock:
        _registered.clear()
        _by_digest.clear()


def _resolve(declaration, name: str) -> ModelDecl:
    if isinstance(declaration, dict):
        return parse(declaration, f"<dict for {name}>", None, name)
    return load(declaration, name)


def from_env(env: str | None = None) -> dict[str, str]:
    """{realpath of X.om: declaration path} from $ACL_EMU_MODELS ("X.om=decl.toml;Y.om=other.toml")."""
    text = os.environ.get(MODELS_ENV, "") if env is None else env
    out = {}
    for item in filter(None, (s.strip() for s in text.split(";"))):
        om, sep, decl = item.partition("=")
        if not sep or not om.strip() or not decl.strip():
            raise _error(MODELS_ENV, f"{MODELS_ENV} entry {_show(item)} is not MODEL.om=DECLARATION.toml")
        out[_key(om.strip())] = decl.strip()
    return out


def declaration_source(om_path) -> object | None:
    """Where the declaration of the model file `om_path` is (registered, $ACL_EMU_MODELS, then X.om.toml beside
    it), or None if nowhere."""
    key = _key(om_path)
    with _lock:
        if key in _registered:
            return _registered[key]
    env = from_env()
    if key in env:
        return env[key]
    beside = Path(os.fspath(om_path) + ".toml")
    return beside if beside.exists() else None  # (a FIFO or a folder there is refused by `load`, naming it)


def for_file(om_path) -> ModelDecl:
    """The declaration of the model file `om_path`; ModelDeclarationError when it has none or it is wrong."""
    source = declaration_source(om_path)
    if source is None:
        raise _error(f"{os.fspath(om_path)}.toml", f"the model {os.fspath(om_path)} has no declaration: the "
                                                   f"emulator runs a declared stand-in in place of an offline model")
    return _resolve(source, model_name(om_path))


def _env_model_of_digest(digest: str) -> tuple[str, str] | None:
    """(path, declaration) of the existing .om file named in $ACL_EMU_MODELS whose bytes have this SHA-256."""
    for om, decl in from_env().items():
        if files.sha256(om) == digest:
            return om, decl
    return None


def for_bytes(data: bytes) -> ModelDecl:
    """The declaration for a model given as bytes (aclmdlLoadFromMem): the one registered for those bytes'
    SHA-256 (`declare_model` of the .om file, or an existing .om file named in $ACL_EMU_MODELS), or the bytes
    themselves read as a declaration's TOML."""
    digest = hashlib.sha256(data).hexdigest()
    with _lock:
        found = _by_digest.get(digest)
    if found is None:
        found = _env_model_of_digest(digest)
    if found is not None:
        return _resolve(found[1], model_name(found[0]))
    try:
        if len(data) > DECLARATION_BYTES:
            raise files.NotToml(f"over the {files.size_text(DECLARATION_BYTES)} a declaration may have")
        table = files.parse_toml(data.decode("utf-8"))
    except (UnicodeDecodeError, files.NotToml) as e:
        why = "not UTF-8 text" if isinstance(e, UnicodeDecodeError) else str(e)
        raise _error("<model bytes>", f"these {len(data)} bytes are no declaration's TOML ({why}) and no declared "
                                      f".om file's bytes (declare the file first: emu.declare_model(\"X.om\", "
                                      f"\"X.om.toml\"))") from None
    return parse(table, "<model bytes>")
