"""Benchmark: building fabrics against plain networkx, and the all-to-all of the largest
three-layer MPFT.

Build: for each case, the time of ``topo.builders.build`` against plain networkx making the same
graph from its node and edge lists (``nx.Graph(); add_nodes_from(...); add_edges_from(...)``
with every attribute, the lists made beforehand), and their ratio; the issue asks for at most 3.

All-to-all (``--alltoall``): ``build("mpft", tiers=3)`` (524,288 GPUs, 40,960 switches of 64
ports) and its exact all-to-all, in a fresh process, with wall times and peak memory (max RSS).

    python benchmarks/bench_build.py             # MPFT 16,384; 3-tier MRFT 65,536, MPFT 131,072
    python benchmarks/bench_build.py --alltoall  # + MPFT 3-tier 524,288: build, exact all-to-all
    python benchmarks/bench_build.py --counts    # only: topo build ... --json, whole command

Counts (``--counts``): the whole command ``python cli.py build mpft --tiers 3 --json`` (and a few
others), no graph built (closed form, :func:`topo.builders.fabric_counts`), its wall time and
peak memory (max RSS of the child), with the load average beside it (issue 40: at most 2 s and
300 MB for the 524,288-GPU MPFT).

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUILD = r"""
import gc, json, resource, sys, time
sys.path.insert(0, {root!r})
import networkx as nx
from topo.builders import build
kw = {kw!r}
gc.disable()
t0 = time.perf_counter()
G = build(**kw)
t1 = time.perf_counter()
nodes = list(G.nodes(data=True)); edges = list(G.edges(data=True)); graph = dict(G.graph)
del G
gc.collect()
t2 = time.perf_counter()
H = nx.Graph(**graph); H.add_nodes_from(nodes); H.add_edges_from(edges)
t3 = time.perf_counter()
print(json.dumps(dict(case=kw, vertices=H.number_of_nodes(), edges=H.number_of_edges(),
    topo_s=t1 - t0, networkx_s=t3 - t2, ratio=(t1 - t0) / (t3 - t2),
    peak_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""

ALLTOALL = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from topo.builders import build
from topo.flow import alltoall_bandwidth
t0 = time.perf_counter()
G = build("mpft", tiers=3)
t1 = time.perf_counter()
r = alltoall_bandwidth(G)
t2 = time.perf_counter()
print(json.dumps(dict(gpus=r.gpus, switches=sum(1 for _, k in G.nodes(data="kind")
    if k in ("leaf", "spine", "core")), busbw_GBps=r.alltoall_busbw_Bps / 1e9, exact=r.exact,
    method=r.method, lp_variables=r.lp.variables, build_s=t1 - t0, alltoall_s=t2 - t1,
    highs_s=r.lp.solve_seconds, bottleneck=r.bottleneck_tiers,
    peak_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""

CASES = (
    dict(family="mpft"),
    dict(family="mrft", tiers=3),
    dict(family="mpft", tiers=3, gpus=131072),
)


def child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; its one JSON line."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


COUNT_CASES = (
    ["mpft", "--tiers", "3"],
    ["ft3"],
    ["dragonfly"],
    ["mpft", "--tiers", "3", "--nic-ports", "2"],
)


def whole_command(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak MB (the child's max RSS) of ``python cli.py build ARGS --json``."""
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "cli.py"), "build", *args, "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    if status:
        raise SystemExit(f"topo build {' '.join(args)} failed (status {status})")
    return wall, usage.ru_maxrss / 1024


def counts() -> None:
    """The counts of ``topo build`` (no ``-o``) as whole commands, with the load average."""
    print(f"{'topo build ... --json':45} {'wall s':>8} {'peak MB':>8} {'load 1 min':>10}")
    for args in COUNT_CASES:
        load = os.getloadavg()[0]
        wall, peak = whole_command(args)
        print(f"{' '.join(args):45} {wall:>8.2f} {peak:>8.0f} {load:>10.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alltoall", action="store_true", help="also MPFT 3-tier 524,288 all-to-all")
    ap.add_argument("--counts", action="store_true", help="only topo build --json, whole command")
    args = ap.parse_args()
    if args.counts:
        counts()
        return
    print(f"{'case':45} {'vertices':>10} {'edges':>10} {'topo s':>8} {'nx s':>8} {'ratio':>6}")
    for kw in CASES:
        r = child(BUILD.format(root=str(ROOT), kw=kw))
        name = " ".join(f"{k}={v}" for k, v in kw.items())
        print(
            f"{name:45} {r['vertices']:>10,} {r['edges']:>10,} {r['topo_s']:>8.2f} "
            f"{r['networkx_s']:>8.2f} {r['ratio']:>6.2f}"
        )
    if args.alltoall:
        print(json.dumps(child(ALLTOALL.format(root=str(ROOT))), indent=1))


if __name__ == "__main__":
    main()
