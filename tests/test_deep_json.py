"""A JSON file nested 100,000 levels deep is one line naming the file, not a RecursionError
traceback, from every reader of JSON (a fresh-user trial)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app

runner = CliRunner()
DEEP = "[" * 100_000 + "]" * 100_000
TOO_DEEP = f"nested too deeply (over about {sys.getrecursionlimit():,} levels of arrays or objects)"


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP + "\n")
    fabric = tmp_path / "c1.json"
    args = ["build", "ft2", "--switch-ports", "4", "--gpus-per-node", "1", "--nics-per-node", "1"]
    assert runner.invoke(app, [*args, "-o", str(fabric)]).exit_code == 0
    return deep, fabric


@pytest.mark.parametrize(
    ("args", "prefix"),
    [
        (["bandwidth", "{deep}"], "not JSON"),
        (["export", "cabling", "{deep}"], "not JSON"),
        (["moe", "{fabric}", "--model", "{deep}"], "not JSON"),
        (["moe", "{fabric}", "--expert-load", "{deep}"], "not JSON"),
        (["collective", "{fabric}", "--compare", "{deep}"], "not valid JSON"),
    ],
    ids=["bandwidth", "export", "moe-model", "moe-expert-load", "collective-compare"],
)
def test_a_deep_json_file_is_one_line(
    files: tuple[Path, Path], args: list[str], prefix: str
) -> None:
    deep, fabric = files
    argv = [a.format(deep=deep, fabric=fabric) for a in args]
    r = runner.invoke(app, argv)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == f"topo: error: {deep}: {prefix}: {TOO_DEEP}\n"
