"""``topo.engine.table.write_table``: both formats go through ``write_atomic`` (``-o out.parquet``
never replaces a symbolic link or a FIFO with a 0600 regular file)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from topo.cli import app
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


def test_a_running_sweeps_journal_is_told_from_an_interrupted_ones(tmp_path: Path) -> None:
    # A second sweep to the same output must not call the first (live) one's journal that
    # of "an interrupted sweep".
    from topo.engine.table import Journal, check_journal, journal_path
    from topo.errors import TopoError

    out = tmp_path / "t.csv"
    live = Journal(out, "digest", resume=False)
    for resume in (False, True):
        with pytest.raises(TopoError) as info:
            check_journal(out, "digest", resume)
        assert str(info.value).startswith(f"another sweep is writing {out} (its journal ")
        assert not isinstance(info.value, FormatError)
        with pytest.raises(TopoError, match="another sweep is writing"):
            Journal(out, "digest", resume)
    live.add({"point": 0, "x": 1})
    live.close(done=False)  # (as a run that was stopped)
    with pytest.raises(FormatError, match="an interrupted sweep's rows are here"):
        check_journal(out, "digest", False)
    resumed = Journal(out, "digest", resume=True)
    assert resumed.rows == {0: {"point": 0, "x": 1}}
    with pytest.raises(TopoError, match="another sweep is writing"):
        check_journal(out, "digest", True)
    resumed.close(done=True)
    assert not journal_path(out).exists()


def test_a_second_sweep_to_a_live_sweeps_output_is_one_line(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nevaluate = ["cost"]\n\n[grid]\nfamily = "ft2"\nswitch_ports = 8\n')
    out = tmp_path / "t.csv"
    holder = subprocess.Popen(  # a sweep's journal held open, as a running sweep holds it
        [sys.executable, "-c", "import sys, time\nfrom topo.engine.table import Journal\n"
         f"j = Journal(__import__('pathlib').Path({str(out)!r}), 'd', False)\n"
         "print('ready', flush=True)\ntime.sleep(60)\n"],
        cwd=repo, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "ready\n"
        # the second sweep runs in this process (CliRunner): the lock is the holder's
        cmd = ["sweep", str(spec), "-o", str(out), "--workers", "1"]
        r = CliRunner().invoke(app, cmd)
        assert r.exit_code == 1 and "Traceback" not in r.output
        assert r.stderr.startswith(f"topo: error: another sweep is writing {out} (its journal")
        assert len(r.stderr.splitlines()) == 1
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # killed: its journal is an interrupted sweep's (the lock went with the process)
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 1 and "an interrupted sweep's rows are here" in r.stderr
