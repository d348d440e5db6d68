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
4. Time. The task lasts what the product's AI Core (models.aicore) makes of what the blocks did.
"""
from __future__ import annotations

from ..config import Product
from ..models import AICore

__all__ = ["aicore"]


def aicore(product: Product) -> AICore:
    """The product's AI Core ([aicore] of its config); a clear error where device code does not run on it."""
    if product.aicore is None:
        raise LookupError(f"device code is not emulated on {product.name}: its config has no [aicore] table "
                          f"(the AI Core's figures); kernels run on 910B, 910B-Gen5 and A3")
    return product.aicore
