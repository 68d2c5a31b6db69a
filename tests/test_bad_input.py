"""Property-based tests (hypothesis): mutated real files and mutated fabrics are read, or refused
with topo's own error. Never a traceback, a hang or a silent wrong value.

The default run tries a few dozen variants per reader, derandomized (the same ones each run);
``python -m pytest -m slow tests/test_bad_input.py`` runs the campaign of 10,000 per reader.

Mutations, applied one to five at a time to a real file's text: a number replaced by one of
the values readers must refuse or survive (-1, 0, nan, inf, 1e308, a 4,301-digit integer,
...), a line deleted or repeated, the text cut short, a few characters inserted or deleted.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from formats._real import REAL_DATA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topo import fabric
from topo.builders import build
from topo.cost import load_prices
from topo.errors import TopoError
from topo.flow import alltoall_bandwidth
from topo.formats import read_ibnetdiscover
from topo.formats.ibnetdiscover import read_name_map
from topo.formats.nccl_tests import read_nccl_tests
from topo.moe import load_config
from topo.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]

NUMBERS = [
    "-1", "0", "-0", "1", "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e-308", "1e30",
    "-3", "2.5", "0x10", "9" * 4301, "1" * 101, "99999999999999999999", "", "x", "true",
    "null", "[]", "{}", '"7"', "-1e30",
]  # fmt: skip
"""What a number is replaced by: the values the issue found and their neighbours."""

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _real(folder: str, pattern: str) -> list[Path]:
    return sorted(p for p in (REAL_DATA / folder).glob(pattern) if p.name != "PROVENANCE.md")


def _texts(paths: list[Path]) -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8", errors="replace")) for p in paths]


@st.composite
def mutated(draw: st.DrawFn, texts: list[tuple[str, str]]) -> tuple[str, str]:
    """A file's name and its text after one to five mutations."""
    name, text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 5))):
        text = _mutate(draw, text)
    return name, text


def _mutate(draw: st.DrawFn, text: str) -> str:
    op = draw(st.sampled_from(["number", "number", "number", "drop", "repeat", "cut", "edit"]))
    lines = text.splitlines(keepends=True) or [""]
    if op == "number":
        spans = [m.span() for m in _NUMBER.finditer(text)]
        if spans:
            a, b = draw(st.sampled_from(spans))
            return text[:a] + draw(st.sampled_from(NUMBERS)) + text[b:]
        return text
    i = draw(st.integers(0, len(lines) - 1))
    if op == "drop":
        return "".join(lines[:i] + lines[i + 1 :])
    if op == "repeat":
        return "".join(lines[: i + 1] + lines[i:])
    if op == "cut":
        return text[: draw(st.integers(0, len(text)))]
    at = draw(st.integers(0, len(text)))
    gone = draw(st.integers(0, 3))
    return (
        text[:at]
        + draw(st.text(st.sampled_from(" \t\n#[]\"'=,:.-+0123456789eExX"), max_size=4))
        + text[at + gone :]
    )


def _read_or_refuse(read: Callable[[Path], Any], path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        read(path)
    except TopoError:
        pass


READERS: dict[str, tuple[Callable[[Path], Any], Callable[[], list[Path]]]] = {
    "ibnetdiscover": (read_ibnetdiscover, lambda: _real("ibnetdiscover", "*[!p]")),
    "name map": (read_name_map, lambda: _real("ibnetdiscover", "psmn_x5.*")),
    "nccl-tests": (read_nccl_tests, lambda: _real("nccl_tests_logs", "*/*.log")),
    "model config": (load_config, lambda: _real("moe_configs", "*.json")),
    "spec": (load_spec, lambda: sorted((ROOT / "examples").glob("*.toml"))),
    "price book": (load_prices, lambda: [ROOT / "topo" / "data" / "prices.toml"]),
}


def _campaign(reader: str, examples: int, tmp_path: Path) -> None:
    read, files = READERS[reader]
    paths = [p for p in files() if p.stat().st_size < 100_000]
    if not paths:
        pytest.skip(f"real data not available under {REAL_DATA}")
    texts = _texts(paths)
    target = tmp_path / "mutated.txt"

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=examples < 1000,
        suppress_health_check=list(HealthCheck),
    )
    @given(mutated(texts))
    def check(variant: tuple[str, str]) -> None:
        _read_or_refuse(read, target, variant[1])

    check()


