"""``topo export ibnetdiscover`` of an imported fabric: the fabric file keeps which devices are
cabled, not the dump's port numbers or GUIDs, so the file written numbers them by rule (the CA
names are the dump's). As ``topo export cabling`` does, it is refused without
``--assign-ports`` (a fresh user's trial) and written with a warning with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.formats._real import real_file
from topo.builders import build
from topo.cli import app
from topo.errors import SpecError
from topo.export import ExportOptions, export
from topo.fabric import save
from topo.formats import read_ibnetdiscover
from topo.formats.netfile import write_ibnetdiscover

DUMP = ("ibnetdiscover", "loginoff_fdr10_sx6036.topo")  # 8 SX6036 switches, 144 CAs


def run(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def host_ports(text: str) -> dict[tuple[str, str], tuple[int, str]]:
    """(switch description, host) -> (the switch's port, the CA's description), read from the
    Switch records of an ibnetdiscover file (each host here has one CA)."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    switch = None
    for line in text.splitlines():
        m = re.match(r'^Switch\s+\d+\s+"S-[0-9a-f]+"\s+#\s+"([^"]*)"', line)
        if m:
            switch = m[1]
            continue
        if not line.strip():
            switch = None
            continue
        m = re.match(r'^\[(\d+)\]\s+"H-[0-9a-f]+"\[\d+\]\S*\s+#\s+"([^"]*)"', line)
        if switch is not None and m:
            found[switch, m[2].split()[0]] = (int(m[1]), m[2])
    return found


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    dump = real_file(*DUMP)
    G = read_ibnetdiscover(dump)
    path = tmp_path_factory.mktemp("imported") / "f.json"
    save(G, path)
    return dump, G, path


def test_the_file_would_renumber_the_dump(imported) -> None:
    """Why the refusal: the same cables and CA names, other port numbers than the dump's."""
    dump, G, _ = imported
    theirs = host_ports(dump.read_text())
    ours = host_ports(write_ibnetdiscover(G))
    assert len(theirs) == 144 and set(ours) == set(theirs)
    moved = [k for k in theirs if ours[k][0] != theirs[k][0]]
    renamed = [k for k in theirs if ours[k][1] != theirs[k][1]]
    # the CA names are the dump's (they were renamed mlx5_<CA port>, mlx5_1 for every CA)
    assert moved and not renamed
    # the dump's ib5 has "stage114 mlx4_0" on port 1; the rule puts it on port 18, same name
    key = ("MF0;ib5:SX6036/U1", "stage114")
    assert theirs[key] == (1, "stage114 mlx4_0") and ours[key] == (18, "stage114 mlx4_0")


def test_cli_refuses_it_without_assign_ports_and_writes_nothing(imported, tmp_path) -> None:
    _, _, path = imported
    out = tmp_path / "f.net"
    r = run("export", "ibnetdiscover", path, "-o", out)
    assert r.exit_code == 1 and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("topo: error: an imported fabric as an ibnetdiscover dump: ")
    assert "port numbers" in lines[0] and "give --assign-ports to write it anyway" in lines[0]
    assert not out.exists()


def test_with_assign_ports_it_is_written_with_a_warning(imported, tmp_path) -> None:
    _, G, path = imported
    out = tmp_path / "f.net"
    r = run("export", "ibnetdiscover", path, "-o", out, "--assign-ports")
    assert r.exit_code == 0, r.output
    assert out.read_text() == write_ibnetdiscover(G)
    assert "topo: warning: the dump written: its port numbers" in r.stderr
    assert "assigned by rule" in r.stderr


def test_library_refuses_it_without_assign_ports(imported) -> None:
    _, G, _ = imported
    with pytest.raises(SpecError) as exc:
        export(G, "ibnetdiscover")
    assert exc.value.param == "assign_ports"
    done = export(G, "ibnetdiscover", ExportOptions(assign_ports=True))
    assert done.text == write_ibnetdiscover(G) and len(done.warnings) == 1


def test_a_built_fabric_needs_no_assign_ports(tmp_path: Path) -> None:
    G = build("mpft", switch_ports=8)
    done = export(G, "ibnetdiscover")
    assert done.text == write_ibnetdiscover(G) and done.warnings == ()
