"""Every leaf failed: said plainly, with the GPU count (issue 13's trial)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import InfeasibleError
from topo.flow.failures.resilience import damaged_bandwidth, resilience

LEAVES = [f"leaf{i}" for i in range(8)]


@pytest.mark.parametrize("routing", ["optimal", "ecmp"])
def test_every_leaf_failed_says_every_gpu_is_disconnected(routing):
    # ft2 of 8-port switches: 32 GPUs, 8 leaves, 4 spines; each GPU reaches the fabric only
    # through its NIC's leaf, so with the 8 leaves failed all 32 GPUs are cut off.
    G = build("ft2", switch_ports=8)
    with pytest.raises(InfeasibleError) as e:
        damaged_bandwidth(G, named=LEAVES, routing=routing)
    msg = str(e.value)
    assert "every GPU is disconnected: all 32 GPUs" in msg and "all 8 leaves failed" in msg


def test_cli_all_switches_failed_one_plain_line(tmp_path):
    path = tmp_path / "a.json"
    runner = CliRunner()
    assert (
        runner.invoke(app, ["build", "ft2", "--switch-ports", "8", "-o", str(path)]).exit_code == 0
    )
    for extra in ([], ["--routing", "ecmp"]):
        r = runner.invoke(app, ["bandwidth", str(path), "--fail-switches", "12", *extra])
        assert r.exit_code != 0
        assert "every GPU is disconnected: all 32 GPUs" in r.output
        assert "host endpoints" not in r.output and "tier-1" not in r.output


def test_resilience_as_routed_counts_all_cut_off_trials_as_cut_off():
    # All 12 switches failed: both trials cut off all 32 GPUs, 0 known, not "unroutable".
    G = build("ft2", switch_ports=8)
    rep = resilience(G, trials=2, switches=12, routing="ecmp")
    assert rep.trials_unroutable == 0 and rep.trials_with_disconnected == 2
    assert rep.max_disconnected_gpus == 32 and rep.busbw_GBps == [0.0, 0.0]
