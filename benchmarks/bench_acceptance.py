"""``topo acceptance DESIGN -o KIT`` on the README's 16,384-GPU MPFT (DeepSeek-V3's fabric:
8 planes of 64-port 400G switches, 2,048 servers of 8 GPUs), as the whole command a user runs
(start-up, loading, the expected curve of every scale, the scripts, the folder written).

Issue 37 asks for at most 10 s. Builds the fabric once into a temporary directory, then runs the
command in its own process (the ``cli.py`` of this checkout) and reports its wall time against
the limit, its CPU time, the CPU time the hypervisor took meanwhile (``steal``), its peak memory,
and what it wrote (tests, scales, expected curves). Run from the project root::

    python benchmarks/bench_acceptance.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from bench_limits import build_mpft, measure, print_cases, print_machine

ROOT = Path(__file__).resolve().parents[1]
TOPO = [sys.executable, str(ROOT / "cli.py")]
LIMIT_S = 10.0
CASES = [("MPFT 16,384: kit", ["mpft.json", "-o", "kit", "--force", "--json"], LIMIT_S)]


def run(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Run ``topo acceptance ARGS`` in ``cwd`` (:func:`bench_limits.measure`)."""
    return measure([*TOPO, "acceptance", *args], cwd)


def found(out: str) -> str:
    """The manifest's tests, scales and expected curves."""
    d = json.loads(out)
    scales = {t["scale"] for t in d["tests"]}
    curves = {t["expected"] for t in d["tests"] if t["expected"]}
    return f"{len(d['tests'])} tests, {len(scales)} scales, {len(curves)} expected curves"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        build_mpft(cwd)
        print_machine()
        print_cases(CASES, cwd, run, found, width=20, digits=2)


if __name__ == "__main__":
    main()
