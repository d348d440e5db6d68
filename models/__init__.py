"""Timing model of the hardware that moves the bytes. Never imports `emu`."""
from .hardware import ROUTES, Hardware, Route
from .machine import COPY, FILL, KERNEL, MARKER, Machine, Stream, Task

__all__ = ["ROUTES", "Hardware", "Route", "Machine", "Stream", "Task", "COPY", "FILL", "KERNEL", "MARKER"]
