"""Tests of topo.plot.cost: the columns of the cost chart, from a comparison and bandwidths
given (the chart computes nothing itself), and the figure."""

from __future__ import annotations

import pytest

from topo.cost import SolvedBandwidth, compare
from topo.plot.cost import _cost_chart_data, plot_cost

SWITCH, LINK, ENDPOINT = 44_500, 1_680, 600  # the default book's prices


def test_chart_data():
    rows = compare(["ft2", "slimfly"])
    bw = [SolvedBandwidth("ft2", 50.0, "full size", True, 0.1)]
    d = _cost_chart_data(rows, bw)
    assert d["family"] == ["ft2", "slimfly"]
    per_ep = (96 * SWITCH + 2048 * (LINK + ENDPOINT)) / 2048 / 1e3
    assert d["kusd_per_endpoint"][0] == pytest.approx(per_ep)
    assert d["GBps_per_kusd"] == [pytest.approx(50.0 / per_ep), None]
    assert "counts from the formulas" in d["label"][1]
    fig = plot_cost(rows, bw)
    assert len(fig.data) == 2 and fig.layout.barmode == "group"
