"""Run the real InfiniBand tools on a simulated fabric: ibsim, ibnetdiscover, opensm.

Debian's ``ibsim-utils`` (ibsim, a fabric simulator reading ibnetdiscover-format net files),
``infiniband-diags`` (the real ``ibnetdiscover``) and ``opensm`` run unprivileged:
``ibsim -s NETFILE`` in the background, the tools under ``ibsim-run`` (which preloads
``libumad2sim.so``). ``IBSIM_SOCKNAME`` keeps each simulator private to its test;
``SIM_HOST`` picks the node the tools attach at (the plane they discover). The console on
ibsim's standard input takes ``Unlink "node"[port]``, ``Link "a"[p] "b"[q]``, ``ReLink``.

:func:`simulator` starts one and always stops it (a context manager used by fixtures); tests
call :func:`need_tools` first, which skips them cleanly where the tools are absent.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TOOLS = ("ibsim", "ibsim-run", "ibnetdiscover")
_counter = itertools.count()


def need_tools(*extra: str) -> None:
    """Skip the calling test unless ibsim, ibsim-run, ibnetdiscover (and ``extra``) are on
    PATH (``apt-get install ibsim-utils infiniband-diags opensm``)."""
    missing = [t for t in (*TOOLS, *extra) if shutil.which(t) is None]
    if missing:
        pytest.skip(
            f"not installed: {', '.join(missing)} (Debian ibsim-utils, infiniband-diags, opensm)"
        )


class Sim:
    """A running ibsim: its console, and the tools run against it."""

    def __init__(self, proc: subprocess.Popen[bytes], sockname: str) -> None:
        self.proc = proc
        self.sockname = sockname
        self._out: list[bytes] = []
        self._prompts = threading.Semaphore(0)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: self.proc.stdout.read1(4096), b""):  # type: ignore[union-attr]
            self._out.append(chunk)
            for _ in range(chunk.count(b"sim> ")):
                self._prompts.release()

    @property
    def output(self) -> str:
        return b"".join(self._out).decode(errors="replace")

    def wait_ready(self, timeout_s: float = 120) -> None:
        if not self._prompts.acquire(timeout=timeout_s):
            raise RuntimeError(f"ibsim did not start:\n{self.output[-2000:]}")

    def console(self, *commands: str, timeout_s: float = 60) -> None:
        """Send console commands, each answered by a new prompt before the next."""
        assert self.proc.stdin is not None
        for cmd in commands:
            self.proc.stdin.write(cmd.encode() + b"\n")
            self.proc.stdin.flush()
            if not self._prompts.acquire(timeout=timeout_s):
                raise RuntimeError(f"ibsim did not answer {cmd!r}:\n{self.output[-2000:]}")

    def env(self, sim_host: str | None = None) -> dict[str, str]:
        env = dict(os.environ, IBSIM_SOCKNAME=self.sockname)
        if sim_host is not None:
            env["SIM_HOST"] = sim_host
        return env

    def run(self, *argv: str, sim_host: str | None = None, timeout_s: float = 600) -> str:
        """Run a tool under ``ibsim-run``; its standard output (raises on failure)."""
        r = subprocess.run(
            ["ibsim-run", *argv],
            env=self.env(sim_host),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr[-2000:]}")
        return r.stdout

    def ibnetdiscover(self, sim_host: str | None = None) -> str:
        return self.run("ibnetdiscover", sim_host=sim_host)


@contextmanager
def simulator(netfile: Path, *limits: str) -> Iterator[Sim]:
    """``ibsim -s NETFILE [limits]`` on a private socket name; stopped on exit, always."""
    sockname = f"topo-test-{os.getpid()}-{next(_counter)}"
    proc = subprocess.Popen(
        ["ibsim", "-s", *limits, str(netfile)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, IBSIM_SOCKNAME=sockname),
    )
    sim = Sim(proc, sockname)
    try:
        sim.wait_ready()
        yield sim
    finally:
        try:
            if proc.stdin is not None and proc.poll() is None:
                proc.stdin.write(b"Quit\n")
                proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
