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
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_limits import measure, print_cases, print_machine

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
    """Run ``topo collective ARGS`` in ``cwd`` (:func:`bench_limits.measure`)."""
    return measure([*TOPO, "collective", *args], cwd)


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
        print_machine()
        cases = CASES + (LARGE_CASES if large else [])
        print_cases(cases, cwd, run, found, width=34, digits=2)

if __name__ == "__main__":
    main()
