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
    python benchmarks/bench_collective.py --log      # + a 200,200-row log: --compare, explain...

The log of ``--log`` is made here: an all_reduce_perf run as ``-b 1M -e 8G -f 2 -d all -o all
-N 286`` prints it (14 sizes x 10 types x 5 reductions, 286 times), times ``100 + size / 1.2e5``
µs.
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
LOG_CASES = [
    ("FT2 128 x B200: --compare 200,200 rows", ["b200.json", "--compare", "big.log"], None),
    ("the same, topo explain", ["explain", "b200.json", "big.log"], None),
    ("the same, --why", ["b200.json", "--compare", "big.log", "--why"], None),
    ("the same, --calibrate", ["b200.json", "--calibrate", "big.log", "-o", "c.toml"], None),
    # last: reading its 0.9 GB of JSON grows this process, whose peak a child forked after
    # it would inherit
    ("the same, --json", ["b200.json", "--compare", "big.log", "--json"], None),
]
LARGE_CASES = [
    ("MPFT 16,384: all_reduce", ["mpft.json", "--op", "all_reduce", *SWEEP, "--json"], None)
]


def run(args: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """Run ``topo collective ARGS`` (``topo explain ...`` when ARGS start with it) in ``cwd``
    (:func:`bench_limits.measure`)."""
    command = [] if args[:1] == ["explain"] else ["collective"]
    return measure([*TOPO, *command, *args], cwd)


def found(out: str) -> str:
    """How the ring was solved and the last row's busbw, algorithm and protocol."""
    if out.startswith("all_reduce: big.log against the design"):  # topo explain
        return next(x for x in out.splitlines() if x.startswith("all_reduce: ") and "RMS" in x)
    try:
        d = json.loads(out)
    except json.JSONDecodeError:
        return f"table, {len(out.splitlines())} lines"
    if isinstance(d, list):  # --compare: one comparison per test
        return f"{len(d[0]['rows']):,} rows, {d[0]['verdict'].split(':')[0]}"
    last = d["rows"][-1]
    return (
        f"ring {d['rates'].get('ring_method', '-')}, {len(d['rows'])} sizes, "
        f"{last['size_bytes']:,} B: busbw {last['busbw_GBps']:.1f} GB/s "
        f"({last['algorithm']}/{last['protocol']})"
    )


def write_log(path: Path) -> None:
    """The ``--log`` case's all_reduce_perf log (module docstring) on 128 x 8 ranks."""
    width = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
             "half": 2, "float": 4, "double": 8, "bfloat16": 2}  # fmt: skip
    ranks = 1024
    lines = [
        "# Collective test starting: all_reduce_perf",
        *(
            f"#  Rank {r:4d} Group  0 Pid {r:6d} on node{r // 8:04d} device  {r % 8} [0x00] "
            "NVIDIA B200"
            for r in range(ranks)
        ),  # fmt: skip
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)",
    ]
    for _ in range(286):
        for e in range(20, 34):
            size = 1 << e
            t = round(100 + size / 1.2e5, 1)
            alg = size / t / 1e3
            cells = f"{t:8.1f} {alg:7.2f} {alg * 2 * (ranks - 1) / ranks:7.2f}       0"
            for dtype, w in width.items():
                for redop in ("sum", "prod", "max", "min", "avg"):
                    lines.append(f"{size:12d} {size // w:12d} {dtype:>8s} {redop:>6s}    -1 "
                                 f"{cells} {cells}")  # fmt: skip
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", "#",
              "# Collective test concluded: all_reduce_perf", ""]  # fmt: skip
    path.write_text("\n".join(lines))


def main() -> None:
    large = "--large" in sys.argv
    log = "--log" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        for name, args in {**BUILDS, **(LARGE if large else {})}.items():
            subprocess.run(
                [*TOPO, "build", *args, "-o", name], cwd=cwd, check=True, capture_output=True
            )
        if log:
            write_log(cwd / "big.log")
        print_machine()
        cases = CASES + (LARGE_CASES if large else []) + (LOG_CASES if log else [])
        print_cases(cases, cwd, run, found, width=34, digits=2)


if __name__ == "__main__":
    main()
