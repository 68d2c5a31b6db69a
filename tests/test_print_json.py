"""cli_common.print_json: every --json, written by orjson.

The reference for ordinary content is :func:`json.dumps` with ``indent=2`` (what the command
line wrote before orjson); where the two differ on purpose (NaN and the infinities, small
floats, non-ASCII text) the expected text is written out by hand.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from enum import Enum, IntEnum
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson
import pytest

from topo.cli_common import print_json


class _Word(str, Enum):
    a = "x"


class _Level(IntEnum):
    one = 1


def _printed(obj: Any, capsysbinary: pytest.CaptureFixture[bytes]) -> str:
    print_json(obj)
    raw = capsysbinary.readouterr().out
    assert raw.endswith(b"\n")
    return raw.decode("utf-8")[:-1]


# Values that json.dumps writes as orjson does: ASCII text, 64-bit integers, finite floats
# outside 1e-9 <= |x| < 1e-4 (where Python's repr writes 1e-05 and orjson 0.00001).
_LEAVES: list[Any] = [
    *(1, -3, 0, 2**63 - 1, -(2**63), 0.1, 1e-300, -0.0, 1.5e22, 1e16, 50.0 / 3, 5e-324),
    *(True, False, None, '\n"x\\', "", "abc", "\t\x00\x1f", "/"),
    *((), [], {}),
]
_KEYS: list[Any] = ["k", 1, 2.5, True, None, False, "a\tb"]


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


def test_ordinary_values_are_written_as_json_dumps_with_indent_2(capsysbinary) -> None:
    rng = random.Random(13)
    for _ in range(500):
        obj = _random_value(rng)
        assert _printed(obj, capsysbinary) == json.dumps(obj, indent=2)


def test_key_order_is_kept(capsysbinary) -> None:
    obj = {"z": 1, "a": {"y": 2, "b": 3}, "m": [{"q": 1, "c": 2}]}
    assert _printed(obj, capsysbinary) == (
        '{\n  "z": 1,\n  "a": {\n    "y": 2,\n    "b": 3\n  },\n'
        '  "m": [\n    {\n      "q": 1,\n      "c": 2\n    }\n  ]\n}'
    )


def test_nan_and_infinities_are_null(capsysbinary) -> None:
    obj = [float("nan"), float("inf"), -float("inf"), np.float64("nan"), np.float32("inf")]
    assert _printed(obj, capsysbinary) == "[\n" + ",\n".join(["  null"] * 5) + "\n]"
    assert _printed({"a": np.array([1.0, np.nan])}, capsysbinary) == (
        '{\n  "a": [\n    1.0,\n    null\n  ]\n}'
    )


def test_floats_are_their_shortest_round_trip_form(capsysbinary) -> None:
    # Python's repr: 1e-05, 2e-07; orjson: 0.00001, 2e-7. Either reads back as the same float.
    text = _printed([1e-5, 2e-7, 0.1, 1e16, 123.456], capsysbinary)
    assert text == "[\n  0.00001,\n  2e-7,\n  0.1,\n  1e+16,\n  123.456\n]"
    assert json.loads(text) == [1e-5, 2e-7, 0.1, 1e16, 123.456]


def test_numpy_enums_dataclasses_paths_and_named_tuples(capsysbinary) -> None:
    @dataclass(frozen=True)
    class Row:
        name: str
        gbps: float

    class Pair(NamedTuple):
        a: int
        b: int

    obj = {
        "n": np.int64(3),
        "x": np.float64(0.5),
        "ok": np.bool_(True),
        "m": np.array([[1, 2], [3, 4]]),
        "word": _Word.a,
        "level": _Level.one,
        "row": Row("leaf0", 400.0),
        "path": Path("out") / "ft2.json",
        "pair": Pair(1, 2),
        7: "seven",
    }
    assert json.loads(_printed(obj, capsysbinary)) == {
        "n": 3,
        "x": 0.5,
        "ok": True,
        "m": [[1, 2], [3, 4]],
        "word": "x",
        "level": 1,
        "row": {"name": "leaf0", "gbps": 400.0},
        "path": "out/ft2.json",
        "pair": [1, 2],
        "7": "seven",
    }


def test_text_is_utf_8(capsysbinary) -> None:
    print_json({"unit": "µs", "arrow": "→"})
    assert capsysbinary.readouterr().out == '{\n  "unit": "µs",\n  "arrow": "→"\n}\n'.encode()


@pytest.mark.parametrize("obj", [{"a": object()}, [1, {2, 3}], 2**64, {(1, 2): 3}])
def test_what_json_cannot_hold_is_refused(obj: Any) -> None:
    with pytest.raises(TypeError):
        print_json(obj)
    assert issubclass(orjson.JSONEncodeError, TypeError)
