"""``topo collective`` on a fabric that records no GPU model says which generation it assumed.

The shipped constants file's ``model.arch`` (read from the file here) is the generation the
numbers are computed with when neither ``--arch``, ``--node`` nor the fabric names one; the
warning names it. A fabric built with ``--node`` (its ``gpu_model`` recorded), ``--arch`` or
``--node`` on the command line, and a refused input get no warning; stdout's JSON is the same
as with ``--arch`` set to that generation by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.collective.constants import default_constants_path
from topo.collective.gpu_models import ARCH_CLASS, assumed_arch_note
from topo.fabric import save
from topo.fabric.gpus import gpu_arch
from topo.spec import tomllib

runner = CliRunner()
DEFAULT_ARCH = tomllib.loads(default_constants_path().read_text())["model"]["arch"]
SIZES = ("--min-bytes", "1M", "--max-bytes", "1M")


def run(*args: object):
    from topo.cli import app

    return runner.invoke(app, ["collective", *map(str, args)])


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("topo: warning:")]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # 2 servers of 8 GPUs on 8-port switches, built without --node: no gpu_model
    path = tmp_path_factory.mktemp("a") / "plain.json"
    save(build("ft2", switch_ports=8, gpus=16), path)
    return path


def test_the_note_names_the_generation_and_the_way_out():
    assert DEFAULT_ARCH == "hopper"  # the shipped file's, as docs/collective.md says
    assert assumed_arch_note(nx.Graph(), "hopper") == (
        "records no GPU model; assuming Hopper (H100-class) NCCL tables; pass --arch or build "
        "with --node"
    )
    unknown = assumed_arch_note(nx.Graph(gpu_model="Tesla T4"), "ampere")
    assert unknown is not None
    assert "'Tesla T4'" in unknown and "assuming Ampere (A100-class)" in unknown
    assert assumed_arch_note(nx.Graph(gpu_model="NVIDIA B200"), "hopper") is None
    G = nx.Graph()
    G.add_node("n0/gpu0", kind="gpu", model="NVIDIA H100 80GB HBM3")  # as an import records
    assert assumed_arch_note(G, "hopper") is None


@pytest.mark.parametrize("as_json", [False, True])
def test_a_fabric_without_a_gpu_model_warns_once_on_stderr(plain, as_json):
    r = run(plain, *SIZES, *(["--json"] if as_json else []))
    assert r.exit_code == 0, r.output
    assert warnings(r.stderr) == [
        f"topo: warning: {plain} records no GPU model; assuming {ARCH_CLASS[DEFAULT_ARCH]} NCCL "
        "tables; pass --arch or build with --node"
    ]
    assert "warning" not in r.stdout


def test_json_is_unchanged_by_the_warning(plain):
    assumed = run(plain, *SIZES, "--json")
    chosen = run(plain, *SIZES, "--json", "--arch", DEFAULT_ARCH)
    assert json.loads(assumed.stdout) == json.loads(chosen.stdout)


@pytest.mark.parametrize("extra", [("--arch", "hopper"), ("--arch", "ampere"), ("--node", "h100")])
def test_no_warning_when_the_generation_is_given(plain, extra):
    r = run(plain, *SIZES, *extra)
    assert r.exit_code == 0, r.output
    assert warnings(r.stderr) == []


def test_no_warning_when_the_fabric_records_its_model(tmp_path):
    path = tmp_path / "b200.json"
    G = build("ft2", switch_ports=8, gpus=16)
    G.graph["gpu_model"] = "NVIDIA DGX B200 / HGX B200 8-GPU"  # as topo build --node b200 does
    save(G, path)
    r = run(path, *SIZES)
    assert r.exit_code == 0, r.output
    assert warnings(r.stderr) == []


def test_a_refused_input_stays_one_error_line(plain):
    r = run(plain, "--min-bytes", "2G", "--max-bytes", "1G")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "topo: error: --min-bytes 2,147,483,648 exceeds --max-bytes 1,073,741,824"
    ]


def test_compare_warns_on_a_fabric_file_not_on_the_default_cluster(tmp_path):
    # the log ran on 10 servers of 8 H100 (its header names the devices): a fabric of 10 such
    # servers built without --node records no model; the default cluster (no FABRIC) is named
    # H100 by its own note instead
    from tests.formats._real import real_file

    log = real_file("nccl_tests_logs", "xxrjun_cluster01_multinode_N10", "nccl_N10_G8.log")
    path = tmp_path / "ten.json"
    save(build("ft2", switch_ports=64, gpus=80, nvlink_GBps=450), path)
    r = run(path, "--compare", log, "--op", "all_reduce", "--json")
    assert r.exit_code == 0, r.output
    assert [w for w in warnings(r.stderr) if "records no GPU model" in w] == [
        f"topo: warning: {path} records no GPU model; assuming {ARCH_CLASS[DEFAULT_ARCH]} NCCL "
        "tables; pass --arch or build with --node"
    ]
    r = run("--compare", log, "--op", "all_reduce", "--json")
    assert r.exit_code == 0, r.output
    assert not [w for w in warnings(r.stderr) if "records no GPU model" in w]


def test_arch_default_follows_the_fabric(tmp_path):
    """A fabric recording an A100 is computed with Ampere's tables (no NVLink SHARP, so no
    NVLS); ``--arch hopper`` on the same fabric chooses NVLS for 1 GiB on one server."""
    G = build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)
    assert gpu_arch(G) is None
    G.graph["gpu_model"] = "NVIDIA A100-SXM4-80GB"
    assert gpu_arch(G) == "ampere"
    path = tmp_path / "a100.json"
    save(G, path)
    args = ["--gpus", 8, "--op", "all_reduce", "--min-bytes", "1G", "--max-bytes", "1G", "--json"]
    rows_default = json.loads(run(path, *args).stdout)["rows"]
    rows_hopper = json.loads(run(path, *args, "--arch", "hopper").stdout)["rows"]
    assert rows_default[0]["algorithm"] != "nvls"  # the fabric says A100: no NVLS
    assert rows_hopper[0]["algorithm"] == "nvls"
