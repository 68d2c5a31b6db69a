"""``topo moe --kernel K`` at EP256 on the 16,384-GPU MPFT, each as the whole command a user
runs (start-up, loading, gating, the MoE report's flow LPs, the kernel model, the JSON).

Builds the fabric once into a temporary directory, then runs each command in its own process
(the ``cli.py`` of this checkout) and reports its wall time against the limit (5 s, issue 35),
its CPU time, the CPU time the hypervisor took meanwhile, its peak memory, and the kernel's
dispatch and combine. NCCL EP supports at most 64 GPUs, so its kernels run at EP64. Run from the
project root::

    python benchmarks/bench_moe_kernels.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from bench_limits import build_mpft, measure, print_cases, print_machine

ROOT = Path(__file__).resolve().parents[1]
TOPO = [sys.executable, str(ROOT / "cli.py")]
LIMIT_S = 5.0

CASES = [
    (f"MPFT 16,384 EP{ep}: {k}", ["mpft.json", "--ep", str(ep), "--kernel", k, "--json"], LIMIT_S)
    for k, ep in (
        ("deepep-normal", 256),
        ("deepep-ll", 256),
        ("deepep-v2", 256),
        ("nccl", 256),
        ("nccl-ep-ll", 64),
        ("nccl-ep-ht", 64),
    )
]


def run(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Run ``topo moe ARGS`` in ``cwd`` (:func:`bench_limits.measure`)."""
    return measure([*TOPO, "moe", *args], cwd)


def found(out: str) -> str:
    """The kernel's phase times and bandwidth."""
    k = json.loads(out)["kernel"]
    return (
        f"dispatch {k['dispatch_us']:.1f} µs, combine {k['combine_us']:.1f} µs, "
        f"{k['dispatch_GBps']:.1f} GB/s {k['bandwidth_name']}"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        build_mpft(cwd)
        print_machine()
        print_cases(CASES, cwd, run, found, width=34, digits=2)


if __name__ == "__main__":
    main()
