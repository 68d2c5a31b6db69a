"""Signals during a solve (topo.interrupts): the library leaves a caller's handlers alone; only the
command line makes SIGINT and SIGTERM end the process at once while HiGHS runs."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from tests._signals import signal_and_wait
from topo import interrupts
from topo.builders import build
from topo.flow import alltoall_bandwidth


@pytest.fixture
def library_state():
    was = interrupts.terminates_on_interrupt()
    interrupts.terminate_on_interrupt(False)
    yield
    interrupts.terminate_on_interrupt(was)


def _handlers_during_solve(monkeypatch) -> list[tuple[object, object]]:
    """Run a small LP (the general one: no reduction skips it), recording the SIGINT and
    SIGTERM handlers seen inside HiGHS's call."""
    import highspy

    seen: list[tuple[object, object]] = []
    run = highspy.Highs.run

    def spy(self, *args, **kwargs):
        seen.append((signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)))
        return run(self, *args, **kwargs)

    monkeypatch.setattr(highspy.Highs, "run", spy)
    G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
    alltoall_bandwidth(G, method="general")
    return seen


def test_a_library_solve_keeps_the_callers_handlers(monkeypatch, library_state) -> None:
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    seen = _handlers_during_solve(monkeypatch)
    assert seen and all(s == before for s in seen)
    assert before[0] is signal.default_int_handler  # Ctrl-C raises KeyboardInterrupt


def test_the_command_lines_choice_keeps_the_handlers_and_watches_the_solve(
    monkeypatch, library_state
):
    # The handlers stay (a signal between two calls into HiGHS unwinds as anywhere); during
    # the solve a wakeup fd tells the watcher thread of a signal, and is restored after.
    import threading

    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    interrupts.terminate_on_interrupt()
    wakeup: list[int] = []
    watchers: list[bool] = []
    import highspy

    run = highspy.Highs.run

    def spy(self, *args, **kwargs):
        fd = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(fd)
        wakeup.append(fd)
        watchers.append(any(t.name == "topo-interrupt-watcher" for t in threading.enumerate()))
        return run(self, *args, **kwargs)

    monkeypatch.setattr(highspy.Highs, "run", spy)
    seen = _handlers_during_solve(monkeypatch)
    assert seen and all(s == before for s in seen)
    assert wakeup and all(fd >= 0 for fd in wakeup) and all(watchers)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    assert signal.set_wakeup_fd(-1) == -1  # restored (none before)
    assert not any(t.name == "topo-interrupt-watcher" for t in threading.enumerate())


