"""Options whose effect depends on another option (a fresh user's trial): given without it, they
changed nothing and the command said nothing. Each is now refused in one line naming the
option and what it needs; with what it needs it keeps working."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.fabric import save


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line_error(r, *parts: str) -> str:
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("topo: error: ")
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def ft2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ft2") / "ft2.json"
    save(build("ft2", switch_ports=8), path)  # 32 GPUs, 8 leaves, 4 spines
    return path


# 1. topo bandwidth --seed, --flows-per-pair


def test_the_seed_changes_nothing_without_random_failures_or_ecmp(ft2: Path) -> None:
    """Why the refusal is right: the library, given two seeds, gives the same report."""
    from topo.fabric import load
    from topo.flow.resilience import damaged_bandwidth

    G = load(ft2)
    for routing in ("optimal", "dmodk"):
        a = damaged_bandwidth(G, seed=0, routing=routing).to_dict()
        b = damaged_bandwidth(G, seed=5, routing=routing).to_dict()
        timings = {k for k in a if k.endswith("_seconds")}
        assert "solve_seconds" in timings
        assert {k: v for k, v in a.items() if k not in timings} == {
            k: v for k, v in b.items() if k not in timings
        }


@pytest.mark.parametrize(
    "args",
    [
        ["--seed", "5"],
        ["--seed", "0"],  # the default, given: still nothing to seed
        ["--routing", "dmodk", "--seed", "3"],
        ["--fail", "leaf0--spine0", "--seed", "3"],  # a named failure is not drawn
    ],
)
def test_bandwidth_refuses_a_seed_with_nothing_to_seed(ft2: Path, args: list[str]) -> None:
    line = one_line_error(run("bandwidth", ft2, *args, "--json"), "--seed", "no effect")
    for needed in ("--fail-links", "--fail-switches", "--routing ecmp"):
        assert needed in line


def test_bandwidth_keeps_the_seed_where_it_draws(ft2: Path) -> None:
    for args in (["--fail-links", "1"], ["--fail-switches", "1"], ["--routing", "ecmp"]):
        r = run("bandwidth", ft2, *args, "--seed", "3", "--json")
        assert r.exit_code == 0, (args, r.output)
    # and with ECMP the seed does draw: two seeds, two hashings of 4 flows per pair, two rates
    rates = [
        json.loads(
            run(
                "bandwidth", ft2, "--routing", "ecmp", "--flows-per-pair", 4, "--seed", s, "--json"
            ).stdout
        )["pair_rate_GBps"]
        for s in (1, 2)
    ]
    assert rates[0] != rates[1]


@pytest.mark.parametrize("routing", ["optimal", "lft"])
def test_flows_per_pair_needs_a_hashing_router(ft2: Path, routing: str) -> None:
    args = ["bandwidth", ft2, "--flows-per-pair", "4"]
    if routing == "lft":
        args += ["--routing", "lft"]
    one_line_error(run(*args), "--flows-per-pair", "ecmp or dmodk", f"not {routing}")


def test_resilience_refuses_flows_per_pair_with_the_optimum(ft2: Path) -> None:
    args = ["resilience", ft2, "--trials", 1, "--fail-links", 1, "--flows-per-pair", 2]
    one_line_error(run(*args), "--flows-per-pair", "not optimal")
    r = run(*args, "--routing", "ecmp", "--json")
    assert r.exit_code == 0, r.output
