"""Mutation fuzz of every reader: a seeded harness mutates small valid inputs and asserts that
each mutant either reads or is refused with a :class:`topo.errors.TopoError`, never another
exception, and within a time limit; through the command line, that a refusal is exactly one
line on stderr and exit status 1, never a traceback.

Mutations (:func:`mutate`): a byte flipped, a run of digits inflated to 400 digits, a number
replaced by NaN, Infinity, -1, 0 or 1e30, a line deleted or repeated, the text cut short. The
seed inputs are the small hand-made inputs the tests already hold (and the packaged model
config and the example specs); a failure names the reader, the seed and the mutant's number,
so ``mutants(NAME, TEXT, SEED)[i]`` rebuilds it.
"""

from __future__ import annotations

import json
import random
import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from formats import test_ibnetdiscover, test_nccl_tests, test_nccl_tests_json, test_nccl_tests_old
from formats import test_plausible_rows as plausible
from typer.testing import CliRunner

from topo.builders import build
from topo.cli import app
from topo.engine.spec import load_sweep
from topo.errors import TopoError
from topo.fabric import load, save
from topo.formats import read_ibnetdiscover, read_nccl_log, write_ibnetdiscover
from topo.moe.config import load_config
from topo.spec import load_spec

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SEED = 41
MUTANTS = 300
"""Mutants per reader through the library (a few hundred each)."""
CLI_MUTANTS = 30
"""Mutants per command through the command line (each a whole CLI run)."""
LIMIT_S = 10
"""Longest a reader may take on one small mutant (s); none needs a second."""

ODD_NUMBERS = ("NaN", "nan", "Infinity", "-Infinity", "inf", "-1", "0", "1e30", "-0")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_DIGITS = re.compile(r"\d+")


def mutate(text: str, rng: random.Random) -> bytes:
    """One mutant of ``text`` (UTF-8 bytes): one of the mutations of the module docstring."""
    kind = rng.randrange(7)
    data = text.encode()
    if kind == 0 and data:  # a byte flipped
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if kind == 1:  # a digit run inflated to 400 digits
        runs = list(_DIGITS.finditer(text))
        if runs:
            m = rng.choice(runs)
            return (text[: m.start()] + "9" * 400 + text[m.end() :]).encode()
    if kind == 2:  # a number replaced by an odd one
        numbers = list(_NUMBER.finditer(text))
        if numbers:
            m = rng.choice(numbers)
            return (text[: m.start()] + rng.choice(ODD_NUMBERS) + text[m.end() :]).encode()
    lines = text.splitlines(keepends=True)
    if kind in (3, 4) and len(lines) > 1:
        i = rng.randrange(len(lines))
        if kind == 3:  # a line deleted
            return "".join(lines[:i] + lines[i + 1 :]).encode()
        return "".join(lines[: i + 1] + lines[i:]).encode()  # a line repeated
    if kind == 5:  # two numbers replaced at once
        out = text
        for _ in range(2):
            numbers = list(_NUMBER.finditer(out))
            if numbers:
                m = rng.choice(numbers)
                out = out[: m.start()] + rng.choice(ODD_NUMBERS) + out[m.end() :]
        return out.encode()
    return data[: rng.randrange(len(data) + 1)]  # cut short


def mutants(name: str, text: str, n: int) -> list[bytes]:
    """``n`` mutants of ``text``, seeded by :data:`SEED` and ``name``."""
    rng = random.Random(f"{SEED}:{name}")
    return [mutate(text, rng) for _ in range(n)]


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Fail (``TimeoutError``) when the block runs longer than ``seconds``."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"{what} took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# -- the seed inputs ----------------------------------------------------------------------------


def _design():
    return build("ft2", switch_ports=4, gpus=8)


def _fabric_json(tmp_path: Path) -> str:
    path = tmp_path / "seed.json"
    save(_design(), path)
    return json.dumps(json.loads(path.read_text()), indent=1)  # a line per key: lines matter


def _inspector() -> str:
    """Two ranks' AllGather records (as tests/formats/test_nccl_inspector.py writes them)."""
    lines = []
    for rank in range(2):
        for sn, t in ((1, 100), (2, 300)):
            lines.append(
                json.dumps(
                    {
                        "header": {"id": "0x1", "rank": rank, "n_ranks": 2, "nnodes": 2},
                        "metadata": {
                            "inspector_output_format_version": "v4.0",
                            "hostname": f"h{rank}",
                        },
                        "coll_perf": {
                            "coll": "AllGather",
                            "coll_sn": sn,
                            "coll_msg_size_bytes": 1000000,
                            "coll_exec_time_us": t,
                            "coll_algobw_gbs": 2e6 / t / 1e3,
                            "coll_busbw_gbs": 1e6 / t / 1e3,
                        },
                    }
                )
            )
    return "\n".join(lines) + "\n"


