"""ACL error codes and the exception the runtime raises.

`emu.runtime` raises `AclError(code, message)`; the `emu.acl` facade turns it
into the integer return code pyACL scripts expect.
"""
from __future__ import annotations

import threading

# The ACL codes the emulator returns, with the values of the runtime's public headers (each group cites its own).

# generic ACL codes: hicann/runtime include/external/acl/acl_base_rt.h
ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_UNINITIALIZE = 100001
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_INVALID_FILE = 100003  # aclInit: a config file missing, unreadable, not regular or over 10 MiB
ACL_ERROR_PARSE_FILE = 100006  # aclInit: a config file that is not JSON (or nested too deeply)
ACL_ERROR_REPEAT_FINALIZE = 100037
ACL_ERROR_BAD_ALLOC = 200000
ACL_ERROR_API_NOT_SUPPORT = 200001
ACL_ERROR_INVALID_DEVICE = 200002
ACL_ERROR_MEMORY_ADDRESS_UNALIGNED = 200003
ACL_ERROR_FEATURE_UNSUPPORTED = 200006
ACL_ERROR_INTERNAL_ERROR = 500000
ACL_ERROR_FAILURE = 500001
ACL_ERROR_GE_FAILURE = 500002  # what the model layer returns for a graph-engine failure outside GE's own ranges
ACL_ERROR_RT_FAILURE = 500003

# graph-engine codes the model APIs return: hicann/ge inc/external/ge/ge_error_codes.h
ACL_ERROR_GE_PARAM_INVALID = 145000
ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID = 145002
ACL_ERROR_GE_EXEC_MODEL_ID_INVALID = 145003
ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID = 145006
ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID = 145012
ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID = 145013

# runtime parameter and state codes: hicann/runtime include/external/acl/error_codes/rt_error_codes.h
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_INVALID_DEVICEID = 107001
ACL_ERROR_RT_CONTEXT_NULL = 107002
ACL_ERROR_RT_STREAM_CONTEXT = 107003
ACL_ERROR_RT_MODEL_CONTEXT = 107004
ACL_ERROR_RT_STREAM_MODEL = 107005
ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID = 107006
ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL = 107007
ACL_ERROR_RT_ADDR_UNALIGNED = 107008
ACL_ERROR_RT_STREAM_SUBSCRIBE = 107011  # host callbacks
ACL_ERROR_RT_THREAD_SUBSCRIBE = 107012
ACL_ERROR_RT_STREAM_NO_CB_REG = 107015
ACL_ERROR_RT_REPORT_TIMEOUT = 507012  # process_report's timeout (an execution code, kept with the callbacks')
ACL_ERROR_RT_INVALID_MEMORY_TYPE = 107016
ACL_ERROR_RT_INVALID_HANDLE = 107017
ACL_ERROR_RT_INVALID_MALLOC_TYPE = 107018
ACL_ERROR_RT_DEVICE_TASK_ABORT = 107022
ACL_ERROR_RT_STREAM_ABORT = 107023
ACL_ERROR_RT_CAPTURE_DEPENDENCY = 107024
ACL_ERROR_RT_STREAM_UNJOINED = 107025
ACL_ERROR_RT_MODEL_CAPTURED = 107026
ACL_ERROR_RT_STREAM_CAPTURED = 107027
ACL_ERROR_RT_EVENT_CAPTURED = 107028
ACL_ERROR_RT_STREAM_NOT_CAPTURED = 107029
ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT = 107030
ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT = 107031
ACL_ERROR_STREAM_CAPTURE_CONFLICT = 107032
ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED = 107036
ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD = 107038
ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC = 107041
ACL_ERROR_RT_SUB_ACLGRAPH_IS_CAPTURING = 107045

