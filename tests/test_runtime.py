"""topo.runtime: the cyclic collector's pauses, and the command line's process-wide settings."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from topo import runtime


@pytest.fixture
def collector(monkeypatch):
    """The collector as it was, after the test: thresholds, frozen objects, enabled."""
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    monkeypatch.setattr(runtime, "_freeze_paused", False)
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()


def test_gc_paused_restores_the_collector(collector) -> None:
    gc.enable()
    with runtime.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with runtime.gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # (as it was)


def test_freeze_after_pauses_keeps_what_a_pause_made_out_of_collections(collector) -> None:
    # The command line (one analysis per process) moves what is alive at the end of a pause
    # of the collector to its permanent generation; a library caller's pauses do not.
    with runtime.gc_paused():
        kept = [{"i": i} for i in range(1000)]
    assert gc.get_freeze_count() == 0
    runtime.freeze_after_pauses()
    with runtime.gc_paused():
        kept += [{"i": i} for i in range(1000)]
    assert gc.get_freeze_count() >= len(kept)


@pytest.mark.parametrize("one_analysis", [True, False])
def test_configure_for_command(collector, one_analysis) -> None:
    # Every command: a collection every 100,000 allocations (not 700); only a command that
    # makes one analysis freezes what its pauses build (not resilience, sweep, codesign).
    runtime.configure_for_command(one_analysis=one_analysis)
    assert gc.get_threshold() == (100_000, 50, 100)
    with runtime.gc_paused():
        kept = [{"i": i} for i in range(1000)]
    assert (gc.get_freeze_count() >= len(kept)) is one_analysis


def test_keep_until_exit_holds_only_in_a_one_analysis_process(collector, monkeypatch) -> None:
    # A library caller's objects are freed as usual; the command line's are held to the end.
    monkeypatch.setattr(runtime, "_kept", [])
    obj = object()
    runtime.keep_until_exit(obj)
    assert runtime._kept == []
    runtime.freeze_after_pauses()
    runtime.keep_until_exit(obj)
    assert runtime._kept == [obj]


def test_keep_freed_memory_sets_glibcs_thresholds_or_nothing() -> None:
    # Set where the C library has mallopt (glibc); a platform without it changes nothing. (In a
    # process of its own: the test run's keeps returning what it frees.)
    code = (
        "import ctypes; from topo import runtime\n"
        "try:\n    ctypes.CDLL(None).mallopt\nexcept (OSError, AttributeError):\n"
        "    print('none', runtime.keep_freed_memory())\n"
        "else:\n    print('glibc', runtime.keep_freed_memory())\n"
    )
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() in (["none", "False"], ["glibc", "True"])
