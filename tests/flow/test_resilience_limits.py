"""``--trials`` is bounded before anything runs, and the trials keep only what the statistics
read (a fresh-user trial: ``topo resilience --trials 100000`` started, each trial holding its
damaged graph: 256 kB a trial on a 128-GPU ft2)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import TopoError
from topo.flow.failures.resilience import MAX_TRIALS, resilience, serial_trials, trial_summary

SMALL = dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)


def test_too_many_trials_are_refused_before_the_fabric_is_read(tmp_path: Path) -> None:
    broken = tmp_path / "f.json"
    broken.write_text("not json")
    r = CliRunner().invoke(
        app, ["resilience", str(broken), "--fail-links", "1", "--trials", str(MAX_TRIALS + 1)]
    )
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == (
        "topo: error: --trials must be from 1 to 10,000, got 10,001: the 5th percentile of "
        "10,000 trials is known to +-0.44 percentage points, and each trial is one solve\n"
    )
    with pytest.raises(TopoError, match=r"^trials must be from 1 to 10,000, got 100,000"):
        resilience(build("ft2", **SMALL), trials=100_000, links=1)


@pytest.mark.parametrize("routing", ["optimal", "ecmp"])
def test_summarised_trials_give_the_full_trials_statistics(routing: str) -> None:
    G = build("ft2", **SMALL)
    args = dict(trials=6, links=2, seed=3, routing=routing)
    summarised = resilience(G, **args)
    whole = resilience(G, **args, trial_map=serial_trials)  # every trial kept whole
    assert summarised.busbw_GBps == whole.busbw_GBps
    assert summarised.to_dict() == {**whole.to_dict(), "seconds": summarised.seconds}


def test_a_summary_keeps_the_report_not_the_graph() -> None:
    G = build("ft2", **SMALL)
    (full,) = serial_trials(G, [dict(links=2, seed=1, routing="ecmp")])
    assert full is not None and full.report.link_load and full.graph.number_of_edges() > 0
    s = trial_summary(full)
    assert s is not None and s.report.link_load is None and s.report.routing is None
    assert nx.is_empty(s.graph) and s.report.pair_rate_Bps == full.report.pair_rate_Bps
    assert s.failures == full.failures
    assert trial_summary(None) is None
