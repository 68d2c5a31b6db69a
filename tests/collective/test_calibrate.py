"""``topo collective --calibrate``: each constant fitted only on the rows that show it, the
guard on the rows of 1 GiB and more, the held-out check, the cluster file.

The synthetic logs are the expected curve itself under constants the test writes by hand (a
constants file with ``node_network`` and the ``[expected]`` costs times a scale), so the values
to recover are known; the real log is the ten-node H100 log of the shared data."""

from __future__ import annotations

import json
import re
import statistics
from typing import Any

import networkx as nx
import pytest
from formats._real import real_file
from typer.testing import CliRunner, Result

from collective._synthetic import OPS, SIZES, synthetic, truth
from topo.builders import build
from topo.cli import app
from topo.collective import compare_log, fabric_rates, load_constants
from topo.collective.calibrate import calibrate, cluster_toml, with_calibration
from topo.collective.constants import NcclConstants
from topo.collective.expected import COST_KEYS
from topo.collective.report import predict_row
from topo.errors import TopoError
from topo.fabric import save
from topo.formats.nccl_tests import read_nccl_tests

LOGS = ("nccl_tests_logs", "xxrjun_cluster01_multinode_N10")
LOG = (*LOGS, "nccl_N10_G8.log")
ONE_SERVER_LOG = ("nccl_tests_logs", "xxrjun_cluster01_singlenode", "nccl_N1_G8_cnode3-002.log")
GIB = 1 << 30


def run(*args: Any) -> Result:
    return CliRunner().invoke(app, ["collective", *map(str, args)])


def one_line_error(r: Result, *fragments: str) -> str:
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def two_servers() -> nx.Graph:
    """Two H100-like servers: 8 GPUs, NVLink 450 GB/s, 8 x 400G NICs (50 GB/s raw) each."""
    return build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)


# ------------------------------------------------------------------ recovering known values


@pytest.fixture(scope="module")
def fit_08(two_servers, tmp_path_factory):
    """The synthetic rows under node_network 0.8 and the [expected] costs x 1.5, and the fit
    of every op to them (a frozen Calibration, shared by the tests that read it)."""
    tests = synthetic(two_servers, truth(tmp_path_factory.mktemp("truth"), 0.8, 1.5), OPS, SIZES)
    return tests, calibrate(two_servers, tests, load_constants())


def test_calibration_recovers_node_network_and_latency_scale(fit_08):
    """node_network 0.8 and the [expected] costs x 1.5. On these servers a ring is bound by
    its 16 channels of one NVLink (16 x 20.6 = 329.6 GB/s per server) under the 8 x 48 = 384
    of the NICs, and 0.8 x 8 x 50 = 320 GB/s is under both: the large rows of all_gather and
    alltoall show the server ceiling (all_reduce runs NVLS-tree, bound by its NVLS channels),
    so the bandwidth band recovers it; the small and mid rows (launch and per-message costs)
    recover the scale. Held out, each op is predicted by the other two, one of which always
    shows the ceiling."""
    _, cal = fit_08
    assert cal.node_network == pytest.approx(0.8, rel=0.01)
    assert cal.latency_scale == pytest.approx(1.5, rel=0.01)
    assert cal.not_fitted == {}
    assert set(cal.fitted) == {"node_network", "latency_scale"}
    nn, scale = cal.fitted["node_network"], cal.fitted["latency_scale"]
    assert nn["band"] == "bandwidth" and scale["band"] == "latency"
    assert nn["rows"] == cal.bands["bandwidth"] >= 3 and scale["rows"] == cal.bands["latency"] >= 3
    assert sum(cal.bands.values()) == cal.rows == 3 * len(SIZES)
    assert cal.held_out_by == "op" and [h.op for h in cal.held_out] == list(OPS)
    for h in cal.held_out:
        assert h.max_abs_error < 0.01, h
        assert h.median_abs_error_given > 0.05, h  # uncalibrated, the shipped values miss
    assert cal.rms_log_error < 0.005


