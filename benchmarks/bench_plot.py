"""Benchmark: the fabric page and the link-load page of large fabrics.

Each case runs in a fresh Python process so that its peak memory (max RSS) is its own.
Prints, per case: the fabric's vertices, the view drawn, the time to build it, to compute and
draw the figure, to write the HTML file, the file's size and peak memory. The test suite checks
what these pages hold (tests/plot/); how long they take is measured here. Until this
benchmark, the slow tests asserted each page of the 16,384-GPU MPFT in under 10 s.

    python benchmarks/bench_plot.py          # MPFT 16,384 (fabric page, link-load page),
                                             # FT2 2,048 (drawn device by device)
    python benchmarks/bench_plot.py --ft3    # + FT3 65,536 (tier groups)

The link loads are hand-made, as in tests/plot/test_link_load.py: every NIC sends at its line
rate, every leaf -> spine arc carries half its capacity. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, resource, sys, tempfile, time
sys.path.insert(0, {root!r})
from topo.builders import build
from topo.plot import plot_fabric, plot_link_load, write_html
from topo.plot.fabric import fabric_data
family, page, max_devices = {family!r}, {page!r}, {max_devices!r}
t0 = time.perf_counter()
G = build(family)
t1 = time.perf_counter()
if page == "fabric":
    fig = plot_fabric(G, max_devices=max_devices)
else:
    loads = {{}}
    for u, v, d in G.edges(data=True):
        a, b = (u, v) if G.nodes[u]["kind"] in ("nic", "leaf") else (v, u)
        if d["kind"] == "endpoint":
            loads[(a, b)] = d["capacity"]
        elif d["kind"] == "fabric":
            loads[(a, b)] = 0.5 * d["capacity"]
    fig = plot_link_load(G, loads, max_devices=max_devices)
t2 = time.perf_counter()
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "page.html")
    write_html(fig, path)
    size = os.path.getsize(path)
t3 = time.perf_counter()
print(json.dumps(dict(
    case=f"{{family}} {{page}}", vertices=G.number_of_nodes(),
    view=fabric_data(G, max_devices).view, traces=len(fig.data), build_s=t1 - t0,
    figure_s=t2 - t1, write_s=t3 - t2, MB=size / 1e6,
    peak_MB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
)))
"""


def run(family: str, page: str, max_devices: int) -> dict:
    """One case in a fresh process; exits with the child's last error line if it fails."""
    code = CHILD.format(root=str(ROOT), family=family, page=page, max_devices=max_devices)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        sys.exit(f"{family} {page}: {last}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ft3", action="store_true", help="also the 65,536-GPU FT3")
    parser.add_argument("--max-devices", type=int, default=2000)
    args = parser.parse_args()
    md = args.max_devices
    # FT2 2,048 has 4,448 vertices: drawn device by device with max_devices 10,000.
    cases = [("mpft", "fabric", md), ("mpft", "load", md), ("ft2", "fabric", 10_000)]
    cases += [("ft2", "load", 10_000)]
    if args.ft3:
        cases += [("ft3", "fabric", md), ("ft3", "load", md)]
    head = (
        f"{'case':<14}{'vertices':>10}  {'view':<24}{'traces':>7}{'build s':>9}{'figure s':>10}"
        f"{'write s':>9}{'MB':>6}{'peak MB':>9}"
    )
    print(head)
    print("-" * len(head))
    for family, page, max_devices in cases:
        r = run(family, page, max_devices)
        print(
            f"{r['case']:<14}{r['vertices']:>10,}  {r['view']:<24}{r['traces']:>7}"
            f"{r['build_s']:>9.2f}{r['figure_s']:>10.2f}{r['write_s']:>9.2f}{r['MB']:>6.1f}"
            f"{r['peak_MB']:>9.0f}"
        )


if __name__ == "__main__":
    main()
