"""All-to-all bandwidth of the compared families (topo.cost.bandwidth), by the flow solver.

A non-blocking fat tree of 400 Gb/s cables gives every GPU its NIC's line rate across servers,
50 GB/s (max concurrent flow on a non-blocking fat tree equals the line rate); a fabric larger
than ``SOLVE_GPUS`` is solved on a partial one of that size, which has the same per-GPU rate.
"""

from __future__ import annotations

import pytest

from topo.cost import SOLVE_GPUS, compare, solve_bandwidth


def test_fat_trees_are_solved_at_full_size_at_line_rate():
    # 8-port switches: FT2 k^2/2 = 32 endpoints (4 servers of 8 NICs), MPFT 8 planes of 32.
    rows = compare(["ft2", "mpft"], switch_ports=8)
    bw = solve_bandwidth(rows, switch_ports=8)
    assert [b.family for b in bw] == ["ft2", "mpft"]
    assert [b.instance for b in bw] == ["full size, 32 GPUs", "full size, 256 GPUs"]
    assert all(b.full_size and b.solve_seconds > 0 for b in bw)
    assert [b.internode_GBps for b in bw] == [pytest.approx(50.0, rel=1e-6)] * 2


def test_dragonfly_is_solved_on_a_small_instance():
    (row,) = compare(["dragonfly"], switch_ports=8)
    (b,) = solve_bandwidth([row], switch_ports=8)
    assert not b.full_size and b.instance.startswith("a = 4, p = h = 2, 9 groups, 72 GPUs")
    assert 0 < b.internode_GBps <= 50.0 * (1 + 1e-9)  # at most the NIC's line rate
    assert SOLVE_GPUS == 16_384
