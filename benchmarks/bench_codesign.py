"""Benchmark: ``topo codesign`` of DeepSeek-R1 (the shared config) on 2,048 GPUs within 30 ms,
the whole command (issue 40: at most 30 s), and where a serial run spends its time per fabric.

    python benchmarks/bench_codesign.py            # the whole command
    python benchmarks/bench_codesign.py --serial   # + each fabric's points timed in process
    python benchmarks/bench_codesign.py --serial --against ../main --repeat 3
                                                   # interleaved with another checkout's code
    python benchmarks/bench_codesign.py --dask     # + this checkout with --cluster local
                                                   # (every point on 2 Dask workers)
    python benchmarks/bench_codesign.py --kernels  # + the search of every EP kernel (--kernel all)

Each run of the whole command prints its wall time, its CPU time (user + system, with the
Dask workers it started and waited for), its peak memory (the command's own max RSS) and the
load average beside it. ``--serial`` times each point with ``time_design`` in one process:
CPU seconds (``time.process_time``) per fabric, and the wall time of all. The machine is
shared, so compare CPU seconds, and runs interleaved (``--against``): with it, the two
checkouts' ``--json`` outputs are also compared byte for byte. Needs
``../shared/data/real/moe_configs/deepseek-r1_hf_config.json``. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / ".." / "shared" / "data" / "real" / "moe_configs" / "deepseek-r1_hf_config.json"
ARGS = ["--model", str(MODEL), "--gpus", "2048", "--tpot-ms", "30", "--json"]


def whole_command(root: Path, *extra: str) -> bytes:
    """Run ``topo codesign`` from checkout ``root``, print one line, return its stdout."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(root / "cli.py"), "codesign", *ARGS, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=root,
    )
    out = child.stdout.read() if child.stdout is not None else b""
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        raise SystemExit(f"topo codesign failed (status {status}) in {root}")
    wall = time.perf_counter() - t0
    cpu = usage.ru_utime + usage.ru_stime
    what = " ".join(["whole command", *extra])
    print(f"{root.name:>14}  {what}  wall {wall:6.1f} s  CPU {cpu:6.1f} s  "
          f"{usage.ru_maxrss / 1024:4.0f} MB peak  load {load:.2f} at the start")  # fmt: skip
    return out


def serial(root: Path) -> None:
    """Each point of the search timed in this process, imported from ``root``."""
    sys.path.insert(0, str(root))
    from topo.engine.codesign import plan_codesign, time_design
    from topo.moe import load_config

    cfg = load_config(MODEL)
    grid = {"switch_ports": [64], "link_gbps": [400.0], "oversubscription": [1.0, 3.0],
            "gpus_per_node": [8], "nics_per_node": [8]}  # fmt: skip
    load = os.getloadavg()[0]
    c0 = time.process_time()
    plan = plan_codesign(cfg, 2048, 30.0, grid=grid)
    plan_s = time.process_time() - c0
    moe = dict(tokens_per_gpu=32, micro_batches=2, seed=0, kernel=None, kernel_sms=None)
    per: dict[int, float] = defaultdict(float)
    t0, c0 = time.perf_counter(), time.process_time()
    for task in plan.tasks:
        c = time.process_time()
        time_design(plan.graphs, cfg, moe, task)
        per[task.fabric] += time.process_time() - c
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    fabrics = "  ".join(
        f"{family} r={options['oversubscription']:g} {per[i]:.1f}"
        for i, (family, options) in enumerate(plan.fabrics)
    )
    print(f"{root.name:>14}  {len(plan.tasks)} points in process  CPU {cpu:6.1f} s  wall "
          f"{wall:6.1f} s  (plan and build {plan_s:.2f} s)  load {load:.2f} at the start\n"
          f"{'':>16}CPU s per fabric: {fabrics}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serial", action="store_true", help="also each fabric's points serially")
    ap.add_argument("--against", type=Path, help="another checkout, timed in turn with this one")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (default 1)")
    ap.add_argument("--dask", action="store_true", help="also with --cluster local")
    ap.add_argument("--kernels", action="store_true", help="also with --kernel all")
    ap.add_argument("--points-only", type=Path, help=argparse.SUPPRESS)  # (one checkout's points)
    args = ap.parse_args()
    if not MODEL.is_file():
        raise SystemExit(f"{MODEL} is not here")
    if args.points_only:
        serial(args.points_only.resolve())
        return
    roots = [ROOT] + ([args.against.resolve()] if args.against else [])
    for _ in range(args.repeat):
        outs = [whole_command(root) for root in roots]
        if args.dask:
            outs.append(whole_command(ROOT, "--cluster", "local"))
        if args.kernels:  # (another search: its JSON is not compared)
            whole_command(ROOT, "--kernel", "all")
        if len(outs) > 1:
            print(f"{'':>16}--json the same byte for byte: {len(set(outs)) == 1}")
        if args.serial:
            for root in roots:  # each in a fresh process: no cache, no import, carried over
                subprocess.run(
                    [sys.executable, __file__, "--points-only", str(root)], check=True
                )


if __name__ == "__main__":
    main()
