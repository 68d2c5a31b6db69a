"""``topo validate --nvlink-domain-regex``: a design of NVL72 racks against a dump whose trays
are named as real GB200 trays are (``aNN-p1-dgx-RR-cTT``, HCAs ``mlx5_0, mlx5_1, mlx5_4,
mlx5_5``, as in NVIDIA topograph's GB200 dump and NVIDIA's GB200 compute tray interface table).

References: the design's own written dump with its trays renamed by hand (tray ``h`` of rack
``n`` -> ``a0<5+n>-p1-dgx-0<n+1>-c<h+1>``, its HCA ``k`` -> ``mlx5_<0,1,4,5>[k]``), so every
cable is as designed; one CA removed from it, so exactly that design NIC is missing (tray ``h``'s
HCA ``k`` is design NIC ``4h + k`` of its rack).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app

RACK = r"-dgx-(\d+)-c"
REAL = (0, 1, 4, 5)  # a GB200 tray's compute-fabric HCAs


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _tray(n: int, h: int) -> str:
    return f"a0{5 + n}-p1-dgx-0{n + 1}-c{h + 1:02d}"


def _design(tmp_path: Path, *trays: object) -> tuple[Path, str]:
    gb, net = tmp_path / "gb.json", tmp_path / "gb.net"
    r = run("build", "ft2", "--node", "gb200-nvl72", "--gpus", 144, *trays, "-o", gb)
    assert r.exit_code == 0, r.output
    assert run("export", "ibnetdiscover", gb, "-o", net).exit_code == 0
    return gb, net.read_text()


def _drop(text: str, description: str) -> str:
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Ca") and description in ln)
    guid = lines[head].split('"')[1]
    drop = {head + 1} | {i for i, ln in enumerate(lines) if ln.startswith("[") and guid in ln}
    return "\n".join(ln for i, ln in enumerate(lines) if i not in drop) + "\n"


def _validate(gb: Path, text: str, tmp_path: Path, *extra: object):
    path = tmp_path / "real.net"
    path.write_text(text)
    return run("validate", gb, path, "--no-cost", "--json", *extra)


@pytest.fixture
def trays(tmp_path: Path) -> tuple[Path, str]:
    gb, text = _design(tmp_path, "--gpus-per-host", 4)

    def rename(m: re.Match[str]) -> str:
        return f"{_tray(int(m[1]), int(m[2]))} mlx5_{REAL[int(m[3])]}"

    return gb, re.sub(r"node(\d+)-(\d+) mlx5_(\d+)", rename, text)


def test_real_named_trays_validate_as_built(trays, tmp_path: Path) -> None:
    gb, text = trays
    r = _validate(gb, text, tmp_path, "--nvlink-domain-regex", RACK)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["defects"] == []


def test_a_lost_ca_is_the_design_nic_it_is(trays, tmp_path: Path) -> None:
    gb, text = trays
    # rack 0, tray 1, its mlx5_1 (HCA 1): design NIC 4 x 1 + 1 = 5 of rack 0
    r = _validate(
        gb, _drop(text, f'"{_tray(0, 1)} mlx5_1"'), tmp_path, "--nvlink-domain-regex", RACK
    )
    assert r.exit_code == 3, r.output
    got = [(d["kind"], sorted(d["design_ends"])) for d in json.loads(r.stdout)["defects"]]
    assert got == [("missing", ["leaf0", "node0/nic5"])]


def test_without_the_option_it_says_to_give_it(trays, tmp_path: Path) -> None:
    gb, text = trays
    r = _validate(gb, text, tmp_path)
    assert r.exit_code == 1 and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "give --nvlink-domain-regex" in lines[0]
    assert "--host-regex" not in lines[0]  # an option the user never gave
    r = _validate(gb, text, tmp_path, "--nvlink-domain-regex", RACK, "--gpus-per-host", 72)
    assert r.exit_code == 1 and "without --gpus-per-host" in r.stderr


def test_a_rack_built_as_one_host_too(tmp_path: Path) -> None:
    # no --gpus-per-host: each rack one server of 72 NICs, NIC j on tray j // 4
    gb, text = _design(tmp_path)

    def rename(m: re.Match[str]) -> str:
        n, j = int(m[1]), int(m[2])
        return f"{_tray(n, j // 4)} mlx5_{REAL[j % 4]}"

    real = re.sub(r"node(\d+) mlx5_(\d+)", rename, text)
    r = _validate(gb, real, tmp_path, "--nvlink-domain-regex", RACK)
    assert r.exit_code == 0, r.output
