"""Timing model of the hardware that moves the bytes. Never imports `emu`.

    hw = Hardware(...)            # or emu.config.load("910B").hardware
    m = Machine(hw)
    s = m.stream("s0", device=0)
    t = m.submit(s, Task(COPY, nbytes=1 << 30, device=0, src=None, dst=0), at=0.0)
    m.wait(t)                     # simulated seconds

    Machine(hw, network=ReferenceNetwork(Clock()))   # the same task times, every rate recomputed at every change
"""
from .aicore import AICore, Work
from .clock import Clock
from .hardware import HOST, DeviceLink, Hardware, Host, HostLink, Staging
from .machine import COPY, FILL, GROUP, KERNEL, MARKER, STAGED, Machine, Stream, Task
from .network import Flow, Link, Network
from .pcie import PcieLink
from .reference import ReferenceNetwork
from . import trace

__all__ = ["AICore", "Work", "HOST", "DeviceLink", "Hardware", "Host", "HostLink", "Staging", "Machine", "Stream", "Task", "COPY", "FILL",
           "GROUP", "KERNEL", "MARKER", "STAGED", "Flow", "Link", "Network", "PcieLink", "trace",
           "Clock", "ReferenceNetwork"]
