"""``--compute-host-regex`` (only the hosts it matches get GPUs), the NIC-count rule of
``--gpus-per-host`` (as ``topo build``'s), and the collective's message on uneven racks.

References: the real GB200 dump's own text, read with regular expressions (not topo's reader):
119 hosts named ``aNN-p1-dgx-RR-cTT`` in 8 racks of 10, 11, 18, 17, 18, 15, 16, 14 trays, 109
of them with 4 CAs (rack 01's 10 have 3, its rail-3 leaf absent), and 72 other hosts (a UFM
host, ``ubuntu``, ``localhost``, 69 CAs with no hostname). The all-to-all's NIC cut of rack 01
worked by hand.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.errors import SpecError
from topo.fabric import load, save, servers
from topo.flow import alltoall_bandwidth
from topo.formats import import_ibnetdiscover
from topo.spec import ServerSpec

from ._real import real_file

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
RACK = r"-dgx-(\d+)-c\d+$"
TRAY = r"-dgx-\d+-c\d+$"
_CA_HOST = re.compile(r'^Ca\s+\d+\s+"H-[0-9a-f]+"\s+#\s+"(\S+) \S+"$', re.M)


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _trays(text: str) -> Counter[str]:
    """Tray -> its CAs, from the dump's CA records."""
    return Counter(h for h in _CA_HOST.findall(text) if re.search(TRAY, h))


def test_only_the_trays_get_gpus_and_the_others_carry_nothing(tmp_path: Path) -> None:
    path = real_file(*GB200)
    trays = _trays(path.read_text())
    assert len(trays) == 119
    G = import_ibnetdiscover(
        path,
        gpus_per_host=4,
        nvlink_GBps=900,
        nvlink_domain_regex=RACK,
        compute_host_regex=TRAY,
    )
    gpus = [v for v, k in G.nodes(data="kind") if k == "gpu"]
    assert len(gpus) == 4 * 119
    assert {G.nodes[v]["host"] for v in gpus} == set(trays)
    assert G.graph["non_compute_hosts"] == 72 and G.graph["compute_host_regex"] == TRAY
    # the UFM host keeps its two cabled HCAs, a server of NICs alone
    ufm = [v for v in G if str(v).startswith("B11-P1-CUFM-02/")]
    assert len(ufm) == 2 and all(G.nodes[v]["kind"] == "nic" for v in ufm)
    assert all(G.nodes[v]["node"] == "B11-P1-CUFM-02" for v in ufm)
    assert all(any(G.nodes[w]["kind"] == "switch" for w in G.adj[v]) for v in ufm)
    save(G, tmp_path / "g.json")  # the schema and wiring checks accept it
    assert len([s for s in servers(load(tmp_path / "g.json"))]) == 8 + 72
    # rack 01: 40 GPUs behind 30 HCAs of 50 GB/s; to the other 436 GPUs at pair rate r:
    # r <= 30 x 50 / (40 x 436) GB/s, the tightest rack cut (rack 03: 72 GPUs, 72 HCAs:
    # 3600 / (72 x 404) = 0.124)
    res = alltoall_bandwidth(G)
    assert res.pair_rate_Bps == pytest.approx(30 * 50e9 / (40 * 436), rel=1e-6)


def test_the_import_reports_the_hosts_left_out(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    r = run(
        "import", "ibnetdiscover", real_file(*GB200), "--gpus-per-host", 4,
        "--nvlink-domain-regex", RACK, "--compute-host-regex", TRAY, "--json", "-o", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert (got["gpus"], got["non_compute_hosts"], got["nvlink_domains"]) == (476, 72, 8)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--compute-host-regex", TRAY], "give --gpus-per-host too"),
        (["--gpus-per-host", 4, "--compute-host-regex", "("], "not a regular expression"),
        (["--gpus-per-host", 4, "--compute-host-regex", "^zzz"], "matches none of the 191"),
    ],
)
def test_compute_host_regex_refusals(args: list[object], needle: str) -> None:
    r = run("import", "ibnetdiscover", real_file(*GB200), *args)
    assert r.exit_code == 1 and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--compute-host-regex" in lines[0] and needle in lines[0]


