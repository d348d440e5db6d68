"""Model declarations (emu.modeldecl): the stand-in the emulator runs for an offline model, its format, where it is
found, and one clear error (naming the file, showing the template) for every problem. Sizes of the gear input
and of the largest gear follow the ATC / GE conventions of hicann/ge (ge_acl_mdl.h ACL_DYNAMIC_TENSOR_NAME;
api/acl/acl_model/model/model_om2.cpp aclmdlGetInputSizeByIndexImplOm2)."""
from __future__ import annotations

import json

import pytest

import emu
from emu import modeldecl
from emu.modeldecl import ModelDeclarationError, TEMPLATE

BASIC = {"input": [{"name": "data", "dtype": "float16", "shape": [1, 3, 224, 224], "format": "NCHW"}],
         "output": [{"name": "prob", "dtype": "float32", "shape": [1, 1000]}],
         "compute_us": {"910B": 4000, "A3": 1000}}


def with_(**changes) -> dict:
    return {**json.loads(json.dumps(BASIC)), **changes}


def error_of(data) -> str:
    with pytest.raises(ModelDeclarationError) as ei:
        modeldecl.parse(data, "decl.toml")
    return str(ei.value)


@pytest.fixture(autouse=True)
def _forget():
    yield
    modeldecl.forget_models()


def test_the_issue_form_parses_to_tensors_sizes_and_times():
    d = modeldecl.parse(BASIC, "decl.toml", default_name="resnet50")
    assert d.name == "resnet50"
    (i,), (o,) = d.inputs, d.outputs
    assert (i.name, i.dtype, i.shape, i.format, i.nbytes) == ("data", 1, (1, 3, 224, 224), 0, 301056)
    assert (o.name, o.dtype, o.shape, o.format, o.nbytes) == ("prob", 0, (1, 1000), 2, 4000)  # ND by default
    assert d.seconds("910B") == pytest.approx(4000e-6) and d.seconds("A3") == pytest.approx(1000e-6)


def test_the_template_itself_is_a_valid_declaration():
    import tomllib
    d = modeldecl.parse(tomllib.loads(TEMPLATE), "TEMPLATE")
    assert d.name == "resnet50" and d.inputs[0].nbytes == 301056


@pytest.mark.parametrize("given, code", [("float32", 0), ("float", 0), ("ACL_FLOAT16", 1), ("fp16", 1),
                                         ("bf16", 27), ("bfloat16", 27), ("double", 11), ("int64", 9),
                                         ("uint8", 4), ("bool", 12)])
def test_dtypes_take_numpy_and_acl_names(given, code):
    d = modeldecl.parse(with_(input=[{"name": "x", "dtype": given, "shape": [2]}]), "d")
    assert d.inputs[0].dtype == code


def test_a_single_number_applies_to_every_product():
    d = modeldecl.parse(with_(compute_us=250), "d")
    assert d.seconds("910B") == d.seconds("950PR") == pytest.approx(250e-6)


def test_a_product_missing_from_compute_us_is_an_error_naming_the_products_given():
    d = modeldecl.parse(BASIC, "decl.toml")
    with pytest.raises(ModelDeclarationError) as ei:
        d.seconds("950PR")
    msg = str(ei.value)
    assert "950PR" in msg and "910B, A3" in msg and "decl.toml" in msg and TEMPLATE in msg


def test_a_default_key_covers_the_products_not_named():
    d = modeldecl.parse(with_(compute_us={"910B": 10, "default": 30}), "d")
    assert d.seconds("910B") == pytest.approx(10e-6) and d.seconds("950PR") == pytest.approx(30e-6)


def test_compute_scales_with_the_batch_base_plus_per_batch():
    d = modeldecl.parse(with_(compute_us={"910B": {"base": 200, "per_batch": 950}}), "d")
    assert d.seconds("910B") == pytest.approx((200 + 950) * 1e-6)  # static: the first input's first dim
    assert d.seconds("910B", batch=8) == pytest.approx((200 + 8 * 950) * 1e-6)


def test_dynamic_batch_adds_the_gear_input_and_sizes_the_largest_gear():
    d = modeldecl.parse(with_(dynamic_batch=[1, 2, 4, 8],
                              input=[{"name": "data", "dtype": "float32", "shape": [-1, 3, 8, 8]}],
                              output=[{"name": "prob", "dtype": "float32", "shape": [-1, 10]}]), "d")
    assert [t.name for t in d.inputs] == ["data", "ascend_mbatch_shape_data"]
    assert d.inputs[0].nbytes == 8 * 3 * 8 * 8 * 4 and d.outputs[0].nbytes == 8 * 10 * 4
    gear = d.inputs[1]
    assert (gear.dtype, gear.shape, gear.nbytes) == (9, (1,), 8)
    assert d.batches == (1, 2, 4, 8) and d.outputs[0].dims_at(batch=2) == (2, 10)