def _nccl_text() -> dict[str, str]:
    p = plausible
    return {
        "new": test_nccl_tests.HEAD + test_nccl_tests.ROW + test_nccl_tests.AVG,
        "old": test_nccl_tests_old.ALL_REDUCE,
        "eight": "\n".join([*p.HEAD, *p.GOOD, p.ROW, p.AVG]) + "\n",
    }


def seeds(tmp_path: Path) -> dict[str, tuple[str, Callable[[Path], Any]]]:
    """Each reader's seed text and its entry point."""
    out: dict[str, tuple[str, Callable[[Path], Any]]] = {
        "ibnetdiscover": (test_ibnetdiscover.BASE, read_ibnetdiscover),
        "validate dump": (write_ibnetdiscover(_design()), read_ibnetdiscover),
        "fabric JSON": (_fabric_json(tmp_path), load),
        "nccl-tests JSON": (
            json.dumps(test_nccl_tests_json.SMALL, indent=1),
            read_nccl_log,
        ),
        "Inspector JSONL": (_inspector(), read_nccl_log),
        "model config": ((ROOT / "topo" / "data" / "deepseek-v3.json").read_text(), load_config),
        "build spec": ((ROOT / "examples" / "h100-10node.toml").read_text(), load_spec),
        "sweep spec": ((ROOT / "examples" / "sweep-fabrics.toml").read_text(), load_sweep),
    }
    for name, text in _nccl_text().items():
        out[f"nccl-tests text {name}"] = (text, read_nccl_log)
    return out


# -- the library --------------------------------------------------------------------------------


def test_every_reader_reads_or_refuses_each_mutant_with_a_topo_error(tmp_path):
    started = time.perf_counter()
    outcomes: dict[str, dict[str, int]] = {}
    for name, (text, read) in seeds(tmp_path).items():
        read(_put(tmp_path, name, text.encode()))  # the seed itself reads
        counts = outcomes.setdefault(name, {"read": 0, "refused": 0})
        for i, data in enumerate(mutants(name, text, MUTANTS)):
            path = _put(tmp_path, name, data)
            try:
                with time_limit(LIMIT_S, f"{name} mutant {i}"):
                    read(path)
                counts["read"] += 1
            except TopoError as exc:
                assert "\n" not in str(exc), (name, i, str(exc))
                counts["refused"] += 1
            except Exception as exc:  # noqa: BLE001 - what the harness is for
                raise AssertionError(
                    f"{name} mutant {i} (mutants({name!r}, seed text, {MUTANTS})[{i}]): "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
    # every reader refused some mutants and read others: the mutations reach past the parser
    for name, counts in outcomes.items():
        assert counts["refused"] > 0, (name, counts)
    assert time.perf_counter() - started < 60


def _put(tmp_path: Path, name: str, data: bytes) -> Path:
    suffix = {"fabric JSON": ".json", "model config": ".json", "nccl-tests JSON": ".json"}
    ext = suffix.get(name, ".toml" if "spec" in name else ".log")
    path = tmp_path / (re.sub(r"\W+", "_", name) + ext)
    path.write_bytes(data)
    return path


# -- the command line ---------------------------------------------------------------------------


def _one_line_or_success(r: Any, where: str, ok: tuple[int, ...] = (0,)) -> None:
    assert "Traceback" not in r.output, (where, r.output)
    assert r.exception is None or isinstance(r.exception, SystemExit), (where, r.exception)
    if r.exit_code in ok:
        return
    assert r.exit_code == 1, (where, r.exit_code, r.output)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("topo: error: "), (where, r.stderr)


def test_the_commands_refuse_each_bad_mutant_in_one_line(tmp_path):
    runner = CliRunner()
    design = tmp_path / "design.json"
    save(_design(), design)
    fabric = tmp_path / "two.json"
    save(build("ft2", switch_ports=8, gpus=16, gpus_per_node=8, nics_per_node=8), fabric)
    cases: list[tuple[str, str, Callable[[Path], list[str]], tuple[int, ...]]] = [
        (
            f"compare {name}",
            text,
            lambda p: ["collective", str(fabric), "--compare", str(p), "--arch", "hopper"],
            (0,),
        )
        for name, text in [
            *_nccl_text().items(),
            ("json", json.dumps(test_nccl_tests_json.SMALL, indent=1)),
            ("inspector", _inspector()),
        ]
    ]
    cases += [
        (
            "import",
            test_ibnetdiscover.BASE,
            lambda p: ["import", "ibnetdiscover", str(p), "-o", str(tmp_path / "out.json")],
            (0,),
        ),
        (
            "validate",
            write_ibnetdiscover(_design()),
            lambda p: ["validate", str(design), str(p), "--no-cost"],
            (0, 3),  # 3: the dump has defects
        ),
    ]
    for name, text, argv, ok in cases:
        for i, data in enumerate(mutants(name, text, CLI_MUTANTS)):
            path = _put(tmp_path, name, data)
            with time_limit(LIMIT_S, f"{name} mutant {i}"):
                r = runner.invoke(app, argv(path))
            _one_line_or_success(r, f"{name} mutant {i}", ok)
