"""The constants the Ascend/samples pyACL classification samples import from their sibling constant.py
(python/level2_simple_inference/1_classification/*/src/constant.py): the same names and values."""
ACL_SUCCESS = 0
ACL_ERROR_GE_SHAPE_INVALID = 145021  # resnet50_imagenet_dynamic_hw's constant.py

NPY_FLOAT32 = 11

ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEM_MALLOC_HUGE_ONLY = 1
ACL_MEM_MALLOC_NORMAL_ONLY = 2

ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
