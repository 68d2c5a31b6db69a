"""Issue 40's limits on the all-to-all at scale and on failure studies, each as the whole
command a user runs (start-up, loading, solving, output), in its own process (the ``cli.py``
of this checkout): wall time against the limit, CPU time, the hypervisor's steal, peak memory.

- ``topo bandwidth`` of the 524,288-GPU three-layer MPFT (``topo build mpft --tiers 3``):
  30 s, 8 GB; FT3 65,536 exact: 3 s; ECMP on it: 5 s;
- ``topo resilience`` of the 16,384-GPU MPFT, 100 trials of 8 failed cables, ``--workers 2``:
  60 s; 20 such trials on one and on two workers (two at least 1.6x one); 24 trials on the
  2,048-GPU MPFT with ``--workers 2``, which runs in process and says so;
- ``--million``: also the 1,048,576-endpoint three-layer fabric (16 planes of 65,536: 8 GPUs
  and 8 two-port NICs per server), 120 s and 16 GB (building it takes minutes and gigabytes).

Run from the project root (the fabrics are built into a temporary directory first)::

    python benchmarks/bench_scale.py [--million] [--skip-large] [--only ft3] [--bytecode]

``--only ft3``: only the FT3 cases (exact and ECMP), each ``--repeat`` times (default 1).
``--bytecode``: this checkout's ``topo`` and ``cli.py`` are copied into the run's own folder
and their modules compiled there once before the cases, as ``pip install`` compiles them: without
it, a checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as on the development machine) compiles
every module of topo again in each command, about 0.25-0.3 s of CPU. (Not
``PYTHONPYCACHEPREFIX``: under it Python looks for the bytecode of every module there, so the
standard library's and the installed packages' were compiled again in each command instead,
about 0.9 s.)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_limits import measure, print_cases, print_machine

ROOT = Path(__file__).resolve().parents[1]
TOPO = [sys.executable, str(ROOT / "cli.py")]
BUILDS = {
    "mpft3.json": ["mpft", "--tiers", "3"],
    "ft3.json": ["ft3"],
    "mpft.json": ["mpft"],
    "mpft2k.json": ["mpft", "--gpus", "2048"],
}
MILLION = {"million.json": ["mpft", "--tiers", "3", "--planes-per-nic", "2"]}
RES = ["resilience", "--fail-links", "8", "--json"]
ECMP = ["--routing", "ecmp", "--seed", "1", "--json"]


def _study(fabric: str, trials: int, workers: int) -> list[str]:
    return [*RES, fabric, "--trials", str(trials), "--workers", str(workers)]


CASES: list[tuple[str, list[str], float | None]] = [
    ("MPFT 524,288 (3 tiers) exact", ["bandwidth", "mpft3.json", "--json"], 30.0),
    ("FT3 65,536 exact", ["bandwidth", "ft3.json", "--json"], 3.0),
    ("FT3 65,536 ECMP", ["bandwidth", "ft3.json", *ECMP], 5.0),
    ("MPFT 16,384: 100 x 8 cables, 2 workers", _study("mpft.json", 100, 2), 60.0),
    ("MPFT 16,384: 20 x 8 cables, 1 worker", _study("mpft.json", 20, 1), None),
    ("MPFT 16,384: 20 x 8 cables, 2 workers", _study("mpft.json", 20, 2), None),
    ("MPFT 2,048: 24 x 8 cables, 2 workers", _study("mpft2k.json", 24, 2), None),
]
MILLION_CASE = ("1,048,576 endpoints exact", ["bandwidth", "million.json", "--json"], 120.0)


def found(out: str) -> str:
    """What the command found: the busbw and method, or the study's median and engine."""
    d = json.loads(out)
    if isinstance(d, list):
        r = d[0]
        where = "in process" if r.get("in_process") else "on the workers"
        exact = f"{r['exact_trials']}/{r['trials']}"
        return f"median {r['median_GBps']:.2f} GB/s, exact {exact}, {where}"
    return f"{d.get('method', d.get('routing'))}, busbw {d['alltoall_busbw_GBps']:.6f} GB/s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--million", action="store_true", help="also the 1,048,576-endpoint fabric")
    ap.add_argument("--skip-large", action="store_true", help="without the 524,288-GPU MPFT")
    ap.add_argument("--only", choices=["ft3"], help="only these cases (FT3 exact and ECMP)")
    ap.add_argument("--repeat", type=int, default=1, help="with --only: runs of each case")
    ap.add_argument("--bytecode", action="store_true", help="topo's bytecode compiled first")
    args = ap.parse_args()
    builds, cases = dict(BUILDS), list(CASES)
    if args.skip_large:
        del builds["mpft3.json"]
        cases = cases[1:]
    if args.only == "ft3":
        builds = {"ft3.json": BUILDS["ft3.json"]}
        cases = [c for c in CASES if c[0].startswith("FT3")] * args.repeat
    if args.million:
        builds.update(MILLION)
        cases.append(MILLION_CASE)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        topo = TOPO
        if args.bytecode:
            src = cwd / "src"
            skip = shutil.ignore_patterns("__pycache__")
            shutil.copytree(ROOT / "topo", src / "topo", ignore=skip)
            shutil.copy2(ROOT / "cli.py", src / "cli.py")
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
            topo = [sys.executable, str(src / "cli.py")]
        for name, spec in builds.items():
            subprocess.run([*topo, "build", *spec, "-o", name], cwd=cwd, check=True,
                           capture_output=True)  # fmt: skip
        if args.bytecode and any(ECMP[0] in c[1] for c in cases):
            # numba's compiled kernels cached beside the copy once, as after a first ECMP run
            subprocess.run([*topo, "bandwidth", "ft3.json", *ECMP], cwd=cwd, check=True,
                           capture_output=True)  # fmt: skip
        print_machine()
        print_cases(cases, cwd, lambda a, c: measure([*topo, *a], c), found, 42, 1)


if __name__ == "__main__":
    main()