def test_calibration_of_large_sizes_only_leaves_the_latency_scale_unfitted(two_servers, tmp_path):
    """Rows of 1 to 4 GiB are bytes at a rate: none is set by the per-message costs, so the
    scale is not fitted and says why; node_network is (to 1%: the costs x 1.5 are a few
    tenths of a percent of these rows)."""
    tests = synthetic(two_servers, truth(tmp_path, 0.8, 1.5), OPS, [GIB, 2 * GIB, 4 * GIB])
    cal = calibrate(two_servers, tests, load_constants())
    assert cal.latency_scale == 1.0 and "latency_scale" not in cal.fitted
    assert cal.not_fitted["latency_scale"].startswith(
        "no row of this log is set by launch and per-message costs"
    )
    assert cal.not_fitted["latency_scale"].endswith(
        "the shipped [expected] costs are kept (scale 1)"
    )
    assert cal.bands == {"bandwidth": 9, "latency": 0, "neither": 0}
    assert cal.node_network == pytest.approx(0.8, rel=0.01)


def test_calibration_of_one_op_holds_out_by_size_band(two_servers, tmp_path):
    """One op with both bands: each band is predicted by the calibration of the other, and
    the output says what that shows and what it cannot."""
    tests = synthetic(two_servers, truth(tmp_path, 0.8, 1.5), ("all_gather",), SIZES)
    cal = calibrate(two_servers, tests, load_constants())
    assert cal.held_out_by == "size band"
    assert [(h.op, h.band) for h in cal.held_out] == [
        ("all_gather", "latency"),
        ("all_gather", "bandwidth"),
    ]
    lat, bw = cal.held_out
    # the latency band is predicted with the scale as shipped (1), the bandwidth band with
    # node_network as shipped (1): each from the other band's constant only. Fitted without
    # the scale, node_network takes up the costs' excess (x1.5) in the bandwidth-bound rows
    # (the launch and the ring's 15 steps, a few % of them): it can only come out low
    assert lat.latency_scale == 1.0 and 0.8 * 0.95 <= lat.node_network <= 0.8 * 1.002
    assert bw.node_network == 1.0 and bw.latency_scale == pytest.approx(1.5, rel=0.01)
    assert any(
        n.startswith("one op (all_gather): the fit cannot be checked on other ops")
        for n in cal.notes
    )
    for name in ("node_network", "latency_scale"):
        assert f"{name} is fitted on all_gather alone: " in "\n".join(cal.notes)


@pytest.mark.parametrize(
    ("node_network", "scale", "name", "end"),
    [
        # a server's network at 0.3 x its NICs: under the 0.5 searched, the fit stopped at 0.5
        # and was written as the cluster's node_network (the real pair log of cluster00 too)
        (0.3, 1.0, "node_network", "0.5, the lowest value searched (0.5 to 1): the log is slower"),
        # per-message costs x 10: over the 5 searched
        (1.0, 10.0, "latency_scale", "5, the highest value searched (0.2 to 5): the log is slower"),
    ],
)
def test_a_fit_at_the_end_of_its_range_is_refused(
    two_servers, tmp_path, node_network, scale, name, end
):
    tests = synthetic(two_servers, truth(tmp_path, node_network, scale), OPS, SIZES)
    cal = calibrate(two_servers, tests, load_constants())
    assert name not in cal.fitted
    assert cal.not_fitted[name].startswith(f"refused: its band fits best at {end} than any")
    assert (cal.node_network, cal.latency_scale)[name == "latency_scale"] == 1.0


# ------------------------------------------------------------------ the guard


def test_guard_refuses_a_node_network_that_moves_the_large_rows(two_servers, tmp_path):
    """all_gather measured at node_network 0.6 from 128 to 512 MiB (0.6 x 400 = 240 GB/s per
    server) and at 1 (no ceiling: 16 channels, 329.6 GB/s) at 1 and 2 GiB. Fitted on the
    five bandwidth-bound rows, node_network lands at some v between 0.6 and 0.824 (329.6 /
    400), where the two large rows would be predicted at v x 400 GB/s: 1 - v x 400 / 329.6
    too slow, over the guard's 2%. It is refused and 1 is kept."""
    mid = synthetic(
        two_servers, truth(tmp_path, 0.6, 1.0), ("all_gather",), [1 << k for k in (27, 28, 29)]
    )
    big = synthetic(two_servers, load_constants(), ("all_gather",), [GIB, 2 * GIB])
    mid[0].rows.extend(big[0].rows)
    cal = calibrate(two_servers, mid, load_constants())
    assert cal.node_network == 1.0 and "node_network" not in cal.fitted
    why = cal.not_fitted["node_network"]
    m = re.fullmatch(
        r"refused: fitted on its band to ([0-9.]+), it takes the rows of 1 GiB and more of "
        r"all_gather from 0\.0% to ([0-9.]+)% median \|error\| \(the guard allows 2 points more\); "
        r"the shipped 1\.0 is kept",
        why,
    )
    assert m, why
    v, pct = float(m.group(1)), float(m.group(2))
    assert 0.6 <= v < 0.824
    # (the expected time's latency, the launch and the ring's 15 steps, about 0.1 ms or 2-3%
    # of these rows, takes a little off)
    assert pct == pytest.approx((1 - v * 400 / 329.6) * 100, rel=0.08)
    (g,) = cal.large_rows
    assert g["rows"] == 2 and g["median_abs_error_after"] == g["median_abs_error_before"] < 1e-9


