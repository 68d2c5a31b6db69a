"""``resilience``'s count of disconnected GPUs when a trial leaves fewer than two connected
(issue 11: 63 of 64 cables failed reported 0 disconnected GPUs)."""

from __future__ import annotations

from topo.builders import build
from topo.fabric import summarize
from topo.flow.failures.damage import disconnected_terminals, fail
from topo.flow.failures.resilience import resilience


def test_63_of_64_cables_failed_counts_the_cut_gpus() -> None:
    # 32 one-GPU servers on 8-port switches: 32 NIC cables + 32 leaf-spine links = 64 cables.
    G = build("ft2", switch_ports=8, gpus_per_node=1, nics_per_node=1)
    s = summarize(G)
    assert s.links + s.endpoint_links == 64
    r = resilience(G, trials=3, links=63, seed=0)
    # With one cable left, at most one server keeps a switch: at least 31 of the 32 GPUs are
    # cut off in every trial, and every trial is cut.
    assert r.trials_with_disconnected == 3
    assert 31 <= r.max_disconnected_gpus <= 32
    # The count is the one the failure set itself gives (the trials' seeds).
    worst = 0
    for s in r.trial_seeds:
        H, _ = fail(G, links=63, seed=s)
        worst = max(worst, len(disconnected_terminals(H)[1]))
    assert r.max_disconnected_gpus == worst


def _apart_by_hand(H) -> tuple[bool, bool]:
    """(some server is cut off: outside the graph's part with the most GPUs; two servers of
    that part reach no common component of the switches), written directly with networkx."""
    import networkx as nx

    from topo.fabric import SWITCH_KINDS

    gpus = lambda c: sum(H.nodes[v]["kind"] == "gpu" for v in c)  # noqa: E731
    kept = max(nx.connected_components(H), key=gpus)
    switches = [v for v, k in H.nodes(data="kind") if k in SWITCH_KINDS]
    comp = {s: i for i, c in enumerate(nx.connected_components(H.subgraph(switches))) for s in c}
    reach: dict[int, set[int]] = {}
    cut = False
    for v, d in H.nodes(data=True):
        if d["kind"] == "gpu" and v not in kept:
            cut = True
        if d["kind"] == "nic" and v in kept:
            reach.setdefault(d["node"], set()).update(comp[s] for s in H.adj[v] if s in comp)
    sets = [x for x in reach.values() if x]
    apart = any(not (x & y) for i, x in enumerate(sets) for y in sets[i + 1 :])
    return cut, apart


def test_a_trial_whose_servers_reach_no_common_switches_is_apart_not_cut_off() -> None:
    # A fresh-user trial: 40 of a 32-GPU ft2's 64 cables failed, 4 trials; one trial left every
    # server cabled, but the switches fell apart so that two servers reach no common part
    # (busbw 0). The table said "1 trial, up to 0 GPUs" cut off.
    G = build("ft2", switch_ports=8)
    r = resilience(G, trials=4, links=40, seed=0)
    expected_apart = expected_cut = 0
    for i, s in enumerate(r.trial_seeds):
        H, _ = fail(G, links=40, seed=s)
        cut, apart = _apart_by_hand(H)
        expected_cut += cut
        if apart and not cut:
            expected_apart += 1
            assert r.busbw_GBps[i] == 0.0
    assert expected_apart >= 1  # (the case this test is about occurs with these seeds)
    assert r.trials_apart == expected_apart
    assert r.trials_with_disconnected == expected_cut
    assert r.exact_trials == 4 and r.to_dict()["trials_apart"] == expected_apart
