"""Device code: AscendC kernels compiled for the CPU and run by the emulator, block by block.

The journey of one launch:

1. Build. `ascendc_library` (the toolkit's ascendc.cmake) or `acl-emu c++` hands each kernel source to
   `rewrite.prepare`: launches `k<<<...>>>(...)` and `asm("trap")` rewritten in place, each extern "C" kernel given
   its record and `aclrtlaunch_<k>` (and its header). The host compiler builds it against include/ (AscendC's
   programming model on the CPU: kernel_operator.h) into the program's kernel library.
2. Launch. A launch packs the arguments as the kernel's record lays them out and calls aclEmuLaunchKernel
   (libascendcl), which `emu.runtime.launch.launch_device_code` turns into a kernel task on the stream.
3. Run. When the task starts (stream order, events, capture: as any task), the global-memory pointers among the
   arguments are made host addresses (device memory lies at fixed ones: emu.arena) and `native.run` runs the
   blocks, in order of their index, on the thread that advances the simulation (runner.c). A fault, a trap or a
   failed check ends the launch as an AI Core exception, reported at the next synchronize.
4. Time. The task lasts what `timing` makes of what the blocks did.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AICore", "aicore"]


@dataclass(frozen=True)
class AICore:
    """What device code sees of a product's AI Core."""
    npu_arch: int  # __NPU_ARCH__
    ub_bytes: int  # the Unified Buffer of one core
    source: str


# By product family (the configs' [product] family). Sources: the chips' platform configs of the CANN runtime
# (hicann/runtime src/platform/platform_config/cann/<chip>.ini, ub_size) and asc-devkit's __NPU_ARCH__ values.
_AICORES = {
    "A2": AICore(2201, 196608, "C: ub_size=196608 in hicann/runtime src/platform/platform_config/cann/"
                               "Ascend910B3.ini:56; __NPU_ARCH__ 2201 for dav-2201 (A2, A3) in asc-devkit"),
    "A3": AICore(2201, 196608, "C: ub_size=196608 in hicann/runtime src/platform/platform_config/cann/"
                               "Ascend910_9391.ini:56; __NPU_ARCH__ 2201 for dav-2201 (A2, A3) in asc-devkit"),
}


def aicore(family: str, product: str) -> AICore:
    """The AI Core of a product family; a clear error where device code is not emulated for it."""
    found = _AICORES.get(family)
    if found is None:
        raise LookupError(f"device code is not emulated on {product} (family {family}): its AI Core's figures "
                          f"are not known here; kernels run on {', '.join(sorted(_AICORES))}")
    return found
