"""topo.runtime: the cyclic collector's pauses, and the command line's process-wide settings."""

from __future__ import annotations

import gc

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
