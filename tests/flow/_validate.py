"""Validation of flow solutions, shared by the flow tests."""

from __future__ import annotations

from collections import defaultdict

import pytest


def validate_flows(arcs, capacity, commodities, sol, commodity_arcs=None, tol=1e-6):
    """Check a solution the way networkx's max-flow tests do: capacity, conservation, and
    every commodity's demands met at the scale theta."""
    total = defaultdict(float)
    for k, (com, flows) in enumerate(zip(commodities, sol.commodity_flow, strict=True)):
        net = defaultdict(float)
        for a, x in flows.items():
            assert x >= -tol
            if commodity_arcs is not None:
                assert a in set(commodity_arcs[k]), f"commodity {k} uses forbidden arc {a}"
            u, v = arcs[a]
            net[u] += x
            net[v] -= x
            total[a] += x
        supply = sum(com.demands.values()) * sol.theta
        for v in set(net) | set(com.demands) | {com.source}:
            want = supply if v == com.source else -com.demands.get(v, 0.0) * sol.theta
            assert net[v] == pytest.approx(want, abs=tol * max(1.0, supply)), (k, v)
    for a, x in total.items():
        assert x <= capacity[a] * (1 + tol)
