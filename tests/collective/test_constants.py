"""The NCCL constants file (topo.collective.constants): every value is checked when the file is
loaded, and a bad one is one line naming the file, the key and the limit; the per-generation
tables ``with_arch`` selects. Expected values are worked by hand from NCCL's tuning.cc (cited)
and the fabric's NVLink rate."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest
from typer.testing import CliRunner, Result

from topo.builders import build
from topo.cli import app
from topo.collective import candidates, fabric_rates, load_constants
from topo.errors import FormatError, TopoError
from topo.fabric import save

runner = CliRunner()


def run(*args: Any) -> Result:
    return runner.invoke(app, ["collective", *map(str, args)])


def one_line_error(r: Result, *fragments: str) -> None:
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.fixture(scope="module")
def server() -> nx.Graph:
    """Two H100-like servers: 8 GPUs, NVLink 450 GB/s, 8 x 400G NICs each."""
    return build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8, nvlink_GBps=450)


@pytest.fixture(scope="module")
def fabric_file(tmp_path_factory, server) -> str:
    path = tmp_path_factory.mktemp("fab") / "small.json"
    save(server, path)
    return str(path)


@pytest.mark.parametrize(
    "text, key, limit",
    [
        ("[latency.base]\nring = [nan, 14.0, 8.4]\n", "latency.base.ring", "> 0"),
        ("[latency.net]\nring = [2.7, -4.0, 14.0]\n", "latency.net.ring", "> 0"),
        ("[bandwidth]\np2p_per_channel_net_GBps = 0\n", "p2p_per_channel_net_GBps", "> 0"),
        ("[bandwidth.per_channel_tree]\nhopper = [38.7, 0.0, 36.0]\n", "per_channel_tree", "> 0"),
        ("[latency]\nextra_step_us = -1.0\n", "latency.extra_step_us", ">= 0"),
        ("[latency.nvlink]\nnvls = [0.0, 0.0, inf]\n", "latency.nvlink.nvls", ">= 0"),
        # finite but absurd: a 300-digit time in every row, or 1e300 x every time
        ("[expected]\nlaunch_us = 1e300\n", "expected.launch_us", "0 or from 1e-06 to 1e+09"),
        (
            "[bandwidth]\nnvlink_link_GBps = { hopper = 1e-300 }\n",
            "nvlink_link_GBps.hopper",
            "from 1e-06 to 1e+09",
        ),
        ("[efficiency]\nnode_network = 1e-300\n", "efficiency.node_network", "at least 1e-06"),
        ('[model]\ncpu_arch = "power"\n', "model.cpu_arch", "x86 or arm"),
    ],
)
def test_bad_constants_are_one_line_naming_file_and_key(tmp_path, fabric_file, text, key, limit):
    f = tmp_path / "c.toml"
    f.write_text(text)
    with pytest.raises(FormatError) as e:
        load_constants(f)
    assert str(f) in str(e.value) and key in str(e.value) and limit in str(e.value)
    one_line_error(run(fabric_file, "--constants", f), str(f), key)


def test_arch_tables(server):
    """Ampere has no NVLink SHARP (nvlsEfficiency 0, tuning.cc): no NVLS candidate on one
    server; Blackwell's NVLS gets 0.74 of NCCL's NVLink (SM100 40.1 / 50 = 0.802 of the link)."""
    c = load_constants()
    r = fabric_rates(server, 8)
    algos = {k.algorithm for k in candidates("all_reduce", 1 << 30, r, c.with_arch("ampere"))}
    assert "nvls" not in algos and "ring" in algos
    nv = {k.algorithm: k for k in candidates("all_reduce", 1 << 30, r, c.with_arch("blackwell"))}
    assert nv["nvls"].algbw_Bps == pytest.approx(450e9 * 0.802 * 0.74 * 8 / 9)
    with pytest.raises(TopoError, match="^arch must be one of"):
        c.with_arch("kepler")
