"""Fixtures of the plot tests: small fabrics, hand-built (:mod:`plot._fabrics`) where no
builder makes the same graph.

A test module may override one with a built fabric of the same name (``test_link_load.py``).
"""

from __future__ import annotations

import networkx as nx
import pytest

from plot._fabrics import two_layer
from topo.builders import build


@pytest.fixture
def mpft() -> nx.Graph:
    """2 planes; 4 nodes of 2 GPUs; per plane 2 leaves (2 NICs each) and 2 spines.
    8 GPUs + 8 NICs + 4 NVSwitches + 4 leaves + 4 spines = 28 vertices; 8 NVLink + 8 PCIe +
    8 NIC cables + 2 planes * 2 * 2 leaf-spine edges = 32 edges."""
    return two_layer("mpft", nodes=4, gpus_per_node=2, leaves=2, spines=2)


@pytest.fixture
def ft2() -> nx.Graph:
    """One plane; 2 nodes of 4 GPUs; 2 leaves of 4 NICs, 2 spines, 2 cables per leaf-spine
    pair. 8 GPUs + 8 NICs + 2 NVSwitches + 2 leaves + 2 spines = 22 vertices, 28 edges."""
    return two_layer("ft2", nodes=2, gpus_per_node=4, leaves=2, spines=2, links_per_pair=2)


@pytest.fixture
def mrft() -> nx.Graph:
    """2 rails; 4 nodes of 2 GPUs; 2 leaves per rail; 2 shared spines. 26 vertices.

    The builder's full MRFT of 4-port switches (each leaf: 2 NICs down, 2 spines up), NVLink
    400 GB/s per GPU like the hand-built fabrics."""
    G = build("mrft", switch_ports=4, gpus_per_node=2, nics_per_node=2, nvlink_GBps=400)
    assert G.number_of_nodes() == 26
    return G
