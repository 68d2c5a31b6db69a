"""cli_common.json_text writes what json.dumps(obj, indent=2) writes, character for character."""

from __future__ import annotations

import json
import random
from enum import Enum, IntEnum
from typing import Any

import numpy as np
import pytest

from topo.cli_common import json_text


class _Word(str, Enum):
    a = "x"


class _Level(IntEnum):
    one = 1


_LEAVES: list[Any] = [
    *(1, -3, 0, 2**70, 0.1, 1e-300, -0.0, 1.5e22, float("nan"), float("inf"), -float("inf")),
    *(True, False, None, 'é\n"x\\', "", "abc", "\u2603\t"),
    *(np.float64(0.3), _Level.one, _Word.a, (), [], {}),
]
_KEYS: list[Any] = ["k", "é", 1, 2.5, True, None, False, "a\tb", float("nan")]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 3 or r < 0.45:
        return rng.choice(_LEAVES)
    if r < 0.7:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if r < 0.8:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    return {
        (rng.choice(_KEYS) if rng.random() < 0.3 else f"k{i}"): _random_value(rng, depth + 1)
        for i in range(rng.randint(0, 4))
    }


def test_json_text_is_json_dumps_with_indent_2() -> None:
    rng = random.Random(13)
    for _ in range(3000):
        obj = _random_value(rng)
        assert json_text(obj) == json.dumps(obj, indent=2)


def test_a_report_shaped_object() -> None:
    obj = {
        "fabric": "ft3",
        "gpus": 65536,
        "exact": True,
        "bounds": None,
        "bottleneck_links": [
            {"source": f"node{i}/nic0", "tier": "nic->leaf", "load_GBps": 50.0 / 3}
            for i in range(3)
        ],
        "reductions": ["a", "b"],
        "tiers": {"nic->leaf": 2},
    }
    assert json_text(obj) == json.dumps(obj, indent=2)


def test_long_lists_of_records() -> None:
    # Lists of 64 or more dicts are written column by column (cli_common._json_records):
    # the same text as json.dumps, whatever the columns hold, and the general writer where
    # they are not records.
    rng = random.Random(5)
    specials = [float("nan"), float("inf"), -float("inf"), -0.0, 1e-300, 0.1]
    columns: dict[str, Any] = {
        "source": lambda i: f"node{i}/nic0",
        "pct%s%d": lambda i: rng.choice(specials),
        'q"\\é': lambda i: i * 7 - 100,
        "flag": lambda i: rng.choice([True, False, None]),
        "mixed": lambda i: rng.choice([1, 2.5, "x", None, True]),
    }
    records = [{k: f(i) for k, f in columns.items()} for i in range(200)]
    assert json_text({"links": records}) == json.dumps({"links": records}, indent=2)
    assert json_text(tuple(records)) == json.dumps(tuple(records), indent=2)
    odd = [dict(r) for r in records]
    odd[100] = dict(reversed(list(odd[100].items())))  # keys in another order
    odd[150]["source"] = np.float64(2.0)  # a float subclass
    odd[170]["mixed"] = [1, {"a": 2}]  # not a scalar
    assert json_text(odd) == json.dumps(odd, indent=2)
    with pytest.raises(TypeError):
        json_text([*records, {**records[0], "source": object()}])


@pytest.mark.parametrize("obj", [{"a": object()}, {(1, 2): 3}, [1, {2, 3}], [np.int64(5)]])
def test_what_json_cannot_hold_is_refused_alike(obj: Any) -> None:
    with pytest.raises(TypeError):
        json.dumps(obj, indent=2)
    with pytest.raises(TypeError):
        json_text(obj)


def test_a_circular_reference_is_refused() -> None:
    loop: list[Any] = []
    loop.append({"again": loop})
    with pytest.raises(ValueError, match="Circular reference"):
        json_text(loop)


def _records(rng: random.Random, value: Any, n: int = 100) -> list[dict[str, Any]]:
    return [
        {
            "source": f"pod{i % 7}/leaf{i}",
            "escaped": rng.choice(['a"b', "c\\d", "t\tn\nr\r", "\x00\x1f\x08\x0c", "/", ""]),
            "capacity_GBps": rng.choice([50.0, 1e-4, 0.0, -0.0, 1e16, 1.5e300, 49.99999999999999]),
            "load_GBps": rng.uniform(1e-4, 1e-3) * 10 ** rng.randint(0, 30),
            "cables": rng.choice([1, 0, -(2**63), 2**64 - 1]),
            "flag": rng.choice([True, False, None, 3, 2.5, "x"]),
            "value": value,
        }
        for i in range(n)
    ]


def test_records_orjson_can_write_are_written_by_it_alike() -> None:
    # Records whose every value orjson writes as json.dumps does go through orjson
    # (_orjson_records); at any depth the text is json.dumps's, character for character.
    from topo.cli_common import _orjson_records

    rng = random.Random(7)
    for value in (0.25, -5e-324, 1e-10, -3.5e-100, 1e300):  # (exponents of 2+ digits: alike)
        records = _records(rng, value)
        assert _orjson_records(records, "\n  ") is not None
        for obj in (records, {"links": records}, [{"a": {"b": records}}], tuple(records)):
            assert json_text(obj) == json.dumps(obj, indent=2)
    # None beside floats: the floats are looked at one by one (null is either)
    records = _records(rng, None)
    assert _orjson_records(records, "\n  ") is not None
    assert json_text(records) == json.dumps(records, indent=2)
    # keys in another order, or other keys: written alike
    records = _records(rng, 1.0)
    records[30] = dict(reversed(records[30].items()))
    assert _orjson_records(records, "\n  ") is not None
    assert json_text(records) == json.dumps(records, indent=2)
    records[31] = {**records[31], "extra": 1}
    records[32] = {k: v for k, v in records[32].items() if k != "value"} | {"other": 2}
    assert _orjson_records(records, "\n  ") is None
    assert json_text(records) == json.dumps(records, indent=2)


@pytest.mark.parametrize(
    "value",
    [
        9.99e-5,
        -2e-7,
        1e-5,
        float("nan"),
        float("inf"),
        "é",
        "\x7f",
        2**64,
        -(2**63) - 1,
        _Level.one,
    ],
)
def test_records_orjson_would_write_otherwise_are_not_given_to_it(value: Any) -> None:
    from topo.cli_common import _orjson_records

    rng = random.Random(8)
    records = _records(rng, value)
    assert _orjson_records(records, "\n  ") is None
    assert json_text({"links": records}) == json.dumps({"links": records}, indent=2)


def test_records_with_a_key_orjson_would_write_otherwise() -> None:
    records = [{"é": i, "b\x7f": float(i)} for i in range(100)]
    assert json_text(records) == json.dumps(records, indent=2)


@pytest.mark.parametrize("odd", [float("nan"), float("inf"), -float("inf"), 2e-5, -7e-9])
def test_records_without_none_and_an_odd_float_are_refused_by_the_text(odd: Any) -> None:
    # With no None among the values, a null in orjson's text is a float that is not finite;
    # a small float shows its other exponent style: either way json writes the records.
    from topo.cli_common import _orjson_records

    records = [{"a": float(i) + 0.5, "b": f"x{i}"} for i in range(100)]
    assert _orjson_records(records, "\n  ") is not None
    records[57]["a"] = odd
    assert _orjson_records(records, "\n  ") is None
    assert json_text({"r": records}) == json.dumps({"r": records}, indent=2)