# runtime resource codes: hicann/runtime include/external/acl/error_codes/rt_error_codes.h
ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000
ACL_ERROR_RT_MEMORY_ALLOCATION = 207001
ACL_ERROR_RT_MEMORY_FREE = 207002
ACL_ERROR_RT_NO_DEVICE = 207004
ACL_ERROR_RT_RESOURCE_ALLOC_FAIL = 207005
ACL_ERROR_RT_NO_EVENT_RESOURCE = 207007
ACL_ERROR_RT_NO_STREAM_RESOURCE = 207008
ACL_ERROR_RT_OVER_LIMIT = 207012
ACL_ERROR_RT_DEVICE_OOM = 207018
ACL_ERROR_RT_TIMEOUT = 207020
ACL_ERROR_RT_LINK_TYPE_NOT_SUPPORTED = 207021

# runtime internal and execution codes: hicann/runtime include/external/acl/error_codes/rt_error_codes.h
ACL_ERROR_RT_INTERNAL_ERROR = 507000
ACL_ERROR_RT_TS_ERROR = 507001
ACL_ERROR_RT_STREAM_TASK_FULL = 507002
ACL_ERROR_RT_STREAM_NOT_COMPLETE = 507004
ACL_ERROR_RT_EVENT_NOT_COMPLETE = 507006
ACL_ERROR_RT_CONTEXT_RELEASE_ERROR = 507007
ACL_ERROR_RT_SYS_DMA = 507013
ACL_ERROR_RT_AICORE_EXCEPTION = 507015
ACL_ERROR_RT_DEV_SETUP_ERROR = 507033
ACL_ERROR_RT_VECTOR_CORE_EXCEPTION = 507035
ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046
ACL_ERROR_RT_EVENT_SYNC_TIMEOUT = 507047
ACL_ERROR_RT_COPY_DATA = 507052
ACL_ERROR_RT_DEVICE_MEM_ERROR = 507053
ACL_ERROR_RT_DRV_INTERNAL_ERROR = 507899
ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED = 507903
ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 507910
ACL_ERROR_HOST_MEMORY_NOT_REGISTERED = 507911

# Every code above: name -> value, in the order above.
CODES: dict[str, int] = {name: value for name, value in globals().items() if name.startswith("ACL_")}
NAMES: dict[int, str] = {v: k for k, v in CODES.items()}  # 0 -> ACL_SUCCESS
ACL_ERROR_NONE = 0  # acl_base_rt.h's older name of ACL_SUCCESS; not in CODES, so 0 is named ACL_SUCCESS


def name_of(code: int) -> str:
    return NAMES.get(code, f"<unknown ACL code {code}>")


class AclError(Exception):
    """An ACL call failed with `code`; `message` says why, as the runtime log would.

    warns: the pyACL facade also shows the message as a RuntimeWarning, not only as the code (and
    acl.get_recent_err_msg): set by the errors of calls a program cannot learn the cause of from the code, such
    as a wait the board would never return from (`emu.runtime.CallbackDeadlock`)."""

    warns = False

    def __init__(self, code: int, message: str = ""):
        super().__init__(code, message)
        self.code = int(code)
        self.message = message

    @property
    def name(self) -> str:
        return name_of(self.code)

    def __str__(self) -> str:
        return f"{self.name} ({self.code}): {self.message}" if self.message else f"{self.name} ({self.code})"


class DeviceException(AclError):
    """A task failed on the device with `code` (an AI Core exception): the next synchronize of its stream
    returns that code, where any other failure of a task returns 507899."""

    warns = True


class BatchError(AclError):
    """A batch copy failed; `fail_index` is the entry concerned, SIZE_MAX when none is, or None when the call failed
    before the runtime writes the caller's failIndex at all (the ACL layer's checks, the chip gate, the stream)."""

    def __init__(self, code: int, message: str, fail_index: int | None):
        super().__init__(code, message)
        self.fail_index = fail_index


class NotEmulated(NotImplementedError):
    """A feature the emulator does not provide; raised loudly instead of guessing."""


# The message of the last failed call, per host thread (acl.get_recent_err_msg).
_recent = threading.local()


def set_recent_error(message: str | None) -> None:
    _recent.message = message


def recent_error() -> str | None:
    return getattr(_recent, "message", None)
