# ruff: noqa: E501 (the log lines are DeepEP's, verbatim)
"""topo.formats.deepep_log and topo.diagnose (``topo explain`` on DeepEP's test output): the
lines DeepEP's tests print are read as they print them, a run at the design's rate ranks
nothing, a run far below it is said to be slower, and a NIC two GPUs share gives each half.

The log lines are DeepEP's own: its README's internode row (H800, EP16: 43 GB/s RDMA both
phases) and deepseek-ai/DeepEP#60's three best-tuning lines (2 x 8 H100 with 4 IB NICs each:
4.47, 4.72 and 4.71 GB/s RDMA)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.collective.fabric_rates import fabric_rates
from topo.diagnose import ep_variants, explain_ep
from topo.errors import FormatError
from topo.fabric import save
from topo.formats.deepep_log import is_deepep_log, read_deepep_log
from topo.moe import default_config
from topo.moe.kernels import (
    _nic_and_nvlink_Bps,  # noqa: PLC2701 - the rule under test
    kernel_report,
)
from topo.moe.timing import moe_report

ISSUE_60 = """\
[config] num_tokens=4096, hidden=7168, num_topk_groups=2, num_topk=8
[tuning] Best dispatch (FP8): SMs 24, NVL chunk 20, RDMA chunk 32: 4.47 GB/s (RDMA), 9.00 GB/s (NVL)
[tuning] Best dispatch (BF16): SMs 24, NVL chunk 24, RDMA chunk 32: 4.72 GB/s (RDMA), 9.51 GB/s (NVL)
[tuning] Best combine: SMs 24, NVL chunk 4, RDMA chunk 32: 4.71 GB/s (RDMA), 9.50 GB/s (NVL)
"""
# DeepEP's current format: the notify and kernel times before the bandwidths
README_EP16 = """\
[tuning] Best dispatch (FP8): SMs 24, NVL chunk 28, RDMA chunk 16: 30 + 1640 us, 43.00 GB/s (RDMA), 140.00 GB/s (NVL)
[tuning] Best combine: SMs 24, NVL chunk 2, RDMA chunk 20, 12.00 + 2980.00 us, 43.00 GB/s (RDMA), 140.00 GB/s (NVL)
"""
LOW_LATENCY = """\
[rank 0] Dispatch bandwidth: 44.26 GB/s, avg_t=170.00 us | Combine bandwidth: 40.10 GB/s, avg_t=360.00 us
[rank 1] Dispatch bandwidth: 45.26 GB/s, avg_t=168.00 us | Combine bandwidth: 41.10 GB/s, avg_t=350.00 us
[rank 2] Dispatch bandwidth: 46.26 GB/s, avg_t=166.00 us | Combine bandwidth: 42.10 GB/s, avg_t=340.00 us
"""


def _write(tmp_path: Path, text: str, name: str = "deepep.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_best_tuning_lines_of_both_formats_are_read(tmp_path: Path) -> None:
    t = read_deepep_log(_write(tmp_path, ISSUE_60))
    assert t.kernel == "normal" and (t.num_tokens, t.hidden, t.num_topk_groups) == (4096, 7168, 2)
    got = {(p.phase, p.dtype): (p.rdma_GBps, p.nvl_GBps, p.sms, p.line) for p in t.phases}
    assert got == {
        ("dispatch", "fp8"): (4.47, 9.00, 24, 2),
        ("dispatch", "bf16"): (4.72, 9.51, 24, 3),
        ("combine", "bf16"): (4.71, 9.50, 24, 4),
    }
    t = read_deepep_log(_write(tmp_path, README_EP16))
    assert {(p.phase, p.rdma_GBps, p.time_us) for p in t.phases} == {
        ("dispatch", 43.0, 1640.0),
        ("combine", 43.0, 2980.0),
    }


def test_low_latency_lines_give_the_median_over_ranks(tmp_path: Path) -> None:
    t = read_deepep_log(_write(tmp_path, LOW_LATENCY))
    assert t.kernel == "low_latency" and t.ranks_seen == [0, 1, 2]
    assert [(p.phase, p.rdma_GBps, p.time_us) for p in t.phases] == [
        ("dispatch", 45.26, 168.0),
        ("combine", 41.10, 350.0),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nothing here\n", "no DeepEP result"),
        (README_EP16 + LOW_LATENCY, "both normal-kernel tuning lines and low-latency lines"),
        (
            "[tuning] Best combine: SMs 24, NVL chunk 2, RDMA chunk 20: 0.00 GB/s (RDMA), "
            "1.00 GB/s (NVL)\n",
            "RDMA GB/s 0.00 is not above 0",
        ),
    ],
)
def test_a_file_that_is_not_a_deepep_result_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(FormatError, match=message) as e:
        read_deepep_log(p)
    assert str(e.value).startswith(str(p))
    assert is_deepep_log(README_EP16) and not is_deepep_log("all_reduce_perf\n")


def _servers(nics: int) -> object:
    # 2 servers of 8 GPUs, 400G NICs, NVLink 200 GB/s (H800) and PCIe Gen5
    return build(
        "ft2", gpus=16, gpus_per_node=8, nics_per_node=nics, switch_ports=64,
        link_gbps=400.0, nvlink_GBps=200.0, pcie_GBps=64.0,
    )  # fmt: skip


def test_two_gpus_behind_one_nic_each_move_half_of_it() -> None:
    # 4 NICs of 50 GB/s for 8 GPUs: every NIC is two ranks' own, 25 GB/s each
    for nics, share in ((8, 50e9), (4, 25e9)):
        report = moe_report(_servers(nics), default_config(), ep=16, tokens_per_gpu=64)
        nic, nvl = _nic_and_nvlink_Bps(report.layout)
        assert (nic, nvl) == (share, 200e9)


def test_the_readme_rate_agrees_and_a_run_at_a_tenth_is_slower(tmp_path: Path) -> None:
    G = _servers(8)
    healthy = explain_ep(G, read_deepep_log(_write(tmp_path, README_EP16)), 16, 8)
    assert healthy.agrees and healthy.causes == []
    assert healthy.phases == ["combine bf16 RDMA", "dispatch fp8 RDMA"]
    slow = explain_ep(_servers(4), read_deepep_log(_write(tmp_path, ISSUE_60, "60.log")), 16, 8)
    assert not slow.agrees and not slow.faster
    assert slow.verdict.startswith("slower than the design")
    # 4.5 GB/s is far under any single fault topo models: nothing fits within 15%
    assert not any(c.fits for c in slow.causes)


def test_cli_needs_the_ranks_of_a_deepep_log(tmp_path: Path) -> None:
    fabric = tmp_path / "f.json"
    save(_servers(8), fabric)
    log = _write(tmp_path, README_EP16)
    r = CliRunner().invoke(app, ["explain", str(fabric), str(log)])
    assert r.exit_code == 1
    assert "give --gpus and --gpus-per-node" in r.stderr
    r = CliRunner().invoke(
        app, ["explain", str(fabric), str(log), "--gpus", "16", "--gpus-per-node", "8", "--json"]
    )
    assert r.exit_code == 0, r.output
    assert '"kind":"deepep"' in r.stdout.replace(" ", "") and '"agrees":true' in r.stdout.replace(
        " ", ""
    )


def test_a_deepep_log_given_as_a_pipe_is_explained_as_deepep(tmp_path: Path) -> None:
    # explain reads each log once and tells its kind from the text: a pipe (bash's <(...))
    # holding DeepEP's output is a DeepEP run, not a collective's log
    from tests.formats.test_nccl_inspector import pipe_of

    fabric = tmp_path / "f.json"
    save(_servers(8), fabric)
    with pipe_of(README_EP16) as log:
        r = CliRunner().invoke(
            app,
            ["explain", str(fabric), str(log), "--gpus", "16", "--gpus-per-node", "8", "--json"],
        )
    assert r.exit_code == 0, r.output
    assert '"kind":"deepep"' in r.stdout.replace(" ", "")


def test_a_deepep_log_in_a_folder_without_ranks_is_skipped_with_a_warning(tmp_path: Path) -> None:
    fabric = tmp_path / "f.json"
    save(_servers(8), fabric)
    folder = tmp_path / "logs"
    folder.mkdir()
    _write(folder, README_EP16)
    (folder / "notes.txt").write_text("not a log\n")
    r = CliRunner().invoke(app, ["explain", str(fabric), str(folder)])
    assert r.exit_code == 1
    assert "give --gpus and --gpus-per-node (skipped)" in r.stderr
    assert "no measured collective log in" in r.stderr


# DeepEP's README normal-kernel rows (H800 + CX7 400G, 8 NICs per server; ../shared/REFERENCES.md)
README_EP32 = """\
[config] num_tokens=4096, hidden=7168, num_topk_groups=4, num_topk=8
[tuning] Best dispatch (FP8): SMs 24, NVL chunk 28, RDMA chunk 16: {d:.2f} GB/s (RDMA), 120.00 GB/s (NVL)
[tuning] Best combine: SMs 24, NVL chunk 2, RDMA chunk 20: {c:.2f} GB/s (RDMA), 120.00 GB/s (NVL)
"""
# deepseek-ai/DeepEP#155: 2 x 8 H100, 8 mlx5 NICs, shmem_put_bw 47 GB/s between the nodes
ISSUE_155 = """\
[tuning] Best dispatch (BF16): SMs 24, NVL chunk 20, RDMA chunk 32: 25.80 GB/s (RDMA), 84.39 GB/s (NVL)
[tuning] Best combine: SMs 24, NVL chunk 2, RDMA chunk 28: 25.22 GB/s (RDMA), 82.51 GB/s (NVL)
"""
# deepseek-ai/DeepEP#493: 2 x 8 H200, CX7 400G, the healthy two-node run
ISSUE_493 = """\
[tuning] Best combine: SMs 24, NVL chunk 2, RDMA chunk 20: 44.37 GB/s (RDMA), 145.16 GB/s (NVL)
[tuning] Best dispatch (BF16): SMs 24, NVL chunk 28, RDMA chunk 16: 40.89 GB/s (RDMA), 133.78 GB/s (NVL)
[tuning] Best dispatch (FP8): SMs 24, NVL chunk 28, RDMA chunk 24: 38.19 GB/s (RDMA), 124.92 GB/s (NVL)
"""


def _cluster(gpus: int, *, link_gbps: float = 400.0, nvlink_GBps: float = 200.0, **kw: object):
    return build(
        "ft2", gpus=gpus, gpus_per_node=8, nics_per_node=8, switch_ports=64,
        link_gbps=link_gbps, nvlink_GBps=nvlink_GBps, pcie_GBps=64.0, **kw,
    )  # fmt: skip


def test_two_gpus_given_one_nic_by_nvshmem_rank_first_where_the_nic_binds(tmp_path: Path) -> None:
    # deepseek-ai/DeepEP PR #466: NVSHMEM gives two GPUs on one PCIe switch the same NIC,
    # "halving the observed bandwidth for RDMA in test_internode.py (because 4 of 8 NIC are
    # enabled)". Measured: the README's EP32 row (58 / 57 GB/s), halved as the PR says.
    log = _write(tmp_path, README_EP32.format(d=58 / 2, c=57 / 2))
    e = explain_ep(_cluster(32), read_deepep_log(log), 32, 8)
    assert not e.agrees and e.causes[0].name == "nvshmem_nics:4" and e.causes[0].fits
    # EP32 is where the NIC binds (the design's combine is RDMA-bound): half the NIC, half
    # the figure; one NIC of one server at half rate sets the same slowest rank
    combine = e.phases.index("combine bf16 RDMA")
    assert e.causes[0].predicted.GBps[combine] == pytest.approx(e.design.GBps[combine] / 2)
    assert e.causes[1].name == "nic_slow" and e.causes[1].score == pytest.approx(e.causes[0].score)
    assert "cannot tell them apart): nic_slow" in e.verdict
    assert "NVSHMEM_HCA_LIST" in e.causes[0].check


def test_one_plane_of_a_dual_plane_nic_ranks_first(tmp_path: Path) -> None:
    # deepseek-ai/DeepEP PR #650: DeepEP V1 drove only plane 0 of a dual-plane ConnectX-8
    # (2 x 400G). One plane gives each GPU a 400G port, the NIC DeepEP's README rows were
    # measured on: the README's EP32 figures on dual-plane NICs are one plane's.
    log = _write(tmp_path, README_EP32.format(d=58, c=57))
    dual = _cluster(32, link_gbps=800.0, planes_per_nic=2)
    e = explain_ep(dual, read_deepep_log(log), 32, 8)
    assert not e.agrees and e.causes[0].name == "planes_used:1" and e.causes[0].fits
    # one plane of 2 x 400G predicts what the design of one 400G NIC per GPU predicts
    single = explain_ep(_cluster(32), read_deepep_log(log), 32, 8)
    assert single.agrees
    assert e.causes[0].predicted.GBps == pytest.approx(single.design.GBps)
    assert "PR #650" in e.causes[0].check


def test_on_two_servers_the_normal_kernel_is_sm_bound_and_a_shared_nic_does_not_show(
    tmp_path: Path,
) -> None:
    # DeepEP#493's healthy two-node H200 run agrees with the design
    G = _cluster(16, nvlink_GBps=450.0)
    test = read_deepep_log(_write(tmp_path, ISSUE_493))
    e = explain_ep(G, test, 16, 8)
    assert e.agrees and e.causes == []
    # On two servers the test prints (token, node) pairs with the own node: about twice the
    # bytes a NIC carries (1 + p) / p, p = 1 - 2^-8 the chance a token's 8 experts reach the
    # other node. Two GPUs on one 400G NIC may each print 0.94 x 25 GB/s x 2 = 47 GB/s, above
    # the SMs' forwarding bound that sets every figure here: the figure does not move.
    rates = fabric_rates(G, 16, 8)
    shared = next(v for v in ep_variants(G, rates) if v.name == "nvshmem_nics:4")
    for H in (G, shared.change(G, rates)):
        r = moe_report(H, default_config(), ep=16, tokens_per_gpu=4096, micro_batches=1)
        k = kernel_report(r, "deepep-normal")
        assert (k.dispatch_bottleneck, k.combine_bottleneck) == ("sm", "sm")
    p = 1 - 0.5**8
    assert 0.94 * 25 * (1 + p) / p > max(44.37, 40.89, 38.19)


def test_deepep_155_is_closest_to_four_gpus_per_nic(tmp_path: Path) -> None:
    # deepseek-ai/DeepEP#155 (2 x 8 H100, 8 NICs; shmem_put_bw 47 GB/s, so the NICs run at
    # 400G): 25.80 / 25.22 GB/s against the design's SM-bound ~38-44. Its thread established
    # no cause; of topo's, four GPUs per NIC comes closest: each moves 0.94 x 50 / 4 GB/s,
    # printed x (1 + p) / p (p = 1 - 2^-8, as above) = 23.5 GB/s.
    e = explain_ep(
        _cluster(16, nvlink_GBps=450.0), read_deepep_log(_write(tmp_path, ISSUE_155)), 16, 8
    )
    assert not e.agrees and e.causes[0].name == "nvshmem_nics:2" and e.causes[0].fits
    p = 1 - 0.5**8
    for got in e.causes[0].predicted.GBps:
        assert got == pytest.approx(0.94 * 50 / 4 * (1 + p) / p, rel=0.01)