def test_dynamic_hw_sets_h_and_w_by_format():
    d = modeldecl.parse(with_(dynamic_hw=[[112, 112], [224, 448]],
                              input=[{"name": "img", "dtype": "uint8", "shape": [1, -1, -1, 3], "format": "NHWC"}]),
                        "d")
    assert d.inputs[0].nbytes == 224 * 448 * 3 and d.inputs[1].shape == (2,)
    assert d.inputs[0].dims_at(hw=(112, 112)) == (1, 112, 112, 3)


@pytest.mark.parametrize("data, says", [
    ({"output": BASIC["output"], "compute_us": 1}, "no [[input]]"),
    (with_(compute_us=None) | {"compute_us": "fast"}, "compute_us"),
    ({k: v for k, v in BASIC.items() if k != "compute_us"}, "no compute_us"),
    (with_(inputs=[]), "unknown keys ['inputs']"),
    (with_(input=[{"name": "x", "dtype": "float17", "shape": [1]}]), "float17"),
    (with_(input=[{"name": "x", "dtype": "float32", "shape": [1, -2]}]), "shape"),
    (with_(input=[{"name": "x", "dtype": "float32"}]), "lacks shape"),
    (with_(input=[{"name": "x", "dtype": "float32", "shape": [1], "fmt": "NCHW"}]), "unknown keys ['fmt']"),
    (with_(input=[{"name": "x", "dtype": "float32", "shape": [1], "format": "NCWH"}]), "NCWH"),
    (with_(input=[{"name": "x", "dtype": "float32", "shape": [-1, 3]}]),
     "needs dynamic_batch, dynamic_hw or dynamic_dims"),
    (with_(dynamic_dims=[[1, 2], [2]], input=[{"name": "x", "dtype": "float32", "shape": [-1, -1]}]), "as many values"),
    (with_(dynamic_dims=[[1], [1]], input=[{"name": "x", "dtype": "float32", "shape": [-1, 3]}]), "distinct"),
    (with_(dynamic_dims=[[1, 2]], input=[{"name": "x", "dtype": "float32", "shape": [-1, 3]}]), "every -1 dim"),
    (with_(dynamic_dims=[[1]], input=[{"name": "x", "dtype": "float32", "shape": [-1, 3]}],
           output=[{"name": "y", "dtype": "float32", "shape": [-1, -1]}]), "more dims of -1"),
    (with_(dynamic_dims=[[1]], dynamic_batch=[1]), "together"),
    (with_(dynamic_batch=[1, 2], input=[{"name": "x", "dtype": "float32", "shape": [1, -1]}]), "first dim"),
    (with_(dynamic_batch=[0]), "dynamic_batch"),
    (with_(dynamic_batch=[1], dynamic_hw=[[1, 1]]), "together"),
    (with_(dynamic_hw=[[8, 8]], input=[{"name": "x", "dtype": "float32", "shape": [1, -1, -1, 3]}]), "NCHW or NHWC"),
    (with_(input=BASIC["input"] * 2), "given twice"),
    (with_(compute_us={"910B": -1}), ">= 0"),
    (with_(work_size=-5), "work_size"),
])
def test_every_problem_is_one_error_naming_the_file_and_showing_the_template(data, says):
    msg = error_of(data)
    assert msg.startswith("model declaration decl.toml: ") and says in msg, msg
    assert msg.endswith(TEMPLATE) and msg.count("\n") == TEMPLATE.count("\n") + 1  # one paragraph, then the template


def test_a_toml_file_beside_the_model_is_found(tmp_path):
    (tmp_path / "m.om.toml").write_text('[[input]]\nname="a"\ndtype="int8"\nshape=[4]\n'
                                        '[[output]]\nname="b"\ndtype="int8"\nshape=[4]\n[compute_us]\ndefault = 5\n')
    d = modeldecl.for_file(tmp_path / "m.om")
    assert d.name == "m" and d.source == str(tmp_path / "m.om.toml")


def test_a_missing_declaration_names_the_file_expected_and_shows_the_template(tmp_path):
    (tmp_path / "m.om").write_bytes(b"\x00" * 16)
    with pytest.raises(ModelDeclarationError) as ei:
        modeldecl.for_file(tmp_path / "m.om")
    assert f"{tmp_path / 'm.om'}.toml" in str(ei.value) and TEMPLATE in str(ei.value)


