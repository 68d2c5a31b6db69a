"""topo.collective.explain and ``topo explain``: the design agrees with healthy logs and ranks
nothing; a measured plateau a cause accounts for ranks that cause first.

The measurements are real logs (the shared cluster01 logs, a public table of the training
file whose run set NCCL_ALGO=Ring) or rows written from a closed form of the cause (a NIC
reached through host memory moves at half its PCIe rate; a 400G port trained at 200G moves
25 GB/s), never from the model's own curve."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.collective.explain import AGREE, explain_test
from topo.collective.predict import fabric_constants
from topo.collective.training import load_training
from topo.errors import TopoError
from topo.flow import routed_alltoall
from topo.formats.nccl_log import read_nccl_log
from topo.formats.nccl_tests import NcclTest, NcclTestRow


def run(*args: str):  # noqa: ANN201 - typer's Result
    return CliRunner().invoke(app, list(args))


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "real" / "nccl_tests_logs"
N10 = SHARED / "xxrjun_cluster01_multinode_N10"
needs_shared = pytest.mark.skipif(not N10.is_dir(), reason="../shared is absent")

H100 = dict(switch_ports=64, link_gbps=400.0, nvlink_GBps=450.0, pcie_GBps=64.0)


def _h100(gpus: int) -> object:
    """H100 SXM servers as the training file's clusters (8 GPUs, 8 x 400G NICs, NVLink 4)."""
    G = build("ft2", gpus=gpus, gpus_per_node=8, nics_per_node=8, **H100)
    G.graph["gpu_model"] = "NVIDIA H100 80GB HBM3"
    return G


