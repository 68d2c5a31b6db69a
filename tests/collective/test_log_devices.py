"""``topo collective --compare``: one warning line when the log ran on other GPUs than the
model's (topo.collective.log_devices); the numbers stay as they are.

The device names are read from the real logs' headers (``#  Rank  0 Group  0 Pid ... device
0 [0000:1b:00] NVIDIA H100 80GB HBM3``, by eye); the other GPUs are the same log with the name
replaced, so every number of the log, and of the prediction, is the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from formats._real import real_file
from typer.testing import CliRunner

from topo.cli import app
from topo.collective.log_devices import device_mismatch
from topo.formats.nccl_tests import read_nccl_tests

H100 = "NVIDIA H100 80GB HBM3"
PAIR = ("nccl_tests_logs", "xxrjun_cluster00_pairwise", "nccl_N2_G8_cnode2-001_cnode2-002.log")
runner = CliRunner()


def test_the_device_names_of_a_real_log() -> None:
    tests = read_nccl_tests(real_file(*PAIR))
    assert [t.op for t in tests] == ["alltoall", "sendrecv"]
    assert all(t.devices == [H100] for t in tests)


def test_the_older_rank_line_names_its_device_too(tmp_path: Path) -> None:
    # nccl-tests before the Group column: "#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s"
    import re

    old = re.sub(
        r"(?m)^#  Rank(\s+\d+) Group\s+\d+ Pid(\s+\d+) on (\S+) device(\s+\d+) \[[^\]]*\] .*$",
        r"#   Rank\1 Pid\2 on \3 device\4 [0x1b] Tesla V100-SXM2-16GB",
        real_file(*PAIR).read_text(),
    )
    assert old.count("[0x1b] Tesla V100-SXM2-16GB") == 32  # 16 ranks, two tests
    log = tmp_path / "v100.log"
    log.write_text(old)
    tests = read_nccl_tests(log)
    assert all(t.devices == ["Tesla V100-SXM2-16GB"] and t.ranks == 16 for t in tests)


def _compare(*args: object) -> tuple[str, str]:
    r = runner.invoke(app, ["collective", *map(str, args), "--json"])
    assert r.exit_code == 0, r.output
    return r.stdout, r.stderr


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("topo: warning:")]


def test_no_warning_when_the_log_is_of_the_models_gpus(tmp_path: Path) -> None:
    log = real_file(*PAIR)
    _, stderr = _compare("--compare", log)  # the default H100 cluster, hopper constants
    assert _warnings(stderr) == []
    fabric = tmp_path / "h100.json"
    build = ["build", "ft2", "--node", "h100", "--gpus", 16, "--switch-ports", 64, "-o", fabric]
    assert runner.invoke(app, list(map(str, build))).exit_code == 0
    _, stderr = _compare(fabric, "--compare", log)
    assert _warnings(stderr) == []


def test_a_log_of_other_gpus_warns_once_and_changes_no_number(tmp_path: Path) -> None:
    log = real_file(*PAIR)
    a100 = tmp_path / "a100.log"
    a100.write_text(log.read_text().replace(H100, "NVIDIA A100-SXM4-80GB"))
    same, _ = _compare("--compare", log)
    out, stderr = _compare("--compare", a100)
    (line,) = _warnings(stderr)
    assert "NVIDIA A100-SXM4-80GB (ampere)" in line and "the model is of hopper GPUs" in line
    assert json.loads(out) == json.loads(same)  # the warning changes nothing else


@pytest.mark.parametrize(
    "node, arch, says",
    [
        ("b200", None, "the model is of blackwell GPUs (the fabric's NVIDIA DGX B200"),
        # same generation, another GPU: the H800's NVLink is 200 GB/s, not the H100's 450
        ("h800", None, "the model is of hopper GPUs (the fabric's NVIDIA HGX H800"),
        ("h100", "ampere", "the model is of ampere GPUs (--arch ampere, on a fabric of"),
    ],
)
def test_a_model_of_other_gpus_warns(
    tmp_path: Path, node: str, arch: str | None, says: str
) -> None:
    log = real_file(*PAIR)
    fabric = tmp_path / f"{node}.json"
    build = ["build", "ft2", "--node", node, "--gpus", 16, "--switch-ports", 64, "-o", fabric]
    assert runner.invoke(app, list(map(str, build))).exit_code == 0
    _, stderr = _compare(fabric, "--compare", log, *(["--arch", arch] if arch else []))
    (line,) = _warnings(stderr)
    assert f"the log's GPUs are {H100} (hopper)" in line and says in line


def test_unknown_devices_and_logs_without_names() -> None:
    import networkx as nx

    tests = read_nccl_tests(real_file(*PAIR))
    assert device_mismatch(tests, nx.Graph(), "hopper") is None
    unnamed = [t.__class__(**{**t.__dict__, "devices": []}) for t in tests]
    assert device_mismatch(unnamed, nx.Graph(), "ampere") is None  # nothing to compare
    odd = [t.__class__(**{**t.__dict__, "devices": ["Tesla T4"]}) for t in tests]
    line = device_mismatch(odd, nx.Graph(), "hopper")
    assert line is not None and "Tesla T4 (a GPU topo has no NCCL constants for)" in line
