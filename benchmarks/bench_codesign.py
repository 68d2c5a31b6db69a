"""Benchmark: ``topo codesign`` of DeepSeek-R1 (the shared config) on 2,048 GPUs within 30 ms,
the whole command (issue 40: at most 30 s), and where a serial run spends its time per fabric.

    python benchmarks/bench_codesign.py            # the whole command, 2 Dask workers
    python benchmarks/bench_codesign.py --serial   # + each fabric's points timed in process

Each run prints its wall time, peak memory (the command's max RSS, without its workers) and the
load average beside it. Needs ``../shared/data/real/moe_configs/deepseek-r1_hf_config.json``.
Not part of the test run.
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


def whole_command() -> None:
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "cli.py"), "codesign", *ARGS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    if status:
        raise SystemExit(f"topo codesign failed (status {status})")
    wall = time.perf_counter() - t0
    print(f"topo codesign {' '.join(ARGS[2:-1])}: {wall:.1f} s, {usage.ru_maxrss / 1024:.0f} MB "
          f"peak (client), load average {load:.2f} at the start")  # fmt: skip


def serial() -> None:
    sys.path.insert(0, str(ROOT))
    from topo.engine.codesign import plan_codesign, time_design
    from topo.moe import load_config

    cfg = load_config(MODEL)
    grid = {"switch_ports": [64], "link_gbps": [400.0], "oversubscription": [1.0, 3.0],
            "gpus_per_node": [8], "nics_per_node": [8]}  # fmt: skip
    t0 = time.perf_counter()
    plan = plan_codesign(cfg, 2048, 30.0, grid=grid)
    print(f"plan and build {len(plan.graphs)} fabrics: {time.perf_counter() - t0:.2f} s")
    moe = dict(tokens_per_gpu=32, micro_batches=2, seed=0, kernel=None, kernel_sms=None)
    per: dict[int, float] = defaultdict(float)
    for task in plan.tasks:
        t = time.perf_counter()
        time_design(plan.graphs, cfg, moe, task)
        per[task.fabric] += time.perf_counter() - t
    for i, (family, options) in enumerate(plan.fabrics):
        print(f"{family} r={options['oversubscription']:g}: {per[i]:.1f} s")
    print(f"{len(plan.tasks)} points: {sum(per.values()):.1f} s, load {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serial", action="store_true", help="also each fabric's points serially")
    args = ap.parse_args()
    if not MODEL.is_file():
        raise SystemExit(f"{MODEL} is not here")
    whole_command()
    if args.serial:
        serial()


if __name__ == "__main__":
    main()
