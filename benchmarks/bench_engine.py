"""Benchmark: a 24-trial resilience run in this process, on one Dask worker and on two.

    python benchmarks/bench_engine.py                  # MRFT 2,048 GPUs, 8 random cables per trial
    python benchmarks/bench_engine.py --family mpft --gpus 2048 --links 8 --trials 24

Each engine's time includes starting its LocalCluster and scattering the fabric; the report
of every run must be the serial one's (the script checks it). Peak MB: the largest resident
memory of the workers (each holds the fabric and one trial's LP). Not part of the test run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topo.builders import build  # noqa: E402
from topo.engine import Engine, trial_map  # noqa: E402
from topo.flow.failures.resilience import resilience  # noqa: E402


def _peak_MB(engine: Engine) -> float:
    def rss() -> float:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    return max(engine.client.run(rss).values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--family", default="mrft")
    ap.add_argument("--gpus", type=int, default=2048)
    ap.add_argument("--links", type=int, default=8)
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--memory-limit", default="2GiB")
    a = ap.parse_args()
    G = build(a.family, gpus=a.gpus)
    args = dict(trials=a.trials, links=a.links, seed=0)
    t0 = time.perf_counter()
    serial = resilience(G, **args)
    times = {"serial (this process)": (time.perf_counter() - t0, float("nan"))}
    for n in (1, 2):
        t0 = time.perf_counter()
        with Engine(workers=n, memory_limit=a.memory_limit) as engine:
            r = resilience(G, **args, trial_map=trial_map(engine))
            peak = _peak_MB(engine)
        times[f"{n} Dask worker(s)"] = (time.perf_counter() - t0, peak)
        assert r.busbw_GBps == serial.busbw_GBps, "the engine changed the numbers"
    print(f"{a.family} {a.gpus:,} GPUs, {a.trials} trials x {a.links} random cables")
    print(f"{'engine':<24}{'seconds':>10}{'speed-up vs 1':>16}{'peak MB':>10}")
    one = times["1 Dask worker(s)"][0]
    for name, (s, peak) in times.items():
        print(f"{name:<24}{s:>10.1f}{one / s:>16.2f}{peak:>10.0f}")
    print(f"p5 {serial.p5_GBps:.2f} GB/s, median {serial.median_GBps:.2f} GB/s (all engines)")


if __name__ == "__main__":
    main()
