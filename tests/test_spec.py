"""Spec files (examples/*.toml): every example builds, and bad files fail with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from topo.builders import build
from topo.errors import FormatError, SpecError
from topo.fabric import summarize
from topo.spec import BUILD_KEYS, FabricSpec, ServerSpec, SwitchSpec, load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_deepseek_v3_example_is_the_papers_mpft():
    s = summarize(build(load_spec(EXAMPLES / "deepseek-v3-mpft.toml")))
    # ISCA '25 Table 3, MPFT column.
    assert (s.endpoints, s.switches, s.links, s.planes) == (16384, 768, 16384, 8)


def test_training_cluster_example():
    # 2,048 GPUs = 256 nodes; per plane 256 endpoints on 8 leaves of 32, 4 spines (each leaf
    # has 32 uplinks, 8 cables to each spine): 8 x (8 + 4) = 96 switches, 8 x 256 links.
    s = summarize(build(load_spec(EXAMPLES / "deepseek-v3-2048-mpft.toml")))
    assert (s.gpus, s.nodes, s.switches, s.links) == (2048, 256, 96, 2048)


# examples/sweep-*.toml are sweep specs (docs/sweep.md), loaded in tests/engine/test_sweep.py;
# examples/jobs-*.toml are job files (docs/place.md), loaded below
BUILD_EXAMPLES = sorted(
    p for p in EXAMPLES.glob("*.toml") if not p.name.startswith(("sweep-", "jobs-"))
)
JOB_EXAMPLES = sorted(EXAMPLES.glob("jobs-*.toml"))


@pytest.mark.parametrize("path", BUILD_EXAMPLES, ids=lambda p: p.name)
def test_every_example_loads(path):
    spec = load_spec(path)
    assert spec.family in ("ft2", "ft3", "mrft", "mpft")
    assert set(spec.to_options()) - {"family", "name", "description"} <= BUILD_KEYS


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_every_job_example_loads(path):
    from topo.place.read import read_jobs

    jobs = read_jobs(path)
    assert jobs and all(j.name for j in jobs)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('family = "mpft"\nswitch_ports = "64"\n', "switch_ports must be an integer"),
        ('family = "mpft"\nports = 64\n', "unknown key 'ports'"),
        ("switch_ports = 64\n", "missing key 'family'"),
        ('family = "mpft"\ngpus = true\n', "gpus must be"),
        ('family = "mpft\n', r"spec.toml:1:15: not valid TOML"),
    ],
)
def test_bad_spec_files(tmp_path, text, match):
    path = tmp_path / "spec.toml"
    path.write_text(text)
    with pytest.raises(FormatError, match=match):
        load_spec(path)


def test_missing_spec_file(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        load_spec(tmp_path / "nope.toml")


def test_spec_file_values_become_the_spec_and_overrides_win(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('family = "ft2"\nswitch_ports = 8\ngpus = 16\nname = "lab"\n')
    spec = load_spec(path)
    assert spec == FabricSpec("ft2", SwitchSpec(ports=8), gpus=16, name="lab")
    assert load_spec(path, gpus=32, link_gbps=None).gpus == 32
    assert build(spec).graph["name"] == "lab"


def test_spec_file_value_errors_name_the_file_and_the_parameter(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('family = "ft3"\noversubscription = 3\n')
    with pytest.raises(SpecError, match=r"^.*spec.toml: oversubscription must be 1 for ft3") as e:
        load_spec(path)
    assert e.value.param == "oversubscription"


@pytest.mark.parametrize(
    ("make", "param", "match"),
    [
        (lambda: SwitchSpec(ports=7), "switch_ports", "switch_ports must be an even number"),
        (lambda: SwitchSpec(ports=64.0), "switch_ports", "switch_ports must be a whole number"),
        (lambda: SwitchSpec(link_gbps=0), "link_gbps", "link_gbps must be a positive number"),
        (lambda: ServerSpec(gpus=0), "gpus_per_node", "gpus_per_node must be from 1 to 1024"),
        (lambda: ServerSpec(nics=3), "nics_per_node", r"nics_per_node \(3\) must divide"),
        (lambda: ServerSpec(pcie_GBps=1e9), "pcie_GBps", "pcie_GBps must be between"),
        (lambda: FabricSpec("torus"), "family", "unknown family 'torus'"),
        (lambda: FabricSpec("ft2", q=5), "q", "ft2 takes no option q"),
        (lambda: FabricSpec("ft2", gpus=12), "gpus", r"multiple of gpus_per_node \(8\), got 12"),
        (lambda: FabricSpec("ft3", oversubscription=3), "oversubscription", "must be 1 for ft3"),
        (lambda: FabricSpec("ft2", oversubscription=2), "oversubscription", "whole number"),
        (lambda: FabricSpec("dragonfly", groups=2.5), "groups", "groups must be a whole number"),
        (lambda: FabricSpec("dragonfly", global_ports=0), "global_ports", "at least 1, got 0"),
        (lambda: FabricSpec("dragonfly", arrangement="x"), "arrangement", "unknown arrangement"),
    ],
)
def test_specs_check_themselves(make, param, match):
    with pytest.raises(SpecError, match=match) as e:
        make()
    assert e.value.param == param


def test_fabric_spec_derived_sizes_and_flat_options():
    # 64-port leaf at 3:1: 16 up, 48 down ports.
    spec = FabricSpec("mpft", SwitchSpec(64, 200), ServerSpec(8, 4), oversubscription=3)
    assert (spec.up_ports, spec.down_ports, spec.planes, spec.rails) == (16, 48, 4, 1)
    assert FabricSpec("mrft", server=ServerSpec(8, 2)).rails == 2
    flat = spec.to_options()
    assert flat == dict(
        family="mpft",
        switch_ports=64,
        link_gbps=200.0,
        gpus_per_node=8,
        nics_per_node=4,
        nvlink_GBps=200.0,
        pcie_GBps=64.0,
        oversubscription=3.0,
    )
    assert FabricSpec.from_options(**flat) == spec
    assert spec.replace(gpus=64).gpus == 64 and spec.gpus is None
    df = FabricSpec.from_options("dragonfly", groups=3, q=None, arrangement="palmtree")
    assert df.options == {"arrangement": "palmtree", "groups": 3}


# -- issue 11: spec files' errors name their keys; oversized numbers are refused -------------


def test_a_spec_files_error_names_its_key(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('family = "ft2"\ngpus = 12\ngpus_per_node = 8\n')
    with pytest.raises(SpecError, match=r"s.toml: gpus must be a positive multiple") as exc:
        load_spec(path)
    assert exc.value.names == ()  # nothing for a front end to respell as its options
    with pytest.raises(SpecError) as exc:
        load_spec(path, gpus_per_node=5)
    assert exc.value.names == ("gpus_per_node",)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('family = "ft2"\nswitch_ports = ' + "6" * 4301 + "\n",
         r"s.toml:2: a number of 4,301 digits: numbers in input files have at most 100 digits"),
        ('family = "ft2"\nlink_gbps = inf\n', r"link_gbps must be a positive number"),
        ('family = "ft2"\nlink_gbps = nan\n', r"link_gbps must be a positive number"),
        ('family = "ft2"\nswitch_ports = -8\n', r"switch_ports must be an even number"),
    ],
)  # fmt: skip
def test_absurd_numbers_in_a_spec_file_are_refused(tmp_path: Path, text: str, match: str):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises((FormatError, SpecError), match=match):
        load_spec(path)


def test_spec_without_family_names_every_family(tmp_path):
    from topo.spec import FAMILIES

    p = tmp_path / "s.toml"
    p.write_text("switch_ports = 8\n")
    with pytest.raises(FormatError) as exc:
        load_spec(p)
    assert all(f in str(exc.value) for f in FAMILIES)
