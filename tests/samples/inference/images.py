"""Generated images in place of the samples' JPEG files: the arrays the samples' transfer_pic functions make from a
decoded picture, from a seeded numpy generator (no PIL, no files). tests/test_inference_samples.py imports this
module to compute the outputs the declared models write for these inputs."""
import numpy as np


def picture(seed, height, width):
    """A decoded RGB picture (height x width x 3, uint8): what PIL's Image.open gives for image `seed`."""
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


def caffe_input(seed):
    """resnet50_imagenet_classification's transfer_pic on a 256x256 picture (the size it resizes to): the centre
    224x224 crop, RGB to BGR, float16 minus the channel means 104, 117, 123, NCHW, flattened."""
    img = picture(seed, 256, 256)
    h_off = w_off = (256 - 224) // 2
    img = img[h_off:256 - h_off, w_off:256 - w_off, ::-1].astype("float16")
    img[:, :, 0] -= 104
    img[:, :, 1] -= 117
    img[:, :, 2] -= 123
    img = img.reshape([1, 224, 224, 3]).transpose([0, 3, 1, 2])
    return np.frombuffer(img.tobytes(), np.float16)


def tf_input(seed, h, w):
    """resnet50_imagenet_dynamic_hw's transfer_pic at the gear h x w: an NHWC uint8 picture, flattened."""
    return np.frombuffer(picture(seed, h, w).reshape([1, h, w, 3]).tobytes(), np.uint8)
