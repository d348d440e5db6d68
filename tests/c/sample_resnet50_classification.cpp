// The call sequence of Ascend/samples cplusplus/level2_simple_inference/1_classification/
// resnet50_imagenet_classification (sample_process.cpp, model_process.cpp, utils.cpp), written for acl-emu:
// init from acl.json, device, context, stream, run mode; aclmdlQuerySize and the work and weight memory the
// program allocates for aclmdlLoadFromFileWithMem; the description; one input buffer of the model's input
// size, the output dataset sized from the description; per picture: the file's bytes through page-locked
// memory to the device, aclmdlExecute, each output read back through aclGetDataBufferAddr / SizeV2 and
// checked to be the same for the same input (the emulator's outputs are a function of the inputs); then
// everything destroyed in the sample's order. argv[1]: the model (its declaration beside it), argv[2..]: inputs.
#include <cstdio>
#include <cstring>
#include <vector>
#include "check.h"

static std::vector<unsigned char> read_file(const char *path)
{
    std::vector<unsigned char> bytes;
    FILE *f = std::fopen(path, "rb");
    EXPECT(f != nullptr);
    unsigned char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
        bytes.insert(bytes.end(), buf, buf + n);
    std::fclose(f);
    return bytes;
}

int main(int argc, char **argv)
{
    EXPECT(argc >= 3);
    CHECK_ACL(aclInit("./acl.json"));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtContext context = nullptr;
    CHECK_ACL(aclrtCreateContext(&context, 0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    aclrtRunMode runMode;
    CHECK_ACL(aclrtGetRunMode(&runMode));

    size_t workSize = 0, weightSize = 0;
    CHECK_ACL(aclmdlQuerySize(argv[1], &workSize, &weightSize));
    void *workPtr = nullptr, *weightPtr = nullptr;
    CHECK_ACL(aclrtMalloc(&workPtr, workSize, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&weightPtr, weightSize, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFileWithMem(argv[1], &modelId, workPtr, workSize, weightPtr, weightSize));
    aclmdlDesc *desc = aclmdlCreateDesc();
    EXPECT(desc != nullptr);
    CHECK_ACL(aclmdlGetDesc(desc, modelId));

    size_t inputSize = aclmdlGetInputSizeByIndex(desc, 0);
    void *picDevice = nullptr;
    CHECK_ACL(aclrtMalloc(&picDevice, inputSize, ACL_MEM_MALLOC_NORMAL_ONLY));
    aclmdlDataset *input = aclmdlCreateDataset();
    aclDataBuffer *inputBuffer = aclCreateDataBuffer(picDevice, inputSize);
    CHECK_ACL(aclmdlAddDatasetBuffer(input, inputBuffer));
    aclmdlDataset *output = aclmdlCreateDataset();
    for (size_t i = 0; i < aclmdlGetNumOutputs(desc); ++i) {
        size_t size = aclmdlGetOutputSizeByIndex(desc, i);
        void *dev = nullptr;
        CHECK_ACL(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_NORMAL_ONLY));
        CHECK_ACL(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(dev, size)));
    }
    aclmdlIODims dims;
    CHECK_ACL(aclmdlGetOutputDims(desc, 0, &dims));
    std::printf("model %u: input %s of %zu bytes, output %s [%lld, %lld]\n", modelId,
                aclmdlGetInputNameByIndex(desc, 0), inputSize, dims.name, (long long)dims.dims[0],
                (long long)dims.dims[1]);

    std::vector<std::vector<unsigned char>> results;
    for (int file = 2; file < argc; ++file) {
        std::vector<unsigned char> picture = read_file(argv[file]);
        EXPECT(picture.size() == inputSize);  // the sample's check: the file is the model's input
        void *host = nullptr;
        CHECK_ACL(aclrtMallocHost(&host, inputSize));
        std::memcpy(host, picture.data(), inputSize);
        CHECK_ACL(aclrtMemcpy(picDevice, inputSize, host, inputSize, ACL_MEMCPY_HOST_TO_DEVICE));
        CHECK_ACL(aclrtFreeHost(host));
        CHECK_ACL(aclmdlExecute(modelId, input, output));
        aclDataBuffer *out = aclmdlGetDatasetBuffer(output, 0);
        size_t size = aclGetDataBufferSizeV2(out);
        void *outHost = nullptr;
        CHECK_ACL(aclrtMallocHost(&outHost, size));
        CHECK_ACL(aclrtMemcpy(outHost, size, aclGetDataBufferAddr(out), size, ACL_MEMCPY_DEVICE_TO_HOST));
        const float *scores = static_cast<const float *>(outHost);
        size_t top = 0;
        for (size_t i = 1; i < size / sizeof(float); ++i)
            if (scores[i] > scores[top])
                top = i;
        std::printf("%s: top1 index %zu\n", argv[file], top);
        results.emplace_back(static_cast<unsigned char *>(outHost), static_cast<unsigned char *>(outHost) + size);
        CHECK_ACL(aclrtFreeHost(outHost));
    }
    EXPECT(results.size() < 2 || results[0] == results[1]);  // argv[2] and argv[3] hold the same picture

    CHECK_ACL(aclDestroyDataBuffer(inputBuffer));
    CHECK_ACL(aclmdlDestroyDataset(input));
    for (size_t i = 0; i < aclmdlGetDatasetNumBuffers(output); ++i) {
        aclDataBuffer *buffer = aclmdlGetDatasetBuffer(output, i);
        CHECK_ACL(aclrtFree(aclGetDataBufferAddr(buffer)));
        CHECK_ACL(aclDestroyDataBuffer(buffer));
    }
    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(aclrtFree(picDevice));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclrtFree(workPtr));
    CHECK_ACL(aclrtFree(weightPtr));
    EXPECT(aclmdlUnload(modelId) == ACL_ERROR_GE_EXEC_MODEL_ID_INVALID);  // unloaded: 145003
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtDestroyContext(context));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("sample_resnet50_classification: ok\n");
    return 0;
}
