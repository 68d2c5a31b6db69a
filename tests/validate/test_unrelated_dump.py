"""A dump of another fabric is refused before any LP (a fresh-user trial: ``topo validate`` of
a 2,048-GPU ft2 against the GB200 SuperPOD's dump ran for more than 6 minutes, one LP per
"defect"; it now stops in about 2 s)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from formats._real import real_file
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.errors import TopoError
from topo.fabric import save
from topo.formats import import_ibnetdiscover, read_ibnetdiscover, write_ibnetdiscover
from topo.validate import validate

SMALL = dict(switch_ports=8, gpus_per_node=2, nics_per_node=2)  # 32 GPUs, 64 cables


def test_an_unrelated_dump_is_refused_naming_the_share(tmp_path: Path) -> None:
    dump_path = real_file("ibnetdiscover", "topograph_dgx_gb200_ndr_superpod.out")
    design = build("ft2", gpus=128)
    dump = import_ibnetdiscover([dump_path])
    with pytest.raises(TopoError, match=r": not a dump of this design: [\d,]+ of its 1,074 "):
        validate(design, dump, dump_name=str(dump_path))
    path = tmp_path / "f.json"
    save(design, path)
    r = CliRunner().invoke(app, ["validate", str(path), str(dump_path)])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"topo: error: {dump_path}: not a dump of this design: ")
    assert "(the design has 256); topo validate compares from 25%" in line
    # the library compares it all the same when asked to (listing only, no LP per defect)
    report = validate(design, dump, cost=False, min_matched=0)
    assert len(report.defects) > 256


def _partly_built(tmp_path: Path, hosts: float, fabric: float = 1.0) -> nx.Graph:
    """The design with only the first ``hosts`` share of its host cables plugged in and the
    first ``fabric`` share of its leaf-spine cables."""
    G = build("ft2", **SMALL)
    for kind, share in (("endpoint", hosts), ("fabric", fabric)):
        cables = [(u, v) for u, v, k in G.edges(data="kind") if k == kind]
        G.remove_edges_from(cables[round(share * len(cables)) :])
    path = tmp_path / f"built{hosts}-{fabric}.net"
    path.write_text(write_ibnetdiscover(G))
    return read_ibnetdiscover(path)


def test_a_fabric_being_built_is_compared_until_barely_begun(tmp_path: Path) -> None:
    design = build("ft2", **SMALL)  # 16 servers of 2 NICs: 32 host and 32 leaf-spine cables
    # Half the host cables in: 16 + 32 = 48 of 64 cables as designed (75%): compared; the
    # 8 servers without a cable are missing hosts.
    report = validate(design, _partly_built(tmp_path, 0.5), cost=False)
    assert [d.kind for d in report.defects] == ["missing_host"] * 8
    # No host cable in: 32 of 64 (50%), still compared.
    assert len(validate(design, _partly_built(tmp_path, 0.0), cost=False).defects) == 16
    # No host cable and 8 of the 32 leaf-spine cables: 8 of 64 (12%), below a quarter.
    with pytest.raises(TopoError, match=r"8 of its 8 cables are as designed, 12% of the larger"):
        validate(design, _partly_built(tmp_path, 0.0, 0.25), cost=False)
