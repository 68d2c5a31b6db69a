"""Signals during a solve (issue 11): the library leaves a caller's handlers alone; only the
command line makes SIGINT and SIGTERM end the process at once while HiGHS runs."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

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


def test_the_command_lines_choice_restores_the_default_actions(monkeypatch, library_state):
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    interrupts.terminate_on_interrupt()
    seen = _handlers_during_solve(monkeypatch)
    assert seen and all(s == (signal.SIG_DFL, signal.SIG_DFL) for s in seen)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


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
