"""The limits of issue 13, each as the whole command a user runs (start-up, loading, solving).

Builds the fabrics once into a temporary directory, then runs each ``topo`` command in its own
process and reports its wall time, its CPU time (user + system of the child: comparable when
other jobs share the machine) and its peak memory, with what it found (exact or bounds, and
the busbw), and the CPU time the hypervisor took from the machine meanwhile (``steal``, all
CPUs: a shared virtual machine's speed varies with its neighbours). numba's cache is a folder
of the run's own, so ECMP is timed twice: its first run compiles the draws, as a user's first
after an install does, and the second is what every later run takes. Run from the project root
with the project installed::

    python benchmarks/bench_limits.py            # every case (several minutes)
    python benchmarks/bench_limits.py --quick    # without the 20-trial resilience run
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BUILDS = {
    "mpft.json": ["mpft", "--switch-ports", "64", "--link-gbps", "400"],
    "mrft.json": ["mrft", "--switch-ports", "64", "--gpus", "1024"],
    "nvl72.json": ["ft2", "--gpus", "1152", "--gpus-per-node", "72", "--nics-per-node", "72"],
    "ft3.json": ["ft3"],
    "slimfly27.json": ["slimfly", "--q", "27"],
    "dragonfly64.json": ["dragonfly", "--groups", "64"],
}

CASES = [
    ("MPFT 16,384: 8 cables", ["bandwidth", "mpft.json", "--fail-links", "8", "--seed", "0"], 30),
    ("MPFT 16,384: 64 cables", ["bandwidth", "mpft.json", "--fail-links", "64", "--seed", "0"], 30),
    (
        "MPFT 16,384: 328 cables",
        ["bandwidth", "mpft.json", "--fail-links", "328", "--seed", "0"],
        30,
    ),
    ("NVL72-shaped: 16 racks", ["bandwidth", "nvl72.json"], 3),
    ("FT3 65,536", ["bandwidth", "ft3.json"], 5),
    # numba compiles ECMP's draws into a cache folder of the benchmark's own (NUMBA_CACHE_DIR),
    # empty at the start: the first run is a user's first after an install, the second the
    # one every later run is.
    (
        "FT3 65,536: ECMP, first run (compiles)",
        ["bandwidth", "ft3.json", "--routing", "ecmp", "--seed", "1"],
        None,
    ),
    ("FT3 65,536: ECMP", ["bandwidth", "ft3.json", "--routing", "ecmp", "--seed", "1"], 8),
    ("Slim Fly q=27", ["bandwidth", "slimfly27.json"], None),
    ("Dragonfly 64 groups", ["bandwidth", "dragonfly64.json"], None),
]

RESILIENCE = (
    "README resilience: 20 trials x 8 cables",
    ["resilience", "mpft.json", "mrft.json", "--trials", "20", "--fail-links", "8"],
    None,
)


def steal_seconds() -> float:
    """CPU time the hypervisor has taken from this virtual machine so far, all CPUs (the
    ``steal`` column of ``/proc/stat``, in clock ticks); NaN where there is no such file. A
    case that ran while it grew was slowed by other machines on the same host."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return math.nan


def measure(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[
    float, float, float, str
]:
    """Run ``command`` in ``cwd``: (wall s, CPU s, peak MB, stdout), CPU and memory of that
    process alone (``os.wait4``); a failure ends the benchmark."""
    with tempfile.TemporaryFile("w+") as buf:
        t0 = time.perf_counter()
        proc = subprocess.Popen(command, cwd=cwd, stdout=buf, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        if code:
            raise SystemExit(f"{' '.join(command)} failed ({code})")
        buf.seek(0)
        out = buf.read()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def run(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Run ``topo ARGS --json`` in ``cwd``, numba's cache in ``cwd/numba-cache``
    (:func:`measure`)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cwd / "numba-cache")}
    return measure(["topo", *args, "--json"], cwd, env)


def build_mpft(cwd: Path) -> None:
    """Write the README's 16,384-GPU MPFT (64-port 400G switches) to ``cwd/mpft.json`` with
    this checkout's ``cli.py``."""
    subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "cli.py"), "build", "mpft",
         "--switch-ports", "64", "-o", "mpft.json"],
        cwd=cwd,
        check=True,
        capture_output=True,
    )  # fmt: skip