def test_ctrl_c_in_a_library_solve_is_a_keyboard_interrupt() -> None:
    # A host process (a notebook) that calls the solver and gets SIGINT during it: it sees
    # KeyboardInterrupt and lives on (before, the default action killed it).
    code = textwrap.dedent(
        """
        import os, signal
        import highspy
        from topo.builders import build
        from topo.flow import alltoall_bandwidth
        run = highspy.Highs.run
        def interrupted(self, *args, **kwargs):
            r = run(self, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)  # arrives during the solve's call
            return r
        highspy.Highs.run = interrupted
        G = build("ft2", switch_ports=4, gpus_per_node=1, nics_per_node=1)
        try:
            alltoall_bandwidth(G, method="general")
        except KeyboardInterrupt:
            print("caught KeyboardInterrupt")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "caught KeyboardInterrupt"


@pytest.mark.parametrize(
    "redeliver, sig, caught, stderr",
    [
        (True, "SIGINT", "KeyboardInterrupt", ""),
        (True, "SIGTERM", "Terminated", ""),
        (False, "SIGINT", "lost", "Exception ignored in"),
    ],
)
def test_an_interrupt_raised_in_a_gc_callback_arrives_again(redeliver, sig, caught, stderr):
    # The signal is handled inside a garbage-collector callback (as Dask's GC diagnosis is
    # one): Python drops what the handler raises there. With the command line's hook the
    # interrupt is raised again in ordinary code, silently; without it, it is lost.
    code = textwrap.dedent(
        f"""
        import gc, os, signal, time
        from topo.interrupts import redeliver_swallowed_interrupts
        class Terminated(KeyboardInterrupt):
            signal = signal.SIGTERM
        def terminate(signum, frame):
            raise Terminated
        signal.signal(signal.SIGTERM, terminate)
        if {redeliver}:
            redeliver_swallowed_interrupts()
            redeliver_swallowed_interrupts()  # (once is enough; twice changes nothing)
        sent = []
        def callback(phase, info):
            if phase == "start" and not sent:
                sent.append(1)
                os.kill(os.getpid(), signal.{sig})
                for _ in range(10000):  # the handler runs here, inside the callback
                    pass
        gc.callbacks.append(callback)
        try:
            gc.collect()
            end = time.monotonic() + 5
            while time.monotonic() < end:
                time.sleep(0.01)
            print("lost")
        except Terminated:
            print("Terminated")
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == caught
    assert (stderr in r.stderr) if stderr else r.stderr == ""


def test_ctrl_c_while_the_command_line_imports_is_one_line():
    # The console script imports typer, rich, networkx and numpy before topo.cli.main can catch
    # anything: an interrupt there printed a traceback of the import machinery.
    code = textwrap.dedent(
        """
        import builtins
        real = builtins.__import__
        def interrupted(name, *args, **kwargs):
            if name == "topo.cli":
                raise KeyboardInterrupt
            return real(name, *args, **kwargs)
        builtins.__import__ = interrupted
        from topo.console import main
        main()
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 130
    assert r.stderr == "topo: interrupted\n"


def test_sigterm_ends_a_command_with_status_143(capsys):
    # SIGTERM (timeout, Slurm's scancel) unwinds like Ctrl-C but is told apart at the exit:
    # 128 + 15, as a shell reports a process the signal ended.
    import os
    import time

    import typer

    from topo.cli_common import user_errors

    @user_errors
    def command() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # (the handler raises first)

    with pytest.raises(typer.Exit) as ended:
        command()
    assert ended.value.exit_code == 143
    assert capsys.readouterr().err == "topo: terminated\n"


def _solving_cli(fabric: str, marker: str) -> list[str]:
    """The command line solving ``fabric``'s general LP, writing ``marker`` as HiGHS starts."""
    code = textwrap.dedent(
        f"""
        import sys
        import highspy
        run = highspy.Highs.run
        def marked(self, *args, **kwargs):
            open({marker!r}, "w").close()
            return run(self, *args, **kwargs)
        highspy.Highs.run = marked
        sys.argv = ["topo", "bandwidth", {fabric!r}, "--method", "general"]
        from topo.cli import main
        main()
        """
    )
    return [sys.executable, "-c", code]


@pytest.mark.parametrize(
    "sig, group, status, line",
    [
        (signal.SIGINT, True, 130, "topo: interrupted\n"),  # Ctrl-C: the whole process group
        (signal.SIGTERM, False, 143, "topo: terminated\n"),
    ],
)
def test_a_signal_during_a_solve_ends_the_command_with_one_line(
    tmp_path, sig, group, status, line
) -> None:
    # Issue 41: the default actions ended the process at once, but silently (no line, status
    # -2 or -15); the watcher ends it as the command line does elsewhere.
    import time

    from topo.fabric import save

    fabric, marker = tmp_path / "ft2-128.json", tmp_path / "solving"
    save(build("ft2", switch_ports=16, gpus_per_node=1, nics_per_node=1), fabric)  # ~7 s LP
    proc = subprocess.Popen(
        _solving_cli(str(fabric), str(marker)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # inside HiGHS
    out, err, seconds = signal_and_wait(proc, sig, group)
    assert marker.exists(), err
    assert (proc.returncode, err, out) == (status, line, "")
    assert seconds < 1.5
