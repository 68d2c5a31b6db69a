"""One module per ``topo`` verb beyond build/import/bandwidth/plot; importing registers it."""
