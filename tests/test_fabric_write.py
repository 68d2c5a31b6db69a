"""``topo.files.write_atomic`` and ``save``: written whole, never through or over something that
is not a regular file (a FIFO, a device, a symbolic link: ``export slurm -o link.json`` must not
write a Slurm file through a link into a .json)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from topo.errors import FormatError
from topo.files import write_atomic


def test_writes_a_new_file_and_replaces_a_regular_one(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_symbolic_link_is_neither_written_through_nor_replaced(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "fabric.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(FormatError) as info:
        write_atomic(link, "new")
    assert str(info.value) == (
        f"{link}: cannot write: it is a symbolic link (to {target}); an output is never "
        "written through a link nor replaces one: give the file's own name, or another"
    )
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real"]


def test_a_dangling_link_is_refused_too(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "later.json")
    with pytest.raises(FormatError, match="cannot write: it is a symbolic link"):
        write_atomic(link, "x")
    assert link.is_symlink() and not (tmp_path / "later.json").exists()


def test_a_link_in_the_folders_path_is_followed(tmp_path: Path) -> None:
    # (only the output's own name is held to the rule: /home -> /data/home is common)
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    write_atomic(tmp_path / "via" / "out.json", "x")
    assert (tmp_path / "real" / "out.json").read_text() == "x"


def test_a_link_then_dot_dot_in_the_folders_path_is_resolved_as_the_system_does(
    tmp_path: Path,
) -> None:
    # tmp/a/up -> .. (tmp), so a/up/../b/out.toml is tmp/../b/out.toml as the kernel walks
    # it: a b beside tmp. The temporary file's folder was normalised by name (a/b, absent):
    # "cannot write: No such file or directory"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "up").symlink_to("..")
    beside = tmp_path.parent / f"{tmp_path.name}-b"
    beside.mkdir()
    name = tmp_path / "a" / "up" / ".." / f"{tmp_path.name}-b" / "out.toml"
    write_atomic(name, "x = 1\n")
    assert (beside / "out.toml").read_text() == "x = 1\n"
    assert sorted(p.name for p in beside.iterdir()) == ["out.toml"]


def test_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match=r"pipe: cannot write: it is not a regular file"):
        write_atomic(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_refuses_a_link_to_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "link").symlink_to(fifo)
    with pytest.raises(FormatError, match=r"link: cannot write: it is a symbolic link"):
        write_atomic(tmp_path / "link", "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_refuses_a_folder(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(FormatError, match=r"d: cannot write: it is a folder; refusing"):
        write_atomic(tmp_path / "d", "x")
    assert (tmp_path / "d").is_dir()


def test_refuses_a_device(tmp_path: Path) -> None:
    # A private copy of /dev/null's node (char 1:3), never the system's own.
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here: {exc}")
    with pytest.raises(FormatError, match=r"null: cannot write: it is not a regular file"):
        write_atomic(dev, "x")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_folder_that_takes_no_new_file_is_named_with_the_reason() -> None:
    # /proc's files look regular, but no file can be made beside them (as root the early
    # check passes and the temporary file fails; as a user /proc is not writable)
    if not os.path.isfile("/proc/version"):
        pytest.skip("no /proc here")
    with pytest.raises(
        FormatError,
        match=r"^/proc/version: cannot write: (no file can be made in folder /proc \(|"
        r"folder /proc is not writable)",
    ):
        write_atomic("/proc/version", "x")


def test_refuses_a_link_loop(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(FormatError, match=r"cannot write"):
        write_atomic(tmp_path / "a", "x")


def test_build_o_refuses_a_fifo_and_a_link(tmp_path: Path) -> None:
    # The case from the command line: -o replaced a FIFO (and a device) by a file.
    from typer.testing import CliRunner

    from topo.cli import app

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    args = ["build", "ft2", "--switch-ports", "4", "--gpus-per-node", "1", "--nics-per-node", "1"]
    r = CliRunner().invoke(app, [*args, "-o", str(fifo)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert "cannot write: it is not a regular file" in r.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    target, link = tmp_path / "fabric.json", tmp_path / "link.json"
    target.write_text("old")
    link.symlink_to(target)
    r = CliRunner().invoke(app, [*args, "-o", str(link)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert r.stderr.startswith(f"topo: error: --output {link}: cannot write: it is a symbolic")
    assert link.is_symlink() and target.read_text() == "old"


@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.html", "f.toml"])
def test_a_fabric_is_not_written_under_another_format_s_suffix(tmp_path: Path, name: str) -> None:
    """``topo build ... -o out.csv`` wrote node-link JSON into a .csv (a fresh-user trial)."""
    from typer.testing import CliRunner

    from topo.builders import build
    from topo.cli import app
    from topo.fabric import save

    path = tmp_path / name
    with pytest.raises(FormatError, match=r"name it \.json, not \."):
        save(build("ft2", switch_ports=4), path)
    suffix = Path(name).suffix
    r = CliRunner().invoke(app, ["build", "ft2", "--switch-ports", "4", "-o", str(path)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == (
        f"topo: error: --output {path}: a fabric is written as node-link JSON: name it .json, "
        f"not {suffix}\n"
    )
    assert not path.exists()


@pytest.mark.parametrize("name", ["out.json", "OUT.JSON", "fabric"])
def test_a_json_or_bare_name_is_written(tmp_path: Path, name: str) -> None:
    from topo.builders import build
    from topo.fabric import load, save

    save(build("ft2", switch_ports=4), tmp_path / name)
    assert load(tmp_path / name).graph["family"] == "ft2"


def test_a_dash_is_refused_not_written_as_a_file(tmp_path: Path, monkeypatch) -> None:
    # "-o -" means standard output to a user; it used to create a file named "-".
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FormatError, match="standard output"):
        write_atomic("-", "x")
    assert not (tmp_path / "-").exists()


def test_dev_stdout_is_refused_and_the_file_behind_it_kept(tmp_path: Path) -> None:
    # A fresh-user trial: `-o /dev/stdout > so.txt` replaced so.txt by rename (the shell's
    # descriptor then pointed at the unlinked file, and "wrote ..." was lost), and through a
    # pipe the error named /proc/<pid>/fd/pipe:[...] as a missing file.
    import subprocess
    import sys

    so = tmp_path / "so.json"
    so.write_text("before")
    args = [sys.executable, "-m", "topo.cli", "build", "ft2", "--switch-ports", "4"]
    with open(so, "a") as out:
        r = subprocess.run(
            [*args, "-o", "/dev/stdout"], stdout=out, stderr=subprocess.PIPE, text=True
        )
    assert r.returncode == 1
    assert r.stderr == (
        "topo: error: --output /dev/stdout: cannot write: it leads to a file descriptor of "
        "this process (as /dev/stdout does), which is not written to; give a file name "
        "(without the output option the command prints its table, or --json, to standard "
        "output)\n"
    )
    assert so.read_text() == "before"
    r = subprocess.run([*args, "-o", "/dev/stdout"], capture_output=True, text=True)  # a pipe
    assert r.returncode == 1 and "file descriptor of this process" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/2"])
def test_links_into_the_process_s_descriptors_are_refused(name: str) -> None:
    from topo.files import check_writable

    with pytest.raises(FormatError, match="file descriptor of this process"):
        check_writable(name)


def test_a_link_to_dev_stdout_is_refused_as_a_file_descriptor(tmp_path: Path) -> None:
    from topo.files import check_writable

    (tmp_path / "out.json").symlink_to("/dev/stdout")
    with pytest.raises(FormatError, match="file descriptor of this process"):
        check_writable(tmp_path / "out.json")
    (tmp_path / "fd").symlink_to("/proc/self/fd")
    with pytest.raises(FormatError, match="file descriptor of this process"):
        check_writable(tmp_path / "fd" / "1")
    assert check_writable(tmp_path / "real.json") == (tmp_path / "real.json", tmp_path)


def test_a_name_ending_in_a_slash_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="a name ending in '/' names a folder"):
        write_atomic(f"{tmp_path}/x.json/", "x")
    assert list(tmp_path.iterdir()) == []


def test_export_does_not_write_through_a_link_whatever_its_target(tmp_path: Path) -> None:
    # Issue 41: `export slurm -o link.json`, link.json -> real.json, wrote topology.conf into
    # the .json without remark (the target's suffix was checked, and .json passed).
    from typer.testing import CliRunner

    from topo.builders import build
    from topo.cli import app
    from topo.fabric import save

    fabric = tmp_path / "f.json"
    save(build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1), fabric)
    target, link = tmp_path / "real.json", tmp_path / "link.json"
    target.write_text("{}")
    link.symlink_to(target)
    r = CliRunner().invoke(app, ["export", "slurm", str(fabric), "-o", str(link)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert r.stderr == (
        f"topo: error: --output {link}: cannot write: it is a symbolic link (to {target}); "
        "an output is never written through a link nor replaces one: give the file's own "
        "name, or another\n"
    )
    assert link.is_symlink() and target.read_text() == "{}"
    for cmd in (["build", "ft2", "--switch-ports", "4"], ["plot", str(fabric)]):
        r = CliRunner().invoke(app, [*cmd, "-o", str(link)])
        assert r.exit_code == 1 and "cannot write: it is a symbolic link" in r.stderr
    assert target.read_text() == "{}"


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    # A SIGKILLed write leaves .out.json.XXXX.tmp behind; the next write to the file removes it.
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out.json"
    code = (
        "import os, time, sys\n"
        "os.replace = lambda *a: time.sleep(60)  # stalls after the temporary file is written\n"
        "from topo.files import write_atomic\n"
        f"write_atomic({str(out)!r}, 'half')\n"
    )
    repo = Path(__file__).resolve().parents[1]
    child = subprocess.Popen([sys.executable, "-c", code], cwd=repo)
    try:
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob(".out.json.*.tmp")) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    (left,) = tmp_path.glob(".out.json.*.tmp")
    assert left.name.startswith(f".out.json.{child.pid}.")  # the writer's pid in its name
    live = tmp_path / f".out.json.{os.getpid()}.abcdefgh.tmp"  # a write under way: kept
    live.write_text("mine")
    other = tmp_path / f".other.json.{child.pid}.abcdefgh.tmp"  # another file's: kept
    other.write_text("other")
    write_atomic(out, "whole")
    assert out.read_text() == "whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.json", live.name, other.name])


def test_the_temporary_file_is_removed_on_ctrl_c(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out.json"

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(out, "x")
    assert list(tmp_path.iterdir()) == []
