"""The process-wide state of Python's cyclic garbage collector (and of the C allocator),
owned by the command line.

A fabric is ~10^5 attribute dicts that live on and form no cycles; the collector would
traverse them again and again and find nothing. The library pauses it around such blocks
(:func:`gc_paused`); only the command line, which runs one command per process, changes the
collector for the whole process (:func:`configure_for_command`, which a library caller never
needs).
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block (as it was, after).

    For a block that builds many objects that live on and form no cycles (a fabric's
    ~10^5 attribute dicts, its hosts, a report's link list): the collector would traverse
    each of them again and again (about 0.3 s of a 65,536-GPU FT3's all-to-all) and find
    nothing. Cycles made inside the block are collected after it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _freeze_paused:
            gc.freeze()
        if was_enabled:
            gc.enable()


_freeze_paused = False


def freeze_after_pauses() -> None:
    """For a process that makes one analysis and exits (``topo bandwidth``): at the end of
    every :func:`gc_paused` block from now on, the objects alive are moved to the cyclic
    collector's permanent generation (:func:`gc.freeze`), so that no later collection
    traverses them again (0.2 s of a 65,536-GPU FT3's all-to-all: the first collection after
    a block would visit its 10^6 new objects). Reference counting still frees them; a cycle
    among them would be kept until the process ends, which is why a loop of analyses
    (resilience trials, sweeps) does not call this."""
    global _freeze_paused
    _freeze_paused = True


def configure_for_command(one_analysis: bool) -> None:
    """Set the collector for a process that runs one command of the command line.

    The collector runs every 100,000 allocations instead of every 700 (a command allocates a
    whole fabric at once: a 16,384-GPU MPFT is 100,000 dicts; cycles are still collected), and
    for a command that makes one analysis, what its pauses build is kept out of later
    collections (:func:`freeze_after_pauses`) and the memory it frees is kept for its later
    allocations (:func:`keep_freed_memory`).

    Parameters
    ----------
    one_analysis : bool
        The command makes one analysis and exits (not a loop of trials or sweep points).
    """
    gc.set_threshold(100_000, 50, 100)
    if one_analysis:
        freeze_after_pauses()
        keep_freed_memory()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's ``mallopt`` parameters (``malloc.h``)."""


def keep_freed_memory() -> bool:
    """Where the C library is glibc: blocks under 1 GiB come from the heap and freed memory
    stays with the process (up to 2 GiB) instead of going back to the system at once; whether
    that was set.

    numpy's large temporaries (a 2,048 x 2,048 table of floats is 32 MB) were each mapped from
    the system and unmapped when freed, and the next one's pages faulted in anew: 0.3-0.4 s of
    system time in a 65,536-GPU FT3's all-to-all. For a process that makes one analysis and
    exits; its peak memory is about the same. Elsewhere (macOS, musl) nothing changes.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library of that name, or no mallopt in it
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, 1 << 30)) and bool(mallopt(M_TRIM_THRESHOLD, 2**31 - 1))


_kept: list[object] = []


def keep_until_exit(*objs: object) -> None:
    """In a process that makes one analysis and exits (:func:`freeze_after_pauses` called, as
    :func:`configure_for_command` does for ``topo bandwidth``): hold ``objs`` until the
    process ends, so that a command's fabric and result are not freed object by object when
    the command returns (0.1 s for a 65,536-GPU FT3's 300,000 edge dicts); the command line
    then ends the process without tearing anything down. Elsewhere (a library caller, the
    tests' runner) nothing is held."""
    if _freeze_paused:
        _kept.extend(objs)
