"""The error hierarchy: errors name the Python parameter at fault and render it for a front end."""

from __future__ import annotations

import pickle

import networkx as nx
import pytest

from topo.errors import FormatError, SpecError, TopoError


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def test_render_spells_each_named_parameter_once():
    e = SpecError(
        "nics_per_node (3) must divide gpus_per_node (8) so every NIC serves the same number",
        param="nics_per_node",
        names=("nics_per_node", "gpus_per_node"),
    )
    assert e.param == "nics_per_node"
    assert e.render(flag) == (
        "--nics-per-node (3) must divide --gpus-per-node (8) so every NIC serves the same number"
    )
    # Only the first whole-word occurrence: q = 4w + δ stays mathematics.
    q = SpecError("q must be at least 3 with q mod 4 in 0, 1, 3 (q = 4w + δ), got 6", param="q")
    assert q.render(flag) == "--q must be at least 3 with q mod 4 in 0, 1, 3 (q = 4w + δ), got 6"
    # gpus is not found inside gpus_per_node; a name spelled None stays as it is.
    g = SpecError("gpus_per_node x; gpus must", param="gpus", names=("gpus", "gpus_per_node"))
    assert g.render({"gpus": "--gpus"}.get) == "gpus_per_node x; --gpus must"


def test_names_default_to_the_parameter_or_none():
    assert SpecError("x must", param="x").names == ("x",)
    assert SpecError("oversubscription 2 does not", param="oversubscription", names=()).names == ()
    assert TopoError("plain").render(flag) == "plain" and TopoError("plain").param is None


def test_prefixed_and_renamed_keep_type_and_parameter():
    e = SpecError("groups must be from 1 to 513, got 0", param="groups")
    p = e.prefixed("spec.toml: ")
    assert isinstance(p, SpecError) and str(p) == "spec.toml: groups must be from 1 to 513, got 0"
    assert p.param == "groups" and str(e) == "groups must be from 1 to 513, got 0"
    r = e.renamed("groups", "dragonfly_groups")
    assert isinstance(r, SpecError) and r.param == "dragonfly_groups"
    assert r.render(flag) == "--dragonfly-groups must be from 1 to 513, got 0"
    assert e.renamed("q", "other") is e


def test_parameter_survives_pickling():
    e = pickle.loads(pickle.dumps(SpecError("switch_ports must", param="switch_ports")))
    assert isinstance(e, SpecError) and e.param == "switch_ports"


def test_format_error_names_file_and_line():
    e = FormatError("f.toml", "not valid TOML", line=3)
    assert str(e) == "f.toml:3: not valid TOML" and e.message == "not valid TOML"
    with pytest.raises(TopoError):
        raise e
    back = pickle.loads(pickle.dumps(e))
    assert (str(back), back.path, back.line) == ("f.toml:3: not valid TOML", "f.toml", 3)


def test_format_error_names_the_column_too():
    # The file:line:column form of compilers; pickling keeps the column.
    e = FormatError("t.json", "not JSON: Expecting value", line=1, column=31)
    assert str(e) == "t.json:1:31: not JSON: Expecting value" and e.column == 31
    back = pickle.loads(pickle.dumps(e))
    assert (str(back), back.line, back.column) == (str(e), 1, 31)
    assert FormatError("t.json", "x", column=3).column is None  # a column needs a line


def test_parse_json_and_toml_errors_name_line_and_column(tmp_path) -> None:
    from topo.fabric import load
    from topo.files import parse_json
    from topo.spec import load_spec

    # '{"a": [1,' ends at column 9; the parser wants a value at column 10.
    with pytest.raises(FormatError, match=r"^x.json:1:10: not JSON: Expecting value$"):
        parse_json("x.json", '{"a": [1,')
    # A truncated fabric on two lines: line 2 has 12 characters, the next is column 13.
    path = tmp_path / "t.json"
    path.write_text('{"nodes": [\n {"id": "a",')
    with pytest.raises(FormatError, match=r"t.json:2:13: not JSON: Expecting property name"):
        load(path)
    # TOML: line 3, column 2 (the 'x' no value can start with).
    spec = tmp_path / "s.toml"
    spec.write_text('family = "ft2"\nswitch_ports = [64,\n x')
    with pytest.raises(FormatError, match=r"s.toml:3:2: not valid TOML: Invalid value"):
        load_spec(spec)


# -- library entry points refuse what is not a fabric -------------------------------------------


@pytest.mark.parametrize("bad", [None, "mpft.json", nx.DiGraph(), nx.MultiGraph()])
def test_flow_entry_points_refuse_what_is_not_a_fabric(bad) -> None:
    from topo.flow import alltoall_bandwidth, routed_alltoall

    for call in (lambda: alltoall_bandwidth(bad), lambda: routed_alltoall(bad, "dmodk")):
        with pytest.raises(TopoError, match="must be a fabric: an undirected networkx.Graph"):
            call()


@pytest.mark.parametrize("seed", [-1, 1.5, float("nan"), True, "3"])
def test_routed_seeds_are_whole_numbers(seed) -> None:
    from topo.builders import build
    from topo.flow import routed_alltoall

    with pytest.raises(TopoError, match="seed must be a whole number >= 0"):
        routed_alltoall(build("ft2", switch_ports=4), "ecmp", seed=seed)
