"""topo collective (being written)."""