@pytest.mark.parametrize("reader", READERS)
def test_mutated_files_are_read_or_refused(reader: str, tmp_path: Path) -> None:
    _campaign(reader, 60, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("reader", READERS)
def test_mutation_campaign(reader: str, tmp_path: Path) -> None:
    _campaign(reader, 10_000, tmp_path)


# -- fabrics: generated, then one attribute or item mutated ----------------------------------

VALUES: list[Any] = [
    -3, -1, 0, 1, 2, 7, 1.5, 1e30, 10**30, float("nan"), float("inf"), "1", "x", None, True,
    [], {}, [1, 2], 10**400,
]  # fmt: skip
KEYS = ["kind", "node", "index", "tier", "plane", "rail", "ports", "capacity", "links",
        "source", "target", "id", "guid", "description"]  # fmt: skip


def _fabrics() -> list[dict[str, Any]]:
    small = [
        build("ft2", switch_ports=4, gpus_per_node=2, nics_per_node=2),
        build("mpft", switch_ports=4, gpus_per_node=2, nics_per_node=2),
        build("mrft", switch_ports=4, gpus_per_node=2, nics_per_node=2),
        build("dragonfly", switch_ports=8, gpus_per_node=1, nics_per_node=1),
    ]
    return [nx.node_link_data(G, edges="edges") for G in small]


FABRICS = _fabrics()


@st.composite
def mutated_fabric(draw: st.DrawFn) -> dict[str, Any]:
    d = copy.deepcopy(draw(st.sampled_from(FABRICS)))
    for _ in range(draw(st.integers(1, 3))):
        items = d[draw(st.sampled_from(["nodes", "edges"]))]
        i = draw(st.integers(0, len(items) - 1))
        op = draw(st.sampled_from(["set", "set", "set", "drop", "repeat"]))
        if op == "repeat":
            items.append(copy.deepcopy(items[i]))
        elif op == "drop":
            items[i].pop(draw(st.sampled_from(KEYS)), None)
        else:
            items[i][draw(st.sampled_from(KEYS))] = draw(st.sampled_from(VALUES))
    return d


def _load_or_refuse(path: Path, d: dict[str, Any], solve: bool) -> None:
    path.write_text(json.dumps(d))
    try:
        G = fabric.load(path)
        fabric.summarize(G)  # what every verb prints first
        if solve:  # and what the solvers make of what load let in
            alltoall_bandwidth(G)
    except TopoError:
        return


def _fabric_campaign(examples: int, tmp_path: Path, solve: bool) -> None:
    @settings(max_examples=examples, deadline=None, database=None, derandomize=examples < 1000)
    @given(mutated_fabric())
    def check(d: dict[str, Any]) -> None:
        _load_or_refuse(tmp_path / "fabric.json", d, solve)

    check()


def test_mutated_fabrics_are_loaded_or_refused(tmp_path: Path) -> None:
    _fabric_campaign(100, tmp_path, solve=False)


def test_mutated_fabrics_are_solved_or_refused(tmp_path: Path) -> None:
    _fabric_campaign(20, tmp_path, solve=True)


@pytest.mark.slow
def test_fabric_mutation_campaign(tmp_path: Path) -> None:
    _fabric_campaign(10_000, tmp_path, solve=True)


def test_integer_switch_ids_across_planes_are_solved(tmp_path: Path) -> None:
    # Node ids may be integers in node-link JSON; the plane matching reads them as text
    # (found by the mutation campaign: a TypeError from the plane-prefix match).
    from typer.testing import CliRunner

    from topo.cli import app

    G = build("mpft", switch_ports=8, gpus_per_node=4, nics_per_node=4)
    old = next(v for v, d in G.nodes(data=True) if d["kind"] == "leaf" and d.get("plane") == 1)
    G = nx.relabel_nodes(G, {old: -3})
    path = tmp_path / "int-ids.json"
    fabric.save(G, path)
    res = CliRunner().invoke(app, ["bandwidth", str(path), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["alltoall_busbw_GBps"] > 0


def test_a_binary_file_is_named_not_utf8_text_at_its_line(tmp_path: Path) -> None:
    # it said "cannot read: 'utf-8' codec can't decode byte 0xd0 in position 24: ..."
    from topo.errors import FormatError
    from topo.files import read_text

    path = tmp_path / "run.log"
    path.write_bytes(b"# nThread 1\n#  Rank  0\n\xd0\x01 binary")
    with pytest.raises(FormatError) as err:
        read_text(path)
    # "# nThread 1\n" is 12 bytes and "#  Rank  0\n" 11: the bad byte has index 23, line 3
    assert str(err.value) == f"{path}:3: not UTF-8 text (byte 23: invalid continuation byte): " + (
        "a binary file?"
    )
