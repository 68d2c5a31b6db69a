"""Unroutable as-routed trials stay out of the resilience statistics (issue 13's trial)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import InfeasibleError
from topo.flow.failures.damage import fail
from topo.flow.failures.resilience import damaged_bandwidth, resilience
from topo.flow.seeds import trial_seeds


def test_unroutable_trials_are_counted_apart_not_as_zero():
    # ft2 of 4-port switches, 4 servers of 2 GPUs and 2 NICs, 2 random cables cut per trial.
    # Each trial again on its own (damaged_bandwidth, its seed): the ones that raise are the
    # unroutable ones; the statistics are numpy's over the others' rates only.
    G = build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2, gpus=8)
    rep = resilience(G, trials=24, links=2, routing="ecmp", seed=0)
    rates, unroutable = [], []
    for i in range(24):
        try:
            r = damaged_bandwidth(G, links=2, seed=rep.trial_seeds[i], routing="ecmp")
        except InfeasibleError:
            unroutable.append(i)
            continue
        rates.append(r.report.alltoall_busbw_Bps / 1e9)
    assert unroutable and rates  # both kinds occur with these seeds (24 trials of seed 0)
    assert rep.unroutable_trials == unroutable and rep.trials_unroutable == len(unroutable)
    assert rep.statistics_trials == len(rates) == 24 - len(unroutable)
    assert [rep.busbw_GBps[i] for i in unroutable] == [None] * len(unroutable)
    assert rep.lower_bound_busbw_GBps[unroutable[0]] is None
    assert rep.min_GBps == pytest.approx(min(rates), rel=1e-12)
    assert rep.median_GBps == pytest.approx(float(np.median(rates)), rel=1e-12)
    assert rep.mean_GBps == pytest.approx(sum(rates) / len(rates), rel=1e-12)
    assert rep.min_GBps > 0  # an unroutable trial entered as 0 would make the min 0
    assert rep.exact_trials == 24  # as routed every trial's outcome is a value


def _mpft(tmp_path):
    path = tmp_path / "m.json"
    r = CliRunner().invoke(app, ["build", "mpft", "--switch-ports", "8", "-o", str(path)])
    assert r.exit_code == 0, r.output
    return path


def test_cli_every_trial_unroutable_has_no_statistic(tmp_path):
    # MPFT of 8-port switches: each GPU has one NIC per plane-leaf; the 3 trials of seed 0
    # with 8 random cables each cut some NIC's only cable to its leaf (checked on the failure
    # sets below), so no trial completes as routed and no statistic exists.
    path = _mpft(tmp_path)
    G = build("mpft", switch_ports=8)
    for s in trial_seeds(0, 3):
        _, f = fail(G, links=8, seed=s)
        assert any("/nic" in u and "leaf" in v for u, v in f.links)
    args = ["resilience", str(path), "--trials", "3", "--fail-links", "8", "--routing", "ecmp"]
    runner = CliRunner()
    d = json.loads(runner.invoke(app, [*args, "--json"]).output)[0]
    assert d["trials_unroutable"] == 3 and d["unroutable_trials"] == [0, 1, 2]
    assert d["statistics_trials"] == 0 and d["busbw_GBps"] == [None, None, None]
    assert all(d[f"{k}_GBps"] is None for k in ("min", "p5", "median", "mean", "max"))
    assert d["exact_trials"] == 3
    text = runner.invoke(app, args, terminal_width=200).output
    row = next(line for line in text.splitlines() if "mpft-256" in line)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[2:7] == ["-"] * 5  # min .. max
    assert cells[7] == "3/3"  # the exact column agrees with --json's exact_trials
    assert "0.00" not in row and "every trial unroutable" in text
