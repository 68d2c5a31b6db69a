"""Spec files (examples/*.toml): every example builds, and bad files fail with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from topo.builders import build
from topo.errors import FormatError
from topo.fabric import summarize
from topo.spec import BUILD_KEYS, load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_deepseek_v3_example_is_the_papers_mpft():
    spec = load_spec(EXAMPLES / "deepseek-v3-mpft.toml")
    s = summarize(build(spec["family"], **{k: v for k, v in spec.items() if k in BUILD_KEYS}))
    # ISCA '25 Table 3, MPFT column.
    assert (s.endpoints, s.switches, s.links, s.planes) == (16384, 768, 16384, 8)


def test_training_cluster_example():
    # 2,048 GPUs = 256 nodes; per plane 256 endpoints on 8 leaves of 32, 4 spines (each leaf
    # has 32 uplinks, 8 cables to each spine): 8 x (8 + 4) = 96 switches, 8 x 256 links.
    spec = load_spec(EXAMPLES / "deepseek-v3-2048-mpft.toml")
    s = summarize(build(spec["family"], **{k: v for k, v in spec.items() if k in BUILD_KEYS}))
    assert (s.gpus, s.nodes, s.switches, s.links) == (2048, 256, 96, 2048)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_loads(path):
    spec = load_spec(path)
    assert spec["family"] in ("ft2", "ft3", "mrft", "mpft")
    assert set(spec) - {"family", "name", "description"} <= BUILD_KEYS


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('family = "mpft"\nswitch_ports = "64"\n', "switch_ports must be an integer"),
        ('family = "mpft"\nports = 64\n', "unknown key 'ports'"),
        ("switch_ports = 64\n", "missing key 'family'"),
        ('family = "mpft"\ngpus = true\n', "gpus must be"),
        ('family = "mpft\n', r"spec.toml:1: not valid TOML"),
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
