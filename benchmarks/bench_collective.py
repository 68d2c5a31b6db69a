"""``topo collective`` on 1,024 GPUs, each as the whole command a user runs (start-up,
loading, the fabric's rates, the size sweep, the JSON or the table).

Builds the fabrics once into a temporary directory, then runs each command in its own process
(the ``cli.py`` of this checkout, so that the code timed is the code beside it) and reports its
wall time against the limit (2 s), its CPU time (user + system of the child), the CPU time the
hypervisor took meanwhile (``steal``), its peak memory, and what it found: how the ring was
solved (``certified``: a routing that meets the servers' NIC bound; ``lp``) and the predicted
busbw at the largest size. Run from the project root::

    python benchmarks/bench_collective.py            # the 1,024-GPU cases
    python benchmarks/bench_collective.py --large    # + MPFT 16,384 (no limit)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_limits import memory_index, speed_index, steal_seconds

ROOT = Path(__file__).resolve().parents[1]
TOPO = [sys.executable, str(ROOT / "cli.py")]
LIMIT_S = 2.0
SWEEP = ["--min-bytes", "1K", "--max-bytes", "16G"]

BUILDS = {
    "mrft.json": ["mrft", "--switch-ports", "64", "--gpus", "1024"],
    "b200.json": ["ft2", "--node", "b200", "--gpus", "1024"],  # 128 servers x 8 B200
}
LARGE = {"mpft.json": ["mpft", "--switch-ports", "64"]}

OPS = ("all_reduce", "all_gather", "alltoall")
CASES = [
    (f"{label}: {op}", [name, "--op", op, *SWEEP, "--json"], LIMIT_S)
    for label, name in (("MRFT 1,024", "mrft.json"), ("FT2 128 x B200", "b200.json"))
    for op in OPS
] + [("MRFT 1,024: all_reduce, table", ["mrft.json", "--op", "all_reduce", *SWEEP], LIMIT_S)]
LARGE_CASES = [
    ("MPFT 16,384: all_reduce", ["mpft.json", "--op", "all_reduce", *SWEEP, "--json"], None)
]


def run(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Run ``topo collective ARGS`` in ``cwd``: (wall s, CPU s, peak MB, stdout), CPU and
    memory of that process alone (``os.wait4``)."""
    with tempfile.TemporaryFile("w+") as buf:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [*TOPO, "collective", *args], cwd=cwd, stdout=buf, stderr=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"topo collective {' '.join(args)} failed")
        buf.seek(0)
        out = buf.read()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def found(out: str) -> str:
    """How the ring was solved and the last row's busbw, algorithm and protocol."""
    try:
        d = json.loads(out)
    except json.JSONDecodeError:
        return f"table, {len(out.splitlines())} lines"
    last = d["rows"][-1]
    return (
        f"ring {d['rates'].get('ring_method', '-')}, {len(d['rows'])} sizes, "
        f"{last['size_bytes']:,} B: busbw {last['busbw_GBps']:.1f} GB/s "
        f"({last['algorithm']}/{last['protocol']})"
    )


def main() -> None:
    large = "--large" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        for name, args in {**BUILDS, **(LARGE if large else {})}.items():
            subprocess.run(
                [*TOPO, "build", *args, "-o", name], cwd=cwd, check=True, capture_output=True
            )
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"speed index {speed_index():.2f} s (ten million Python additions; lower is faster)")
        print(f"memory index {memory_index():.2f} s (256 MB touched, 300,000 dicts built)")
        print(
            f"{'case':<34} {'limit s':>7} {'wall s':>7} {'CPU s':>7} {'steal s':>7} "
            f"{'peak MB':>8}  found"
        )
        print("-" * 120)
        for label, args, limit in CASES + (LARGE_CASES if large else []):
            stolen = steal_seconds()
            wall, cpu, peak, out = run(args, cwd)
            stolen = steal_seconds() - stolen
            lim = f"{limit:g}" if limit else "-"
            print(
                f"{label:<34} {lim:>7} {wall:>7.2f} {cpu:>7.2f} {stolen:>7.1f} {peak:>8.0f}  "
                f"{found(out)}"
            )
        print(
            f"load average {os.getloadavg()[0]:.1f}; speed index {speed_index():.2f} s; "
            f"memory index {memory_index():.2f} s"
        )


if __name__ == "__main__":
    main()
