"""All-to-all bandwidth of the compared families (topo.cost.bandwidth), by the flow solver.

A non-blocking fat tree of 400 Gb/s cables gives every GPU its NIC's line rate across servers,
50 GB/s (max concurrent flow on a non-blocking fat tree equals the line rate); a fabric larger
than ``SOLVE_GPUS`` is solved on a partial one of that size, which has the same per-GPU rate.
"""

from __future__ import annotations

import pytest

from topo.cost import SOLVE_GPUS, compare, solve_bandwidth


def test_a_fat_tree_is_solved_at_full_size_at_line_rate():
    # 64-port switches: FT2 k^2/2 = 2,048 endpoints, 256 servers of 8 NICs and 8 GPUs.
    (row,) = compare(["ft2"])
    (b,) = solve_bandwidth([row])
    assert (b.family, b.instance, b.full_size) == ("ft2", "full size, 2,048 GPUs", True)
    assert b.internode_GBps == pytest.approx(50.0, rel=1e-6)
    assert b.solve_seconds > 0


def test_dragonfly_is_solved_on_a_small_instance():
    # Table 3's Dragonfly of 64-port routers is counted by the formulas (261,632 endpoints).
    (row,) = compare(["dragonfly"])
    (b,) = solve_bandwidth([row])
    assert not b.full_size and b.instance.startswith("a = 4, p = h = 2, 9 groups, 72 GPUs")
    assert 0 < b.internode_GBps <= 50.0 * (1 + 1e-9)  # at most the NIC's line rate
    assert SOLVE_GPUS == 16_384