@pytest.fixture(scope="module")
def ten_servers() -> nx.Graph:
    return build("ft2", switch_ports=16, gpus=80, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)


def test_one_op_real_log_keeps_the_large_rows(ten_servers):
    """The all_reduce test of the ten-node log alone: no row of it is set by per-message
    costs, its bandwidth-bound rows fit best at node_network 1 as shipped, and the log cannot
    check a fit: it says so, and the rows of 1 GiB and more keep their ratio (measured /
    expected busbw) within 2% of before."""
    (test,) = [t for t in read_nccl_tests(real_file(*LOG)) if t.op == "all_reduce"]
    cal = calibrate(ten_servers, [test], load_constants())
    assert cal.ops == ["all_reduce"] and cal.held_out_by == "none"
    assert any(n.startswith("one op (all_reduce)") and "cannot be checked" in n for n in cal.notes)
    after_c = with_calibration(load_constants(), cal.node_network, cal.latency_scale)
    before = compare_log(ten_servers, test, constants=load_constants())
    after = compare_log(ten_servers, test, constants=after_c)
    large = [(b, a) for b, a in zip(before.rows, after.rows, strict=True) if b.size_bytes >= GIB]
    assert len(large) == 5  # 1, 2, 4, 8, 16 GiB
    for b, a in large:
        assert a.ratio == pytest.approx(b.ratio, rel=0.02), b.size_bytes


@pytest.mark.parametrize(
    "op", ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"]
)
def test_one_op_real_log_never_takes_its_large_rows_away(ten_servers, tmp_path, op):
    """Each test of the ten-node log alone, calibrated and written as a cluster file where
    anything is fitted: held by --compare with that file, the median |expected / measured
    busbw - 1| of its rows of 1 GiB and more is at most 2 points above the shipped
    constants' (the guard's promise, checked through another path)."""
    (test,) = [t for t in read_nccl_tests(real_file(*LOG)) if t.op == op]
    cal = calibrate(ten_servers, [test], load_constants())
    after_c = load_constants()
    if cal.fitted:
        path = tmp_path / "cluster.toml"
        path.write_text(cluster_toml(cal, "nccl_N10_G8.log"))
        after_c = load_constants(path)

    def median_error(c: NcclConstants) -> float:
        rows = compare_log(ten_servers, test, constants=c).rows
        return statistics.median(abs(1 / r.ratio - 1) for r in rows if r.size_bytes >= GIB)

    assert median_error(after_c) <= median_error(load_constants()) + 0.02 + 1e-4


# ------------------------------------------------------------------ the cluster file


def test_cluster_file_loads_and_reproduces_the_fit(two_servers, fit_08, tmp_path):
    """The file holds node_network and the six [expected] costs times the scale, each as the
    shipped value x scale (to the 4 decimals written), and with it the synthetic rows are
    predicted as the fit predicts them."""
    tests, cal = fit_08
    text = cluster_toml(cal, "/some/where/cluster.log")
    assert text.startswith("# Calibrated by `topo collective --calibrate cluster.log` (51 rows")
    assert "# node_network = " in text and "rows of the bandwidth band" in text
    assert "# Held out (fitted on the other ops, predicted on this one):" in text
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    c = load_constants(path)
    shipped = load_constants().data["expected"]
    assert c.node_network_efficiency == pytest.approx(cal.node_network, abs=5e-5)
    for key in COST_KEYS:
        got, want = c.data["expected"][key], shipped[key]
        if isinstance(want, list):
            assert got == pytest.approx([x * cal.latency_scale for x in want], abs=5e-5)
        else:
            assert got == pytest.approx(want * cal.latency_scale, abs=5e-5)
    rates = fabric_rates(two_servers, 16, 8)
    for t in tests:
        for m in t.rows:
            p = predict_row(t.op, m.size_bytes, m.count, "float", rates, c)
            assert p.busbw_GBps == pytest.approx(m.busbw_GBps, rel=0.01)


