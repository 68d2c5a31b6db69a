"""The console entry (``topo.cli:main``): usage errors are one line on stderr, exit 2.

Run as a subprocess, as a user runs it (``python cli.py`` is the same entry as ``topo``).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def topo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "cli.py"), *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "args,fragment",
    [
        (["bandwidth", "no-such-file.json"], "'no-such-file.json' does not exist"),
        (["bandwidth"], "Missing argument 'fabric'"),
        (["build", "ft2", "-o", "."], "is a directory"),
        (["build", "ft2", "-o", ""], "'--output': an empty path names no file"),
        (["build", "ft2", "--switch-ports", "nine"], "'--switch-ports'"),
        (["nosuch"], "No such command 'nosuch'"),
        (["plan", "--gpus", "0"], "'--gpus'"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], fragment: str, tmp_path: Path) -> None:
    r = topo(*args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("topo: error: ") and fragment in lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_user_errors_keep_status_1_and_success_0(tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    ok = topo("build", "ft2", "--switch-ports", "8", "-o", str(out))
    assert ok.returncode == 0 and out.is_file()
    bad = topo("bandwidth", str(out), "--fail", "spine99")
    assert bad.returncode == 1
    assert bad.stderr.strip().startswith("topo: error: --fail 'spine99'")
    assert topo("--version").stdout.startswith("topo ")


def test_library_messages_name_the_options() -> None:
    # The builders' checks speak of switch_ports; every verb prints --switch-ports.
    r = topo("plan", "--gpus", "100", "--switch-ports", "7")
    assert r.returncode == 1
    assert r.stderr.strip() == (
        "topo: error: --switch-ports must be an even number from 4 to 1024, got 7"
    )


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ["build", "ft2", "--switch-ports", "8", "--gpus", "3"],
            "topo: error: --gpus must be a positive multiple of --gpus-per-node (8), got 3",
        ),
        (
            ["build", "dragonfly", "-a", "40", "-p", "20", "--global-ports", "20"],
            "topo: error: a Dragonfly router with p = 20, a = 40, h = 20 needs p + a - 1 + h = "
            "79 ports, more than --switch-ports (64)",
        ),
        (
            # The library speaks of compare()'s dragonfly_groups; cost's flag for it.
            ["cost", "--compare", "dragonfly", "--dragonfly-groups", "100000"],
            "topo: error: --dragonfly-groups must be from 1 to a*h + 1 = 513 (each group has 512 "
            "global ports), got 100000",
        ),
        (
            ["plan", "--gpus", "16", "--max-oversubscription", "0.5"],
            "topo: error: --max-oversubscription must be a number of at least 1, got 0.5",
        ),
        (
            ["build", "dragonfly", "--groups", "100000"],
            "topo: error: --groups must be from 1 to a*h + 1 = 513 (each group has 512 global "
            "ports), got 100000",
        ),
    ],
)
def test_option_names_are_spelled_once(args: list[str], line: str) -> None:
    # Every verb's errors pass through one renaming; an option already spelled --gpus must not
    # become ----gpus.
    r = topo(*args)
    assert r.returncode == 1 and r.stderr.strip() == line


def test_flags_come_from_the_commands_declarations() -> None:
    from topo.cli_common import error_line, option_flags
    from topo.commands.cost import plan

    flags = option_flags(plan)
    assert flags["switch_ports"] == "--switch-ports"
    assert flags["max_oversubscription"] == "--max-oversubscription"
    assert flags["check"] == "--check"  # of --check/--no-check
    assert "gpus_per_nic" not in flags
    from topo.commands.build import build

    assert option_flags(build)["routers_per_group"] == "--routers-per-group"  # of -a/--...
    from topo.errors import SpecError

    # A parameter the command has no option for keeps its Python name.
    e = SpecError("groups must be from 1", param="groups")
    assert error_line(e, plan) == "groups must be from 1"
    assert error_line(e, build) == "--groups must be from 1"


def test_paper_example_refuses_options_it_would_ignore() -> None:
    from typer.testing import CliRunner

    from topo.cli import app

    r = CliRunner().invoke(app, ["moe", "--paper-example", "--ep", "64", "--seed", "3"])
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        "topo: error: --paper-example takes no other options: --ep, --seed would be ignored"
    )
    assert CliRunner().invoke(app, ["moe", "--paper-example", "--json"]).exit_code == 0


def test_plot_refuses_an_image_name(tmp_path) -> None:
    from typer.testing import CliRunner

    from topo.builders import build
    from topo.cli import app
    from topo.fabric import save

    fabric = tmp_path / "ft2.json"
    save(build("ft2", switch_ports=4), fabric)
    r = CliRunner().invoke(app, ["plot", str(fabric), "-o", str(tmp_path / "fabric.png")])
    assert r.exit_code == 1
    assert r.stderr.strip().endswith(
        "topo writes an HTML page (plotly, offline): name it .html, not .png"
    )
    assert not (tmp_path / "fabric.png").exists()


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("4", "4")])
def test_the_console_runs_openblas_on_one_thread_unless_told(monkeypatch, given, seen) -> None:
    # topo/console.py sets OPENBLAS_NUM_THREADS before topo.cli (and numpy) load, keeping a
    # value the user set.
    import topo.cli
    import topo.console

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", given or "")  # (restored as it was, after)
    if given is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    found = []
    monkeypatch.setattr(topo.cli, "main", lambda: found.append(os.environ["OPENBLAS_NUM_THREADS"]))
    topo.console.main()
    assert found == [seen]


def _table_and_rows(
    tmp_path: Path, env: dict[str, str], *sizes: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """``topo collective`` of a small fat tree in a subprocess under ``env``: its table (no
    cell cut to "…") and its ``--json`` rows."""
    from topo.builders import build
    from topo.fabric import save

    fabric = tmp_path / "f.json"
    save(build("ft2", switch_ports=8, gpus_per_node=4, nics_per_node=4), fabric)
    args = [sys.executable, str(ROOT / "cli.py"), "collective", str(fabric), *sizes]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    rows = json.loads(
        subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=120).stdout
    )["rows"]
    return r, rows


def test_piped_tables_print_whole_cells_on_one_line(tmp_path: Path) -> None:
    # Off a terminal rich assumed a page of 80 columns (160 later): the predicted table, 215
    # columns wide with its binds column, was folded onto a second line per row, and a wider
    # table cut numbers to "…". A user piping it into a file and grepping a size lost both.
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r, rows = _table_and_rows(tmp_path, env, "--max-bytes", "1T")
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.split()[:1] != []}
    # nccl-tests' sweep -b 8 -e 1T -f 2: 2^3 .. 2^40 bytes, count = size / 4 (float)
    for k, row in zip(range(3, 41), rows, strict=True):
        line = lines[str(2**k)]
        assert line.split()[:2] == [str(2**k), str(2**k // 4)]
        assert line.rstrip().endswith(f"{row['binds']}: {row['binds_detail']}"), line


def test_a_narrow_terminal_folds_text_cells_and_cuts_no_number(tmp_path: Path) -> None:
    # COLUMNS=80 (a terminal of 80 columns): rich narrowed the 11-column predicted table by
    # cropping, sizes printed as "104…" and times as "384…"
    env = {**os.environ, "COLUMNS": "80"}
    r, rows = _table_and_rows(tmp_path, env, "--min-bytes", "1M", "--max-bytes", "4M")
    lines = [ln.split() for ln in r.stdout.splitlines()]
    for row in rows:
        (line,) = [ln for ln in lines if ln[:1] == [str(row["size_bytes"])]]
        # size, count, type, redop, root, time, algbw, busbw, ceiling: whole on the row's line
        assert line[5:9] == [f"{row[k]:.2f}" for k in ("time_us", "algbw_GBps", "busbw_GBps",
                                                       "ceiling_busbw_GBps")]  # fmt: skip


def test_table_columns_keep_their_longest_word() -> None:
    from rich.console import Console
    from rich.table import Table

    from topo.cli_common import _fit

    table = Table()
    table.add_column("size (B)", justify="right")
    table.add_column("binds")
    table.add_row("1048576", "messages: 16 KiB messages through the pipeline's stages")
    console = Console(width=30, file=io.StringIO())
    width = _fit(console, table)
    # widest cells 8 ("size (B)") and 55 (the binds text), longest words 7 ("1048576") and 10
    # ("pipeline's"); padding 1 + 1 a column and 3 vertical rules of the default box: 7.
    # Narrowest 7 + 10 + 7 = 24 fits in 30; the 70 - 30 = 40 characters come from binds
    # (45 to spare, size (B) 1): 55 - 40 = 15
    assert width == 30
    assert [c.width for c in table.columns] == [8, 15]
    narrow = Console(width=20, file=io.StringIO())
    table2 = Table()
    table2.add_column("size (B)", justify="right")
    table2.add_column("binds")
    table2.add_row("1048576", "messages: 16 KiB messages through the pipeline's stages")
    # 24 > 20: binds gives its 45, size (B) its 1; the table prints 24 wide, every word whole
    assert _fit(narrow, table2) == 24
    assert [c.width for c in table2.columns] == [7, 10]


def test_piped_help_prints_whole_option_names() -> None:
    # Off a terminal rich assumed 80 columns for --help too: option names such as
    # --max-oversubscription and help text (NCCL_NET_GDR_LEVEL=LOC) were cut to "…".
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    for verb in ("collective", "plan", "moe"):
        args = [sys.executable, str(ROOT / "cli.py"), verb, "--help"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        assert "…" not in r.stdout, verb


def test_start_up_loads_no_solver_or_pattern_library() -> None:
    # scipy.optimize, scipy.sparse, HiGHS and regex are loaded where an LP, a shortest path or
    # a user's pattern needs them: at start-up they cost every command 0.4-0.7 s of CPU.
    heavy = ["highspy", "regex", "scipy.optimize", "scipy.sparse"]
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); import topo.cli; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_a_command_loads_its_own_module_alone() -> None:
    # The command line assembles the app of the one command it runs; the full app (every
    # command, as `topo --help` lists them) is what `from topo.cli import app` gives.
    code = (
        f"import atexit, sys; sys.path.insert(0, {str(ROOT)!r}); "
        "sys.argv = ['topo', 'build', 'ft2', '--switch-ports', '4']; import topo.cli; "
        "atexit.register(lambda: print(sorted(m for m in sys.modules "
        "if m.startswith('topo.commands.')), file=sys.stderr)); topo.cli.main()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "['topo.commands.build']"
    assert "ft2" in r.stdout
