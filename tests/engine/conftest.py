"""Real Dask clusters for the engine tests: an embedded LocalCluster of two worker processes,
and a ``dask scheduler`` plus ``dask worker`` processes on 127.0.0.1 started by the test.
Both are small (two single-threaded workers, 1 GiB each) and always stopped."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from topo.engine import Engine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="package")
def local_engine() -> Iterator[Engine]:
    engine = Engine(workers=2, memory_limit="1GiB")
    try:
        yield engine
    finally:
        engine.close()


def _dask() -> str:
    exe = Path(sys.executable).with_name("dask")
    found = str(exe) if exe.exists() else shutil.which("dask")
    if found is None:
        pytest.skip("the dask command line (dask[distributed]) is not installed")
    return found


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):  # workers first, then the scheduler
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture(scope="session")
def external_scheduler() -> Iterator[str]:
    """``tcp://127.0.0.1:PORT`` of a real scheduler with two worker processes."""
    dask = _dask()
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    root = str(Path(__file__).resolve().parents[2])
    # pytest imports this package as ``engine`` from tests/, and topo from this checkout: so do
    # the workers (a console script puts neither its cwd nor the checkout on sys.path)
    env = {
        **os.environ,
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [root, root + "/tests", os.environ.get("PYTHONPATH")])
        ),
    }
    quiet = dict(
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=root
    )
    procs = [
        subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port)]
            + ["--dashboard-address", "127.0.0.1:0"],
            env=env,
            **quiet,  # type: ignore[call-overload]
        )
    ]
    try:
        procs.append(
            subprocess.Popen(
                [dask, "worker", address, "--nworkers", "2", "--nthreads", "1"]
                + ["--memory-limit", "1GiB", "--no-dashboard", "--host", "127.0.0.1"],
                env=env,
                **quiet,  # type: ignore[call-overload]
            )
        )
        _wait_for_workers(address, 2)
        yield address
    finally:
        _stop(procs)


def _wait_for_workers(address: str, n: int, timeout_s: float = 60.0) -> None:
    from distributed import Client

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with Client(address, timeout="5s") as client:
                client.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