def test_cluster_file_refused_when_nothing_is_fitted(two_servers, tmp_path):
    """Rows of 1 GiB and more on one server: NVLink binds them at every node_network, and
    none is set by per-message costs; there is nothing to write."""
    tests = synthetic(two_servers, load_constants(), ("all_gather",), [GIB, 2 * GIB, 4 * GIB], n=8)
    cal = calibrate(two_servers, tests, load_constants())
    assert cal.fitted == {} and set(cal.not_fitted) == {"node_network", "latency_scale"}
    assert cal.not_fitted["node_network"].startswith(
        "none of the 3 rows of its band changes with it from 0.5 to 1 (they are bound by nvlink"
    )
    with pytest.raises(TopoError, match="nothing fitted, no file written"):
        cluster_toml(cal, "x.log")


# ------------------------------------------------------------------ the command


def test_calibrate_cli_on_a_one_op_log(ten_servers, tmp_path):
    """The reduce_scatter part of the real log, alone: its rows of 32 to 256 MiB are set by
    per-message costs (the scale is fitted on them), its larger rows bandwidth-bound and
    fitted by the shipped node_network within a point of their best, so it is kept.
    Plain words on stdout; the keys in JSON; the file holds the scale only."""
    text = real_file(*LOG).read_text()
    start = text.rindex("# nccl-tests version", 0, text.index("starting: reduce_scatter_perf"))
    end = text.index("# Collective test concluded: reduce_scatter_perf")
    log = tmp_path / "reduce_scatter.log"
    log.write_text(text[start : text.index("\n", end) + 1])
    fab = tmp_path / "h100.json"
    save(ten_servers, fab)
    out = tmp_path / "cluster.toml"
    r = run(fab, "--calibrate", log, "-o", out)
    assert r.exit_code == 0, r.output
    assert "calibrated on reduce_scatter.log: 10 rows of reduce_scatter" in r.stdout
    assert "latency scale (on the [expected] per-operation and per-message costs) = " in r.stdout
    assert "node_network not fitted: fitted on its band to " in r.stdout
    assert "(under 1 point better: within a log's noise); the shipped 1.0 is kept" in r.stdout
    assert "rows of 1 GiB and more, median |error| before -> after: reduce_scatter" in r.stdout
    assert "held out: fitted on the other size band, predicted on this one" in r.stdout
    assert "note: one op (reduce_scatter): the fit cannot be checked on other ops" in r.stdout
    assert "note: latency_scale is fitted on reduce_scatter alone" in r.stdout
    assert r.stderr.strip().endswith(f"wrote {out}")
    d = json.loads(run(fab, "--calibrate", log, "--json").stdout)
    assert d["ops"] == ["reduce_scatter"] and d["rows"] == 10 and d["held_out_by"] == "size band"
    assert list(d["fitted"]) == ["latency_scale"] and list(d["not_fitted"]) == ["node_network"]
    f = d["fitted"]["latency_scale"]
    assert f["band"] == "latency" and f["rows"] == d["bands"]["latency"] >= 3
    assert [(h["op"], h["band"]) for h in d["held_out"]] == [
        ("reduce_scatter", "latency"),
        ("reduce_scatter", "bandwidth"),
    ]
    text = out.read_text()
    assert "[efficiency]" not in text and "[expected]" in text
    assert "# node_network not fitted: " in text
    c = load_constants(out)
    shipped = load_constants()
    assert run(fab, "--compare", log, "--constants", out, "--json").exit_code == 0
    assert c.node_network_efficiency == shipped.node_network_efficiency
    assert c.data["expected"]["launch_us"] == pytest.approx(
        shipped.data["expected"]["launch_us"] * d["latency_scale"], abs=5e-5
    )