def test_a_top_level_key_written_after_a_table_is_explained(tmp_path):
    (tmp_path / "m.om.toml").write_text('[[input]]\nname="a"\ndtype="int8"\nshape=[4]\n'
                                        '[[output]]\nname="b"\ndtype="int8"\nshape=[4]\ncompute_us = 5\n')
    with pytest.raises(ModelDeclarationError, match="belongs to that table"):
        modeldecl.for_file(tmp_path / "m.om")


def test_bad_toml_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "m.om.toml").write_text("[[input]\n")
    with pytest.raises(ModelDeclarationError, match="cannot be read as TOML"):
        modeldecl.for_file(tmp_path / "m.om")


def test_declare_model_from_python_wins_over_the_file_beside(tmp_path):
    (tmp_path / "m.om.toml").write_text("garbage = 1\n")
    d = emu.declare_model(tmp_path / "m.om", with_(name="mine"))
    assert d.name == "mine" and modeldecl.for_file(tmp_path / "m.om").name == "mine"


def test_declare_model_checks_at_once():
    with pytest.raises(ModelDeclarationError):
        emu.declare_model("x.om", {"input": []})


def test_the_environment_variable_names_declarations(tmp_path, monkeypatch):
    decl = tmp_path / "d.toml"
    decl.write_text('name = "from_env"\n[[input]]\nname="a"\ndtype="int8"\nshape=[4]\n'
                    '[[output]]\nname="b"\ndtype="int8"\nshape=[4]\n[compute_us]\ndefault = 5\n')
    monkeypatch.setenv(modeldecl.MODELS_ENV, f"{tmp_path / 'a.om'}={decl}; {tmp_path / 'b.om'}={decl}")
    assert modeldecl.for_file(tmp_path / "b.om").name == "from_env"
    monkeypatch.setenv(modeldecl.MODELS_ENV, "a.om")
    with pytest.raises(ModelDeclarationError, match="MODEL.om=DECLARATION.toml"):
        modeldecl.for_file(tmp_path / "b.om")


def test_bytes_of_a_declared_om_file_or_of_a_toml_text_are_found(tmp_path):
    om = tmp_path / "m.om"
    om.write_bytes(b"IMOD" + bytes(range(60)))
    emu.declare_model(om, with_(name="bytes"))
    assert modeldecl.for_bytes(om.read_bytes()).name == "bytes"
    text = ('name = "t"\n[[input]]\nname="a"\ndtype="int8"\nshape=[4]\n[[output]]\nname="b"\ndtype="int8"\n'
            'shape=[4]\n[compute_us]\ndefault = 5\n')
    assert modeldecl.for_bytes(text.encode()).name == "t"
    with pytest.raises(ModelDeclarationError, match="no declaration's TOML"):
        modeldecl.for_bytes(b"\xff\xfe\x00binary")


def test_bytes_of_an_om_file_named_in_the_environment_are_found(tmp_path, monkeypatch):
    om, decl = tmp_path / "e.om", tmp_path / "e.toml"
    om.write_bytes(b"IMOD" + bytes(40))
    decl.write_text('name = "env"\ncompute_us = 5\n[[input]]\nname="a"\ndtype="int8"\nshape=[4]\n'
                    '[[output]]\nname="b"\ndtype="int8"\nshape=[4]\n')
    monkeypatch.setenv(modeldecl.MODELS_ENV, f"{om}={decl}")
    assert modeldecl.for_bytes(om.read_bytes()).name == "env"


def test_compute_from_an_msprof_profile_is_its_kernel_time_per_execution(tmp_path):
    """The kernel tasks of tests/data/msprof_step.json (emu.studies.profiles), summed, per execution."""
    from pathlib import Path
    from emu.studies import profiles
    prof = Path(__file__).parent / "data" / "msprof_step.json"
    kernels = sum(t.duration for t in profiles.load(prof).tasks if t.kind == "kernel")
    assert kernels > 0
    d = modeldecl.parse(with_(compute_us={"default": {"msprof": str(prof), "executions": 2}}), "d")
    assert d.seconds("910B") == pytest.approx(kernels / 2)
    d = modeldecl.parse(with_(compute_us=f"msprof:{prof.name}"), "d", base_dir=prof.parent)
    assert d.seconds("A3") == pytest.approx(kernels)
    assert "cannot be read" in error_of(with_(compute_us="msprof:nowhere.json"))


def test_data_type_size_follows_the_runtime_table():
    """hicann/runtime src/acl/aclrt_impl/data_buffer.cpp aclDataTypeSizeImpl: STRING/UNDEFINED 0, sub-byte 1,
    unknown types 8."""
    assert [modeldecl.type_size(t) for t in (0, 1, 2, 9, 12, 13, -1, 17, 27, 29, 33, 999)] == \
        [4, 2, 1, 8, 1, 0, 0, 16, 2, 1, 4, 8]
