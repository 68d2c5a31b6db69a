"""The integer program of each family that :func:`topo.cost.plan.plan` and
:func:`topo.cost.plan.max_gpus_plan` solve: the cheapest design for N GPUs, or the ceiling.

Each is a small integer linear program (pulp, solved by HiGHS: :func:`solve_program`) over the
design choices that the builders of :mod:`topo.builders` take. Notation: ``k`` switch radix,
``E`` endpoints per plane (whole servers: ``ceil(N/gpus_per_node)`` servers, each with
``nics_per_node`` NICs), ``R`` the largest oversubscription allowed, ``W`` the switch price,
``c_o`` an optical cable, ``c_e`` an endpoint cable.

**Two layers** (``ft2``: one plane of every NIC; ``mpft``: ``nics_per_node`` planes, one NIC
of each server per plane). Binary ``t`` (one switch holds the plane), binaries ``y_u`` (leaves
have ``u`` up ports, for ``k/(R+1) <= u <= k/2``), integers ``L_u`` (leaves), binaries
``z_{u,s}`` (``s`` spines, ``s`` dividing ``u`` so every leaf spreads its uplinks evenly)::

    min  P·( W·(t + Σ L_u + Σ s·z_{u,s}) + c_o·Σ u·L_u ) + c_e·P·E
    s.t. t + Σ y_u = 1                           one design
         E <= k·t + Σ (k-u)·L_u                  leaf down ports
         L_u <= k·y_u                            spine reach (a spine has one port per leaf)
         Σ_s z_{u,s} = y_u
         Σ u·L_u <= k·Σ s·z_{u,s}                spine ports

**Three layers** (``ft3``, non-blocking, full pods of ``k/2`` leaves and ``k/2`` spines):
binaries ``t`` (one switch), ``b`` (pods), ``h`` (a core layer), ``z_c`` (``k/2`` groups of
``c`` cores, ``c`` dividing ``k/2``), integer pods ``Q`` and spine-core cables ``X``::

    min  W·(t + k·Q + (k/2)·Σ c·z_c) + c_o·((k/2)²·Q + X) + c_e·E
    s.t. t + b = 1;  b <= Q <= k·b;  Q <= 1 + (k-1)·h;  h <= b;  Σ z_c = h
         E <= k·t + (k/2)²·Q                          leaf down ports
         (k/2)·Q - (k/2)(1-h) <= k·Σ c·z_c           core ports
         X >= (k/2)²·Q - k(k/2)²·(1-h)                spine up ports all cabled

**Slim Fly**: binaries ``x_q`` over prime powers ``q`` with ``k'(q) + 1 <= k``, integers
``p_q <= min(k - k'(q), R·ceil(k'(q)/2))·x_q`` (endpoints per router; ``ceil(k'/2)`` is full
global bandwidth, Besta and Hoefler), ``E <= Σ 2q²·p_q``; cost ``Σ x_q (2q²·W + q²k'·c_o)``.

**Dragonfly**: binaries ``x`` over balanced routers ``(a, p, h)`` with ``a = 2h``,
``p <= R·h``, ``p + a - 1 + h <= k`` (Kim et al.: ``a = 2p = 2h`` at ``R = 1``), integer
groups ``2·x <= g <= (a·h + 1)·x``, ``E <= Σ a·p·g``; cost per group ``a·W + a(a-1)/2·c_l +
a·h/2·c_o`` (``c_l`` electrical or optical by the price book's layout).

For the ceiling (:func:`topo.cost.plan.max_gpus_plan`) the same constraints maximise ``E``
instead; tests hold it against the closed forms ``k²/2`` per plane and ``k³/4``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import pulp

from topo.builders.slimfly import is_prime_power, slimfly_sizes
from topo.errors import SolverError, SpecError
from topo.flow.solve import quiet_stdout
from topo.spec import ServerSpec, SwitchSpec

__all__ = [
    "DEFAULT_PLAN_FAMILIES",
    "PLAN_FAMILIES",
    "FamilyProgram",
    "NoDesign",
    "PlanInputs",
    "binding_rows",
    "family_program",
    "solution_value",
    "solve_program",
]

PLAN_FAMILIES = (
    "ft2",
    "mpft",
    "ft3",
    "slimfly",
    "dragonfly",
    "mpft3",
    "mrft3",
    "rail-only",
    "hpn",
)
"""Families :func:`topo.cost.plan.plan` designs: ``mpft3`` and ``mrft3`` are MPFT and MRFT
built with three tiers (``tiers=3``; :mod:`topo.builders.pods`), whose counts the design rule
fixes, as are those of ``rail-only`` (:func:`topo.builders.railonly.rail_only_counts`) and
``hpn`` (:func:`topo.builders.hpn.hpn_counts`). The library's default
(:data:`DEFAULT_PLAN_FAMILIES`) is the first five; ``topo plan`` asks for all nine."""

DEFAULT_PLAN_FAMILIES = PLAN_FAMILIES[:5]
"""The families :func:`topo.cost.plan.plan` and :func:`topo.cost.plan.max_gpus_plan` design
when not told."""


@dataclass
class FamilyProgram:
    """One family's program: the pulp problem and how to read a solution."""

    prob: pulp.LpProblem
    endpoints: pulp.LpVariable
    planes: int
    read: Any  # () -> dict with tiers, switches, links, local_links, design


