"""``topo place`` on the README's 16,384-GPU MPFT (8 planes of 64-port 400G switches, 2,048
servers of 8 GPUs) with 8 all-to-all jobs of 16 servers (128 GPUs) each, half packed and half
fragmented, as the whole command a user runs (start-up, loading, placing, every job alone, the
max-min fair shares).

Issue 38 asks for at most 30 s. Builds the fabric and writes the jobs file into a temporary
directory, then runs the command in its own process (the ``cli.py`` of this checkout) and
reports its wall time against the limit, its CPU time, the hypervisor's steal and peak memory.
Run from the project root::

    python benchmarks/bench_place.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from bench_limits import build_mpft, measure, print_cases, print_machine

ROOT = Path(__file__).resolve().parents[1]
TOPO = [sys.executable, str(ROOT / "cli.py")]
LIMIT_S = 30.0
JOBS = 8
SERVERS = 16
CASES = [("MPFT 16,384: 8 jobs", ["mpft.json", "--jobs", "jobs.toml", "--json"], LIMIT_S)]


def jobs_file() -> str:
    """``JOBS`` all-to-all jobs of ``SERVERS`` servers, packed and fragmented in turn."""
    return "".join(
        f'[[jobs]]\nname = "ep{i}"\ntraffic = "alltoall"\ncount = {SERVERS}\n'
        f'policy = "{"fragmented" if i % 2 else "packed"}"\n\n'
        for i in range(JOBS)
    )


def run(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Run ``topo place ARGS`` in ``cwd`` (:func:`bench_limits.measure`)."""
    return measure([*TOPO, "place", *args], cwd)


def found(out: str) -> str:
    """The slowest job's slowdown and the contended links."""
    d = json.loads(out)
    worst = max(j["slowdown"] for j in d["jobs"])
    return f"worst slowdown {worst:.3f}, {len(d['contended_links'])} contended links"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        build_mpft(cwd)
        (cwd / "jobs.toml").write_text(jobs_file())
        print_machine()
        print_cases(CASES, cwd, run, found, width=20, digits=2)


if __name__ == "__main__":
    main()