def print_machine() -> None:
    """The machine's load and speed, before the cases."""
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"speed index {speed_index():.2f} s (ten million Python additions; lower is faster)")
    print(f"memory index {memory_index():.2f} s (256 MB touched, 300,000 dicts built)")


def print_cases(
    cases: list[tuple[str, list[str], float | None]],
    cwd: Path,
    run: Callable[[list[str], Path], tuple[float, float, float, str]],
    found: Callable[[str], str],
    width: int,
    digits: int,
) -> None:
    """One line a case: label, limit, wall, CPU and stolen seconds (``digits`` decimals), peak
    MB and what ``found`` reads in its output; then the machine's load and speed again."""
    print(
        f"{'case':<{width}} {'limit s':>7} {'wall s':>7} {'CPU s':>7} {'steal s':>7} "
        f"{'peak MB':>8}  found"
    )
    print("-" * (width + 76))
    for label, args, limit in cases:
        stolen = steal_seconds()
        wall, cpu, peak, out = run(args, cwd)
        stolen = steal_seconds() - stolen
        lim = f"{limit:g}" if limit else "-"
        print(
            f"{label:<{width}} {lim:>7} {wall:>7.{digits}f} {cpu:>7.{digits}f} {stolen:>7.1f} "
            f"{peak:>8.0f}  {found(out)}"
        )
    print(
        f"load average {os.getloadavg()[0]:.1f}; speed index {speed_index():.2f} s; "
        f"memory index {memory_index():.2f} s"
    )


def found(out: str) -> str:
    """What the command reported: exact busbw, or its bounds."""
    d = json.loads(out)
    if isinstance(d, list):
        return "; ".join(
            f"{x['fabric']}: median {x['median_GBps']:.2f}, exact {x['exact_trials']}/{x['trials']}"
            for x in d
        )
    if d.get("routing") not in (None, "optimal"):
        return f"as routed, busbw {d['alltoall_busbw_GBps']:.3f}"
    if d.get("exact", True):
        return f"exact ({d['method']}), busbw {d['alltoall_busbw_GBps']:.3f}"
    return (
        f"bounds {d['lower_bound_busbw_GBps']:.2f}..{d['upper_bound_busbw_GBps']:.2f} "
        f"(gap {100 * d['gap']:.1f}%)"
    )


def speed_index() -> float:
    """Seconds this machine takes for ten million additions in a Python loop, the best of
    three: the cores' speed at that moment, to compare runs of this benchmark made at
    different times (a shared virtual machine's speed varies by tens of percent)."""
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        total = 0
        for i in range(10_000_000):
            total += i
        best = min(best, time.perf_counter() - t0)
    return best


_MEMORY_INDEX = """
import math, time
import numpy as np
best = math.inf
for _ in range(3):
    t0 = time.perf_counter()
    a = np.ones(1 << 25)
    d = [{"kind": "gpu", "node": i, "index": i & 7} for i in range(300_000)]
    best = min(best, time.perf_counter() - t0)
    del a, d
print(best)
"""


def memory_index() -> float:
    """Seconds this machine takes to touch a fresh 256 MB array and build 300,000 small
    dicts, the best of three: the speed of page faults and of memory at that moment, which
    the Python-loop index above does not see (on 2026-12-02 the loop index was at its best
    while every fabric-sized case ran about twice as slow as the day before). Measured in a
    process of its own, so that the cases' peak memory does not inherit its 256 MB."""
    out = subprocess.run(
        [sys.executable, "-c", _MEMORY_INDEX], capture_output=True, text=True, check=True
    )
    return float(out.stdout)


def main() -> None:
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        for name, args in BUILDS.items():
            subprocess.run(
                ["topo", "build", *args, "-o", name], cwd=cwd, check=True, capture_output=True
            )
        print_machine()
        cases = CASES + ([] if quick else [RESILIENCE])
        print_cases(cases, cwd, run, found, width=42, digits=1)

if __name__ == "__main__":
    main()
