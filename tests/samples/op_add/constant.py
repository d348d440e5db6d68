"""Constants of the single-operator sample, in their own module: the sample imports them as a sibling
(`from constant import ...`), so it only runs with its own folder first on sys.path."""
ACL_SUCCESS = 0
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_FORMAT_ND = 2
ACL_INT32 = 3
