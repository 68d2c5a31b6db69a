"""Who decides what SIGINT and SIGTERM do while HiGHS runs: the command line, never the library.

Python runs its signal handlers only when control comes back from C, and a large LP can keep
HiGHS busy for minutes; Ctrl-C, ``timeout`` and Slurm would wait for it. The command line
therefore asks (:func:`terminate_on_interrupt`) for the default actions (the process ends at
once) during each solve; nothing needs cleaning up then (no output file is open). A library
caller (a notebook, a service) keeps its own handlers: its Ctrl-C raises ``KeyboardInterrupt``
as soon as HiGHS returns, and its process lives on.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_state = {"terminate": False}


def terminate_on_interrupt(enabled: bool = True) -> None:
    """Let SIGINT and SIGTERM end the process at once during solves (the command line's call).

    Parameters
    ----------
    enabled : bool
        True: :func:`solving` restores the default actions for the duration of each solve;
        False (the default state of a library import): it leaves every handler as it is.
    """
    _state["terminate"] = bool(enabled)


def terminates_on_interrupt() -> bool:
    """Whether :func:`terminate_on_interrupt` is in force."""
    return _state["terminate"]


@contextlib.contextmanager
def solving() -> Iterator[None]:
    """The block of a solve: under :func:`terminate_on_interrupt`, SIGINT and SIGTERM take
    their default actions inside it (and the previous handlers after); otherwise, or outside
    the main thread, nothing changes."""
    if not _state["terminate"] or threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for sig in saved:
            signal.signal(sig, signal.SIG_DFL)
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
