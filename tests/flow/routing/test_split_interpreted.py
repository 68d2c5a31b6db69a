"""ECMP's draws run as Python under NUMBA_DISABLE_JIT=1 (numba's debug switch) without numpy's
uint64 overflow warnings, and give the compiled draws."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from topo.builders import build
from topo.flow.routing import routed_alltoall

SCRIPT = """
import json, sys
from topo.builders import build
from topo.flow.routing import routed_alltoall, split

calls = {"hop_full": 0, "split_rows": 0}
for name in calls:
    def counted(*a, _f=getattr(split, name), _n=name):
        calls[_n] += 1
        return _f(*a)
    setattr(split, name, counted)
out = []
for family, flows in (("ft2", 4), ("ft3", 300)):
    G = build(family, switch_ports=8, gpus_per_node=2, nics_per_node=2)
    r = routed_alltoall(G, "ecmp", seed=3, flows_per_pair=flows)
    out.append(sorted([repr(k), v] for k, v in r.link_load.items()))
print(json.dumps({"calls": calls, "loads": out}))
"""


def test_interpreted_draws_are_quiet_and_equal_the_compiled_ones():
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    p = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "RuntimeWarning" not in p.stderr
    got = json.loads(p.stdout)
    assert got["calls"]["hop_full"] > 0 and got["calls"]["split_rows"] > 0  # both entry points
    want = []
    for family, flows in (("ft2", 4), ("ft3", 300)):
        G = build(family, switch_ports=8, gpus_per_node=2, nics_per_node=2)
        r = routed_alltoall(G, "ecmp", seed=3, flows_per_pair=flows)  # compiled
        want.append(sorted([repr(k), v] for k, v in r.link_load.items()))
    assert got["loads"] == want
