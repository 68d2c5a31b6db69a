"""The layers of docs/architecture.md hold: imports go downward, never to a private name, no cycle.

Every ``import``/``from ... import`` in topo/ is read from the source (module level and inside
functions alike), so a lazy import cannot hide an upward dependency or a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1] / "topo"

# docs/architecture.md, "Layers": a package may import only from lower layers (and itself).
LAYERS: dict[str, int] = {
    "errors": 0,
    "units": 0,
    "interrupts": 0,
    "wording": 0,
    "runtime": 0,
    "files": 1,
    "fabric": 2,
    "spec": 3,
    "formats": 3,
    "traffic": 3,
    "builders": 4,
    "catalog": 4,
    "flow": 4,
    "collective": 5,
    "moe": 5,
    "cost": 5,
    "export": 5,
    "validate": 5,
    "plot": 6,
    "engine": 6,
    "place": 6,
    "diagnose": 6,
    "acceptance": 6,
    "cli_common": 7,
    "commands": 8,
    "cli": 9,
    "console": 10,
}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every topo import in a file."""
    out = []
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("topo")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith("topo"):
                out.append((target, [a.name for a in node.names], node.lineno))
    return out


FILES = sorted(ROOT.rglob("*.py"))
EDGES = [(p, _module(p), *imp) for p in FILES for imp in _imports(p)]


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_package_has_a_layer():
    packages = {_package(_module(p)) for p in FILES} - {""}
    assert packages <= set(LAYERS), (
        f"add to LAYERS and docs/architecture.md: {packages - set(LAYERS)}"
    )


@pytest.mark.parametrize("path, importer, target, names, line", EDGES, ids=lambda x: "")
def test_imports_go_downward(path, importer, target, names, line):
    src, dst = _package(importer), _package(target)
    if dst in ("", src):
        return
    assert LAYERS[dst] < LAYERS[src], (
        f"{path.relative_to(ROOT.parent)}:{line}: {src} (layer {LAYERS[src]}) imports "
        f"{target} (layer {LAYERS[dst]}): layers import downward only"
    )


def test_no_private_names_across_modules():
    bad = [
        f"{p.relative_to(ROOT.parent)}:{line}: {target}.{n}"
        for p, importer, target, names, line in EDGES
        for n in names
        if n.startswith("_") and not n.startswith("__") and target != importer
    ]
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


def test_no_import_cycles():
    modules = {_module(p) for p in FILES}
    G = nx.DiGraph()
    for _, importer, target, names, _line in EDGES:
        # "from topo.flow import alltoall" imports a submodule, not the package body.
        subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]
        for t in subs or [target]:
            if t in modules and t != importer:
                G.add_edge(importer, t)
        # a package's __init__ that re-exports its own submodules is not a cycle with them
    cycles = [c for c in nx.simple_cycles(G) if not _reexport_only(c)]
    assert not cycles, f"import cycles: {cycles[:5]}"


def _reexport_only(cycle: list[str]) -> bool:
    """A cycle through a package and its own submodules only via the package's re-exports."""
    return len({m.rsplit(".", 1)[0] if m.count(".") > 1 else m for m in cycle}) == 1 and any(
        (ROOT.parent / Path(*m.split(".")) / "__init__.py").exists() for m in cycle
    )


# docs/architecture.md, "Flow": a reader enters flow/ at its door (topo/flow/door.py) or at a
# sub-package's face (its __init__); no module lies more than FLOW_MAX_DEPTH imports below the
# entry it is read from (a chain stops at the next entry, read from there), none is longer than
# FLOW_MAX_LINES lines, and callers outside flow/ come in only by the door or a face.
FLOW_DOOR = "topo.flow.door"
FLOW_MAX_DEPTH = 4
FLOW_MAX_LINES = 800
FLOW_FILES = {_module(p): p for p in FILES if _module(p).startswith("topo.flow")}
FLOW_ENTRIES = {FLOW_DOOR} | {m for m, p in FLOW_FILES.items() if p.name == "__init__.py"}


def _flow_graph() -> nx.DiGraph:
    """Intra-flow imports, module to module (a submodule named in ``from pkg import sub``)."""
    G = nx.DiGraph()
    G.add_nodes_from(FLOW_FILES)
    for _, importer, target, names, _line in EDGES:
        if importer not in FLOW_FILES:
            continue
        subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in FLOW_FILES]
        G.add_edges_from((importer, t) for t in subs or [target] if t in FLOW_FILES)
    G.remove_edges_from(nx.selfloop_edges(G))
    return G


def _depths(G: nx.DiGraph, entry: str) -> dict[str, tuple[int, list[str]]]:
    """Longest import chain from ``entry`` to each module it reaches without passing another
    entry: module -> (levels below the entry, the chain)."""
    best: dict[str, tuple[int, list[str]]] = {entry: (0, [entry])}
    stack = [entry]
    while stack:
        u = stack.pop()
        depth, chain = best[u]
        if depth > 2 * len(FLOW_FILES):  # (a cycle: test_no_import_cycles names it)
            break
        for v in G.successors(u):
            if v in FLOW_ENTRIES or v in chain:
                continue
            if v not in best or best[v][0] < depth + 1:
                best[v] = (depth + 1, [*chain, v])
                stack.append(v)
    return best


def test_flow_door_exists_and_every_flow_module_is_reached_from_an_entry():
    G = _flow_graph()
    assert FLOW_DOOR in FLOW_FILES
    reached = set().union(*(_depths(G, e) for e in FLOW_ENTRIES))
    assert reached == set(FLOW_FILES), f"not below any door or face: {set(FLOW_FILES) - reached}"


def test_no_flow_module_is_more_than_4_imports_below_its_door():
    G = _flow_graph()
    deep = [
        " -> ".join(chain)
        for e in sorted(FLOW_ENTRIES)
        for depth, chain in _depths(G, e).values()
        if depth > FLOW_MAX_DEPTH
    ]
    assert not deep, f"more than {FLOW_MAX_DEPTH} imports below the door:\n" + "\n".join(deep)


def test_no_flow_module_is_over_800_lines():
    long = {m: n for m, p in FLOW_FILES.items() if (n := len(p.read_text().splitlines())) > 800}
    assert not long, f"flow modules over {FLOW_MAX_LINES} lines: {long}"


def test_callers_outside_flow_enter_by_the_door_or_a_face():
    bad = [
        f"{p.relative_to(ROOT.parent)}:{line}: {target}"
        for p, importer, target, names, line in EDGES
        if target.startswith("topo.flow")
        and not importer.startswith("topo.flow")
        and target not in FLOW_ENTRIES
        and not all(f"{target}.{n}" in FLOW_ENTRIES for n in names or ["?"])
    ]
    assert not bad, "flow internals imported from outside flow/:\n" + "\n".join(bad)
