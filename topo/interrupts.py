"""Who decides what SIGINT and SIGTERM do while HiGHS runs: the command line, never the library.

Python runs its signal handlers only when control comes back from C, and a large LP can keep
HiGHS busy for minutes; Ctrl-C, ``timeout`` and Slurm would wait for it. The command line
therefore asks (:func:`terminate_on_interrupt`) that each solve end the process at once on
either signal, with the one line the command line prints for it (``topo: interrupted``, exit
status 130; ``topo: terminated``, 143): a watcher thread, woken by the signal through
:func:`signal.set_wakeup_fd` (written by the C-level handler the moment the signal arrives),
prints the line and ends the process, while HiGHS runs without the GIL. Nothing needs cleaning
up then (no output file is open). A signal the main thread handles itself (between two calls
into HiGHS) unwinds as anywhere else. A library caller (a notebook, a service) keeps its own
handlers: its Ctrl-C raises ``KeyboardInterrupt`` as soon as HiGHS returns, and its process
lives on.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

_state = {"terminate": False}


def terminate_on_interrupt(enabled: bool = True) -> None:
    """Let SIGINT and SIGTERM end the process at once during solves (the command line's call).

    Parameters
    ----------
    enabled : bool
        True: a signal during a solve (:func:`solving`) ends the process at once with the
        command line's line; False (the default state of a library import): a solve leaves
        signals to the caller's handlers.
    """
    _state["terminate"] = bool(enabled)


def terminates_on_interrupt() -> bool:
    """Whether :func:`terminate_on_interrupt` is in force."""
    return _state["terminate"]


GRACE_S = 0.25
"""Seconds the watcher leaves the main thread to handle a signal itself (it unwinds out of the
solve at once when it is running Python) before it ends the process."""

_LINES = {
    signal.SIGINT: (b"topo: interrupted\n", 130),
    signal.SIGTERM: (b"topo: terminated\n", 143),
}


@contextlib.contextmanager
def solving() -> Iterator[None]:
    """The block of a solve: under :func:`terminate_on_interrupt`, SIGINT or SIGTERM inside it
    ends the process within :data:`GRACE_S` with the command line's line (``topo:
    interrupted``, status 130; ``topo: terminated``, 143), even while HiGHS holds the main
    thread; otherwise, or outside the main thread, nothing changes. The handlers themselves
    are left as they are."""
    if not _state["terminate"] or threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    except ValueError:  # (not the main thread of the main interpreter)
        os.close(read_end)
        os.close(write_end)
        yield
        return
    left = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(read_end, left), name="topo-interrupt-watcher", daemon=True
    )
    watcher.start()
    try:
        yield
    finally:
        left.set()
        signal.set_wakeup_fd(previous)
        os.close(write_end)  # (the watcher's read returns: it ends)
        watcher.join()
        os.close(read_end)


def _watch(read_end: int, left: threading.Event) -> None:
    """Wait for a signal number on ``read_end``; for SIGINT or SIGTERM, unless the main thread
    has left the solve within :data:`GRACE_S` (it handled the signal), print the command
    line's line and end the process."""
    while True:
        try:
            data = os.read(read_end, 64)
        except OSError:
            return
        if not data:  # the solve is over
            return
        for signum in data:
            if signum in _LINES and not left.wait(GRACE_S):
                line, status = _LINES[signal.Signals(signum)]
                os.write(2, line)
                os._exit(status)


def redeliver_swallowed_interrupts() -> None:
    """Make a Ctrl-C or SIGTERM that Python dropped arrive again (the command line's call).

    A signal's Python handler raises in whatever code the main thread runs when the signal is
    handled. When that is a garbage-collector callback (Dask's ``distributed`` registers one),
    a ``__del__`` method or a weakref callback, Python reports the exception as "Exception
    ignored in ..." and drops it: the interrupt is lost and the command runs on (a
    ``resilience`` run on Dask went on past its 30 s). This hook (``sys.unraisablehook``) drops
    the report instead and has the signal handled again in the main thread a moment later
    (``_thread.interrupt_main``, from a thread of its own, :data:`REDELIVER_S` later, when the
    callback is over), where it raises in ordinary code (should it land in a callback again,
    the same happens again); any other unraisable exception goes to the previous hook. The
    signal is the exception's ``signal`` attribute, SIGINT when it has none. Idempotent.
    """
    previous = sys.unraisablehook
    if getattr(previous, "redelivers_interrupts", False):
        return

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, KeyboardInterrupt) and threading.current_thread() is (
            threading.main_thread()
        ):
            # (a low-level thread: threading's start() would wait for it, and the signal it
            # sends could be handled in that wait, inside this hook)
            _thread.start_new_thread(_redeliver, (int(getattr(exc, "signal", signal.SIGINT)),))
            return
        previous(unraisable)

    hook.redelivers_interrupts = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


REDELIVER_S = 0.02
"""Seconds between a dropped interrupt and its second delivery (a gc callback's run is far
shorter)."""


def _redeliver(signum: int) -> None:
    time.sleep(REDELIVER_S)
    _thread.interrupt_main(signal.Signals(signum))
