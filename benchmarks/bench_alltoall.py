"""Benchmark: all-to-all bandwidth (max concurrent flow) at full scale.

Each case runs in a fresh Python process so that its peak memory (max RSS) is its own.
Prints, per case: terminals, the LP size after reduction, the size of the textbook LP (one
commodity per terminal, every arc), wall times and peak memory.

    python benchmarks/bench_alltoall.py                 # MPFT, FT2, MRFT, GB200 import
    python benchmarks/bench_alltoall.py --ft3           # adds the 65,536-GPU FT3 (~45 s)
    python benchmarks/bench_alltoall.py --textbook      # adds the textbook LP on GB200 (~3 min)

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GB200 = (
    ROOT.parent
    / "shared"
    / "data"
    / "real"
    / "ibnetdiscover"
    / ("topograph_dgx_gb200_ndr_superpod.out")
)

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from topo.flow import alltoall_bandwidth
case, method = {case!r}, {method!r}
t0 = time.perf_counter()
if case.startswith("import:"):
    from topo.formats import read_ibnetdiscover
    G = read_ibnetdiscover(case[len("import:"):])
else:
    from topo.builders import build
    G = build(case)
t1 = time.perf_counter()
r = alltoall_bandwidth(G, method=method, max_variables=10**9)
t2 = time.perf_counter()
arcs = 2 * G.number_of_edges()
print(json.dumps(dict(
    case=case.split("/")[-1], method=method, terminals=r.gpus,
    busbw_GBps=r.alltoall_busbw_Bps / 1e9, pair_rate_GBps=r.pair_rate_Bps / 1e9,
    lp_variables=r.lp.variables,
    textbook_variables=r.gpus * arcs, load_s=t1 - t0, bandwidth_s=t2 - t1,
    highs_s=r.lp.solve_seconds, peak_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    bottleneck=r.bottleneck_tiers,
)))
"""


def run(case: str, method: str = "auto") -> dict:
    code = CHILD.format(root=str(ROOT), case=case, method=method)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ft3", action="store_true", help="also the 65,536-GPU three-layer fat tree")
    ap.add_argument("--textbook", action="store_true", help="also the textbook LP on GB200")
    args = ap.parse_args()
    cases: list[tuple[str, str]] = [("mpft", "auto"), ("ft2", "auto"), ("mrft", "auto")]
    if args.ft3:
        cases.append(("ft3", "auto"))
    if GB200.exists():
        cases.append((f"import:{GB200}", "auto"))
        if args.textbook:
            cases.append((f"import:{GB200}", "general"))
    else:
        print(f"(GB200 dump not found at {GB200}: skipped)", file=sys.stderr)
    head = (
        f"{'case':<42} {'method':<8} {'terminals':>9} {'busbw GB/s':>10} {'LP vars':>9} "
        f"{'textbook vars':>14} {'load s':>7} {'solve s':>8} {'HiGHS s':>8} {'peak MB':>8}"
    )
    print(head)
    print("-" * len(head))
    for case, method in cases:
        r = run(case, method)
        print(
            f"{r['case']:<42} {r['method']:<8} {r['terminals']:>9,} {r['busbw_GBps']:>10.3f} "
            f"{r['lp_variables']:>9,} {r['textbook_variables']:>14,} {r['load_s']:>7.2f} "
            f"{r['bandwidth_s']:>8.2f} {r['highs_s']:>8.2f} {r['peak_MB']:>8.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
