"""Benchmark: ``topo plan --gpus 16385``, the whole command, with every row's ratings.

Runs ``python cli.py plan --gpus N --json`` in a fresh process (``--repeat`` times), prints its
wall time, peak memory (max RSS of the child) and the load average at the start, then each
feasible row's ideal and deployed busbw (GB/s), how the ideal was found, and whether any row
shows a bound instead of a value (issue 40: at most 30 s, every row exact or certified within
2%, no bound shown as a value).

    python benchmarks/bench_plan.py                 # --gpus 16385, once
    python benchmarks/bench_plan.py --gpus 2048 --repeat 3

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(gpus: int) -> tuple[float, float, float, list[dict]]:
    """One whole command: wall s, peak MB of the child, load average at start, the rows."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(ROOT / "cli.py"), "plan", "--gpus", str(gpus), "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t0
    peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return wall, peak, load, json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=16385)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    print(f"{'topo plan --gpus ' + str(args.gpus):32s} {'wall s':>7s} {'peak MB':>8s} {'load':>5s}")
    rows: list[dict] = []
    for _ in range(args.repeat):
        wall, peak, load, rows = run(args.gpus)
        print(f"{'':32s} {wall:7.2f} {peak:8.0f} {load:5.2f}")
    head = f"{'family':10s} {'ideal':>7s} {'method':>9s} {'deployed':>9s} {'routing':>8s}"
    print(head + " GPUs rated")
    bounds = 0
    for r in rows:
        if not r["feasible"]:
            continue
        ideal = r["alltoall_busbw_GBps"]
        bounds += ideal is None
        dep = r["deployed_busbw_GBps"]
        print(
            f"{r['family']:10s} {'-' if ideal is None else f'{ideal:7.2f}':>7s} "
            f"{r['alltoall_method'] or '-':>9s} {'-' if dep is None else f'{dep:9.2f}':>9s} "
            f"{r['deployed_routing'] or '-':>8s} {r['alltoall_gpus'] or '-'}"
        )
    print(f"rows without an exact ideal value: {bounds}")


if __name__ == "__main__":
    main()
