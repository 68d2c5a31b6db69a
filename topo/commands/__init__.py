"""One module per ``topo`` verb beyond build/import/bandwidth/plot; importing registers it."""

from topo.commands import collective, cost, moe, resilience  # noqa: F401
