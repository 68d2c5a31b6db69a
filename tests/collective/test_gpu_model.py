"""``topo import ibnetdiscover --gpu-model NAME``: the fabric records ``gpu_model`` as ``topo
build --node`` does, and ``topo collective`` takes its arch from it.

References: the shipped catalog file read with ``tomllib`` (each server's ``model`` and
``arch``); a GB200 is Blackwell (compute capability 10.0, NVIDIA's CUDA GPUs list); the
collective with ``--arch blackwell`` given by hand on the same fabric without a model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib
from typer.testing import CliRunner

from tests.formats._real import real_file
from topo.catalog import default_catalog_path
from topo.cli import app
from topo.collective.gpu_models import known_gpu_models, resolve_gpu_model
from topo.errors import SpecError
from topo.fabric import load
from topo.fabric.gpus import gpu_arch

GB200 = ("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
RACK = r"-dgx-(\d+)-c\d+$"
TRAY = r"-dgx-\d+-c\d+$"


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_names_resolve_as_the_catalog_and_the_gpu_table_say() -> None:
    nodes = tomllib.loads(default_catalog_path().read_text())["node"]
    assert resolve_gpu_model("gb200-nvl72") == nodes["gb200-nvl72"]["model"]
    assert resolve_gpu_model("H100") == nodes["h100"]["model"]  # the catalog server h100
    assert resolve_gpu_model("gb200") == "NVIDIA GB200"
    assert resolve_gpu_model("a100") == nodes["a100"]["model"]  # the catalog server a100
    assert resolve_gpu_model("a800") == "NVIDIA A800"
    import networkx as nx

    for name in nodes:
        got = gpu_arch(nx.Graph(gpu_model=resolve_gpu_model(name)))
        assert got == nodes[name]["arch"], name
    with pytest.raises(SpecError, match=r"gpu_model 'rtx4090' is not a GPU topo knows") as e:
        resolve_gpu_model("rtx4090")
    assert e.value.param == "gpu_model"
    assert "gb200-nvl72" in str(e.value) and "GB200" in str(e.value)
    assert set(nodes) <= set(known_gpu_models())


def _import(tmp_path: Path, name: str, *extra: object) -> Path:
    out = tmp_path / f"{name}.json"
    r = run(
        "import", "ibnetdiscover", real_file(*GB200), "--gpus-per-host", 4,
        "--nvlink-GBps", 900, "--nvlink-domain-regex", RACK, "--compute-host-regex", TRAY,
        *extra, "-o", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    return out


def _busbw(path: Path, *extra: object) -> list[float]:
    r = run(
        "collective", path, "--op", "all_reduce", "--gpus", 80, "--min-bytes", "1G",
        "--max-bytes", "4G", "--json", *extra,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    return [row["busbw_GBps"] for row in json.loads(r.stdout)["rows"]]


def test_collective_takes_the_recorded_model(tmp_path: Path) -> None:
    gb = _import(tmp_path, "gb", "--gpu-model", "gb200")
    assert load(gb).graph["gpu_model"] == "NVIDIA GB200"
    plain = _import(tmp_path, "plain")
    assert "gpu_model" not in load(plain).graph
    recorded = _busbw(gb)
    # the model recorded is --arch blackwell given by hand; without either, hopper's tables
    assert recorded == _busbw(plain, "--arch", "blackwell")
    assert recorded != _busbw(plain)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--gpu-model", "gb200"], "--gpu-model applies to the servers of --gpus-per-host G"),
        (["--gpus-per-host", 4, "--gpu-model", "rtx4090"], "--gpu-model 'rtx4090' is not a GPU"),
    ],
)
def test_refusals_in_one_line(args: list[object], needle: str) -> None:
    r = run("import", "ibnetdiscover", real_file(*GB200), *args)
    assert r.exit_code == 1 and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], lines
