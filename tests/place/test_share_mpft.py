"""Three jobs of different sizes on the 16,384-GPU MPFT: max-min fair rates by hand, and
certified by a sparse LP written apart from topo.flow on the uncontracted graph (every GPU,
NVLink, PCIe, NIC cable and switch link of all 8 planes).

The MPFT of 64-port 400G switches: 2,048 servers of 8 GPUs and 8 NICs (one per plane), 50 GB/s
per NIC and direction, so a server sends or receives at most 8 x 50 = 400 GB/s. Every leaf has
32 servers below and 32 uplinks: non-blocking, so storage reads contend only on the storage
servers' NICs.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from topo.builders import build
from topo.place import Job, job_demand, place, place_jobs

pytestmark = pytest.mark.slow

S1, S2 = 2046, 2047  # the two storage servers
SERVER = 400e9  # a server's 8 NICs, B/s per direction


def _general_lp(G, demands, objective, lower):
    """Maximise rho_objective on the uncontracted graph, each job k at rho_k >= lower[k] (B/s
    per byte of demand). One commodity per (job, sending server); a server's bytes leave from
    (and arrive at) its GPUs in equal parts; a commodity may use the switch links and the
    vertices of its own sender and sinks only (servers do not forward). Returns the rhos or
    None when infeasible."""
    arcs = [(u, v, float(d["capacity"])) for u, v, d in G.edges(data=True)]
    arcs += [(v, u, c) for u, v, c in arcs]
    owner = {v: d.get("node") for v, d in G.nodes(data=True)}
    gpus: dict = {}
    for v, d in G.nodes(data=True):
        if d["kind"] == "gpu":
            gpus.setdefault(d["node"], []).append(v)
    comms = []
    for k, dm in enumerate(demands):
        by_src: dict = {}
        for (a, b), x in dm.entries.items():
            by_src.setdefault(a, {})[b] = x
        comms += [(k, s, sinks) for s, sinks in by_src.items()]
    n_rho = len(demands)
    rows, cols, vals, ub_rows, n_col, n_row = [], [], [], [], n_rho, 0
    for k, s, sinks in comms:
        allowed = {s, *sinks}
        vid: dict = {}
        for i, (u, v, _) in enumerate(arcs):
            if owner[u] in (None, *allowed) and owner[v] in (None, *allowed):
                for w in (u, v):
                    if w not in vid:
                        vid[w] = n_row + len(vid)
                rows += [vid[u], vid[v]]
                cols += [n_col, n_col]
                vals += [1.0, -1.0]
                ub_rows.append((i, n_col))
                n_col += 1
        out = sum(sinks.values())
        for g in gpus[s]:  # supply rho_k * out at the sender's GPUs
            rows.append(vid[g])
            cols.append(k)
            vals.append(-out / len(gpus[s]))
        for t, x in sinks.items():
            for g in gpus[t]:
                rows.append(vid[g])
                cols.append(k)
                vals.append(x / len(gpus[t]))
        n_row += len(vid)
    A_eq = coo_matrix((vals, (rows, cols)), shape=(n_row, n_col)).tocsr()
    i_arc, j_col = zip(*ub_rows, strict=True)
    A_ub = coo_matrix((np.ones(len(i_arc)), (i_arc, j_col)), shape=(len(arcs), n_col)).tocsr()
    scale = 1e9  # GB/s inside the LP
    c = np.zeros(n_col)
    c[objective] = -1.0
    bounds = [(lo / scale, None) for lo in lower] + [(0, None)] * (n_col - n_rho)
    cap = np.array([x for _, _, x in arcs]) / scale
    res = linprog(c, A_ub=A_ub, b_ub=cap, A_eq=A_eq, b_eq=np.zeros(n_row), bounds=bounds)
    return None if res.status == 2 else res.x[:n_rho] * scale


def test_three_storage_jobs_of_different_sizes_on_the_mpft_are_max_min_fair():
    # a: 16 servers (128 GPUs) read from S2; b: 4 servers (32 GPUs) from S1; c: 2 servers
    # (16 GPUs) from S1 and S2, half each. Per-GPU read rates r (busbw):
    #   S2's NICs: 128 r_a + 8 r_c <= 400;  S1's NICs: 32 r_b + 8 r_c <= 400;
    #   a reader server's NICs: 8 r <= 400 (r <= 50).
    # Alone: a = 400/128 = 3.125, b = 400/32 = 12.5, c = min(400/8, 50) = 50 GB/s.
    # Max-min fair: all at lambda, S2 fills first: 136 lambda = 400, a = c = 400/136 = 2.941;
    # b grows on S1: 32 r_b = 400 - 8 x 400/136, r_b = 11.765 GB/s.
    G = build("mpft", switch_ports=64)
    jobs = [
        Job("a", "storage_read", count=16, storage=(S2,)),
        Job("b", "storage_read", count=4, storage=(S1,)),
        Job("c", "storage_read", count=2, storage=(S1, S2)),
    ]
    r = place(G, jobs)
    assert [j.gpus for j in r.jobs] == [128, 32, 16]
    lam = SERVER / 136
    want_shared = [lam, (SERVER - 8 * lam) / 32, lam]
    want_alone = [SERVER / 128, SERVER / 32, SERVER / 8]
    assert [j.shared_busbw_Bps for j in r.jobs] == pytest.approx(want_shared, rel=1e-6)
    assert [j.alone_busbw_Bps for j in r.jobs] == pytest.approx(want_alone, rel=1e-6)
    # the storage NICs are the contended links: S2's carry a and c, full
    s2_out = [c for c in r.contended_links if c.tail.startswith(f"node{S2}/nic")]
    assert len(s2_out) == 8 and all(c.full and set(c.jobs) == {"a", "c"} for c in s2_out)
    # the certificate, by the general LP: the rates are feasible together, and no job can be
    # raised while every job at or below its rate keeps its rate
    rates = [j.shared_busbw_Bps for j in r.jobs]
    demands = [job_demand(G, p) for p in place_jobs(G, jobs)]
    for j, rate in enumerate(rates):
        lower = [x * (1 - 1e-8) if x <= rate * (1 + 1e-9) else 0.0 for x in rates]
        lower[j] = 0.0
        best = _general_lp(G, demands, j, lower)
        assert best is not None
        assert best[j] == pytest.approx(rate, rel=1e-5)
