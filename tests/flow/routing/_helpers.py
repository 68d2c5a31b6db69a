"""What the as-routed tests share: pair-units per arc, tiers of an arc, report equality."""

from __future__ import annotations

from topo.fabric import SWITCH_KINDS

NIC = 50e9  # B/s: a 400 Gb/s NIC or cable
GB200 = "topograph_dgx_gb200_ndr_superpod.out"


def counts(r) -> dict[tuple[str, str], float]:
    """Pair-units per directed arc: the load at the reported rate over that rate."""
    lam = r.pair_rate_Bps
    return {k: x / lam for k, x in r.link_load.items()}


def expected_counts(r) -> dict[tuple[str, str], float]:
    lam = r.pair_rate_Bps
    return {k: x / lam for k, x in r.routing.expected_link_load.items()}


def whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9


def tier_of(G, u, v) -> str:
    def lab(x):
        d = G.nodes[x]
        return (
            {1: "leaf", 2: "spine", 3: "core"}[d["tier"]]
            if d["kind"] in SWITCH_KINDS
            else d["kind"]
        )

    return f"{lab(u)}->{lab(v)}"


def same_report(a, b) -> None:
    da, db = a.to_dict(link_load=True), b.to_dict(link_load=True)
    da.pop("solve_seconds")
    db.pop("solve_seconds")
    assert da == db
    assert a.routing.expected_link_load == b.routing.expected_link_load
