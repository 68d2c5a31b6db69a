"""Benchmark: as-routed all-to-all (ECMP, D-mod-k) at full scale.

Each case runs in a fresh Python process so that its peak memory (max RSS) is its own.
Prints, per case and routing: terminals, the routed and expected (ECMP: evenly split) busbw,
the time to build or import the fabric, the time of ``routed_alltoall`` and peak memory.

    python benchmarks/bench_routing.py            # MPFT 16,384, FT2 2,048, MRFT 2,048,
                                                  # FT3 65,536, GB200 import; ecmp and dmodk
    python benchmarks/bench_routing.py --no-ft3   # without the 65,536-GPU FT3 (about 1 min)
    python benchmarks/bench_routing.py --seed 3 --flows-per-pair 4

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GB200 = ROOT.parent / "shared/data/real/ibnetdiscover/topograph_dgx_gb200_ndr_superpod.out"

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from topo.flow.routing import routed_alltoall
case, routing, seed, flows, pxn = {case!r}, {routing!r}, {seed!r}, {flows!r}, {pxn!r}
t0 = time.perf_counter()
if case.startswith("import:"):
    from topo.formats import read_ibnetdiscover
    G = read_ibnetdiscover(case[len("import:"):])
else:
    from topo.builders import build
    G = build(case)
t1 = time.perf_counter()
r = routed_alltoall(G, routing, seed=seed, flows_per_pair=flows, pxn=pxn)
t2 = time.perf_counter()
print(json.dumps(dict(
    case=case.split("/")[-1], routing=routing, pxn=r.routing.pxn, terminals=r.gpus,
    flows=r.routing.flows, busbw_GBps=r.alltoall_busbw_Bps / 1e9,
    expected_busbw_GBps=r.routing.expected_pair_rate_Bps * (r.gpus - 1) / 1e9,
    bottleneck=sorted(r.bottleneck_tiers), load_s=t1 - t0, route_s=t2 - t1,
    peak_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
)))
"""


def run(case: str, routing: str, seed: int, flows: int, pxn: bool) -> dict:
    """One case in a fresh process; exits with the child's last error line if it fails."""
    code = CHILD.format(root=str(ROOT), case=case, routing=routing, seed=seed, flows=flows, pxn=pxn)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        sys.exit(f"{case.split('/')[-1]} ({routing}): {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-ft3", action="store_true", help="skip the 65,536-GPU three-layer tree")
    ap.add_argument("--seed", type=int, default=0, help="ECMP seed")
    ap.add_argument("--flows-per-pair", type=int, default=1, help="flows per GPU pair")
    ap.add_argument("--no-pxn", action="store_true", help="no PXN (MPFT is then unroutable)")
    args = ap.parse_args()
    cases = ["mpft", "ft2", "mrft"] + ([] if args.no_ft3 else ["ft3"])
    if GB200.exists():
        cases.append(f"import:{GB200}")
    else:
        print(f"(GB200 dump not found at {GB200}: skipped)", file=sys.stderr)
    head = (
        f"{'case':<38} {'routing':<7} {'terminals':>9} {'flows':>14} {'busbw GB/s':>10} "
        f"{'exp. GB/s':>9} {'load s':>7} {'route s':>8} {'peak MB':>8}  bottleneck"
    )
    print(head)
    print("-" * len(head))
    for case in cases:
        for routing in ("dmodk", "ecmp"):
            r = run(case, routing, args.seed, args.flows_per_pair, not args.no_pxn)
            print(
                f"{r['case']:<38} {r['routing']:<7} {r['terminals']:>9,} {r['flows']:>14,} "
                f"{r['busbw_GBps']:>10.3f} {r['expected_busbw_GBps']:>9.3f} {r['load_s']:>7.2f} "
                f"{r['route_s']:>8.2f} {r['peak_MB']:>8.0f}  {', '.join(r['bottleneck'])}",
                flush=True,
            )


if __name__ == "__main__":
    main()
