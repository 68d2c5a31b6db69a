"""Tests of topo.plot.text: the words and numbers on the figures, worked by hand.

A 400G cable carries 400e9 bit/s = 50e9 B/s per direction: ``400 Gb/s (50 GB/s)``.
"""

from __future__ import annotations

from topo.plot.text import (
    cables,
    members_text,
    note_annotation,
    num,
    rate,
    rgba,
    short_text,
    wrap,
)


def test_rates_read_in_gbit_and_gbyte_per_second() -> None:
    assert rate(50e9) == "400 Gb/s (50 GB/s)"
    assert rate(400e9) == "3,200 Gb/s (400 GB/s)"  # NVLink, H800 default x 2
    assert rate(32 * 50e9) == "12,800 Gb/s (1,600 GB/s)"
    assert rate(64e9) == "512 Gb/s (64 GB/s)"


def test_numbers_cables_and_colours() -> None:
    assert (num(12800.0), num(1234.56), num(2 / 3), num(0.125)) == (
        "12,800",
        "1,234.6",
        "0.667",
        "0.125",
    )
    assert (cables(1), cables(2), cables(2048)) == ("1 cable", "2 cables", "2,048 cables")
    assert rgba("#1f77b4", 0.45) == "rgba(31,119,180,0.45)"


def test_what_a_marker_stands_for() -> None:
    leaf_group = {"leaf": 1, "nic": 32, "gpu": 32, "nodes": 32}
    assert members_text(leaf_group) == "1 leaf, 32 NICs, 32 GPUs of 32 nodes"
    assert members_text({"spine": 32, "nodes": 0}) == "32 spines"
    assert members_text({"core": 1, "nodes": 0}) == "1 core switch"
    assert members_text({"switch": 2, "nic": 4, "nodes": 1}) == "2 switches, 4 NICs of 1 node"
    # In a few words: the GPUs first, else the NICs, else the switches.
    assert short_text({"leaf": 64, "nic": 2048, "gpu": 2048}) == "2,048 GPUs"
    assert short_text({"switch": 1, "nic": 4}) == "4 NICs"
    assert short_text({"spine": 32, "nodes": 0}) == "32 spines"
    assert short_text({}) == ""


def test_notes_wrap_at_their_separators() -> None:
    # "a; b" is 4 characters: it fits in 4; "c" then starts a line of its own.
    assert wrap("a; b; c", 4) == "a; b<br>c"
    assert wrap("a; b; c", 7) == "a; b; c"
    annotation, lines = note_annotation("; ".join(["x" * 100, "y" * 100]))
    assert lines == 2 and annotation["text"] == "x" * 100 + "<br>" + "y" * 100
    assert (annotation["xref"], annotation["yref"], annotation["yanchor"]) == (
        "paper",
        "paper",
        "bottom",
    )
