"""``topo place``: the report on a hand-worked case, the example file, and bad input as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from topo.builders import build
from topo.cli import app
from topo.fabric import save
from topo.place import read_jobs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jobs-two-ep.toml"
runner = CliRunner()


def run(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(r: Result, *fragments: str) -> str:
    assert isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 1 and r.stdout == "", r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def fabrics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("place")
    save(build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1), folder / "k4.json")
    G = build("ft2", switch_ports=6, gpus_per_node=1, nics_per_node=1, oversubscription=2)
    save(G, folder / "os2.json")
    return folder


ALTERNATING = """
[[jobs]]
name = "a"
traffic = "alltoall"
servers = [0, 2, 4, 6]

[[jobs]]
name = "b"
traffic = "alltoall"
servers = [1, 3, 5, 7]
"""


def test_json_report_of_alternating_jobs_on_an_oversubscribed_ft2(fabrics, tmp_path):
    # as tests/place/test_share.py: 50 GB/s alone (NIC), 37.5 shared (100 GB/s of leaf0 uplinks
    # carry 4 pair rates of each job: p = 12.5, busbw 3p)
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(ALTERNATING)
    r = run("place", fabrics / "os2.json", "--jobs", jobs, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["fairness"] == "max-min fair"
    assert [j["name"] for j in d["jobs"]] == ["a", "b"]
    for j in d["jobs"]:
        assert j["alone_busbw_GBps"] == pytest.approx(50.0, rel=1e-6)
        assert j["shared_busbw_GBps"] == pytest.approx(37.5, rel=1e-6)
        assert j["slowdown"] == pytest.approx(4 / 3, rel=1e-6)
    assert {(c["tail"], c["head"]) for c in d["contended_links"]} >= {
        ("leaf0", "spine0"),
        ("leaf0", "spine1"),
    }


def test_table_names_the_rule_the_jobs_and_the_contended_links(fabrics, tmp_path):
    jobs = tmp_path / "jobs.toml"
    jobs.write_text(ALTERNATING)
    r = run("place", fabrics / "os2.json", "--jobs", jobs)
    assert r.exit_code == 0, r.output
    assert "max-min fair" in r.stdout and "37.50" in r.stdout and "1.333" in r.stdout
    assert "leaf0 -> spine0" in r.stdout


def test_example_file_places_two_ep_jobs(fabrics):
    # k = 4 FT2, 8 one-GPU servers: packed takes 0-3, fragmented the other 4 (all that are
    # free); no cable shared on a non-blocking fabric, so each keeps its NIC-bound 50 GB/s
    assert [j.name for j in read_jobs(EXAMPLE)] == ["ep-packed", "ep-fragmented"]
    r = run("place", fabrics / "k4.json", "--jobs", EXAMPLE, "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert [j["servers"] for j in d["jobs"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [j["shared_busbw_GBps"] for j in d["jobs"]] == pytest.approx([50.0, 50.0], rel=1e-6)
    assert d["contended_links"] == []


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("[[jobs]\n", ["jobs.toml:1:", "not valid TOML"]),
        ("x = 1\n", ["jobs.toml", "unknown key 'x'"]),
        ("", ["jobs.toml", "no jobs"]),
        ('[[jobs]]\nname = "a"\n', ["jobs.toml", "jobs[1]: traffic is missing"]),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\ncount = 0\n',
            ["jobs.toml", "jobs[1].count must be a whole number >= 1, got 0"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\ncount = 2\npolicy = "block"\n',
            ["jobs.toml", "jobs[1].policy must be one of packed, fragmented, slurm-tree"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\ncount = 2\ngpus = 4\n',
            ["jobs.toml", "jobs[1]: unknown key 'gpus'"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\nservers = 3\n',
            ["jobs.toml", "jobs[1].servers must be a non-empty list"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\n',
            ["jobs.toml", "jobs[1]: job 'a': give exactly one of servers and count"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\ncount = 99\n',
            ["jobs.toml", "asks for 99 servers; only 8"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "storage_read"\ncount = 2\nstorage = [7, 7]\n',
            ["jobs.toml", "job 'a': its storage servers repeat"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "pipeline"\ncount = 4\nstages = 1\n',
            ["jobs.toml", "jobs[1].stages must be a whole number >= 2, got 1"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "pipeline"\ncount = 3\nstages = 2\n',
            ["jobs.toml", "jobs[1]: job 'a': 2 stages must divide its 3 servers"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\ncount = 2\nweight = "high"\n',
            ["jobs.toml", "jobs[1].weight must be a number, got 'high'"],
        ),
        (
            '[[jobs]]\nname = "a"\ntraffic = "ring"\ncount = 2\nweight = -1\n',
            ["jobs.toml", "jobs[1]: job 'a': weight must lie in"],
        ),
        ('[[jobs]]\nname = "a"\ntraffic = "ring"\nservers = [0, 99]\n', ["server 99 is not"]),
    ],
)
def test_bad_jobs_files_are_one_line(fabrics, tmp_path, monkeypatch, text, fragments):
    monkeypatch.chdir(tmp_path)
    Path("jobs.toml").write_text(text)
    one_line_error(run("place", fabrics / "k4.json", "--jobs", "jobs.toml"), *fragments)


def test_slurm_advice_in_json_and_table(fabrics, tmp_path):
    # k = 4 FT2: leaves of 2 servers, 4 leaves: aligned blocks 2, 4, 8; a 3-server job fits 4
    jobs = tmp_path / "jobs.toml"
    jobs.write_text('[[jobs]]\nname = "a"\ntraffic = "alltoall"\ncount = 3\n')
    r = run("place", fabrics / "k4.json", "--jobs", jobs, "--slurm", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)["slurm"]
    assert (s["base_block"], s["block_sizes"], s["aligned_sizes"]) == (2, [2, 4], [2, 4, 8])
    assert s["jobs"][0]["block_size"] == 4 and s["jobs"][0]["leaf_switches"] == 2
    assert s["topology_conf"].splitlines()[-1] == "BlockSizes=2,4"
    r = run("place", fabrics / "k4.json", "--jobs", jobs, "--slurm")
    assert r.exit_code == 0, r.output
    assert "BlockSizes=2,4" in r.stdout and "BlockName=leaf0 Nodes=node[0-1]" in r.stdout
