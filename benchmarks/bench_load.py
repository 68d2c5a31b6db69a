"""Benchmark: reading a fabric file, against plain networkx, and the whole ``topo bandwidth``.

    python benchmarks/bench_load.py          # the 16,384-GPU MPFT (examples/deepseek-v3-mpft.toml)
    python benchmarks/bench_load.py --runs 3 # fewer repetitions (best of N is reported)

Cases, each timed in a fresh Python process, best of ``--runs`` (wall time, and CPU time, which
a busy machine disturbs less):

- ``plain node_link_graph``: ``nx.node_link_graph(json.load(f), edges="edges")``, the reference
  (in a warm process), and the same read as a process of its own (``python -c``: interpreter
  start-up and the networkx import included, as the whole command has them);
- ``topo.fabric.load``: the same file read and checked against the schema (JSON parse, graph,
  ``check_schema``), with the JSON parse alone beside it;
- ``topo bandwidth FILE``: the whole command (``python -m topo.cli``, interpreter start-up
  included), and ``topo --help`` for the start-up alone;
- ``read_ibnetdiscover``: the 300 KB GB200 SuperPOD dump from ``../shared/data/real`` (when
  present; the folder may be named by ``TOPO_REAL_DATA``).

The issue's limit: the whole command at most 3x the plain read. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "deepseek-v3-mpft.toml"
REAL = Path(os.environ.get("TOPO_REAL_DATA") or ROOT.parent / "shared" / "data" / "real")
GB200 = REAL / "ibnetdiscover" / "topograph_dgx_gb200_ndr_superpod.out"

IN_PROCESS = r"""
import json, sys, time
sys.path.insert(0, {root!r})
import networkx as nx
from topo import fabric
from topo.formats import read_ibnetdiscover

def best(f, runs):
    wall = cpu = float("inf")
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        f()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu

def plain():
    with open({path!r}) as f:
        return nx.node_link_graph(json.load(f), edges="edges")

def parse():
    with open({path!r}) as f:
        return json.load(f)

out = dict(
    plain=best(plain, {runs}),
    parse=best(parse, {runs}),
    load=best(lambda: fabric.load({path!r}), {runs}),
)
if {gb200!r}:
    out["ibnetdiscover"] = best(lambda: read_ibnetdiscover({gb200!r}), {runs})
print(json.dumps(out))
"""


PLAIN_PROCESS = (
    "import json, sys; import networkx as nx; "
    "nx.node_link_graph(json.load(open(sys.argv[1])), edges='edges')"
)
"""The plain read as a process of its own: interpreter start-up and the networkx import in."""


def wall(args: list[str], runs: int, command: list[str] | None = None) -> tuple[float, float]:
    """Best wall and CPU (user + system) time of ``python -m topo.cli ARGS`` (or of
    ``python COMMAND ARGS``), seconds."""
    best = cpu = float("inf")
    for _ in range(runs):
        start, used = time.perf_counter(), _children_cpu()
        subprocess.run(
            [sys.executable, *(command or ["-m", "topo.cli"]), *args],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        best = min(best, time.perf_counter() - start)
        cpu = min(cpu, _children_cpu() - used)
    return best, cpu


HEAVY = ("numpy", "scipy", "pulp", "highspy", "plotly", "pandas")


def heavy_at_startup() -> list[str]:
    """The heavy packages ``topo --help`` imports (none: each verb imports its own)."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "topo.cli", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    loaded = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines() if "|" in line}
    return [m for m in HEAVY if m in loaded]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="repetitions per case (best is kept)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "mpft.json")
        subprocess.run(
            [sys.executable, "-m", "topo.cli", "build", "--spec", str(SPEC), "-o", path],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        code = IN_PROCESS.format(
            root=str(ROOT),
            path=path,
            runs=args.runs,
            gb200=str(GB200) if GB200.is_file() else "",
        )
        r = json.loads(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        r["plain_process"] = wall([path], args.runs, ["-c", PLAIN_PROCESS])
        r["help"] = wall(["--help"], args.runs)
        r["bandwidth"] = wall(["bandwidth", path], max(1, args.runs // 2))
        size_MB = Path(path).stat().st_size / 1e6
    plain, plain_cpu = r["plain"]
    print(f"MPFT 16,384 GPUs, {size_MB:.1f} MB of node-link JSON; best of {args.runs}")
    print(f"{'case':40s} {'wall s':>7s} {'x plain':>8s} {'CPU s':>7s} {'x plain':>8s}")
    print("-" * 74)
    rows = [
        ("plain node_link_graph", r["plain"]),
        ("plain read as a process (python -c ...)", r["plain_process"]),
        ("json parse alone", r["parse"]),
        ("topo.fabric.load (parse, graph, schema)", r["load"]),
        ("topo --help (start-up)", r["help"]),
        ("topo bandwidth FILE (whole command)", r["bandwidth"]),
    ]
    if "ibnetdiscover" in r:
        rows.append(("read_ibnetdiscover GB200 (300 KB)", r["ibnetdiscover"]))
    heavy = heavy_at_startup()
    for name, (seconds, cpu) in rows:
        print(f"{name:40s} {seconds:7.3f} {seconds / plain:8.2f} {cpu:7.3f} {cpu / plain_cpu:8.2f}")
    print(f"heavy packages imported by 'topo --help': {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
