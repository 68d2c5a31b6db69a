"""Signals sent to a running ``topo`` command in a subprocess, for the interrupt tests."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def signal_and_wait(
    proc: subprocess.Popen[str], sig: int, group: bool, timeout: float = 30
) -> tuple[str, str, float]:
    """Send ``sig`` to ``proc`` (to its whole process group with ``group``, as a terminal's
    Ctrl-C reaches it; ``proc`` started with ``start_new_session=True``) and wait for it to end.

    Returns its remaining stdout and stderr and the seconds it took to end; a process still
    running after ``timeout`` is killed (its group) and the wait's error raised.
    """
    start = time.perf_counter()
    try:
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return out, err, time.perf_counter() - start
