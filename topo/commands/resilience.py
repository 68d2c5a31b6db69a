"""topo resilience (being written)."""
