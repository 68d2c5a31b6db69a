"""A hostlist expander written from Slurm's man pages (topology.conf(5): "tux[0-3,12,18-20]"),
independent of topo's writer: ``prefix[a-b,c]suffix`` groups, comma-separated, nested
brackets not used."""

from __future__ import annotations

import re

_GROUP = re.compile(r"([^,\[]*)(?:\[([^\]]*)\])?([^,\[]*)")


def expand(hostlist: str) -> list[str]:
    names: list[str] = []
    pos = 0
    while pos < len(hostlist):
        m = _GROUP.match(hostlist, pos)
        assert m and m.end() > pos, hostlist[pos:]
        prefix, ranges, suffix = m.groups()
        if ranges is None:
            names.append(prefix + suffix)
        else:
            for part in ranges.split(","):
                lo, _, hi = part.partition("-")
                hi = hi or lo
                width = len(lo) if lo.startswith("0") else 0
                names += [f"{prefix}{i:0{width}d}{suffix}" for i in range(int(lo), int(hi) + 1)]
        pos = m.end() + 1  # the comma
    return names
