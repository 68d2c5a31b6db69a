"""A private munged and slurmctld for the tests (Debian's slurmctld 22.05 and munge).

:func:`slurmctld` starts both with their sockets, keys, state and logs under a temporary folder
and a free loopback port, waits until ``scontrol`` answers, and stops them on exit (also when the
test fails). Tests skip cleanly where the daemons are not installed.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require_slurm() -> None:
    """Skip the calling test unless slurmctld, munged and scontrol are installed."""
    for tool in ("slurmctld", "munged", "scontrol"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            pytest.skip(f"{tool} not installed (apt-get install slurmctld munge)")


def _which(tool: str) -> str:
    return shutil.which(tool) or f"/usr/sbin/{tool}"


def _stop(pid_file: Path, proc: subprocess.Popen[bytes] | None = None) -> None:
    if proc is not None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        return
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        if not _alive(pid):
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs: a daemon that has exited but that nobody has reaped yet (a
    zombie: munged daemonizes, and a container's first process may reap it late) has ended."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


@contextmanager
def munged(folder: Path) -> Iterator[Path]:
    """A munged on a private socket; yields the socket path."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = folder / "munge.sock"
    pid = folder / "munged.pid"
    args = [
        _which("munged"),
        "--force",
        f"--socket={sock}",
        f"--key-file={key}",
        f"--log-file={folder / 'munged.log'}",
        f"--pid-file={pid}",
        f"--seed-file={folder / 'munged.seed'}",
    ]
    run = subprocess.run(args, capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        pytest.skip(f"munged did not start: {run.stderr.strip()[:200]}")
    try:
        yield sock
    finally:
        _stop(pid)


@dataclass(frozen=True)
class Slurmctld:
    """A running slurmctld: its config, log, and the environment for scontrol."""

    conf: Path
    log: Path
    env: dict[str, str]

    def scontrol(self, *args: str) -> str:
        out = subprocess.run(
            [_which("scontrol"), *args], capture_output=True, text=True, env=self.env, timeout=30
        )
        assert out.returncode == 0, out.stderr
        return out.stdout


def _slurm_conf(
    folder: Path, sock: Path, nodes: str, port: int, extra: str, state: str = "FUTURE"
) -> str:
    return "\n".join(
        [
            *([extra] if extra else []),
            "ClusterName=topo",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={port}",
            f"SlurmUser={getpass.getuser()}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={sock}",
            f"StateSaveLocation={folder / 'state'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmctldLogFile={folder / 'slurmctld.log'}",
            f"SlurmdSpoolDir={folder / 'spool'}",
            "TopologyPlugin=topology/tree",
            "SelectType=select/cons_tres",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "MailProg=/bin/true",
            f"NodeName={nodes} State={state}",
            "PartitionName=all Nodes=ALL Default=YES",
            "",
        ]
    )


@contextmanager
def slurmctld(
    folder: Path, sock: Path, nodes: str, topology: str, extra: str = "", state: str = "FUTURE"
) -> Iterator[Slurmctld]:
    """slurmctld -D with ``NodeName=<nodes> State=<state>``, the given topology.conf and any
    ``extra`` slurm.conf line (e.g. ``TopologyParam=dragonfly``). FUTURE nodes are configured
    but never allocated; CLOUD nodes (powered down, started on demand) are, so that
    ``sbatch --test-only`` can place a job on them."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "state").mkdir(exist_ok=True)
    conf = folder / "slurm.conf"
    conf.write_text(_slurm_conf(folder, sock, nodes, _free_port(), extra, state))
    (folder / "topology.conf").write_text(topology)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    proc = subprocess.Popen(
        [_which("slurmctld"), "-D", "-f", str(conf)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ctld = Slurmctld(conf, folder / "slurmctld.log", env)
    try:
        for _ in range(300):
            if proc.poll() is not None:
                log = ctld.log.read_text() if ctld.log.exists() else ""
                raise AssertionError(f"slurmctld exited {proc.returncode}: {log[-2000:]}")
            ping = subprocess.run(
                [_which("scontrol"), "ping"], capture_output=True, text=True, env=env, timeout=30
            )
            if "UP" in ping.stdout:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("slurmctld did not answer within 30 s")
        yield ctld
    finally:
        _stop(folder / "slurmctld.pid", proc)


def parse_show_topology(text: str) -> dict[str, dict[str, str]]:
    """``scontrol show topology`` lines -> switch name -> its fields (Level, Nodes, Switches)."""
    out = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" in fields:
            out[fields.pop("SwitchName")] = fields
    return out
