"""Host names and Slurm hostlist ranges, held to the man page and to the real scontrol."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from tests.export._expand import expand
from tests.formats._real import real_file
from topo.errors import SpecError
from topo.export import host_names, hostlist_ranged


@pytest.mark.parametrize(
    "names, expected",
    [
        # topology.conf(5)'s own example: "Nodes=tux[0-3,12,18-20]"
        (["tux0", "tux1", "tux2", "tux3", "tux12", "tux18", "tux19", "tux20"], "tux[0-3,12,18-20]"),
        (["s0", "s1", "s2", "s4", "s5", "s6", "s7", "s8", "s12"], "s[0-2,4-8,12]"),
        (["node5"], "node5"),
        (["node01", "node02", "node09", "node10"], "node[01-02,09-10]"),
        (["leaf0", "leaf1", "spine"], "leaf[0-1],spine"),
        (["node9", "node10", "node11"], "node[9-11]"),  # neither zero-padded: one range
        (["node8", "node09"], "node[8,09]"),  # widths differ, one padded: two ranges
    ],
)
def test_hostlist_ranged_by_hand(names, expected):
    assert hostlist_ranged(names) == expected
    assert expand(expected) == names


@pytest.mark.parametrize(
    "parts, conf",
    [
        (("slurm_topology", "psmn_x5.topology.conf"), "Nodes="),
        (("slurm_topology", "topograph_expected_block.topology.conf"), "Nodes="),
        (("slurm_topology", "slurm_test_docker_3level.topology.conf"), "Switches="),
    ],
)
def test_real_topology_files_ranges_written_back(parts, conf):
    """Every hostlist of a real topology.conf, expanded and written again, is the same text."""
    text = real_file(*parts).read_text()
    lists = [
        f.split("=", 1)[1] for ln in text.splitlines() for f in ln.split() if f.startswith(conf)
    ]
    assert lists
    for hl in lists:
        if "[" in hl:
            assert hostlist_ranged(expand(hl)) == hl


def test_hostlist_ranged_matches_scontrol(tmp_path):
    """Random name lists: topo's ranges are what the real `scontrol show hostlist` prints."""
    if shutil.which("scontrol") is None:
        pytest.skip("scontrol not installed (apt-get install slurmctld)")
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=t\nSlurmctldHost=localhost\n")
    rng = random.Random(7)
    cases = []
    for _ in range(12):
        names = []
        for _ in range(rng.randint(1, 14)):
            prefix = rng.choice(["node", "gpu", "r1n", "leaf"])
            num = rng.choice([rng.randint(0, 12), rng.randint(95, 105)])
            width = rng.choice([0, 0, 2, 3])
            names.append(f"{prefix}{num:0{width}d}")
        names = list(dict.fromkeys(names))
        cases.append(names)
    for names in cases:
        out = subprocess.run(
            ["scontrol", "show", "hostlist", ",".join(names)],
            capture_output=True,
            text=True,
            env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin:/usr/sbin"},
            timeout=30,
        )
        assert out.returncode == 0, out.stderr
        assert hostlist_ranged(names) == out.stdout.strip(), names


def test_host_names_pattern_and_file(tmp_path):
    assert host_names([0, 1, 2]) == ["node0", "node1", "node2"]
    assert host_names([0, 1], "gpu{node:03d}") == ["gpu000", "gpu001"]
    f = tmp_path / "hosts.txt"
    f.write_text("# rack 1\nalpha\n\nbeta  # spare\n")
    assert host_names([0, 1], str(f)) == ["alpha", "beta"]
    assert host_names(["a", "b"], None, default=["a", "b"]) == ["a", "b"]


def test_host_names_pattern_may_repeat_the_field():
    assert host_names(list(range(3)), "n{node:1d}x{node}") == ["n0x0", "n1x1", "n2x2"]


@pytest.mark.parametrize(
    "hosts, match",
    [
        ("gpu", "given to servers 0, 1, 2"),
        ("gpu{rack}", "one field"),
        ("bad name{node}", "invalid host name 'bad name0'"),
        ("n[{node}]", "invalid host name"),
        ("x" * 70 + "{node}", "at most 64 characters"),
    ],
)
def test_host_names_bad(hosts, match):
    with pytest.raises(SpecError, match=match) as info:
        host_names(list(range(3)), hosts)
    assert info.value.param == "hosts"


def test_host_names_file_count(tmp_path):
    f = tmp_path / "hosts.txt"
    f.write_text("a\nb\n")
    with pytest.raises(SpecError, match="2 names for 3 servers"):
        host_names([0, 1, 2], str(f))
    f.write_text("a\nb\na\n")
    with pytest.raises(SpecError, match="'a' is given to servers 0, 2"):
        host_names([0, 1, 2], str(f))
