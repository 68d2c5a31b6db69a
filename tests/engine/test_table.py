"""``topo.engine.table.write_table``: both formats go through ``write_atomic`` (a fresh-user
trial: ``-o out.parquet`` replaced a symbolic link or a FIFO with a 0600 regular file)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from topo.engine.table import read_table, write_table
from topo.errors import FormatError

ROWS = [{"point": 0, "x": 1.5}, {"point": 1, "x": None}]
COLUMNS = ["point", "x"]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_refuses_a_symbolic_link(tmp_path: Path, suffix: str) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / f"t{suffix}"
    target.write_text("old")
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    with pytest.raises(FormatError, match="cannot write: it is a symbolic link"):
        write_table(link, ROWS, COLUMNS)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "old"


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_refuses_a_fifo(tmp_path: Path, suffix: str) -> None:
    fifo = tmp_path / f"out{suffix}"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match=r"cannot write: it is not a regular file"):
        write_table(fifo, ROWS, COLUMNS)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [fifo.name]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_new_file_has_a_plain_files_permissions(tmp_path: Path, suffix: str) -> None:
    umask = os.umask(0o022)
    try:
        write_table(tmp_path / f"out{suffix}", ROWS, COLUMNS)
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / f"out{suffix}").st_mode) == 0o644


def test_parquet_round_trips(tmp_path: Path) -> None:
    write_table(tmp_path / "out.parquet", ROWS, COLUMNS)
    assert read_table(tmp_path / "out.parquet") == ROWS