@dataclass(frozen=True)
class PlanInputs:
    """The switch and server of a plan, its oversubscription bound and the prices it reads."""

    switch: SwitchSpec
    server: ServerSpec
    R: float
    W: float
    c_opt: float
    c_local: float
    c_end: float

    @property
    def k(self) -> int:
        return self.switch.ports

    @property
    def link_gbps(self) -> float:
        return self.switch.link_gbps

    @property
    def gpus_per_node(self) -> int:
        return self.server.gpus

    @property
    def nics_per_node(self) -> int:
        return self.server.nics


class NoDesign(Exception):
    """No design of the family fits the switch at all (e.g. a Slim Fly of 4-port routers)."""


def solution_value(x: Any) -> float:
    """The value of a pulp variable or expression in the solution found (0.0 when it has none)."""
    v = pulp.value(x)
    return 0.0 if v is None else float(v)


def _on(x: Any) -> bool:
    return solution_value(x) > 0.5


def _ups(k: int, R: float) -> list[int]:
    """Up ports ``u`` a leaf may have: ``(k - u)/u <= R``, ``u <= k/2``."""
    return [u for u in range(1, k // 2 + 1) if (k - u) <= R * u + 1e-9]


def _program(name: str, E_need: int | None, endpoints: str) -> tuple[pulp.LpProblem, Any]:
    """A family's problem (minimise cost when ``E_need`` is given, else maximise endpoints)
    and its endpoint variable ``E``."""
    sense = pulp.LpMinimize if E_need is not None else pulp.LpMaximize
    return pulp.LpProblem(name, sense), pulp.LpVariable(endpoints, lowBound=0, cat="Integer")


def _objective(
    prob: pulp.LpProblem, E: Any, E_need: int | None, cost: Any, c_end_per_endpoint: float
) -> None:
    """Plan: ``E = E_need`` and minimise ``cost`` plus the endpoint cables; ceiling: max ``E``."""
    if E_need is None:
        prob += E
        return
    prob += E == E_need, "endpoints"
    prob += cost + c_end_per_endpoint * E_need


def _two_layer(inp: PlanInputs, planes: int, family: str, E_need: int | None) -> FamilyProgram:
    k = inp.k
    prob, E = _program(f"{family}_plan", E_need, "endpoints_per_plane")
    t = pulp.LpVariable("one_switch", cat="Binary")
    U = _ups(k, inp.R)
    y = {u: pulp.LpVariable(f"up_{u}", cat="Binary") for u in U}
    L = {u: pulp.LpVariable(f"leaves_up_{u}", lowBound=0, cat="Integer") for u in U}
    z = {
        (u, s): pulp.LpVariable(f"spines_{s}_up_{u}", cat="Binary")
        for u in U
        for s in range(1, u + 1)
        if u % s == 0
    }
    spines = pulp.lpSum(s * v for (u, s), v in z.items())
    cables = pulp.lpSum(u * L[u] for u in U)
    prob += t + pulp.lpSum(y.values()) == 1, "one_design"
    prob += E <= k * t + pulp.lpSum((k - u) * L[u] for u in U), "leaf_down_ports"
    for u in U:
        prob += L[u] <= k * y[u], f"spine_reach_{u}"
        prob += pulp.lpSum(v for (uu, _), v in z.items() if uu == u) == y[u], f"spine_choice_{u}"
    prob += cables <= k * spines, "spine_ports"
    cost = planes * (inp.W * (t + pulp.lpSum(L.values()) + spines) + inp.c_opt * cables)
    _objective(prob, E, E_need, cost, inp.c_end * planes)

    def read() -> dict[str, Any]:
        if _on(t):
            return dict(tiers=1, switches=planes, links=0, local_links=0, over=1.0)
        u = next(u for u in U if _on(y[u]))
        n_leaves = round(solution_value(L[u]))
        n_spines = round(solution_value(spines))
        return dict(
            tiers=2,
            switches=planes * (n_leaves + n_spines),
            links=planes * n_leaves * u,
            local_links=0,
            over=(k - u) / u,
            leaves=n_leaves,
            spines=n_spines,
            up_ports=u,
        )

    return FamilyProgram(prob, E, planes, read)


def _three_layer(inp: PlanInputs, E_need: int | None) -> FamilyProgram:
    k, half = inp.k, inp.k // 2
    prob, E = _program("ft3_plan", E_need, "endpoints")
    t = pulp.LpVariable("one_switch", cat="Binary")
    b = pulp.LpVariable("pods_used", cat="Binary")
    h = pulp.LpVariable("core_layer", cat="Binary")
    Q = pulp.LpVariable("pods", lowBound=0, upBound=k, cat="Integer")
    X = pulp.LpVariable("spine_core_cables", lowBound=0, cat="Integer")
    z = {
        c: pulp.LpVariable(f"cores_per_group_{c}", cat="Binary")
        for c in range(1, half + 1)
        if half % c == 0
    }
    cores = half * pulp.lpSum(c * v for c, v in z.items())
    prob += t + b == 1, "one_design"
    prob += Q >= b, "pods_if_used"
    prob += Q <= k * b, "pods_only_if_used"
    prob += Q <= 1 + (k - 1) * h, "core_layer_for_two_pods"
    prob += h <= b, "core_needs_pods"
    prob += pulp.lpSum(z.values()) == h, "core_choice"
    prob += E <= k * t + half * half * Q, "leaf_down_ports"
    prob += half * Q - half * (1 - h) <= k * pulp.lpSum(c * v for c, v in z.items()), "core_ports"
    prob += X >= half * half * Q - k * half * half * (1 - h), "spine_up_ports"
    links = half * half * Q + X
    cost = inp.W * (t + k * Q + cores) + inp.c_opt * links
    _objective(prob, E, E_need, cost, inp.c_end)

    def read() -> dict[str, Any]:
        if _on(t):
            return dict(tiers=1, switches=1, links=0, local_links=0, over=1.0)
        pods = round(solution_value(Q))
        n_cores = round(solution_value(cores))
        return dict(
            tiers=3 if _on(h) else 2,
            switches=k * pods + n_cores,
            links=round(solution_value(links)),
            local_links=0,
            over=1.0,
            pods=pods,
            cores=n_cores,
        )

    return FamilyProgram(prob, E, 1, read)


def _slimfly(inp: PlanInputs, E_need: int | None) -> FamilyProgram:
    k = inp.k
    prob, E = _program("slimfly_plan", E_need, "endpoints")
    qs = [
        q
        for q in range(3, k + 1)
        if q % 4 != 2 and is_prime_power(q) and slimfly_sizes(q).network_radix + 1 <= k
    ]
    if not qs:
        raise NoDesign(f"no Slim Fly fits {k}-port routers (q = 3 needs 6 ports)")
    x = {q: pulp.LpVariable(f"q_{q}", cat="Binary") for q in qs}
    pmax = {
        q: min(
            k - slimfly_sizes(q).network_radix,
            math.floor(inp.R * slimfly_sizes(q).endpoints_per_router),
        )
        for q in qs
    }
    p = {q: pulp.LpVariable(f"endpoints_per_router_q_{q}", lowBound=0, cat="Integer") for q in qs}
    prob += pulp.lpSum(x.values()) == 1, "one_design"
    for q in qs:
        prob += p[q] <= pmax[q] * x[q], f"router_ports_q_{q}"
    prob += E <= pulp.lpSum(2 * q * q * p[q] for q in qs), "router_endpoint_ports"
    cost = pulp.lpSum(x[q] * (2 * q * q * inp.W + slimfly_sizes(q).links * inp.c_opt) for q in qs)
    _objective(prob, E, E_need, cost, inp.c_end)

    def read() -> dict[str, Any]:
        q = next(q for q in qs if _on(x[q]))
        # p is free in the program (it costs nothing): take the fewest that hold E.
        s = slimfly_sizes(q, max(1, -(-round(solution_value(E)) // (2 * q * q))))
        return dict(
            tiers=1,
            switches=s.routers,
            links=s.links,
            local_links=0,
            over=s.endpoints_per_router / slimfly_sizes(q).endpoints_per_router,
            q=q,
            endpoints_per_router=s.endpoints_per_router,
        )

    return FamilyProgram(prob, E, 1, read)


def _dragonfly(inp: PlanInputs, E_need: int | None) -> FamilyProgram:
    k = inp.k
    prob, E = _program("dragonfly_plan", E_need, "endpoints")
    cands = [
        (2 * h, p, h)
        for h in range(1, k)
        # p + 2h - 1 + h <= k bounds p by the radix whatever the oversubscription allows.
        for p in range(1, min(math.floor(inp.R * h), k - 3 * h + 1) + 1)
    ]
    if not cands:
        raise NoDesign(f"no Dragonfly fits {k}-port routers")
    x = {c: pulp.LpVariable("df_a{}_p{}_h{}".format(*c), cat="Binary") for c in cands}
    g = {
        c: pulp.LpVariable("groups_a{}_p{}_h{}".format(*c), lowBound=0, cat="Integer")
        for c in cands
    }
    prob += pulp.lpSum(x.values()) == 1, "one_design"
    for c in cands:
        a, p, h = c
        prob += g[c] >= 2 * x[c], "two_groups_a{}_p{}_h{}".format(*c)
        prob += g[c] <= (a * h + 1) * x[c], "global_ports_a{}_p{}_h{}".format(*c)
    prob += E <= pulp.lpSum(a * p * g[(a, p, h)] for a, p, h in cands), "router_endpoint_ports"
    cost = pulp.lpSum(
        g[(a, p, h)] * (a * inp.W + a * (a - 1) // 2 * inp.c_local + a * h // 2 * inp.c_opt)
        for a, p, h in cands
    )
    _objective(prob, E, E_need, cost, inp.c_end)

    def read() -> dict[str, Any]:
        a, p, h = next(c for c in cands if _on(x[c]))
        groups = round(solution_value(g[(a, p, h)]))
        return dict(
            tiers=1,
            switches=a * groups,
            links=groups * (a * (a - 1) // 2 + a * h // 2),
            local_links=groups * a * (a - 1) // 2,
            over=p / h,
            routers_per_group=a,
            endpoints_per_router=p,
            global_ports=h,
            groups=groups,
        )

    return FamilyProgram(prob, E, 1, read)


def family_program(family: str, inp: PlanInputs, need: int | None) -> FamilyProgram:
    """The program of ``family`` for ``need`` endpoints in all (whole servers), or its ceiling
    (``need`` None)."""
    if family in ("ft2", "mpft"):
        planes = inp.nics_per_node if family == "mpft" else 1
        return _two_layer(inp, planes, family, None if need is None else need // planes)
    if family == "ft3":
        return _three_layer(inp, need)
    if family == "slimfly":
        return _slimfly(inp, need)
    if family == "dragonfly":
        return _dragonfly(inp, need)
    raise SpecError(
        f"unknown family {family!r} to plan; choose from {', '.join(PLAN_FAMILIES)}",
        param="family",
        names=(),
    )


def solve_program(m: FamilyProgram, time_limit_s: float | None) -> str:
    """HiGHS on the model: ``optimal``, ``infeasible``, ``time limit`` (stopped without a
    proven optimum once the time was up), ``not solved`` (stopped without one before it) or
    ``solver error: <status>``."""
    solver = pulp.HiGHS(msg=False, timeLimit=time_limit_s)
    t0 = time.perf_counter()
    try:
        with quiet_stdout():
            m.prob.solve(solver)
    except pulp.PulpSolverError as exc:  # pragma: no cover - solver crash
        raise SolverError(f"HiGHS failed on {m.prob.name}: {exc}") from None
    elapsed_s = time.perf_counter() - t0
    status = pulp.LpStatus[m.prob.status]
    if m.prob.status == pulp.LpStatusOptimal and m.prob.sol_status == pulp.LpSolutionOptimal:
        return "optimal"
    if m.prob.status == pulp.LpStatusInfeasible:
        return "infeasible"
    if m.prob.sol_status in (pulp.LpSolutionIntegerFeasible,) or status == "Not Solved":
        # pulp reports HiGHS' time limit as "Not Solved": the clock tells the two apart.
        timed_out = time_limit_s is not None and elapsed_s >= 0.9 * time_limit_s
        return "time limit" if timed_out else "not solved"
    return f"solver error: {status}"


_ROW_NAMES = {
    "leaf_down_ports": "leaf down ports",
    "spine_ports": "spine ports",
    "spine_reach": "spine reach (k leaves per spine)",
    "core_ports": "core ports",
    "spine_up_ports": "pod spine up ports",
    "core_layer_for_two_pods": "core layer",
    "pods_only_if_used": "pods (k per core layer)",
    "router_endpoint_ports": "router endpoint ports",
    "router_ports": "router ports (k' + p <= k)",
    "global_ports": "global ports (g <= a*h + 1)",
    "endpoints": "endpoints >= N",
}


def binding_rows(m: FamilyProgram) -> str:
    """Names of the rows that hold with equality (slack 0), merged by family of rows."""
    names: list[str] = []
    for name, c in m.prob.constraints.items():
        if c.sense == pulp.LpConstraintEQ:
            continue
        if abs(solution_value(c)) > 1e-6:
            continue
        base = next(
            (v for kk, v in _ROW_NAMES.items() if name == kk or name.startswith(kk + "_")), None
        )
        if base is None:
            continue
        # a row of an unchosen design is slack by construction (0 <= 0): skip it
        if any(solution_value(var) != 0 for var in c.keys()) and base not in names:
            names.append(base)
    return ", ".join(names)
