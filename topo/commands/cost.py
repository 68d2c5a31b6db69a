"""topo cost (being written)."""
