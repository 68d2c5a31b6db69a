"""User name patterns (``--hosts``, ``--hca-format``) are read whole before any name is built:
only their one integer field, no attribute or item of it, no width or precision past the
name's limit; a refusal quotes at most 80 characters of the pattern and allocates nothing
large."""

from __future__ import annotations

import tracemalloc

import pytest

from topo.errors import SpecError
from topo.export import check_hca_format, host_names
from topo.export.patterns import check_name_pattern

HOSTS = {"field": "node", "max_chars": 64, "param": "hosts", "noun": "host name"}
HCA = {"field": "index", "max_chars": 63, "param": "hca_format", "noun": "device name"}

LONG = "x" * 100_000 + "{node}"


@pytest.mark.parametrize(
    "pattern, fragments",
    [
        ("{node:>4000000000}", ["'{node:>4000000000}'", "width 4000000000", "at most 64"]),
        ("{node:30000000}", ["width 30000000", "a host name has at most 64 characters"]),
        ("gpu{node:0>65}", ["width 65", "at most 64"]),  # one past the limit
        ("{node:.4000000000f}", ["precision 4000000000", "at most 64"]),
        ("{node:>" + "9" * 5000 + "}", ["width of 5,000 digits", "at most 64"]),
        ("{node.__class__}", ["'{node.__class__}'", "attribute or item of {node}"]),
        ("{node.real}", ["'{node.real}'", "attribute or item"]),
        ("{node[0]}", ["'{node[0]}'", "attribute or item"]),
        ("gpu{rack}", ["one field {node}", "the field '{rack}'"]),
        ("gpu{}", ["one field {node}", "the field '{}'"]),
        ("gpu{0}", ["one field {node}", "the field '{0}'"]),
        ("{node!x}", ["conversion '!x'", "only !s, !r, !a"]),
        ("{node:>{node}}", ["'{node:>{node}}'", "a field in its format spec"]),
        ("{node:>{node.__class__}}", ["a field in its format spec"]),
        ("{node:q}", ["format spec 'q'", "mini-language"]),
        ("{node", ["one field {node}", "expected '}'"]),
        ("n{node}" + "{node!s:.0}" * 64, ["65 fields", "at most 64"]),
        # 20 + 20 + 30 characters at least: each part fits, the name does not
        ("a" * 20 + "{node:20}{node:30}", ["at least 70 characters", "at most 64"]),
        (LONG, ["(a string of 100,006 characters)", "at least 100000 characters"]),
    ],
)
def test_host_pattern_refused_in_one_short_line(pattern, fragments):
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as exc:
            host_names(list(range(32)), pattern)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(exc.value)
    assert exc.value.param == "hosts"
    assert message.startswith("hosts ") and "\n" not in message
    for f in fragments:
        assert f in message, (f, message)
    # a short excerpt of the pattern at most (80 characters of its repr, twice: the pattern
    # and the field), and no name was built: the largest allocation is the message's order
    assert len(message) < 400
    assert peak < 1_000_000


@pytest.mark.parametrize(
    "pattern, fragment",
    [
        ("mlx5_{index:>4000000000}", "width 4000000000; a device name has at most 63 characters"),
        ("mlx5_{index:30000000}", "width 30000000"),
        ("m{index:0>63}", "at least 64 characters; a device name has at most 63"),
        ("mlx5_{index.__class__}", "attribute or item of {index}"),
        ("mlx5_{index[0]}", "attribute or item of {index}"),
        ("mlx5_{node}", "the field '{node}'"),
        ("mlx5_{index!x}", "conversion '!x'"),
        ("mlx5_{index:>{index}}", "a field in its format spec"),
    ],
)
def test_hca_format_refused_before_any_name(pattern, fragment):
    tracemalloc.start()
    try:
        with pytest.raises(SpecError, match=r"^hca_format '") as exc:
            check_hca_format(pattern)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert exc.value.param == "hca_format"
    assert fragment in str(exc.value)
    assert peak < 1_000_000


@pytest.mark.parametrize(
    "pattern, names",
    [
        # names written out by hand: positions 0, 9, 10, 11 of 12 servers
        ("gpu{node:03d}", ["gpu000", "gpu009", "gpu010", "gpu011"]),
        ("n{node:_>4}", ["n___0", "n___9", "n__10", "n__11"]),
        ("h{node:x}", ["h0", "h9", "ha", "hb"]),
        ("h{node:#06b}", ["h0b0000", "h0b1001", "h0b1010", "h0b1011"]),
        ("r{node!s}", ["r0", "r9", "r10", "r11"]),
        ("{node:0>64}", ["0" * 64, "0" * 63 + "9", "0" * 62 + "10", "0" * 62 + "11"]),
    ],
)
def test_valid_host_patterns_name_as_python_formats(pattern, names):
    got = host_names(list(range(12)), pattern)
    assert [got[i] for i in (0, 9, 10, 11)] == names


def test_width_at_the_limit_is_a_name_of_the_limit():
    # exactly max_chars characters: accepted by both patterns
    check_name_pattern("{node:0>64}", **HOSTS)
    check_name_pattern("{index:0>63}", **HCA)
    check_hca_format("{index:0>63}")
    with pytest.raises(SpecError, match="width 64; a device name has at most 63"):
        check_name_pattern("{index:0>64}", **HCA)


def test_pattern_without_the_field_is_left_to_the_name_checks():
    # one server may be named without {node}; two cannot (the repeat check, not the pattern's)
    assert host_names([0], "login") == ["login"]
    with pytest.raises(SpecError, match="given to servers 0, 1"):
        host_names([0, 1], "login")