def test_calibrate_cli_refuses_to_write_nothing(tmp_path):
    """The one-server log on one H100 server: NVLink, NVLS or p2p channels bind every
    bandwidth-bound row before any server ceiling, and fewer than 3 rows are set by
    per-message costs; -o is an error, without it the reasons are printed."""
    log = real_file(*ONE_SERVER_LOG)
    fab = tmp_path / "h100.json"
    save(
        build("ft2", switch_ports=8, gpus=8, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450), fab
    )
    out = tmp_path / "cluster.toml"
    one_line_error(run(fab, "--calibrate", log, "-o", out), "nothing fitted, no file written")
    assert not out.exists()
    r = run(fab, "--calibrate", log)
    assert r.exit_code == 0, r.output
    assert "node_network not fitted: none of the" in r.stdout
    assert "latency_scale not fitted:" in r.stdout


def test_calibration_recovers_known_values_and_holds_out_each_op(two_servers, tmp_path):
    """node_network 0.9 and the [expected] costs x 1.5, on 64 KiB to 4 GiB: the fit on every
    op finds both (node_network on the bandwidth-bound rows, the scale on the rows set by
    per-message costs), to 1%. Held out, all_gather and all_reduce are predicted from the
    others; alltoall is not, and the check says so: the rings are bound by their 16 channels
    (16 x 20.6 = 329.6 GB/s per server, under the 0.9 x 400 = 360 ceiling) and NVLS-tree's
    channels bind all_reduce, so the other two ops cannot see the ceiling: any node_network
    from 0.824 (329.6 / 400) up fits them, and the fit keeps the highest, 1. alltoall is then
    predicted at 8 x 48 = 384 GB/s per server against 360: 384 / 360 - 1 = 6.7% too fast at
    the largest size (a little less: its launch and p2p rounds take a share of the time)."""
    tests = synthetic(two_servers, truth(tmp_path, 0.9, 1.5), OPS, SIZES)
    cal = calibrate(two_servers, tests, load_constants())
    assert cal.node_network == pytest.approx(0.9, rel=0.01)
    assert cal.latency_scale == pytest.approx(1.5, rel=0.01)
    assert cal.rms_log_error < 0.005 and cal.not_fitted == {}
    held = {h.op: h for h in cal.held_out}
    assert list(held) == ["all_gather", "all_reduce", "alltoall"]
    assert held["all_gather"].max_abs_error < 0.01 and held["all_reduce"].max_abs_error < 0.01
    assert held["alltoall"].node_network == 1.0
    assert 0.95 * (384 / 360 - 1) < held["alltoall"].max_abs_error <= 384 / 360 - 1
    text = cluster_toml(cal, "x.log")
    assert f"node_network = {cal.node_network:.4f}" in text
    assert (
        f"launch_us = {load_constants().data['expected']['launch_us'] * cal.latency_scale:.4f}"
        in text
    )


def test_calibrate_cli_writes_a_loadable_cluster_file(ten_servers, tmp_path):
    """The real ten-server log, calibrated from constants whose [expected] costs are twice the
    shipped ones (as another cluster's file might be): the log shows the costs, so the scale
    is fitted, and the cluster file written loads with the given costs times it."""
    log = real_file(*LOG)
    fab = tmp_path / "h100.json"
    save(ten_servers, fab)
    shipped = load_constants().data["expected"]
    given = tmp_path / "given.toml"
    doubled = {
        k: [2 * x for x in v] if isinstance(v, list) else 2 * v
        for k, v in shipped.items()
        if k in COST_KEYS
    }
    given.write_text("[expected]\n" + "".join(f"{k} = {doubled[k]}\n" for k in COST_KEYS))
    out = tmp_path / "cluster.toml"
    r = run(fab, "--constants", given, "--calibrate", log, "-o", out, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["ops"] == ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"]
    assert d["held_out_by"] == "op" and [h["op"] for h in d["held_out"]] == d["ops"]
    assert d["rows"] == 50 == sum(d["bands"].values())
    assert set(d["fitted"]) | set(d["not_fitted"]) == {"node_network", "latency_scale"}
    for name, f in d["fitted"].items():
        assert f["rows"] == d["bands"][f["band"]] >= 3, name
    assert "latency_scale" in d["fitted"] and d["latency_scale"] < 1
    c = load_constants(out)
    assert c.node_network_efficiency == pytest.approx(d["node_network"], abs=1e-4)
    assert c.data["expected"]["launch_us"] == pytest.approx(
        2 * shipped["launch_us"] * d["latency_scale"], abs=1e-4
    )
    one_line_error(run(fab, "-o", out), "-o needs --calibrate")
    one_line_error(run(fab, "--calibrate", log, "--compare", log), "not both")
