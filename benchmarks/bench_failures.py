"""Benchmark: all-to-all bandwidth of damaged fabrics at full scale, and resilience runs.

Each case runs in a fresh Python process so that its peak memory (max RSS) is its own.

    python benchmarks/bench_failures.py             # MPFT 16,384 with 1..8 random failures,
                                                    # a failed spine, bounds at 64 failures,
                                                    # resilience MPFT vs MRFT (2,048 GPUs)
    python benchmarks/bench_failures.py --ft3       # adds FT3 65,536 with 2 failed cables

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BANDWIDTH = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from topo.builders import build
from topo.flow.failures.resilience import damaged_bandwidth
G = build({family!r}, gpus={gpus!r})
t0 = time.perf_counter()
r = damaged_bandwidth(G, links={links}, named={named!r}, seed={seed}, max_variables={maxv})
t1 = time.perf_counter()
rep = r.report
cut = r.failures.disconnected_gpus
print(json.dumps(dict(
    case=f"{family} {{rep.gpus + cut:,}}: " + ({label!r} or f"{links} cables"),
    exact=rep.exact, busbw=rep.alltoall_busbw_Bps / 1e9, lp_vars=rep.lp.variables,
    lower=rep.bounds and rep.bounds.lower_Bps * (rep.gpus - 1) / 1e9,
    upper=rep.bounds and rep.bounds.upper_Bps * (rep.gpus - 1) / 1e9,
    seconds=t1 - t0, peak_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    bottleneck=rep.bottleneck_tiers,
)))
"""

RESILIENCE = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from topo.builders import build
from topo.flow.failures.resilience import resilience
G = build({family!r}, gpus={gpus!r})
r = resilience(G, trials={trials}, links={links}, seed=0)
print(json.dumps(dict(
    case=f"{family} {gpus:,}: {links} cables x {trials} trials", intact=r.intact_busbw_GBps,
    min=r.min_GBps, p5=r.p5_GBps, median=r.median_GBps, exact=r.exact_trials, trials=r.trials,
    ranges=r.range_GBps,
    seconds=r.seconds, peak_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
)))
"""


def child(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def bandwidth(
    family: str,
    gpus: int | None,
    links: int = 0,
    named: tuple[str, ...] = (),
    label: str = "",
    maxv: int = 2_000_000,
) -> dict:
    return child(
        BANDWIDTH.format(
            root=str(ROOT),
            family=family,
            gpus=gpus,
            links=links,
            named=list(named),
            seed=0,
            maxv=maxv,
            label=label,
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ft3", action="store_true", help="also FT3 65,536 with 2 failed cables")
    ap.add_argument("--trials", type=int, default=5, help="resilience trials per fabric")
    args = ap.parse_args()
    runs = [
        lambda: bandwidth("mpft", None, links=1),
        lambda: bandwidth("mpft", None, links=2),
        lambda: bandwidth("mpft", None, links=4),
        lambda: bandwidth("mpft", None, links=8),
        lambda: bandwidth("mpft", None, named=("p3/spine0",), label="spine p3/spine0 failed"),
        lambda: bandwidth(
            "mpft", None, links=64, maxv=200_000, label="64 cables, bounds (200k vars)"
        ),
    ]
    if args.ft3:
        runs.append(lambda: bandwidth("ft3", None, links=2))
    head = (
        f"{'case':<44} {'exact':>5} {'busbw GB/s':>10} {'bounds GB/s':>15} {'LP vars':>9} "
        f"{'s':>7} {'peak MB':>8}"
    )
    print(head)
    print("-" * len(head))
    for run in runs:
        r = run()
        bounds = "-" if r["exact"] else f"{r['lower']:.2f}..{r['upper']:.2f}"
        print(
            f"{r['case']:<44} {'yes' if r['exact'] else 'no':>5} {r['busbw']:>10.3f} "
            f"{bounds:>15} {r['lp_vars']:>9,} {r['seconds']:>7.1f} {r['peak_MB']:>8.0f}",
            flush=True,
        )
    print()
    head = (
        f"{'resilience':<40} {'intact':>7} {'min':>7} {'p5':>7} {'median':>7} {'exact':>6} "
        f"{'s':>7} {'peak MB':>8}"
    )
    print(head)
    print("-" * len(head))
    for family in ("mpft", "mrft"):
        for links in (8, 64):
            r = child(
                RESILIENCE.format(
                    root=str(ROOT), family=family, gpus=2048, links=links, trials=args.trials
                )
            )
            cells = [
                f"{r[k]:>7.2f}" if r[k] is not None else "{:.1f}..{:.1f}".format(*r["ranges"][k])
                for k in ("min", "p5", "median")
            ]  # a statistic left uncertain by bounded trials is its certified range
            print(
                f"{r['case']:<40} {r['intact']:>7.2f} {' '.join(cells)} "
                f"{r['exact']:>3}/{r['trials']:<2} {r['seconds']:>7.1f} "
                f"{r['peak_MB']:>8.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
