"""What the study figures say at a glance: peaks written, identical curves drawn once, four comparison
panels, one size-label style, the p2p diagonal named, the floor on overlap figures."""
from __future__ import annotations

import re

import pytest

from emu.studies import bandwidth, bandwidth_report, compare, compare_report, overlap, overlap_report
from emu.studies.common import same_curves, size_label

SIZES = [4096, 1 << 20, 64 << 20]
LABEL = re.compile(r"^\d+(\.\d+)?(B|KiB|MiB|GiB|TiB)$")


@pytest.fixture(scope="module")
def measured():
    return bandwidth.measure("910B", SIZES, peer_sizes=[1 << 20])


def _legend(ax) -> list[str]:
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def _size_ticks(ax) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text()]


def test_the_bandwidth_plot_writes_each_peak_and_draws_coinciding_curves_once(measured):
    fig = bandwidth_report.bandwidth_figure(measured)
    left, right = fig.axes[:2]
    labels = _legend(left)
    curves = [t for t in labels if "peak" in t]
    assert curves and all(re.search(r"peak [\d.]+ GB/s at \d", t) for t in curves)
    # page-locked and registered memory give the same curve on 910B: one line named for both
    assert any("pinned = registered" in t for t in labels), labels
    assert not any(t.startswith("H2D registered") for t in labels)
    assert any("peak" in t for t in _legend(right))


def test_every_size_axis_writes_sizes_one_way(measured):
    figs = [bandwidth_report.bandwidth_figure(measured)]
    figs.append(compare_report.bandwidth_figure(compare.compare_bandwidth(["910B", "A3"], SIZES,
                                                                          peer_sizes=[1 << 20])))
    for fig in figs:
        for ax in fig.axes:
            ticks = _size_ticks(ax) if ax.get_xlabel() == "message size" else []
            assert all(LABEL.match(t) for t in ticks), ticks
    assert size_label(4096) == "4KiB" and size_label(1 << 30) == "1GiB"


def test_the_comparison_draws_h2d_d2h_d2d_and_peer():
    result = compare.compare_bandwidth(["910B", "A3", "950PR"], SIZES, peer_sizes=[1 << 20])
    fig = compare_report.bandwidth_figure(result)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[:4] == ["H2D", "D2H", "D2D on device 0", "peer: the fastest device pair, one way"]
    for ax in fig.axes[:4]:
        assert ax.get_lines() and all("peak" in t for t in _legend(ax))
    # the products' D2D curves coincide (one HBM figure): drawn once, named for all three
    d2d = _legend(fig.axes[2])
    assert len(fig.axes[2].get_lines()) == 1 and d2d[0].startswith("910B = A3 = 950PR"), d2d
    assert any("HCCS" in t for t in _legend(fig.axes[3]))


def test_the_p2p_diagonal_says_what_it_is(measured):
    fig = bandwidth_report.p2p_figure(measured)
    texts = [t.get_text() for t in fig.axes[0].texts]
    n = measured["p2p"]["devices"]
    assert texts.count("self") == n
    assert "self: a device with itself" in fig._suptitle.get_text()
    assert "no peer access" in fig._suptitle.get_text()


def test_every_overlap_figure_draws_the_floor():
    result = overlap.plan("910B", 8 << 20, 2 << 20, 300, [1, 2], [1, 4], extend=False)
    fig = overlap_report.gantt_figure(result, overlap.timelines("910B", result))
    for ax in fig.axes:
        assert any(abs(line.get_xdata()[0] - result["floor_ms"]) < 1e-12 for line in ax.get_lines())
        assert any(t.get_text().strip().startswith("floor") for t in ax.texts)
    cmp = compare.compare_overlap(["910B", "A3"], 8 << 20, 2 << 20, 300, [1, 2], [1, 4], extend=False)
    bars = compare_report.overlap_figure(cmp)
    assert any(t.startswith("floor") for t in _legend(bars.axes[0]))


def test_same_curves_groups_only_what_coincides():
    a = [(1, 1.0), (2, 2.0)]
    groups = same_curves({"x": a, "y": list(a), "z": [(1, 1.0), (2, 2.1)]})
    assert [names for names, _ in groups] == [["x", "y"], ["z"]]
    assert [names for names, _ in same_curves({"x": a, "z": [(1, 1.0), (2, 2.001)]}, rel=1e-2)] == [["x", "z"]]
