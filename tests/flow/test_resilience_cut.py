"""``resilience``'s count of disconnected GPUs when a trial leaves fewer than two connected
(issue 11: 63 of 64 cables failed reported 0 disconnected GPUs)."""

from __future__ import annotations

from topo.builders import build
from topo.fabric import summarize
from topo.flow.failures import disconnected_terminals, fail
from topo.flow.resilience import resilience


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
