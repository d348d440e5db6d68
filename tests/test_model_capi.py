"""The model API from C (issue 43, items 6, 11 and 13): aclmdlSetInputDynamicDims through the library, the call
sequence of Ascend/samples' dynamic-dims ResNet-50 sample on a declared model, a thread without a context, and no
Python traceback for a program's mistake in its model declarations.

Reference: hicann/ge api/acl/acl_model/model/model.cpp aclmdlSetInputDynamicDimsImpl (it reads dims->dimCount and
dims->dims[0..dimCount) of the program's aclmdlIODims), runtime/v1/executor/ge_executor.cc GeExecutor::SetDynamicDims;
hicann/runtime src/runtime/api/impl/api_impl.cc ApiImpl::ModelExecute; the sample:
Ascend/samples cplusplus/level2_simple_inference/1_classification/resnet50_imagenet_dynamic_dims (src/
sample_process.cpp, src/model_process.cpp, README_CN.md's atc command).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from emu import modeldecl
from helpers import no_declared_models
from emu.capi import commands

CC = shutil.which(os.environ.get("CC", "cc")) and shutil.which(os.environ.get("CXX", "c++"))
pytestmark = [pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                                 reason="needs a C and a C++ compiler and a shared libpython"),
              pytest.mark.usefixtures(no_declared_models.__name__)]

CHECKS = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"
#define CHECK_ACL(call) do { aclError r_ = (call); if (r_ != ACL_SUCCESS) { const char *w_ = aclGetRecentErrMsg(); \
    fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, r_, w_ ? w_ : ""); exit(1); } } while (0)
#define EXPECT(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
    exit(1); } } while (0)
'''

# The model of resnet50_imagenet_dynamic_dims (README_CN.md): atc --input_format=ND --input_shape="data:-1,3,-1,-1"
# --dynamic_dims="1,200,200;2,200,200;1,224,224;2,224,224" --input_fp16_nodes=data --output_type=FP32
# --out_nodes=prob:0
DIMS_DECLARATION = """\
name = "resnet50"
dynamic_dims = [[1, 200, 200], [2, 200, 200], [1, 224, 224], [2, 224, 224]]
[[input]]
name = "data"
dtype = "float16"
shape = [-1, 3, -1, -1]
[[output]]
name = "prob"
dtype = "float32"
shape = [-1, 1000]
[compute_us]
default = {base = 500, per_batch = 900}
"""

# Our version of the sample's calls, in its order (sample_process.cpp InitResource, Process, DestroyResource;
# model_process.cpp LoadModel, CreateModelDesc, CreateOutput, CreateInput, ModelSetDynamicInfo, Execute,
# DestroyInput, OutputModelResult, DestroyOutput, UnloadModel). Two differences, both the sample's slips: it frees
# its page-locked input with aclrtFree (here aclrtFreeHost) and never frees the device copy of each batch (here
# it does). argv[1]: the model; argv[2], argv[3]: two pictures' bytes at 224 x 224, argv[4], argv[5] at 200 x 200.
SAMPLE = CHECKS + r'''
#include <vector>
#include <map>
#include <functional>
static uint32_t read_into(const char *path, unsigned char *dst) {
    FILE *f = fopen(path, "rb"); EXPECT(f != NULL);
    size_t n = fread(dst, 1, 1 << 22, f); fclose(f); return (uint32_t)n;
}
int main(int argc, char **argv) {
    EXPECT(argc == 6);
    CHECK_ACL(aclInit("./acl.json"));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context; CHECK_ACL(aclrtCreateContext(&context, 0));
    aclrtStream stream; CHECK_ACL(aclrtCreateStream(&stream));
    aclrtRunMode runMode; CHECK_ACL(aclrtGetRunMode(&runMode));
    EXPECT(runMode == ACL_HOST);
    size_t workSize, weightSize;
    CHECK_ACL(aclmdlQuerySize(argv[1], &workSize, &weightSize));
    void *work, *weight;
    CHECK_ACL(aclrtMalloc(&work, workSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&weight, weightSize, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t modelId;
    CHECK_ACL(aclmdlLoadFromFileWithMem(argv[1], &modelId, work, workSize, weight, weightSize));
    aclmdlDesc *desc = aclmdlCreateDesc(); EXPECT(desc != NULL);
    CHECK_ACL(aclmdlGetDesc(desc, modelId));
    aclmdlDataset *output = aclmdlCreateDataset();
    for (size_t i = 0; i < aclmdlGetNumOutputs(desc); ++i) {
        size_t size = aclmdlGetOutputSizeByIndex(desc, i);
        void *buf; CHECK_ACL(aclrtMalloc(&buf, size, ACL_MEM_MALLOC_NORMAL_ONLY));
        CHECK_ACL(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(buf, size)));
    }
    size_t devBufferSize = aclmdlGetInputSizeByIndex(desc, 0);
    EXPECT(devBufferSize == 2 * 3 * 224 * 224 * 2);
    void *inputBuff; CHECK_ACL(aclrtMallocHost(&inputBuff, devBufferSize));
    const int sides[2] = {224, 200};
    std::vector<float> firsts;
    for (int index = 0; index < 2; ++index) {
        CHECK_ACL(aclrtMemset(inputBuff, devBufferSize, 0, devBufferSize));
        uint32_t one = read_into(argv[2 + 2 * index], (unsigned char *)inputBuff);
        uint32_t batchFileSize = one + read_into(argv[3 + 2 * index], (unsigned char *)inputBuff + one);
        void *dev; CHECK_ACL(aclrtMalloc(&dev, devBufferSize, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMemcpy(dev, devBufferSize, inputBuff, devBufferSize, ACL_MEMCPY_HOST_TO_DEVICE));
        uint32_t dataNum = aclmdlGetNumInputs(desc);
        aclmdlDataset *input = aclmdlCreateDataset();
        CHECK_ACL(aclmdlAddDatasetBuffer(input, aclCreateDataBuffer(dev, batchFileSize)));
        size_t dynamicIdx = 0;
        CHECK_ACL(aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &dynamicIdx));
        EXPECT(dynamicIdx == dataNum - 1);
        size_t dataLen = aclmdlGetInputSizeByIndex(desc, dynamicIdx);
        void *gear; CHECK_ACL(aclrtMalloc(&gear, dataLen, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclmdlAddDatasetBuffer(input, aclCreateDataBuffer(gear, dataLen)));
        size_t gearIndex;
        CHECK_ACL(aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &gearIndex));
        aclmdlIODims currentDims;
        currentDims.dimCount = 4;
        currentDims.dims[0] = 2; currentDims.dims[1] = 3; currentDims.dims[2] = sides[index];
        currentDims.dims[3] = sides[index];
        CHECK_ACL(aclmdlSetInputDynamicDims(modelId, input, gearIndex, &currentDims));
        CHECK_ACL(aclmdlExecute(modelId, input, output));
        for (size_t i = 0; i < aclmdlGetDatasetNumBuffers(input); ++i)
            CHECK_ACL(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(input, i)));
        CHECK_ACL(aclmdlDestroyDataset(input));
        CHECK_ACL(aclrtFree(gear));
        CHECK_ACL(aclrtFree(dev));
        aclmdlIODims cur;
        CHECK_ACL(aclmdlGetCurOutputDims(desc, 0, &cur));
        EXPECT(cur.dimCount == 2 && cur.dims[0] == 2 && cur.dims[1] == 1000);
        for (size_t i = 0; i < aclmdlGetDatasetNumBuffers(output); ++i) {
            aclDataBuffer *dataBuffer = aclmdlGetDatasetBuffer(output, i);
            void *data = aclGetDataBufferAddr(dataBuffer);
            uint32_t len = aclGetDataBufferSizeV2(dataBuffer);
            void *outHostData; CHECK_ACL(aclrtMallocHost(&outHostData, len));
            CHECK_ACL(aclrtMemcpy(outHostData, len, data, len, ACL_MEMCPY_DEVICE_TO_HOST));
            float *outData = (float *)outHostData;
            EXPECT(len / sizeof(float) / 1000 == 2);
            for (unsigned seq = 0; seq < len / sizeof(float) / 1000; ++seq) {
                std::map<float, unsigned, std::greater<float> > resultMap;
                for (unsigned j = 0; j < 1000; ++j) {
                    EXPECT(*outData >= 0 && *outData < 1);
                    resultMap[*outData++] = j;
                }
                printf("picture %d seq %u top 1: index[%u]\n", index, seq, resultMap.begin()->second);
            }
            firsts.push_back(((float *)outHostData)[0]);
            CHECK_ACL(aclrtFreeHost(outHostData));
        }
    }
    EXPECT(firsts.size() == 2 && firsts[0] != firsts[1]);
    CHECK_ACL(aclrtFreeHost(inputBuff));
    for (size_t i = 0; i < aclmdlGetDatasetNumBuffers(output); ++i) {
        aclDataBuffer *dataBuffer = aclmdlGetDatasetBuffer(output, i);
        CHECK_ACL(aclrtFree(aclGetDataBufferAddr(dataBuffer)));
        CHECK_ACL(aclDestroyDataBuffer(dataBuffer));
    }
    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclrtFree(work));
    CHECK_ACL(aclrtFree(weight));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    printf("resnet50_imagenet_dynamic_dims: ok\n");
    return 0;
}
'''

# aclmdlSetInputDynamicDims's codes from C: the struct read as the ACL layer reads it.
DIMS_CODES = CHECKS + r'''
#include "acl/acl_mdl.h"
int main(int argc, char **argv) {
    uint32_t id; aclInit(NULL); CHECK_ACL(aclrtSetDevice(0));
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &id));
    aclmdlDesc *d = aclmdlCreateDesc(); CHECK_ACL(aclmdlGetDesc(d, id));
    size_t gi; CHECK_ACL(aclmdlGetInputIndexByName(d, ACL_DYNAMIC_TENSOR_NAME, &gi));
    void *x, *g; CHECK_ACL(aclrtMalloc(&x, 1024, 0)); CHECK_ACL(aclrtMalloc(&g, 24, 0));
    aclmdlDataset *ins = aclmdlCreateDataset();
    CHECK_ACL(aclmdlAddDatasetBuffer(ins, aclCreateDataBuffer(x, 1024)));
    CHECK_ACL(aclmdlAddDatasetBuffer(ins, aclCreateDataBuffer(g, 24)));
    aclmdlIODims dims; memset(&dims, 0, sizeof dims);
    printf("null dims %d\n", aclmdlSetInputDynamicDims(id, ins, gi, NULL));
    printf("no dims %d\n", aclmdlSetInputDynamicDims(id, ins, gi, &dims));
    dims.dimCount = 4; dims.dims[0] = 1; dims.dims[1] = 3; dims.dims[2] = 224; dims.dims[3] = 224;
    printf("a gear %d\n", aclmdlSetInputDynamicDims(id, ins, gi, &dims));
    uint64_t written[3]; CHECK_ACL(aclrtMemcpy(written, 24, g, 24, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("written %lu %lu %lu\n", (unsigned long)written[0], (unsigned long)written[1], (unsigned long)written[2]);
    dims.dims[2] = 223;
    printf("no gear %d\n", aclmdlSetInputDynamicDims(id, ins, gi, &dims));
    dims.dimCount = 129;
    printf("past the struct %d\n", aclmdlSetInputDynamicDims(id, ins, gi, &dims));
    return 0;
}
'''

# A thread without a context executes a model (ApiImpl::ModelExecute: RT_ERROR_CONTEXT_NULL).
THREAD = CHECKS + r'''
#include <pthread.h>
#include "acl/acl_mdl.h"
static uint32_t id; static aclmdlDataset *ins, *outs; static aclError got;
static void *run(void *arg) { (void)arg; got = aclmdlExecute(id, ins, outs); return NULL; }
int main(int argc, char **argv) {
    aclInit(NULL); CHECK_ACL(aclrtSetDevice(0));
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &id));
    void *x, *y; CHECK_ACL(aclrtMalloc(&x, 16, 0)); CHECK_ACL(aclrtMalloc(&y, 16, 0));
    ins = aclmdlCreateDataset(); outs = aclmdlCreateDataset();
    CHECK_ACL(aclmdlAddDatasetBuffer(ins, aclCreateDataBuffer(x, 16)));
    CHECK_ACL(aclmdlAddDatasetBuffer(outs, aclCreateDataBuffer(y, 16)));
    pthread_t t; pthread_create(&t, NULL, run, NULL); pthread_join(t, NULL);
    printf("thread %d\n", got);
    aclrtContext ctx; CHECK_ACL(aclrtCreateContext(&ctx, 0));
    printf("new context %d\n", aclmdlExecute(id, ins, outs));
    return 0;
}
'''

LOAD = CHECKS + r'''
#include "acl/acl_mdl.h"
int main(int argc, char **argv) {
    uint32_t id; size_t work, weight; aclInit(NULL); CHECK_ACL(aclrtSetDevice(0));
    aclError r = aclmdlLoadFromFile(argv[1], &id);
    const char *why = aclGetRecentErrMsg();
    printf("load %d %s\n", r, why ? why : "(null)");
    r = aclmdlQuerySize(argv[1], &work, &weight);
    printf("query %d\n", r);
    return 0;
}
'''

STATIC = """\
name = "net"
[[input]]
name = "a"
dtype = "float32"
shape = [4]
[[output]]
name = "b"
dtype = "float32"
shape = [4]
"""


def _env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.update(extra or {})
    return env


def _build(folder: Path, name: str, source: str, language: str = "cc") -> Path:
    src = folder / (f"{name}.cpp" if language == "c++" else f"{name}.c")
    src.write_text(source)
    assert commands.compile_command(language, [str(src), "-o", str(folder / name), "-Wall", "-lpthread"]) == 0
    return folder / name


def _run(exe: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], cwd=exe.parent, capture_output=True, text=True, timeout=180,
                          env=_env(env))


def test_the_dynamic_dims_resnet50_sample_runs_on_its_declared_model(tmp_path):
    """Rule (item 13): the calls of resnet50_imagenet_dynamic_dims build against the emulator's headers and run:
    aclmdlSetInputDynamicDims with the four dims (batch 2, 3 channels, 224 or 200 square) picks the gear; the
    input buffer holds the smaller gear's bytes at 200 x 200 and is accepted (a dataset at a gear is not
    size-checked: DavinciModel::CheckUserAndModelSize, is_dynamic_); the output holds two rows of 1000 scores;
    aclmdlGetCurOutputDims gives [2, 1000]."""
    exe = _build(tmp_path, "dims_sample", SAMPLE, "c++")
    (tmp_path / "acl.json").write_text("{}")
    (tmp_path / "resnet50.om.toml").write_text(DIMS_DECLARATION)
    for side in (224, 200):
        for dog in (1, 2):
            (tmp_path / f"dog{dog}_{side}.bin").write_bytes(bytes([dog * 7 + side % 5]) * (3 * side * side * 2))
    done = _run(exe, str(tmp_path / "resnet50.om"), *(str(tmp_path / f"dog{d}_{s}.bin")
                                                      for s in (224, 200) for d in (1, 2)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resnet50_imagenet_dynamic_dims: ok" in done.stdout
    assert done.stdout.count(" top 1: index[") == 4


def test_set_input_dynamic_dims_from_c_reads_the_programs_aclmdliodims(tmp_path):
    """Rule: model.cpp aclmdlSetInputDynamicDimsImpl: a NULL dims 100000, dimCount 0 100000; then
    dims->dims[0..dimCount) go to GeExecutor::SetDynamicDims, which writes the gear's values into the gear buffer
    (8 bytes each in a 24-byte buffer) or refuses a gear the model lacks (145013); a dimCount past the struct's
    128 dims is a count the model's inputs do not have (145012; the board would read past the struct)."""
    exe = _build(tmp_path, "dims_codes", DIMS_CODES)
    (tmp_path / "m.om.toml").write_text(DIMS_DECLARATION)
    done = _run(exe, str(tmp_path / "m.om"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["null dims 100000", "no dims 100000", "a gear 0", "written 1 224 224",
                                        "no gear 145013", "past the struct 145012"]


def test_a_c_thread_without_a_context_cannot_execute_a_model(tmp_path):
    """Rule (item 6), from C: a pthread that set no context gets 107002 from aclmdlExecute (ApiImpl::ModelExecute:
    CHECK_CONTEXT_VALID_WITH_RETURN), and a new context made current on the model's device 107004
    (COND_RETURN_AND_MSG_INVALID_CONTEXT_MODEL_WITH_FUNC_DESC)."""
    exe = _build(tmp_path, "thread", THREAD)
    (tmp_path / "m.om.toml").write_text("compute_us = 5\n" + STATIC)
    done = _run(exe, str(tmp_path / "m.om"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["thread 107002", "new context 107004"]


@pytest.mark.parametrize("case", ["no time for the product", "a malformed ACL_EMU_MODELS, no model file",
                                  "a malformed ACL_EMU_MODELS, a model file"])
def test_a_c_program_gets_one_message_and_no_traceback_for_a_declaration_mistake(tmp_path, case):
    """Rule (item 11): no path of the C library prints a Python traceback for a program's mistake in its model
    declarations: a declaration without the run's product time, or an $ACL_EMU_MODELS entry that is not
    MODEL.om=DECLARATION.toml (read before the model file is looked for: it was a traceback), is the parse error
    145000 (ModelHelper::LoadRootModel) with a one-line aclGetRecentErrMsg naming the problem; stderr stays
    empty. (aclmdlQuerySize needs no time, so it succeeds on the first.)"""
    exe = _build(tmp_path, "load", LOAD)
    env = None
    om = tmp_path / "net.om"
    if case == "no time for the product":
        (tmp_path / "net.om.toml").write_text("compute_us = {A3 = 5}\n" + STATIC)
    else:
        env = {modeldecl.MODELS_ENV: "net.om"}  # no '=': not an entry
        if case.endswith("a model file"):
            om.write_bytes(b"IMOD" * 8)
    done = _run(exe, str(om), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr == "", done.stderr
    load, query = done.stdout.splitlines()
    assert load.startswith("load 145000 ") and "\n" not in load
    if case == "no time for the product":
        assert "no time for product 910B" in load and query == "query 0"
    else:
        assert "ACL_EMU_MODELS entry 'net.om' is not MODEL.om=DECLARATION.toml" in load and query == "query 145000"


def test_a_null_model_id_from_c_is_judged_after_the_file_or_bytes_are_routed(tmp_path):
    """Rule (item 7): acl_model.cpp's router reads the file or the bytes before the NULL output is judged
    (AclIsOm2ModelByPath / ByData, IsOm2Model): a missing file with a NULL modelId is 145002, a file or buffer
    under 4 bytes 145006; a model that would load, with a NULL modelId, 100000; aclmdlQuerySize likewise."""
    exe = _build(tmp_path, "null_out", r'''
#include <stdio.h>
#include "acl/acl.h"
int main(int argc, char **argv) {
    aclInit(NULL); aclrtSetDevice(0);
    size_t work, weight;
    static const char tiny[2] = {1, 2};
    printf("%d %d %d %d %d\n", aclmdlLoadFromFile(argv[1], NULL), aclmdlLoadFromFile(argv[2], NULL),
           aclmdlLoadFromFile(argv[3], NULL), aclmdlLoadFromMem(tiny, sizeof tiny, NULL),
           aclmdlQuerySize(argv[1], NULL, &weight));
    (void)work;
    return 0;
}
''')
    (tmp_path / "m.om.toml").write_text(DIMS_DECLARATION)
    (tmp_path / "tiny.om").write_bytes(b"ab")
    done = _run(exe, str(tmp_path / "missing.om"), str(tmp_path / "tiny.om"), str(tmp_path / "m.om"))
    assert done.stdout.split() == ["145002", "145006", "100000", "145006", "145002"], done.stdout + done.stderr
