"""Permutation traffic, against hand counts."""

from __future__ import annotations

import pytest

from topo.builders import build
from topo.errors import TopoError
from topo.traffic import permutation


@pytest.fixture(scope="module")
def G():
    return build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4)  # 32 GPUs, 8 servers


def test_server_permutation(G):
    # 0 -> 1 -> 2 -> 0 carries 3 B per pair; 5 -> 5 is a fixed point (no fabric traffic)
    d = permutation(G, {0: 1, 1: 2, 2: 0, 5: 5}, 3.0, level="server")
    assert d.level == "server" and d.terminals == tuple(range(8))
    assert dict(d.entries) == {(0, 1): 3.0, (1, 2): 3.0, (2, 0): 3.0}
    assert d.total_bytes == 9.0 and d.peak_bytes == 3.0 and d.load(5) == 0.0


def test_gpu_permutation_is_the_default_level(G):
    # every GPU of server 0 to the same-index GPU of server 1 and back
    m = {f"node{a}/gpu{i}": f"node{b}/gpu{i}" for a, b in ((0, 1), (1, 0)) for i in range(4)}
    d = permutation(G, m)
    assert d.level == "gpu" and len(d.terminals) == 32 and d.total_bytes == 8.0
    assert d.hose_time(dict.fromkeys(d.terminals, 0.5)) == pytest.approx(2.0)  # 1 B at 0.5 B/s


@pytest.mark.parametrize(
    "mapping, match",
    [
        ({0: 2, 1: 2}, "both send to 2"),
        ({0: 0, 1: 1}, "maps every terminal to itself"),
        ({0: 99}, "unknown terminal 99"),
    ],
)
def test_bad_permutations_are_refused(G, mapping, match):
    with pytest.raises(TopoError, match=match):
        permutation(G, mapping, level="server")
    with pytest.raises(TopoError, match="finite and > 0"):
        permutation(G, {0: 1}, -1.0, level="server")
