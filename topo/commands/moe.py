"""topo moe (being written)."""