def test_gpus_per_host_must_be_a_multiple_of_a_trays_nics() -> None:
    path = real_file(*GB200)
    four = sum(1 for n in _trays(path.read_text()).values() if n == 4)
    assert four == 109
    # topo build refuses 4 NICs on 5 GPUs; the import the same, naming the host and its count
    with pytest.raises(SpecError, match="must divide gpus_per_node"):
        ServerSpec(gpus=5, nics=4)
    for gpus in (5, 6):
        r = run("import", "ibnetdiscover", path, "--gpus-per-host", gpus)
        assert r.exit_code == 1 and "Traceback" not in r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1
        assert re.search(
            rf"--gpus-per-host {gpus}: host 'a\d\d-p1-dgx-\d\d-c\d\d' of .* has 4 NICs, which "
            rf"do not divide its {gpus} GPUs \({four} hosts so\)",
            lines[0],
        ), lines[0]
    # 8 is two GPUs per HCA; rack 01's 3-HCA trays (a leaf absent) are kept as they are
    G = import_ibnetdiscover(path, gpus_per_host=8, compute_host_regex=TRAY)
    assert sum(1 for _, k in G.nodes(data="kind") if k == "gpu") == 8 * 119


def test_collective_says_what_to_pass_on_uneven_racks(tmp_path: Path) -> None:
    path = real_file(*GB200)
    G = import_ibnetdiscover(
        path, gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=RACK, compute_host_regex=TRAY
    )
    save(G, tmp_path / "g.json")
    r = run("collective", tmp_path / "g.json", "--op", "all_reduce")
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    # racks fill in order (10, 11, ... trays): two racks of 10 trays is the largest even fill
    assert lines[0].startswith(
        "topo: error: all 476 GPUs at 4 per host (no --gpus given) fill NVLink domains "
        "unevenly (10, 11, 18, 17, 18, 15, 16, 14 hosts)"
    )
    assert "give --gpus 80 (4 x 10 hosts in each of the domains '01' to '02')" in lines[0]
    assert "--gpus 476" not in lines[0]
    ok = run("collective", tmp_path / "g.json", "--op", "all_reduce", "--gpus", 80, "--json")
    assert ok.exit_code == 0, ok.output
    assert (json.loads(ok.stdout)["nodes"], json.loads(ok.stdout)["gpus_per_node"]) == (2, 40)


def test_slurm_and_nccl_list_only_the_hosts_with_gpus() -> None:
    from topo.export import ExportOptions, export

    path = real_file(*GB200)
    G = import_ibnetdiscover(
        path, gpus_per_host=4, nvlink_GBps=900, nvlink_domain_regex=RACK, compute_host_regex=TRAY
    )
    others = re.compile(r"CUFM|ubuntu|localhost|H-[0-9a-f]{16}")
    block = export(G, "slurm", ExportOptions(slurm_format="block"))
    assert block.warnings == ()  # no host outside the racks' blocks (72 before)
    assert len([ln for ln in block.text.splitlines() if ln.startswith("BlockName=")]) == 8
    tree = export(G, "slurm").text
    assert not others.search(tree)
    listed = {
        h for ln in tree.splitlines() if " Nodes=" in ln for h in _expand(ln.split("Nodes=")[1])
    }
    assert listed == set(_trays(path.read_text()))  # the 119 trays, every one
    env = export(G, "nccl", ExportOptions(hca_format="mlx5_{index}")).text
    assert not others.search(env)
    # the cables of the GPU-less hosts stay in the fabric (and in a cabling plan)
    assert any(str(v).startswith("B11-P1-CUFM-02/") for v in G)


def _expand(hostlist: str) -> list[str]:
    """Slurm's ``a-c[01,03-04],b`` hostlist as names (a bracket per name, as topo writes)."""
    names: list[str] = []
    for prefix, inner, plain in re.findall(r"([^,\[]+)\[([^\]]+)\]|([^,\[\]]+)", hostlist):
        if plain:
            names.append(plain)
            continue
        for part in inner.split(","):
            lo, _, hi = part.partition("-")
            for k in range(int(lo), int(hi or lo) + 1):
                names.append(f"{prefix}{k:0{len(lo)}d}")
    return names
