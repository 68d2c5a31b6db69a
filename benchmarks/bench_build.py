"""Benchmark: building fabrics against plain networkx, and the all-to-all of the largest
three-layer MPFT.

Build: for each case, the time of ``topo.builders.build`` against plain networkx making the same
graph from its node and edge lists (``nx.Graph(); add_nodes_from(...); add_edges_from(...)``
with every attribute, the lists made beforehand), and their ratio; the issue asks for at most 3.

All-to-all (``--alltoall``): ``build("mpft", tiers=3)`` (524,288 GPUs, 40,960 switches of 64
ports) and its exact all-to-all, in a fresh process, with wall times and peak memory (max RSS).

    python benchmarks/bench_build.py             # MPFT 16,384; 3-tier MRFT 65,536, MPFT 131,072
    python benchmarks/bench_build.py --alltoall  # + MPFT 3-tier 524,288: build, exact all-to-all

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alltoall", action="store_true", help="also MPFT 3-tier 524,288 all-to-all")
    args = ap.parse_args()
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