def _test(op: str, ranks: int, hosts: int, rows: list[tuple[int, float]]) -> NcclTest:
    """A measured test of (size B, time µs) rows; count and busbw as nccl-tests prints them."""
    factor = {"all_reduce": 2 * (ranks - 1) / ranks}.get(op, (ranks - 1) / ranks)
    out = []
    for i, (size, t) in enumerate(rows):
        algbw = size / t / 1e3
        out.append(
            NcclTestRow(
                size,
                size // 4,
                "float",
                "sum",
                -1,
                t,
                algbw,
                algbw * factor,
                None,
                None,
                None,
                i + 1,
            )  # fmt: skip
        )
    names = [f"h{k}" for k in range(hosts)]
    return NcclTest(op, out, ranks, names, ranks // hosts, "", "", 0.0, 1)


SIZES = [1 << k for k in range(26, 34)]  # 64 MiB .. 8 GiB


def _plateau(busbw_GBps: float, ranks: int, op: str = "all_gather", fixed_us: float = 50.0):
    """Rows at a busbw plateau: time = fixed + size / algbw, algbw = busbw / factor."""
    factor = 2 * (ranks - 1) / ranks if op == "all_reduce" else (ranks - 1) / ranks
    return [(s, fixed_us + s / (busbw_GBps / factor * 1e3)) for s in SIZES]


def _one_gpu_servers() -> object:
    # 2 servers, 1 GPU and one 400G NIC each (50 GB/s), the NIC on PCIe at 64 GB/s
    return build(
        "ft2", gpus=2, gpus_per_node=1, nics_per_node=1, switch_ports=64, link_gbps=400.0,
        pcie_GBps=64.0,
    )  # fmt: skip


def test_host_staged_plateau_ranks_missing_gpudirect_first() -> None:
    # through host memory every byte crosses the NIC's PCIe link twice: 64 / 2 = 32 GB/s
    e = explain_test(_one_gpu_servers(), _test("all_gather", 2, 2, _plateau(32.0, 2)))
    assert not e.agrees and not e.faster
    assert e.causes[0].name == "no_gdr"
    assert e.causes[0].fits
    assert "GPU Direct RDMA" in e.causes[0].check
    # the design's own curve is at the NIC's 50 GB/s: more than 30% off
    assert e.design.score > math.log(1.3)


def test_port_at_half_speed_ranks_slow_nic_first() -> None:
    # a 400G port trained at 200G: 25 GB/s on the wire; the other server's NIC at 50 GB/s
    e = explain_test(_one_gpu_servers(), _test("all_gather", 2, 2, _plateau(25.0, 2)))
    top = {k.name for k in e.causes if k.fits}
    assert "nic_slow" in top
    assert e.causes[0].score <= AGREE
    # host staging (32 GB/s) is 28% too fast for this plateau: it does not fit
    gdr = next(k for k in e.causes if k.name == "no_gdr")
    assert not gdr.fits


def test_forced_ring_on_one_h100_server_ranks_ring_first() -> None:
    # a public table whose run set NCCL_ALGO=Ring (training file, together-h100-1n-ar-ring);
    # the design takes NVLS on one 8-GPU H100 server, at more busbw than a ring gets
    (m,) = [
        m for c in load_training(shared=Path("/nonexistent")) for m in c.measurements
        if m.id == "together-h100-1n-ar-ring"
    ]  # fmt: skip
    G = _h100(8)
    e = explain_test(G, _test("all_reduce", 8, 1, list(m.rows)))
    assert not e.agrees
    assert e.causes[0].name in ("algo:Ring", "nvls_off")
    assert e.causes[0].fits
    assert all(k.split("/")[0] == "ring" for k in e.causes[0].curve.choice)


def test_measurement_faster_than_design_ranks_nothing() -> None:
    # 60 GB/s on a 50 GB/s NIC: no fault makes a run faster
    e = explain_test(_one_gpu_servers(), _test("all_gather", 2, 2, _plateau(60.0, 2)))
    assert e.faster and not e.agrees
    assert e.causes == []
    assert "pessimistic" in e.verdict


def test_a_faster_run_is_said_faster_by_how_much_of_the_design_s_times() -> None:
    # every row measured in half the design's time: the measured times are 50% under the
    # design's (the verdict said "median 100% under the measured times": the design's 100%
    # over, worded the wrong way round)
    G = _one_gpu_servers()
    design = explain_test(G, _test("all_gather", 2, 2, _plateau(40.0, 2))).design
    half = [(s, t / 2) for s, t in zip(design.sizes, design.time_us, strict=True)]
    e = explain_test(G, _test("all_gather", 2, 2, half))
    assert e.faster and e.causes == []
    assert e.verdict.startswith(
        "faster than the design (the measured times a median 50% under the design's): "
    ), e.verdict


@needs_shared
@pytest.mark.parametrize("log", ["nccl_N10_G1.log", "nccl_N10_G2.log"])
def test_healthy_shared_logs_rank_no_cause(log: str) -> None:
    G = _h100(80)
    for t in read_nccl_log(N10 / log, None):
        e = explain_test(G, t)
        assert e.agrees, (t.op, e.verdict)
        assert e.causes == []


@needs_shared
def test_cli_folder_of_healthy_logs_skips_other_files(tmp_path: Path) -> None:
    fabric = tmp_path / "h100.json"
    r = run("build", "ft2", "--gpus", "80", "--node", "h100", "-o", str(fabric))
    assert r.exit_code == 0, r.stderr
    r = run("explain", str(fabric), str(N10), "--op", "all_gather", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    # the folder's four logs; its summary.csv and summary.md are said and skipped
    assert sorted(Path(d["log"]).name for d in data) == [
        "nccl_N10_G1.log", "nccl_N10_G2.log", "nccl_N10_G4.log", "nccl_N10_G8.log"
    ]  # fmt: skip
    assert "summary.csv" in r.stderr and "skipped" in r.stderr
    for d in data[:2]:
        assert d["agrees"] and d["causes"] == []


def test_cli_names_a_file_that_is_not_a_log(tmp_path: Path) -> None:
    fabric = tmp_path / "f.json"
    assert (
        run(
            "build",
            "ft2",
            "--gpus",
            "2",
            "--gpus-per-node",
            "1",
            "--nics-per-node",
            "1",
            "-o",
            str(fabric),
        ).exit_code
        == 0
    )
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    r = run("explain", str(fabric), str(bad))
    assert r.exit_code == 1
    assert r.stderr.count("\n") == 1 and str(bad) in r.stderr
    assert "Traceback" not in r.stderr


def test_nvls_disabled_on_two_h100_servers_ranks_nvls_off_first() -> None:
    # NVIDIA/nccl#1221 (held out: not in the training file): 2 x 8 H100, 8 x 400G RoCE,
    # NCCL 2.19.3, all_reduce_perf -b 4G -e 8G: NCCL_NVLS_ENABLE=0 gives 330 GB/s busbw,
    # NCCL_NVLS_ENABLE=1 430 GB/s ("the bus BW will upgraded from 330GB to 430GB")
    def rows(busbw: float) -> list[tuple[int, float]]:
        return [(s, s * 2 * 15 / 16 / (busbw * 1e3)) for s in (4 << 30, 8 << 30)]

    G = _h100(16)
    off = explain_test(G, _test("all_reduce", 16, 2, rows(330.0)))
    assert not off.agrees
    assert off.causes[0].name in ("nvls_off", "algo:Ring") and off.causes[0].fits
    assert {k.name for k in off.causes[:2]} == {"nvls_off", "algo:Ring"}
    on = explain_test(G, _test("all_reduce", 16, 2, rows(430.0)))
    assert on.agrees and on.causes == []


def test_every_server_on_half_its_nics_is_bound_by_the_nics_left() -> None:
    # 2 x 8 H100 with 8 x 400G; NCCL_IB_HCA listing 4 of the 8 on every server: a ring
    # all_gather across the two servers moves at most 4 NICs x 50 GB/s x NCCL's NIC efficiency
    from topo.collective.report import fabric_constants

    G = _h100(16)
    four = 4 * 50.0 * fabric_constants(G).nic_efficiency
    e = explain_test(G, _test("all_gather", 16, 2, _plateau(four, 16, fixed_us=0.0)))
    used = next(k for k in e.causes if k.name == "nics_used:4")
    assert used.curve.busbw_GBps[-1] == pytest.approx(four, rel=0.01)
    assert used.fits and e.causes[0].name in ("nics_used:4", "nic_down")
    assert "NCCL_IB_HCA" in used.check


def test_channel_cap_limits_every_channel_count() -> None:
    from topo.collective.channels import coll_channels, p2p_channels
    from topo.collective.fabric_rates import fabric_rates
    from topo.collective.report import fabric_constants

    G = _h100(16)
    c = fabric_constants(G)
    r = fabric_rates(G, 16, 8)
    assert coll_channels(r, c) == 16  # 8 search channels set up twice (channels.py example)
    capped = c.with_max_nchannels(4)
    assert coll_channels(r, capped) == 4 and p2p_channels(r, capped) == 4
    assert capped.channels == min(4, c.channels)
    with pytest.raises(TopoError, match="max_nchannels must be at least 1"):
        c.with_max_nchannels(0)
    # explain offers NCCL_MAX_NCHANNELS at half and a quarter of the design's 16
    e = explain_test(G, _test("sendrecv", 16, 2, [(s, s / 10e3) for s in SIZES]))
    assert {k.name for k in e.causes} >= {"channels:4"}


def _without_nic_cables(G: object, nics: list[str]) -> object:
    B = G.copy()  # type: ignore[attr-defined]
    for nic in nics:
        B.remove_edges_from([(nic, w) for w in list(B[nic]) if B[nic][w]["kind"] == "endpoint"])
    return B


def test_a_dump_missing_half_a_servers_cables_ranks_as_built_first() -> None:
    # the dump lacks the cables of node0's NICs 4-7: a ring all_gather of the two servers
    # runs at 4 NICs' worth (4 x 50 GB/s x NCCL's NIC efficiency)
    from topo.collective.report import fabric_constants
    from topo.validate import as_built_fabric, find_defects, match_fabric

    G = _h100(16)
    D = _without_nic_cables(G, [f"node0/nic{k}" for k in range(4, 8)])
    match = match_fabric(G, D)
    defects = find_defects(G, D, match)
    assert sorted(d.kind for d in defects) == ["missing"] * 4
    four = 4 * 50.0 * fabric_constants(G).nic_efficiency
    built = (as_built_fabric(G, D, match), "4 defects: 4 missing")
    e = explain_test(
        G, _test("all_gather", 16, 2, _plateau(four, 16, fixed_us=0.0)), as_built=built
    )
    top = next(k for k in e.causes if k.name == "as_built")
    assert top.fits and top.curve.busbw_GBps[-1] == pytest.approx(four, rel=0.01)
    assert e.causes[0].score == pytest.approx(top.score)
    assert "4 missing" in top.description and "topo validate" in top.check


@needs_shared
def test_cli_takes_a_dump_and_scores_nothing_on_a_healthy_log(tmp_path: Path) -> None:
    from topo.formats import write_ibnetdiscover

    fabric = tmp_path / "h100.json"
    r = run("build", "ft2", "--gpus", "80", "--node", "h100", "-o", str(fabric))
    assert r.exit_code == 0, r.stderr
    from topo.fabric import load

    D = _without_nic_cables(load(fabric), ["node3/nic7"])
    dump = tmp_path / "fabric.topo"
    dump.write_text(write_ibnetdiscover(D))
    log = N10 / "nccl_N10_G8.log"
    r = run("explain", str(fabric), str(log), "--op", "all_gather", "--dump", str(dump), "--json")
    assert r.exit_code == 0, r.stderr
    (e,) = json.loads(r.stdout)
    assert e["agrees"] and e["causes"] == []


def _rail_fabric() -> object:
    # MRFT of 8-port switches at 3:1 (6 servers on each rail leaf, 2 uplinks of 50 GB/s):
    # 6 servers x 8 GPUs, one 400G NIC per GPU on its rail
    return build(
        "mrft", gpus=48, gpus_per_node=8, nics_per_node=8, switch_ports=8, oversubscription=3
    )


def test_pxn_off_on_an_oversubscribed_rail_fabric_ranks_pxn_off_first() -> None:
    # Without PXN 7/8 of a GPU's bytes to other servers cross rails, up its rail leaf: the 6
    # NICs of a leaf send 6 x 7/8 x X over 2 x 50 GB/s of uplinks, X = 100 / 5.25 = 19.05
    # GB/s per GPU (with PXN every byte stays on its rail: X = 50). nccl-tests' alltoall busbw
    # = X x NCCL's NIC efficiency x (n - 1) / (n - G) when the network binds.
    G = _rail_fabric()
    eff = fabric_constants(G).nic_efficiency
    x = 2 * 50 / (6 * 7 / 8)
    busbw = x * eff * 47 / 40
    e = explain_test(G, _test("alltoall", 48, 6, _plateau(busbw, 48, "alltoall")))
    assert not e.agrees and e.causes[0].name == "pxn_off" and e.causes[0].fits
    assert e.causes[0].curve.busbw_GBps[-1] == pytest.approx(busbw, rel=0.02)
    assert "NCCL_PXN_DISABLE" in e.causes[0].check
    # PXN keeps every byte on its rail: ECMP has no uplink to collide on, nothing to list
    assert "ecmp" not in {k.name for k in e.causes}


def test_ecmp_collisions_as_routed_rank_ecmp_first() -> None:
    # ft2 of 8-port switches, 4 servers of 8 GPUs on 4 leaves: an even split gives every GPU
    # pair 50 / 24 GB/s (the NIC bound: 24 GPUs on other servers); ECMP's hashing of one flow
    # per pair (seed 0, what `topo bandwidth --routing ecmp` reports) gives less. A run at the
    # routed rate: busbw = 24 x pair rate x NCCL's NIC efficiency x (n - 1) / (n - G).
    G = build("ft2", gpus=32, gpus_per_node=8, nics_per_node=8, switch_ports=8)
    routed = routed_alltoall(G, "ecmp", seed=0)
    assert routed.routing is not None
    assert routed.routing.expected_pair_rate_Bps == pytest.approx(50e9 / 24)
    assert routed.pair_rate_Bps < 0.9 * routed.routing.expected_pair_rate_Bps
    eff = fabric_constants(G).nic_efficiency
    busbw = 24 * routed.pair_rate_Bps / 1e9 * eff * 31 / 24
    e = explain_test(G, _test("alltoall", 32, 4, _plateau(busbw, 32, "alltoall")))
    assert not e.agrees and e.causes[0].name == "ecmp" and e.causes[0].fits
    assert e.causes[0].curve.busbw_GBps[-1] == pytest.approx(busbw, rel=0.02)
    assert "adaptive routing" in e.causes[0].check


def test_one_channel_per_net_peer_caps_sendrecv_at_one_channels_rate() -> None:
    # NCCL_NCHANNELS_PER_NET_PEER=1: one p2p channel per remote peer, and NCCL moves a network
    # channel at 14 GB/s (NCCL_P2P_PER_CHANNEL_NET_BW, src/graph/paths.cc): a sendrecv between
    # two servers of 8 H100 plateaus at 14 GB/s busbw (sendrecv's busbw factor is 1), under
    # the NIC's 50 (the design's channels, capped at half or a quarter, still give 4 per peer)
    rows = [(s, 50.0 + s / 14e3) for s in SIZES]  # time (µs) = fixed + size / 14 GB/s
    e = explain_test(_h100(16), _test("sendrecv", 16, 2, rows))
    assert not e.agrees and e.causes[0].name == "net_peer_channels:1" and e.causes[0].fits
    assert e.causes[0].curve.time_us[-1] == pytest.approx(rows[-1][1], rel=0.01)
    assert "NCCL_NCHANNELS_PER_NET_PEER" in e.causes[0].check


def _thin_rail_fabric(gpus: int, ports: int, oversubscription: float) -> object:
    # MRFT of H100 servers (8 GPUs, 8 x 400G NICs, NVLink 4 at 450 GB/s, so the network binds)
    G = build(
        "mrft", gpus=gpus, gpus_per_node=8, nics_per_node=8, switch_ports=ports,
        oversubscription=oversubscription, link_gbps=400.0, nvlink_GBps=450.0, pcie_GBps=64.0,
    )  # fmt: skip
    G.graph["gpu_model"] = "NVIDIA H100 80GB HBM3"
    return G


def test_rings_crossing_rails_on_a_thin_spine_rank_cross_nic_first() -> None:
    # 8-port switches at 3:1 (6 servers per rail leaf, 2 uplinks of 50 GB/s). A ring leaving
    # each server on NIC i and entering the next on NIC i+1 sends every byte up its rail leaf:
    # 6 NICs x 1/8 B per unit over 100 GB/s, 133.3 GB/s per server; all_gather's busbw is the
    # ring's rate x NCCL's NIC efficiency (nics_used:4 gives 200, the design 400 x efficiency)
    G = _thin_rail_fabric(48, 8, 3)
    busbw = 2 * 50 / (6 / 8) * fabric_constants(G).nic_efficiency
    e = explain_test(G, _test("all_gather", 48, 6, _plateau(busbw, 48)))
    assert not e.agrees and e.causes[0].name == "cross_nic" and e.causes[0].fits
    assert e.causes[0].curve.busbw_GBps[-1] == pytest.approx(busbw, rel=0.02)
    assert "NCCL_CROSS_NIC" in e.causes[0].check
    # a sourced cause fits: no connection cap is inferred
    assert "qp_limit" not in {k.name for k in e.causes}


def test_rings_crossing_rails_on_a_non_blocking_spine_are_not_listed() -> None:
    # 8-port switches at 1:1: crossing rails costs nothing (4 NICs x 1/8 B per leaf over 200
    # GB/s of uplinks, under the NIC bound); a ring at half its NICs (200 GB/s per server) is
    # fitted by half the NICs down on one server or on all (a tie: the ring is as slow as its
    # slowest server), and cross_nic, unchanged from the design, is not listed
    G = _thin_rail_fabric(32, 8, 1)
    busbw = 4 * 50 * fabric_constants(G).nic_efficiency
    e = explain_test(G, _test("all_gather", 32, 4, _plateau(busbw, 32)))
    names = [k.name for k in e.causes]
    assert {"nic_down", "nics_used:4"} >= set(names[:2]) and e.causes[0].fits
    assert "cross_nic" not in names


def test_a_plateau_no_sourced_cause_fits_is_offered_a_qp_limit_at_the_inferred_rate() -> None:
    # 8 H100 servers on a 2:1 MRFT, all_gather at 96 GB/s busbw: under every sourced cause
    # (crossing rails or half the NICs: 200 x efficiency; one NIC: 50; channels:4 of 16: 82).
    # The inferred cap: 96 / 0.96 = 100 GB/s per server over NCCL's 16 ring channels (two per
    # NIC for 8 NICs, NVIDIA/nccl#518) = 6.25 GB/s = 50 Gb/s per connection
    G = _thin_rail_fabric(64, 12, 2)
    eff = fabric_constants(G).nic_efficiency
    busbw = 100 * eff
    e = explain_test(G, _test("all_gather", 64, 8, _plateau(busbw, 64)))
    top = e.causes[0]
    assert top.name == "qp_limit" and top.fits
    assert top.curve.busbw_GBps[-1] == pytest.approx(busbw, rel=0.02)
    assert "50 Gb/s x 16 channels" in top.evidence and "inferred" in top.evidence
    assert "NCCL_IB_QPS_PER_CONNECTION" in top.check and "ib_write_bw -q 1" in top.check
    assert not any(k.fits for k in e.causes[1:])


def test_the_largest_size_of_repeated_runs_is_their_median_run_not_the_file_s_last_row() -> None:
    # three runs of the host-staged plateau (nccl-tests -N 3) at 32, 40 and 20 GB/s, then a
    # 1 MiB row appended: the largest size, 8 GiB, stands for itself by its median run, the
    # 32 GB/s one (busbw = size / time x 1/2 on 2 ranks, time = 50 us + size / 64 GB/s)
    runs = _plateau(32.0, 2) + _plateau(40.0, 2) + _plateau(20.0, 2) + [(1 << 20, 60.0)]
    e = explain_test(_one_gpu_servers(), _test("all_gather", 2, 2, runs))
    top = 1 << 33
    busbw = top / (50.0 + top / 64e3) / 1e3 / 2
    assert e.sizes[e.largest] == top and e.largest == len(SIZES) - 1
    assert e.measured_busbw_GBps[e.largest] == pytest.approx(busbw)
    assert e.causes and all(
        f"at 8 GiB: measured {busbw:.1f} GB/s" in k.evidence for k in e.causes
    )


def test_cli_table_gives_busbw_at_the_largest_size_s_median_run(tmp_path: Path) -> None:
    # the same three runs and 1 MiB row as an all_reduce_perf log on 2 ranks (busbw = algbw x
    # 2 x 1/2): the table's "busbw at largest" is at 8 GiB, the 32 GB/s run's, for the design
    # and every cause
    from collective.test_cli import _nccl_tests_log
    from topo.collective.explain import percent_off
    from topo.fabric import save

    runs = [(s, t) for b in (32.0, 40.0, 20.0) for s, t in _plateau(b, 2, "all_reduce")]
    log = tmp_path / "runs.log"
    rows = [(s, "float", "sum", t) for s, t in [*runs, (1 << 20, 60.0)]]
    log.write_text(_nccl_tests_log(rows, ranks=2))
    fab = tmp_path / "fabric.json"
    G = _one_gpu_servers()
    save(G, fab)
    r = run("explain", str(fab), str(log), "--gpus", "2", "--gpus-per-node", "1")
    assert r.exit_code == 0, r.output
    top = 1 << 33
    assert f"(measured {top / (50.0 + top / 32e3) / 1e3:.1f})" in r.stdout
    (t,) = read_nccl_log(log)
    e = explain_test(G, t, gpus=2, gpus_per_node=1)
    shown = re.findall(r"^ +\d+ .* (\d+%) +([0-9.]+)(?: +yes)? *$", r.stdout, re.M)
    assert shown and shown == [
        (percent_off(k.score), f"{k.curve.busbw_GBps[len(SIZES) - 1]:.1f}") for k in e.causes
    ]


def test_plot_draws_each_size_once_at_its_median_run() -> None:
    # three runs (32, 40, 20 GB/s plateaus) then a 1 MiB row: every curve has the sizes once,
    # increasing, the measured one at the 32 GB/s run (busbw = size / (50 us + size / 64
    # GB/s) / 2 on 2 ranks)
    from topo.collective.explain import plot_explanations

    runs = _plateau(32.0, 2) + _plateau(40.0, 2) + _plateau(20.0, 2) + [(1 << 20, 60.0)]
    e = explain_test(_one_gpu_servers(), _test("all_gather", 2, 2, runs))
    fig = plot_explanations([e])
    sizes = [1 << 20, *SIZES]
    assert all(list(trace.x) == sizes for trace in fig.data)
    busbw = [s / (50.0 + s / 64e3) / 1e3 / 2 for s in SIZES]
    assert list(fig.data[0].y)[1:] == pytest.approx(busbw)


def test_cli_folder_skips_a_log_of_only_0_byte_rows(tmp_path: Path) -> None:
    # a folder of a log whose rows are all 0 B (nothing moved) and one of the 32 GB/s plateau:
    # the first is said and skipped, the second explained
    from collective.test_cli import _nccl_tests_log
    from topo.fabric import save

    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a_tiny.log").write_text(_nccl_tests_log([(0, "float", "sum", 5.0)], ranks=2))
    rows = [(s, "float", "sum", t) for s, t in _plateau(32.0, 2, "all_reduce")]
    (folder / "b_plateau.log").write_text(_nccl_tests_log(rows, ranks=2))
    fab = tmp_path / "fabric.json"
    save(_one_gpu_servers(), fab)
    r = run("explain", str(fab), str(folder), "--gpus", "2", "--gpus-per-node", "1", "--json")
    assert r.exit_code == 0, r.output
    assert [Path(d["log"]).name for d in json.loads(r.stdout)] == ["b_plateau.log"]
    assert (
        f"topo: warning: {folder / 'a_tiny.log'}:1: the all_reduce_perf test has no row of more "
        "than 0 bytes" in r.stderr and "(skipped)" in r.stderr
    )


def test_cli_says_where_a_size_took_longer_than_a_larger_one(tmp_path: Path) -> None:
    # three runs of 64 MiB (900, 3000, 950 us: median 950) and one of 128 MiB (700 us): 64 MiB's
    # median run took 950 / 700 = 1.36x the time of the larger size, said in a line and in
    # --json; 1 MiB (60 us) is under every larger size's time, not said. The scores take the
    # rows as they are: the four of 32 MiB and more (64 MiB's three runs, 128 MiB).
    from collective.test_cli import _nccl_tests_log
    from topo.fabric import save

    mib = 1 << 20
    rows = [(64 * mib, "float", "sum", t) for t in (900.0, 3000.0, 950.0)]
    rows += [(128 * mib, "float", "sum", 700.0), (mib, "float", "sum", 60.0)]
    log = tmp_path / "slow.log"
    log.write_text(_nccl_tests_log(rows, ranks=2))
    fab = tmp_path / "fabric.json"
    save(_one_gpu_servers(), fab)
    args = ["explain", str(fab), str(log), "--gpus", "2", "--gpus-per-node", "1"]
    r = run(*args)
    assert r.exit_code == 0, r.output
    # the median of three runs is slow only if two are (900 and 950 us are): not one slow run
    assert [x for x in r.stdout.splitlines() if "larger size" in x] == [
        f"all_reduce: 1 size took more than 1.25x the time of a larger size; furthest: "
        f"{64 * mib} B, 950.0 us against {128 * mib} B's 700.0 us, the median of its 3 runs, so "
        "not one slow run: a tuner choice slower than the larger size's, not the fabric (the "
        "scores take it as it is; --json: slower_than_larger)"
    ]
    # one run of 64 MiB, 950 us: one slow run may be all it is
    one = tmp_path / "slow1.log"
    one.write_text(_nccl_tests_log([rows[2], *rows[3:]], ranks=2))
    r1 = run("explain", str(fab), str(one), "--gpus", "2", "--gpus-per-node", "1")
    assert [x for x in r1.stdout.splitlines() if "larger size" in x] == [
        f"all_reduce: 1 size took more than 1.25x the time of a larger size; furthest: "
        f"{64 * mib} B, 950.0 us against {128 * mib} B's 700.0 us: one slow run or a tuner "
        "choice slower than the larger size's, not the fabric (the scores take it as it is; "
        "--json: slower_than_larger)"
    ]
    (d,) = json.loads(run(*args, "--json").stdout)
    assert d["slower_than_larger"] == [
        {"size_bytes": 64 * mib, "time_us": 950.0, "larger_size_bytes": 128 * mib,
         "larger_time_us": 700.0}
    ]  # fmt: skip
    assert d["scored_rows"] == 4


def test_cli_folder_with_op_skips_a_log_without_that_op(tmp_path: Path) -> None:
    # a folder of an all_reduce log (the 32 GB/s plateau) and a sendrecv log: --op all_reduce
    # explains the first and says and skips the second, as any other file of a folder that
    # holds no log to explain; named on the command line, the sendrecv log is still refused
    from collective.test_cli import _nccl_tests_log
    from topo.fabric import save

    folder = tmp_path / "logs"
    folder.mkdir()
    rows = [(s, "float", "sum", t) for s, t in _plateau(32.0, 2, "all_reduce")]
    (folder / "a_all_reduce.log").write_text(_nccl_tests_log(rows, ranks=2))
    # at 2 ranks all_reduce's busbw factor, 2 (n - 1) / n, is sendrecv's 1: the same rows
    sendrecv = _nccl_tests_log(rows, ranks=2).replace("all_reduce_perf", "sendrecv_perf")
    (folder / "b_sendrecv.log").write_text(sendrecv)
    fab = tmp_path / "fabric.json"
    save(_one_gpu_servers(), fab)
    args = ["--gpus", "2", "--gpus-per-node", "1", "--op", "all_reduce"]
    r = run("explain", str(fab), str(folder), *args, "--json")
    assert r.exit_code == 0, r.output
    assert [Path(d["log"]).name for d in json.loads(r.stdout)] == ["a_all_reduce.log"]
    assert r.stderr == (
        f"topo: warning: {folder / 'b_sendrecv.log'}: no all_reduce_perf test in the log (it "
        "has sendrecv) (skipped)\n"
    )
    r = run("explain", str(fab), str(folder / "b_sendrecv.log"), *args)
    assert r.exit_code == 1
    assert r.stderr == (
        f"topo: error: {folder / 'b_sendrecv.log'}: no all_reduce_perf test in the log (it has "
        "sendrecv)\n"
    )
