"""Vector clocks over the run's agents: its streams and its host threads.

Each agent counts its own steps (`n`) and keeps `base`, what it knows of the others: agent id -> the step of
that agent it is ordered after. A `base` dict is never changed once made (a join makes a new one when it
adds something), so a task or a host access keeps the agent's `base` by reference: its clock is
(agent, n, base), three fields, whatever the number of agents.

x happens before y when x's step is one y knows: on one agent, x.n <= y.n; otherwise x.n <= y.base[x.agent].

How the runtime's edges move the clocks (checker.py):
- a task queued on a stream: the stream joins the queuing thread's clock and the clocks of the tasks it
  waits for (event waits), then takes a step; the task gets the stream's clock;
- a host thread's own access (a blocking copy, a read through acl.util): the thread takes a step if it has
  queued work since its last one (so the access is not ordered before that work), and the access gets the
  thread's clock;
- a host thread that waits for a task (every form of synchronize, a query that reports it complete, a
  blocking call that drains a stream) joins the task's clock;
- a thread starts with its parent's clock at `threading.Thread.start` (the parent then takes a step before its
  next access); a thread that joins another (`threading.Thread.join` of an ended thread) joins its clock; a
  pool task joins its submitter's clock, and the caller of its `Future.result` the task's (threads.py).
"""
from __future__ import annotations


class Agent:
    """A stream or a host thread, as the clocks see it. `version` changes with `n` or `base`, so that a
    stream can tell cheaply whether a thread's clock moved since it last joined it (`seen`)."""

    __slots__ = ("id", "n", "base", "version", "seen", "released")

    def __init__(self, agent_id: int, base: dict | None = None):
        self.id = agent_id
        self.n = 1
        self.base = base if base is not None else {}
        self.version = 0
        self.seen: dict[int, int] = {}  # (streams) thread id -> that thread's version when last joined
        self.released = False  # (threads) queued work since its last step

    def step(self) -> None:
        self.n += 1
        self.version += 1

    def join(self, agent: int, n: int, base: dict) -> bool:
        """Learn what the clock (agent, n, base) knows; whether anything was new."""
        new = join(self.base, agent, n, base)
        if new is self.base:
            return False
        self.base = new
        self.version += 1
        return True


def join(base: dict, agent: int, n: int, other: dict) -> dict:
    """`base` with what (agent, n, other) knows added: `base` itself when that is nothing new."""
    out = None
    if base.get(agent, 0) < n:
        out = dict(base)
        out[agent] = n
    if other is not base:
        for k, v in other.items():
            if (out or base).get(k, 0) < v:
                if out is None:
                    out = dict(base)
                out[k] = v
    return base if out is None else out

