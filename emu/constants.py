"""Named ACL constants: the one vocabulary of the emulator for copy kinds, memory locations, allocation
policies and attributes, registration types and flags, event, stream, callback and capture flags and modes.

pyACL exports none (scripts define their own ints); these are for new code and for the emulator itself, and
no other module re-declares them. Values are the C headers' (acl_rt.h, acl_mdl.h), names the headers' own.
Short direction names for the runtime's own code: H2H, H2D, D2H, D2D, DEFAULT, H2B2D (members of
`MemcpyKind`).
"""
import enum


# aclrtMemcpyKind
class MemcpyKind(enum.IntEnum):
    """aclrtMemcpyKind. An int: accepted wherever a copy kind is (emu.runtime, the emu.acl facade)."""

    HOST_TO_HOST = 0
    HOST_TO_DEVICE = 1
    DEVICE_TO_HOST = 2
    DEVICE_TO_DEVICE = 3
    DEFAULT = 4  # the runtime works the direction out from the addresses
    HOST_TO_BUF_TO_DEVICE = 5  # H2D through a runtime buffer: the call returns once the source is read
    INNER_DEVICE_TO_DEVICE = 6  # aclrtMemcpyBatch: within one device
    INTER_DEVICE_TO_DEVICE = 7  # aclrtMemcpyBatch: between devices


ACL_MEMCPY_HOST_TO_HOST = MemcpyKind.HOST_TO_HOST.value
ACL_MEMCPY_HOST_TO_DEVICE = MemcpyKind.HOST_TO_DEVICE.value
ACL_MEMCPY_DEVICE_TO_HOST = MemcpyKind.DEVICE_TO_HOST.value
ACL_MEMCPY_DEVICE_TO_DEVICE = MemcpyKind.DEVICE_TO_DEVICE.value
ACL_MEMCPY_DEFAULT = MemcpyKind.DEFAULT.value
ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = MemcpyKind.HOST_TO_BUF_TO_DEVICE.value
ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = MemcpyKind.INNER_DEVICE_TO_DEVICE.value
ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = MemcpyKind.INTER_DEVICE_TO_DEVICE.value

MEMCPY_KIND_NAMES = {k.value: k.name for k in MemcpyKind}

# The runtime's short names for the copy directions.
H2H, H2D, D2H, D2D = MemcpyKind.HOST_TO_HOST, MemcpyKind.HOST_TO_DEVICE, MemcpyKind.DEVICE_TO_HOST, \
    MemcpyKind.DEVICE_TO_DEVICE
DEFAULT, H2B2D = MemcpyKind.DEFAULT, MemcpyKind.HOST_TO_BUF_TO_DEVICE

# aclrtMemMallocPolicy
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEM_MALLOC_HUGE_ONLY = 1
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3
ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4
ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5
ACL_MEM_MALLOC_HUGE1G_ONLY = 6
ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7
ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x100
ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000
ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000

# aclrtMemAttr (aclrtGetMemInfo)
ACL_DDR_MEM = 0
ACL_HBM_MEM = 1
ACL_DDR_MEM_HUGE = 2
ACL_DDR_MEM_NORMAL = 3
ACL_HBM_MEM_HUGE = 4
ACL_HBM_MEM_NORMAL = 5
ACL_DDR_MEM_P2P_HUGE = 6
ACL_DDR_MEM_P2P_NORMAL = 7
ACL_HBM_MEM_P2P_HUGE = 8
ACL_HBM_MEM_P2P_NORMAL = 9
ACL_HBM_MEM_HUGE1G = 10
ACL_HBM_MEM_P2P_HUGE1G = 11
ACL_MEM_NORMAL = 12
ACL_MEM_HUGE = 13
ACL_MEM_HUGE1G = 14
ACL_MEM_P2P_NORMAL = 15
ACL_MEM_P2P_HUGE = 16
ACL_MEM_P2P_HUGE1G = 17

# aclrtMemLocationType
class Location(enum.IntEnum):
    """aclrtMemLocationType: where memory is (the address space's answer for a pointer, and the location
    a batch copy or a fill config names)."""

    HOST = 0
    DEVICE = 1
    UNREGISTERED = 2  # pageable host memory the runtime does not know
    MANAGED = 3
    HOST_NUMA = 4


ACL_MEM_LOCATION_TYPE_HOST = Location.HOST.value
ACL_MEM_LOCATION_TYPE_DEVICE = Location.DEVICE.value
ACL_MEM_LOCATION_TYPE_UNREGISTERED = Location.UNREGISTERED.value
ACL_MEM_LOCATION_TYPE_MANAGED = Location.MANAGED.value
ACL_MEM_LOCATION_TYPE_HOST_NUMA = Location.HOST_NUMA.value

# aclrtMallocAttrType (aclrtMallocWithCfg / aclrtMallocHostWithCfg attributes)
ACL_RT_MEM_ATTR_RSV = 0
ACL_RT_MEM_ATTR_MODULE_ID = 1
ACL_RT_MEM_ATTR_DEVICE_ID = 2
ACL_RT_MEM_ATTR_VA_FLAG = 3

# aclrtHostRegisterType (aclrtHostRegister)
ACL_HOST_REGISTER_MAPPED = 0
ACL_HOST_REGISTER_IOMEMORY = 0x4
ACL_HOST_REGISTER_READONLY = 0x8

# aclrtHostRegisterV2 flags
ACL_HOST_REG_MAPPED = 0x2
ACL_HOST_REG_IOMEMORY = 0x4
ACL_HOST_REG_READONLY = 0x8
ACL_HOST_REG_PINNED = 0x10000000

# event flags
ACL_EVENT_SYNC = 0x1
ACL_EVENT_CAPTURE_STREAM_PROGRESS = 0x2
ACL_EVENT_DDSYNC = 0x4  # internal: the wait capability aclrtCreateEvent gives
ACL_EVENT_TIME_LINE = 0x8
ACL_EVENT_DEVICE_USE_ONLY = 0x10
ACL_EVENT_EXTERNAL = 0x20
ACL_EVENT_IPC = 0x40
ACL_EVENT_DEFAULT_FLAGS = 0x0E  # what aclrtCreateEvent uses

# aclrtEventWaitStatus
ACL_EVENT_WAIT_STATUS_COMPLETE = 0
ACL_EVENT_WAIT_STATUS_NOT_READY = 1

# aclrtEventRecordedStatus
ACL_EVENT_RECORDED_STATUS_NOT_READY = 0
ACL_EVENT_RECORDED_STATUS_COMPLETE = 1

# aclrtStreamStatus
ACL_STREAM_STATUS_COMPLETE = 0
ACL_STREAM_STATUS_NOT_READY = 1

# stream flags
ACL_STREAM_FAST_LAUNCH = 0x1
ACL_STREAM_FAST_SYNC = 0x2
ACL_STREAM_PERSISTENT = 0x4
ACL_STREAM_HUGE = 0x8
ACL_STREAM_CPU_SCHEDULE = 0x10
ACL_STREAM_DEVICE_USE_ONLY = 0x20

# aclrtCallbackBlockType
ACL_CALLBACK_NO_BLOCK = 0
ACL_CALLBACK_BLOCK = 1

# aclmdlRICaptureMode
ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0
ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL = 1
ACL_MODEL_RI_CAPTURE_MODE_RELAXED = 2

# aclmdlRICaptureStatus
ACL_MODEL_RI_CAPTURE_STATUS_NONE = 0
ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE = 1
ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED = 2

# aclrtRunMode
ACL_DEVICE = 0
ACL_HOST = 1

SIZE_MAX = (1 << 64) - 1
