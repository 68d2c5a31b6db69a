"""Resilience statistics: a bound is never a trial's value; a statistic of trials known only
within bounds is a certified range, and the exact run's statistics lie in it."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import InfeasibleError, TopoError
from topo.fabric import summarize
from topo.flow.failures.damage import disconnected_terminals, fail, island_sizes
from topo.flow.failures.resilience import (
    MAX_TRIALS,
    STATISTICS,
    damaged_bandwidth,
    resilience,
    serial_trials,
    statistics,
    trial_summary,
)
from topo.flow.seeds import trial_seeds


def test_statistics_by_hand():
    # Trials 1 and 2 known; trial 3 only within [3, 5].
    values, ranges = statistics([1.0, 2.0, 3.0], [1.0, 2.0, 5.0])
    assert values["min"] == 1.0 and values["median"] == 2.0
    assert values["max"] is None and ranges["max"] == [3.0, 5.0]
    assert values["mean"] is None and ranges["mean"] == pytest.approx([2.0, 8.0 / 3.0])
    # 3 trials: none lies at the 5th percentile (P5_MIN_TRIALS), so no p5.
    assert values["p5"] is None and "p5" not in ranges
    # 20 trials 1..20: p5 interpolates between the two smallest, 1 + 0.05 x 19 x (2 - 1).
    v = [float(i) for i in range(1, 21)]
    values, ranges = statistics(v, v)
    assert values["p5"] == pytest.approx(1.95) and ranges["p5"] == pytest.approx([1.95, 1.95])


def test_all_known_gives_numpy_statistics():
    v = [4.0, 1.0, 3.0, 2.0] * 5
    values, _ = statistics(v, v)
    assert [values[k] for k in STATISTICS] == pytest.approx(
        [1.0, float(np.percentile(v, 5)), 2.5, 2.5, 4.0]
    )


def test_bounded_trials_are_unknown_and_bracket_the_exact_run():
    # With an LP limit of 10 variables no trial's LP is solved: each has certified bounds.
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    exact = resilience(G, trials=4, links=3, seed=1)
    bounded = resilience(G, trials=4, links=3, seed=1, max_variables=10)
    assert exact.exact_trials == 4 and None not in exact.busbw_GBps
    assert bounded.exact_trials < 4
    for v, lo, hi, b in zip(
        exact.busbw_GBps,
        bounded.lower_bound_busbw_GBps,
        bounded.upper_bound_busbw_GBps,
        bounded.busbw_GBps,
        strict=True,
    ):
        assert lo <= v * (1 + 1e-6) and v <= hi * (1 + 1e-6)
        assert b is None or b == pytest.approx(v, rel=1e-6)
    assert None in bounded.busbw_GBps
    assert exact.p5_GBps is None and "p5" not in bounded.range_GBps  # 4 trials: no p5
    for k in (s for s in STATISTICS if s != "p5"):
        known = getattr(exact, f"{k}_GBps")
        lo, hi = bounded.range_GBps[k]
        assert lo <= known * (1 + 1e-6) and known <= hi * (1 + 1e-6)
        got = getattr(bounded, f"{k}_GBps")
        assert got is None or got == pytest.approx(known, rel=1e-6)
    assert (
        bounded.median_GBps is None
        or bounded.range_GBps["median"][1] - bounded.range_GBps["median"][0]
        <= 1e-9 * bounded.range_GBps["median"][1]
    )


def test_a_trial_that_cuts_nothing_is_no_faster_than_the_intact_fabric():
    # 3:1 oversubscribed FT2 of 16-port switches, LP limit 100 variables: the trials have
    # bounds only, and the cut bound of a damaged fabric (its servers' cables) can exceed the
    # intact rate. Failing cables takes capacity away and keeps every terminal, so the intact
    # fabric's rate (known exactly, by the symmetric reduction) caps each such trial.
    G = build("ft2", switch_ports=16, gpus=96, oversubscription=3.0)
    exact = resilience(G, trials=4, links=3, seed=0)
    bounded = resilience(G, trials=4, links=3, seed=0, max_variables=100)
    assert exact.intact_busbw_GBps is not None
    assert bounded.intact_busbw_GBps == pytest.approx(exact.intact_busbw_GBps, rel=1e-9)
    assert bounded.trials_with_disconnected == 0
    for v, lo, hi in zip(
        exact.busbw_GBps,
        bounded.lower_bound_busbw_GBps,
        bounded.upper_bound_busbw_GBps,
        strict=True,
    ):
        assert lo <= v * (1 + 1e-6) and v <= hi * (1 + 1e-6)
        assert hi <= exact.intact_busbw_GBps * (1 + 1e-9)
    assert bounded.range_GBps["max"][1] <= exact.intact_busbw_GBps * (1 + 1e-9)


def test_a_trial_with_every_gpu_cut_off_is_known_to_be_zero():
    # 12 of the 16 switches of an 8-port MRFT failed: no two GPUs keep a path, so each
    # trial's busbw is 0 exactly (not a bound), and the statistics are 0.
    G = build("mrft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    r = resilience(G, trials=2, switches=12, seed=0)
    assert r.busbw_GBps == [0.0, 0.0] and r.exact_trials == 2
    assert r.min_GBps == 0.0 and r.max_GBps == 0.0


def test_p5_needs_20_trials():
    """With n trials the smallest is the 1/n quantile: below 20 none lies at the 5th
    percentile, so p5 is None (min stays); with 20, p5 is numpy's linear one of the trials,
    worked out from the trial values: x[0] + 0.05 * 19 * (x[1] - x[0])."""
    G = build("ft2", switch_ports=4)
    few = resilience(G, trials=3, links=1, seed=0)
    assert few.p5_GBps is None and "p5" not in few.range_GBps
    assert few.min_GBps == min(v for v in few.busbw_GBps if v is not None)
    many = resilience(G, trials=20, links=1, seed=0)
    x = sorted(v for v in many.busbw_GBps if v is not None)
    assert len(x) == 20
    assert many.p5_GBps == pytest.approx(x[0] + 0.95 * (x[1] - x[0]), rel=1e-12)


# -------------------------------------------------------------------------------------------------
# Every leaf failed: said plainly, with the GPU count (issue 13's trial).


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


# -------------------------------------------------------------------------------------------------
# An island of one server: intra-server traffic over NVLink and through the leaf (issue 13).


SPINES = ["--fail", "spine0", "--fail", "spine1", "--fail", "spine2", "--fail", "spine3"]


def test_every_spine_failed_leaves_four_equal_islands():
    # ft2 of 8-port switches: 4 servers of 8 GPUs, each server's 8 NICs on 2 leaves of its
    # own; without the 4 spines every server is an island of 8 GPUs.
    G = build("ft2", switch_ports=8)
    r = damaged_bandwidth(G, named=["spine0", "spine1", "spine2", "spine3"])
    assert r.failures.islands == (8, 8, 8, 8)
    assert r.failures.to_dict()["islands"] == [8, 8, 8, 8]
    assert island_sizes(G) == (32,)


def test_cli_intra_server_splits_nvlink_and_leaf_by_hand(tmp_path):
    # Each of the island's 8 GPUs sends 7 lambda to the others: out of a GPU go 200 GB/s of
    # NVLink and its NIC's 50 GB/s cable to the leaf (PCIe 64), so 7 lambda = 250 GB/s:
    # NVLink carries at most its 200, so at least 50 go through NIC, leaf, NIC (here exactly:
    # both are full at the optimum). Labelled NVLink it read 250 on 200 GB/s.
    path = tmp_path / "ft2s.json"
    runner = CliRunner()
    assert (
        runner.invoke(app, ["build", "ft2", "--switch-ports", "8", "-o", str(path)]).exit_code == 0
    )
    d = json.loads(runner.invoke(app, ["bandwidth", str(path), *SPINES, "--json"]).output)
    assert d["intranode_per_gpu_GBps"] == pytest.approx(250.0, rel=1e-6)
    text = runner.invoke(app, ["bandwidth", str(path), *SPINES], terminal_width=200).output
    assert "intra-node (NVLink)" not in text
    row = next(s for s in text.splitlines() if "intra-server per GPU" in s)
    assert "250.00 GB/s (at most 200.00 over NVLink" in row
    assert "at least 50.00 through NIC, leaf, NIC" in row
    assert "4 islands, 4 of them the largest with 8 GPUs each" in text
    assert "(servers 0)" in text


# -------------------------------------------------------------------------------------------------
# ``resilience``'s count of disconnected GPUs when a trial leaves fewer than two connected (issue
# 11: 63 of 64 cables failed reported 0 disconnected GPUs).


def test_63_of_64_cables_failed_counts_the_cut_gpus() -> None:
    # 32 one-GPU servers on 8-port switches: 32 NIC cables + 32 leaf-spine links = 64 cables.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    s = summarize(G)
    assert s.links + s.endpoint_links == 64
    r = resilience(G, trials=3, links=63, seed=0)
    # With one cable left, at most one server keeps a switch: at least 31 of the 32 GPUs are
    # cut off in every trial, and every trial is cut.
    assert r.trials_with_disconnected == 3
    assert 31 <= r.max_disconnected_gpus <= 32
    # The count is the one the failure set itself gives (the trials' seeds).
    worst = 0
    for s in r.trial_seeds:
        H, _ = fail(G, links=63, seed=s)
        worst = max(worst, len(disconnected_terminals(H)[1]))
    assert r.max_disconnected_gpus == worst


def _apart_by_hand(H) -> tuple[bool, bool]:
    """(some server is cut off: outside the graph's part with the most GPUs; two servers of
    that part reach no common component of the switches), written directly with networkx."""
    import networkx as nx

    from topo.fabric import SWITCH_KINDS

    gpus = lambda c: sum(H.nodes[v]["kind"] == "gpu" for v in c)  # noqa: E731
    kept = max(nx.connected_components(H), key=gpus)
    switches = [v for v, k in H.nodes(data="kind") if k in SWITCH_KINDS]
    comp = {s: i for i, c in enumerate(nx.connected_components(H.subgraph(switches))) for s in c}
    reach: dict[int, set[int]] = {}
    cut = False
    for v, d in H.nodes(data=True):
        if d["kind"] == "gpu" and v not in kept:
            cut = True
        if d["kind"] == "nic" and v in kept:
            reach.setdefault(d["node"], set()).update(comp[s] for s in H.adj[v] if s in comp)
    sets = [x for x in reach.values() if x]
    apart = any(not (x & y) for i, x in enumerate(sets) for y in sets[i + 1 :])
    return cut, apart


def test_a_trial_whose_servers_reach_no_common_switches_is_apart_not_cut_off() -> None:
    # A fresh-user trial: 40 of a 32-GPU ft2's 64 cables failed, 4 trials; one trial left every
    # server cabled, but the switches fell apart so that two servers reach no common part
    # (busbw 0). The table said "1 trial, up to 0 GPUs" cut off.
    G = build("ft2", switch_ports=8)
    r = resilience(G, trials=4, links=40, seed=0)
    expected_apart = expected_cut = 0
    for i, s in enumerate(r.trial_seeds):
        H, _ = fail(G, links=40, seed=s)
        cut, apart = _apart_by_hand(H)
        expected_cut += cut
        if apart and not cut:
            expected_apart += 1
            assert r.busbw_GBps[i] == 0.0
    assert expected_apart >= 1  # (the case this test is about occurs with these seeds)
    assert r.trials_apart == expected_apart
    assert r.trials_with_disconnected == expected_cut
    assert r.exact_trials == 4 and r.to_dict()["trials_apart"] == expected_apart


# -------------------------------------------------------------------------------------------------
# ``--trials`` is bounded before anything runs, and the trials keep only what the statistics read (a
# fresh-user trial: ``topo resilience --trials 100000`` started, each trial holding its damaged
# graph: 256 kB a trial on a 128-GPU ft2).


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


# -------------------------------------------------------------------------------------------------
# Unroutable as-routed trials stay out of the resilience statistics (issue 13's trial).


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


def _study(**kw):
    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4, gpus=64)
    return G, resilience(G, trials=4, links=2, seed=5, **kw).to_dict()


def _without_time(d):
    return {k: v for k, v in d.items() if k not in ("seconds", "in_process")}


def test_a_small_study_given_workers_runs_in_process_and_says_so():
    # Under in_process_below_s of work the trial map is never called; above it, it gets
    # every trial but the first; without the option, every trial. Each way the same numbers.
    calls = []

    def elsewhere(G, tasks, progress=None):
        calls.append([t["seed"] for t in tasks])
        return serial_trials(G, tasks, progress)

    _, serial = _study()
    _, small = _study(trial_map=elsewhere, in_process_below_s=1e9)
    assert calls == [] and serial["in_process"] is None
    assert small["in_process"].startswith("4 trials of about ")
    assert "ran in this process: under 1e+09 s of work" in small["in_process"]
    _, large = _study(trial_map=elsewhere, in_process_below_s=0.0)
    assert calls == [large["trial_seeds"][1:]] and large["in_process"] is None
    _, sent = _study(trial_map=elsewhere)
    assert calls[-1] == sent["trial_seeds"] and sent["in_process"] is None
    for d in (small, large, sent):
        assert _without_time(d) == _without_time(serial)


def test_cli_workers_on_a_small_study_start_no_dask(tmp_path):
    path = tmp_path / "a.json"
    runner = CliRunner()
    assert (
        runner.invoke(app, ["build", "ft2", "--switch-ports", "8", "-o", str(path)]).exit_code == 0
    )
    r = runner.invoke(
        app, ["resilience", str(path), "--trials", "3", "--fail-links", "1", "--workers", "2"]
    )
    assert r.exit_code == 0, r.output
    assert "engine: Dask" not in r.stderr
    assert "3 trials of about" in r.stderr and "ran in this process" in r.stderr
