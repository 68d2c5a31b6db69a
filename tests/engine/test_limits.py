"""--workers and --memory-limit are bounded before any Dask worker starts, and Ctrl-C or SIGTERM
stops a Dask run within a second or two with one line (topo.engine.cluster's limits)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tests._signals import signal_and_wait
from topo.builders import build
from topo.cli import app
from topo.engine import cluster
from topo.engine.cluster import check_workers, max_workers, parse_memory_limit
from topo.errors import TopoError
from topo.fabric import save

REPO = Path(__file__).resolve().parents[2]
GiB = 2**30


@pytest.fixture
def small_machine(monkeypatch):
    """A machine of 2 cores and 1 GiB."""
    monkeypatch.setattr(cluster.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(cluster, "machine_memory_bytes", lambda: 1 * GiB)


def test_workers_are_bounded_by_the_cores_and_the_memory(small_machine) -> None:
    # 4 per core of 2 = 8; one per 256 MiB of 1 GiB = 4: the smaller, 4
    assert max_workers() == 4
    check_workers(4)
    with pytest.raises(
        TopoError, match=r"workers must be a whole number from 1 to 4 on this "
    ) as e:
        check_workers(5)
    assert e.value.param == "workers"
    with pytest.raises(TopoError, match="got 0"):
        check_workers(0)
    assert max_workers("slurm") == 1024  # jobs, not processes here
    check_workers(1024, "slurm")
    with pytest.raises(TopoError, match="from 1 to 1024 Slurm jobs, got 100000"):
        check_workers(100_000, "slurm")


@pytest.mark.parametrize(
    "text, bytes_",
    [("256MiB", 256 * 2**20), ("1GiB", GiB), ("5e8", 500_000_000), (" 512 MB ", 512_000_000)],
)
def test_a_memory_limit_is_read_in_bytes(small_machine, text: str, bytes_: int) -> None:
    assert parse_memory_limit(text) == bytes_


@pytest.mark.parametrize(
    "text, message",
    [
        ("abc", "memory_limit must be a size such as 4GiB, 500MB or 2e9 .bytes., got 'abc'"),
        ("", "must be a size"),
        ("1e400", "must be a size"),
        ("-5GiB", r"from 256 MiB to this machine's memory \(1.0 GiB\), got '-5GiB'"),
        ("0", r"from 256 MiB .*, got '0' \(0 bytes\)"),  # Dask's "no limit": refused
        ("1KiB", r"got '1KiB' \(1,024 bytes\)"),
        ("255MiB", "from 256 MiB"),
        ("1.5GiB", r"machine's memory \(1.0 GiB\)"),
    ],
)
def test_a_bad_memory_limit_is_refused(small_machine, text: str, message: str) -> None:
    with pytest.raises(TopoError, match=message) as e:
        parse_memory_limit(text)
    assert e.value.param == "memory_limit"


def test_a_slurm_jobs_memory_is_not_bounded_by_this_machine(small_machine) -> None:
    assert parse_memory_limit("64GiB", "slurm") == 64 * GiB


def test_the_default_memory_limit_is_the_machines_where_that_is_less(
    small_machine, monkeypatch
) -> None:
    # 4GiB on a 1 GiB machine: the machine's 1 GiB (an explicit 4GiB is refused)
    class Started(Exception):
        pass

    def start(self, n):
        raise Started(self.memory_limit)

    monkeypatch.setattr(cluster.Engine, "_start", start)
    with pytest.raises(Started, match=f"^{GiB}$"):
        cluster.Engine(workers=1)
    with pytest.raises(TopoError, match="memory_limit must be from 256 MiB"):
        cluster.Engine(workers=1, memory_limit="5GiB")


@pytest.fixture(scope="module")
def fabric(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("limits") / "ft.json"
    save(build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1), path)
    return path


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("limits") / "s.toml"
    path.write_text('[sweep]\nevaluate = ["cost"]\n\n[grid]\nfamily = "ft2"\nswitch_ports = 8\n')
    return path


def _refused(*args: object) -> Result:
    """The command run in this process (typer's CliRunner): these refusals come before any
    Dask worker starts, so no process of its own is needed to see them."""
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_line(r: Result, *parts: str) -> None:
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert "Traceback" not in r.output
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("topo: error: ")
    for part in parts:
        assert part in r.stderr


def _commands(fabric: Path, spec: Path, tmp: Path) -> dict[str, list[object]]:
    return {
        "resilience": ["resilience", fabric, "--trials", 5],
        "sweep": ["sweep", spec, "-o", tmp / "out.csv"],
        "codesign": ["codesign", "--gpus", 32, "--tpot-ms", 100],
    }


@pytest.mark.parametrize("command", ["resilience", "sweep", "codesign"])
def test_too_many_workers_are_refused_at_once(fabric, spec, tmp_path, command) -> None:
    # before: 90 s of silence, then "RuntimeError: dictionary changed size during iteration"
    start = time.perf_counter()
    r = _refused(*_commands(fabric, spec, tmp_path)[command], "--workers", 100_000)
    _one_line(r, "--workers must be a whole number from 1 to ", "per core", "got 100000")
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("command", ["resilience", "sweep"])
@pytest.mark.parametrize(
    "limit, part",
    [
        ("abc", "--memory-limit must be a size such as 4GiB"),
        ("-5GiB", "--memory-limit must be from 256 MiB to this machine's memory"),
        ("1KiB", "(1,024 bytes)"),
        ("0", "got '0' (0 bytes)"),
    ],
)
def test_a_bad_memory_limit_is_one_line(fabric, spec, tmp_path, command, limit, part) -> None:
    # before: Dask's tracebacks (up to 171 lines), or (0) no limit at all
    args = _commands(fabric, spec, tmp_path)[command]
    _one_line(_refused(*args, "--workers", 1, "--memory-limit", limit), part)


@pytest.fixture(scope="module")
def mpft(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("limits") / "mpft.json"
    save(build("mpft", switch_ports=16, gpus=512), path)
    return path


@pytest.mark.parametrize(
    "sig, group, workers, status, line",
    [
        # timeout, scancel: before, 4 workers busy in solves took 2 s to close (64: 78 s)
        (signal.SIGTERM, False, 4, 143, "topo: terminated"),
        # Ctrl-C reaches the whole process group: before, every worker printed its
        # KeyboardInterrupt traceback
        (signal.SIGINT, True, 2, 130, "topo: interrupted"),
    ],
)
def test_a_signal_stops_a_dask_run_at_once(mpft, sig, group, workers, status, line) -> None:
    workers = min(workers, max_workers())
    cmd = [sys.executable, str(REPO / "cli.py"), "resilience", str(mpft), "--trials", "2000",
           "--fail-links", "4", "--workers", str(workers)]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    first = proc.stderr.readline()  # the workers are up
    time.sleep(1.0)  # solving
    _, rest, seconds = signal_and_wait(proc, sig, group)
    assert first.startswith(f"engine: Dask, {workers} worker(s)")
    assert seconds < 1.5
    assert proc.returncode == status
    assert rest == line + "\n"  # no worker's traceback, no scheduler's CommClosedError
