"""Sweep specs: a TOML file naming a grid (or a seeded random sample of it) over fabric,
failure and expert-parallel parameters, and what to evaluate at each point.

A spec has four tables (``examples/sweep-*.toml``)::

    [sweep]                     # seed, what to evaluate, optional sample size and price book
    seed = 0
    evaluate = ["cost", "alltoall", "moe"]
    sample = 20                 # optional: 20 points drawn from the grid (seeded)
    [grid]                      # each key: a value or a list of values (the grid's axes)
    family = ["ft2", "mpft"]
    gpus = [256, 1024]
    [moe]                       # optional: the model and the decode batch
    model = "config.json"       # relative to the spec file; default DeepSeek-V3
    [collective]                # optional: one nccl-tests size
    op = "all_reduce"
    size_bytes = 1073741824
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from topo.collective.model import OPS
from topo.collective.report import MAX_SWEEP_BYTES, MAX_SWEEP_WHY
from topo.engine.seeds import task_seeds
from topo.errors import FormatError
from topo.files import read_text
from topo.spec import FAMILIES, parse_toml
from topo.wording import shown

GRID_KEYS: dict[str, type] = {
    "family": str,
    "switch_ports": int,
    "link_gbps": float,
    "gpus": int,
    "gpus_per_node": int,
    "planes": int,
    "oversubscription": float,
    "fail_link_rate": float,
    "fail_links": int,
    "fail_switches": int,
    "ep": int,
    "node_limit": int,
}
"""The axes a grid may have, in column order, with their types. ``planes`` is NICs per server
(``--nics-per-node``: an MPFT's planes, an MRFT's rails); ``fail_link_rate`` fails that
fraction of the cables (NIC cables and switch-to-switch links, rounded), ``fail_links`` a
count."""

EVALUATE = ("cost", "alltoall", "collective", "moe")
"""What a point can compute besides its counts (always): the bill of materials, the exact
all-to-all (after the point's failures), one collective size, the MoE layer and TPOT."""

MOE_KEYS: dict[str, type] = {
    "model": str,
    "tokens_per_gpu": int,
    "micro_batches": int,
    "seed": int,
}
COLLECTIVE_KEYS: dict[str, type] = {"op": str, "size_bytes": int}
MAX_SIZE_BYTES = MAX_SWEEP_BYTES
"""Largest ``[collective] size_bytes``: 1 TiB, the limit of ``topo collective``'s sizes
(:data:`topo.collective.report.MAX_SWEEP_BYTES`, which says why)."""

_AT_LEAST: dict[str, float] = {
    "switch_ports": 1,
    "gpus": 1,
    "gpus_per_node": 1,
    "planes": 1,
    "ep": 1,
    "node_limit": 0,
    "fail_links": 0,
    "fail_switches": 0,
}
"""Grid axes that are counts, and their least value (whatever the point; ``node_limit`` 0 is
DeepSeek's routing without a node limit)."""
SWEEP_KEYS: dict[str, type] = {"seed": int, "evaluate": list, "sample": int, "prices": str}


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep spec.

    Attributes
    ----------
    path : Path
        The spec file (relative paths inside it are relative to its folder).
    grid : dict of str to tuple
        Each axis (:data:`GRID_KEYS`) and its values, in the file's order of values.
    evaluate : tuple of str
        Of :data:`EVALUATE`.
    seed : int
        The sweep's seed: of the sample, and of each point's failures
        (:func:`topo.engine.seeds.task_seeds`).
    sample : int or None
        Points drawn at random from the grid (without replacement), or None for all.
    moe, collective : dict
        The ``[moe]`` and ``[collective]`` tables (``model`` made absolute).
    prices : Path or None
        A price book (default: topo's).
    digest : str
        SHA-256 of the spec's content and of the files it names: what a resumed sweep must
        match.
    """

    path: Path
    grid: dict[str, tuple[Any, ...]]
    evaluate: tuple[str, ...] = ("cost", "alltoall")
    seed: int = 0
    sample: int | None = None
    moe: dict[str, Any] = field(default_factory=dict)
    collective: dict[str, Any] = field(default_factory=dict)
    prices: Path | None = None
    digest: str = ""

    def points(self) -> list[dict[str, Any]]:
        """The sweep's points, numbered: each axis's value, ``point`` and ``seed``.

        Returns
        -------
        list of dict
            The grid in row-major order (the last axis fastest), or its seeded sample kept
            in that order; point ``i`` carries seed ``task_seeds(seed, n)[i]``.
        """
        axes = list(self.grid)
        combos = list(itertools.product(*self.grid.values()))
        if self.sample is not None and self.sample < len(combos):
            rng = np.random.default_rng(self.seed)
            keep = sorted(rng.choice(len(combos), size=self.sample, replace=False).tolist())
            combos = [combos[i] for i in keep]
        seeds = task_seeds(self.seed, len(combos))
        return [
            {"point": i, "seed": s, **dict(zip(axes, c, strict=True))}
            for i, (c, s) in enumerate(zip(combos, seeds, strict=True))
        ]


def _typed(path: Path, where: str, key: str, value: Any, want: type) -> Any:
    ok = (isinstance(value, want) or (want is float and isinstance(value, int))) and not isinstance(
        value, bool
    )
    if not ok:
        kind = {int: "an integer", float: "a number", str: "a string", list: "a list"}[want]
        raise FormatError(
            path, f"{where}{key} must be {kind}, got {shown(value)}", line=_line(path, key)
        )
    return float(value) if want is float else value


def _line(path: Path, key: str) -> int | None:
    for n, text in enumerate(read_text(path).splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", text):
            return n
    return None


def _table(path: Path, data: dict[str, Any], name: str, keys: dict[str, type]) -> dict[str, Any]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise FormatError(path, f"[{name}] must be a table")
    out = {}
    for key, value in table.items():
        if key not in keys:
            raise FormatError(
                path,
                f"[{name}]: unknown key {key!r}; expected one of {', '.join(keys)}",
                line=_line(path, key),
            )
        if name == "grid":
            values = value if isinstance(value, list) else [value]
            if not values:
                raise FormatError(path, f"[grid] {key} has no values", line=_line(path, key))
            out[key] = tuple(_typed(path, "[grid] ", key, v, keys[key]) for v in values)
        else:
            out[key] = _typed(path, f"[{name}] ", key, value, keys[key])
    return out


def _check_grid(path: Path, grid: dict[str, tuple[Any, ...]]) -> None:
    """Refuse a grid value no point could use: an unknown family, a count below its least
    value, a rate out of range, a non-finite or non-positive number."""

    def bad(key: str, value: Any, rule: str) -> FormatError:
        return FormatError(path, f"[grid] {key} {rule}, got {shown(value)}", line=_line(path, key))

    for key, values in grid.items():
        for v in values:
            if key == "family" and v not in FAMILIES:
                raise bad(key, v, f"must be one of {', '.join(FAMILIES)}")
            if key in _AT_LEAST and v < _AT_LEAST[key]:
                raise bad(key, v, f"must be at least {_AT_LEAST[key]:g}")
            if key == "fail_link_rate" and not (math.isfinite(v) and 0 <= v <= 1):
                raise bad(key, v, "must be from 0 to 1 (the fraction of the cables that fail)")
            if key in ("link_gbps", "oversubscription") and not (math.isfinite(v) and v > 0):
                raise bad(key, v, "must be a positive finite number")


def _check_collective(path: Path, collective: dict[str, Any]) -> None:
    """Refuse an unknown ``[collective] op`` or a ``size_bytes`` out of range."""
    op = collective.get("op")
    if op is not None and op not in OPS:
        raise FormatError(
            path,
            f"[collective] op must be one of {', '.join(OPS)}, got {shown(op)}",
            line=_line(path, "op"),
        )
    size = collective.get("size_bytes")
    if size is not None and not 1 <= size <= MAX_SIZE_BYTES:
        raise FormatError(
            path,
            f"[collective] size_bytes must be from 1 to {MAX_SIZE_BYTES:,} ({MAX_SWEEP_WHY}), "
            f"got {shown(size)}",
            line=_line(path, "size_bytes"),
        )


def load_sweep(path: str | Path) -> SweepSpec:
    """Read a sweep spec from a TOML file.

    Parameters
    ----------
    path : str or Path
        The spec (format in this module's docstring).

    Returns
    -------
    SweepSpec

    Raises
    ------
    FormatError
        Unreadable file, bad TOML, a run of more than :data:`topo.files.MAX_NUMBER_DIGITS`
        digits (named by its line), an unknown table or key, a value of the wrong type, an
        empty grid axis, an unknown ``evaluate`` item, ``sample < 1``, a negative ``seed``, a
        missing file named;
        a value no point could use: an unknown ``family`` or ``[collective] op``, a count
        below its least value, ``fail_link_rate`` outside [0, 1], a ``link_gbps`` or
        ``oversubscription`` that is not positive and finite, ``size_bytes`` outside 1 to
        :data:`MAX_SIZE_BYTES`. Each message names the table, the key and its line.
    """
    path = Path(path)
    text = read_text(path)
    data = parse_toml(path, text)
    unknown = set(data) - {"sweep", "grid", "moe", "collective"}
    if unknown:
        raise FormatError(
            path, f"unknown table [{sorted(unknown)[0]}]; expected sweep, grid, moe, collective"
        )
    sweep = _table(path, data, "sweep", SWEEP_KEYS)
    grid = {k: v for k, v in _table(path, data, "grid", GRID_KEYS).items()}
    if "family" not in grid:
        raise FormatError(path, "[grid] needs family (ft2, ft3, mrft, mpft, dragonfly, slimfly)")
    _check_grid(path, grid)
    collective = _table(path, data, "collective", COLLECTIVE_KEYS)
    _check_collective(path, collective)
    evaluate = tuple(sweep.get("evaluate", ("cost", "alltoall")))
    bad = [e for e in evaluate if e not in EVALUATE]
    if bad:
        raise FormatError(
            path,
            f"[sweep] evaluate: unknown {bad[0]!r}; choose from {', '.join(EVALUATE)}",
            line=_line(path, "evaluate"),
        )
    sample = sweep.get("sample")
    if sample is not None and sample < 1:
        raise FormatError(
            path, f"[sweep] sample must be >= 1, got {shown(sample)}", line=_line(path, "sample")
        )
    moe = _table(path, data, "moe", MOE_KEYS)
    for name, table in (("sweep", sweep), ("moe", moe)):
        if table.get("seed", 0) < 0:  # numpy's SeedSequence takes none
            raise FormatError(
                path,
                f"[{name}] seed must be >= 0, got {shown(table['seed'])}",
                line=_line(path, "seed"),
            )
    files = [text]
    for table, key in ((moe, "model"), (sweep, "prices")):
        if key in table:
            named = (path.parent / table[key]).resolve()
            files.append(read_text(named))
            table[key] = named
    digest = hashlib.sha256(json.dumps(files).encode()).hexdigest()
    return SweepSpec(
        path=path,
        grid=dict(sorted(grid.items(), key=lambda kv: list(GRID_KEYS).index(kv[0]))),
        evaluate=evaluate,
        seed=sweep.get("seed", 0),
        sample=sample,
        moe=moe,
        collective=collective,
        prices=sweep.get("prices"),
        digest=digest,
    )
