"""The model's records have names: Task refuses a field it does not declare, the positional records are
NamedTuples."""
import pytest

from emu import config
from emu.models.hardware import HOST, Plan, Tlp
from emu.models.machine import COPY, GROUP, Batch, Machine, Path, Shape, Task, _Lane


def _hardware():
    return config.load("910B").hardware


@pytest.mark.parametrize("make", [lambda: Task.copy(4096, 0, HOST, 0, "copy"),
                                  lambda: Task("kernel", device=0, duration=1e-6)], ids=["copy", "kernel"])
def test_an_unknown_field_set_on_a_task_is_refused(make):
    t = make()
    with pytest.raises(AttributeError):
        t.nbyte = 1  # (misspelt)
    with pytest.raises(AttributeError):
        t.sanitize_note = 1
    assert not hasattr(t, "__dict__")
    for name in Task.NOTES:  # the notes a caller may keep: unset until set
        assert getattr(t, name, None) is None
        setattr(t, name, "noted")
        assert getattr(t, name) == "noted"


def test_a_lane_refuses_unknown_fields_too():
    lane = _Lane.copy(64, 0, HOST, 0, "lane")
    with pytest.raises(AttributeError):
        lane.stepp = 1
    assert not hasattr(lane, "__dict__")


def test_the_records_are_named_tuples_with_their_fields():
    assert Path._fields == ("route", "links", "weights", "names", "latency", "tlp")
    assert Shape._fields == ("route", "names", "links", "weights", "wire", "tail")
    assert Plan._fields == ("route", "spec", "latency", "tlp")
    assert Tlp._fields == ("payload", "overhead")


def test_a_machine_builds_its_records_as_named_tuples():
    hw = _hardware()
    plan = hw.plan(False, HOST, 0)
    assert isinstance(plan, Plan) and plan.route == "h2d" and plan == tuple(plan)
    assert plan.tlp is None or isinstance(plan.tlp, Tlp)
    m = Machine(hw)
    s = m.stream("s", 0)
    t = m.submit(s, Task.copy(1 << 20, 0, HOST, 0, "copy"), 0.0)
    m.wait(t)
    path = m._paths[(COPY, HOST, 0)]
    assert isinstance(path, Path) and path.route == "h2d" and path.names == t.links
    (shape,) = m._shapes.values()
    assert Shape(*shape).route == "h2d" and Shape(*shape).wire >= 1 << 20
    g = m.submit(s, Task(GROUP, device=0, batch=Batch([4096] * 64, -1, 0, 0)), 0.0)
    assert m.wait(g) >= t.end


def test_the_networks_plain_tuple_records_are_laid_out_as_their_field_names_say():
    """The network's heap entries (built where a NamedTuple would cost) stay plain tuples: their fields are named
    once, in the layouts, and the entries it builds hold what those names say."""
    import simpy

    from emu.models import Link, Network
    from emu.models import network as net_mod
    from emu.models.network import HEAP_ENTRY, LINK_TIMER, QUEUE_ENTRY, SHARING, TAG_ENTRY, Flow

    assert HEAP_ENTRY == ("due", "seq", "version", "flow")
    assert TAG_ENTRY == ("tag", "seq", "flow")
    assert QUEUE_ENTRY == ("level", "kind", "uid", "stamp", "link")
    assert LINK_TIMER == ("link", "version")
    assert (net_mod._DUE, net_mod._VERSION, net_mod._FLOW, net_mod._TAG) == (0, 2, 3, 0)

    env = simpy.Environment()
    net = Network(env)
    a, b, c = Link("a", 1e9), Link("b", 2e9), Link("c", 1e9)
    shared = [net.start([a, b], 1e6, lambda: None), net.start([a], 2e6, lambda: None, tail=1e-6)]
    alone = [net.start([c], 1e6 * (i + 1), lambda: None) for i in range(4)]  # a service clock on c
    env.run(until=1e-9)  # (the instant's flush)
    entries = [dict(zip(HEAP_ENTRY, e)) for e in net._heap]
    current = [r for r in entries if r["version"] == r["flow"].version]
    assert sorted((r["flow"] for r in current), key=id) == sorted(shared, key=id)
    for r in current:
        assert isinstance(r["flow"], Flow) and r["due"] == r["flow"].finish and isinstance(r["seq"], int)
    assert c.service is not None and len(c.tags) == 4
    for r in (dict(zip(TAG_ENTRY, e)) for e in c.tags):
        assert r["flow"] in alone and r["flow"].state == SHARING and r["tag"] == r["flow"].tag
    env.run()
    assert net.idle
