"""Every command refuses a bad output before it reads, solves or starts anything (issue 13).

Each case gives an input that is not JSON (or a build that would be refused): were the input
read or the work begun first, the error would name the input; it must name the output option.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app
from topo.errors import FormatError
from topo.fabric import check_writable

DASH = "cannot write: '-' is not read as standard output here"


def _cases(bad: str) -> list[tuple[list[str], str]]:
    return [
        (["build", "ft2", "--switch-ports", "7", "-o", "-"], "--output -"),
        (["bandwidth", bad, "--html", "-"], "--html -"),
        (["plot", bad, "-o", "-"], "--output -"),
        (["collective", bad, "--html", "-"], "--html -"),
        (["collective", "--calibrate", bad, "-o", "-"], "--output -"),
        (["cost", bad, "--html", "-"], "--html -"),
        (["moe", bad, "--html", "-"], "--html -"),
        (["export", "slurm", bad, "-o", "-"], "--output -"),
        (["export", "nccl", bad, "-o", "t.xml", "--topo-xml", "-"], "--topo-xml -"),
        (["validate", bad, bad, "--html", "-"], "--html -"),
        (["sweep", bad, "-o", "-"], "--output -"),
        (["sweep", bad, "-o", "t.csv", "--html", "-"], "--html -"),
        (["import", "ibnetdiscover", bad, "-o", "-"], "--output -"),
    ]


@pytest.mark.parametrize("i", range(len(_cases("x"))))
def test_a_dash_output_is_refused_before_the_input_is_read(
    i: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("garbage\n")
    args, option = _cases("bad.json")[i]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output
    assert r.stderr == f"topo: error: {option}: {DASH}" + r.stderr.split(DASH, 1)[1]
    assert len(r.stderr.splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["bad.json"]  # nothing written, no "-" file


@pytest.mark.parametrize(
    "html, says",
    [
        ("x.png", "--html x.png: topo writes an HTML page (plotly, offline): name it .html"),
        ("/dev/null", "--html /dev/null: cannot write: it is not a regular file"),
        ("nodir/x.html", "--html nodir/x.html: cannot write: folder nodir does not exist"),
    ],
)
def test_other_bad_outputs_are_refused_before_the_solve(
    html: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the writer at the end refused these only after the whole computation
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text("garbage\n")
    r = CliRunner().invoke(app, ["bandwidth", "bad.json", "--html", html])
    assert r.exit_code == 1 and r.stderr.startswith(f"topo: error: {says}"), r.output


def test_check_writable_gives_the_file_and_folder_and_refuses_a_read_only_folder(
    tmp_path: Path,
) -> None:
    assert check_writable(tmp_path / "t.json") == (tmp_path / "t.json", tmp_path)
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as the superuser: every folder is writable")
        with pytest.raises(FormatError, match=r"cannot write: folder .*ro is not writable"):
            check_writable(locked / "x.json")
    finally:
        locked.chmod(0o700)
