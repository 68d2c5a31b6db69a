"""As-routed tables state bundles of parallel cables apart from the busiest cable (issue 13)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.flow.routing import routed_alltoall


def test_tier_loads_count_bundles_and_cables_by_hand():
    # ft2 of 16-port switches, 32 GPUs (4 servers of 8): 4 leaves of 8 NICs (400G, 50 GB/s)
    # and 8 uplinks, 2 spines, so each leaf-spine link is a bundle of 4 cables (200 GB/s).
    # Every GPU sends to the 24 GPUs off its leaf: 32 x 24 pair-units over 8 up links,
    # mean 96 pair rates per bundle.
    G = build("ft2", switch_ports=16, gpus=32)
    r = routed_alltoall(G, "ecmp", seed=0)
    tiers = {t.tier: t for t in r.routing.tiers}
    up = tiers["leaf->spine"]
    assert (up.links, up.cables) == (8, 32)
    assert up.capacity_Bps == pytest.approx(200e9)
    assert up.mean_Bps == pytest.approx(96 * r.pair_rate_Bps, rel=1e-9)
    assert (tiers["nic->leaf"].links, tiers["nic->leaf"].cables) == (32, 32)
    assert up.to_dict()["cables"] == 32
    for b in r.routing.loaded_links:
        if "spine" in b.tier:
            assert b.cables == 4 and b.capacity_Bps == pytest.approx(200e9)
        # the busiest of a bundle's cables is at least as loaded as their mean
        assert b.utilization >= b.load_Bps / b.capacity_Bps * (1 - 1e-12)


def test_cli_loaded_links_table_has_cables_and_is_ordered_by_its_claim(tmp_path):
    path = tmp_path / "ft2.json"
    runner = CliRunner()
    args = ["build", "ft2", "--switch-ports", "16", "--gpus", "32", "-o", str(path)]
    assert runner.invoke(app, args).exit_code == 0
    text = runner.invoke(app, ["bandwidth", str(path), "--routing", "ecmp"], terminal_width=250)
    lines = text.output.splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("most loaded links"))
    assert "by the busiest cable's utilisation" in lines[start]
    head = [c.strip() for c in lines[start + 2].strip("┃ ").split("┃")]
    assert head == [
        "from",
        "to",
        "tier",
        "cables",
        "capacity GB/s",
        "load GB/s",
        "bundle util.",
        "busiest cable util.",
    ]
    rows = [[c.strip() for c in s.strip("│ ").split("│")] for s in lines[start + 4 :] if "│" in s]
    busiest = [float(r[7].rstrip("%")) for r in rows]
    assert rows and busiest == sorted(busiest, reverse=True) and busiest[0] == 100.0
    for r in rows:
        cables, cap, load, bundle = int(r[3]), float(r[4]), float(r[5]), float(r[6][:-1])
        assert (cables, cap) == (4, 200.0)  # 4 cables of 50 GB/s per leaf-spine bundle
        assert bundle == pytest.approx(100 * load / cap, abs=0.06)
        assert bundle <= float(r[7][:-1]) + 0.05
