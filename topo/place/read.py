"""The jobs file of ``topo place``: TOML, one ``[[jobs]]`` table per job.

.. code-block:: toml

    [[jobs]]
    name = "ep-a"            # unique
    traffic = "alltoall"     # alltoall | ring | pipeline | storage_read | checkpoint_write
    count = 4                # servers, placed by policy ...
    policy = "packed"        # packed | fragmented | slurm-tree | slurm-block
    # servers = [0, 1, 2, 3] # ... or the servers themselves (node ids)
    # storage = [8, 9]       # storage_read, checkpoint_write: the storage servers
    # stages = 2             # pipeline: its stages (they divide its servers)
    # weight = 2.0           # weighted max-min fairness (default 1)

Every key is checked; an error names the file and the key (``jobs[2].count``) and the limit.
"""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

from topo.errors import FormatError, TopoError
from topo.files import read_text
from topo.place.jobs import POLICIES, TRAFFIC, Job
from topo.spec import parse_toml

__all__ = ["JOB_KEYS", "MAX_JOBS", "read_jobs"]

MAX_JOBS = 256
"""Most jobs one file may hold."""

JOB_KEYS = ("name", "traffic", "count", "policy", "servers", "storage", "stages", "weight")
"""The keys of a ``[[jobs]]`` table."""


def read_jobs(path: str | Path) -> list[Job]:
    """The jobs of a jobs TOML file (module notes), in the file's order.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    list of Job
        At least one.

    Raises
    ------
    FormatError
        Not TOML; a key other than ``jobs`` at the top, or other than :data:`JOB_KEYS` in a
        job; no job or more than :data:`MAX_JOBS`; a value of the wrong type; a job the
        :class:`topo.place.Job` rules refuse (each naming the file and the key).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "jobs.toml"
    >>> _ = p.write_text('[[jobs]]\\nname = "a"\\ntraffic = "ring"\\ncount = 2\\n')
    >>> read_jobs(p)[0].count
    2
    """
    data = parse_toml(path, read_text(path))
    for key in data:
        if key != "jobs":
            raise FormatError(path, f"unknown key {key!r}; a jobs file holds [[jobs]] tables")
    tables = data.get("jobs")
    if not isinstance(tables, list) or not tables:
        raise FormatError(path, "no jobs: give at least one [[jobs]] table")
    if len(tables) > MAX_JOBS:
        raise FormatError(path, f"{len(tables)} jobs; at most {MAX_JOBS}")
    return [_job(path, i, t) for i, t in enumerate(tables, start=1)]


def _job(path: str | Path, i: int, t: Any) -> Job:
    where = f"jobs[{i}]"
    if not isinstance(t, dict):
        raise FormatError(path, f"{where} must be a table ([[jobs]])")
    for key in t:
        if key not in JOB_KEYS:
            raise FormatError(
                path, f"{where}: unknown key {key!r}; expected one of {', '.join(JOB_KEYS)}"
            )
    for key in ("name", "traffic"):
        if key not in t:
            raise FormatError(path, f"{where}: {key} is missing")
    name = _text(path, f"{where}.name", t["name"], ())
    traffic = _text(path, f"{where}.traffic", t["traffic"], TRAFFIC)
    policy = _text(path, f"{where}.policy", t.get("policy", "packed"), POLICIES)
    count = t.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise FormatError(path, f"{where}.count must be a whole number >= 1, got {count!r}")
    servers = _ids(path, f"{where}.servers", t["servers"]) if "servers" in t else None
    storage = _ids(path, f"{where}.storage", t["storage"]) if "storage" in t else ()
    stages = t.get("stages")
    if stages is not None and (
        isinstance(stages, bool) or not isinstance(stages, int) or stages < 2
    ):
        raise FormatError(path, f"{where}.stages must be a whole number >= 2, got {stages!r}")
    weight = t.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise FormatError(path, f"{where}.weight must be a number, got {weight!r}")
    try:
        return Job(name, traffic, servers, count, policy, storage, stages, float(weight))
    except TopoError as exc:
        raise FormatError(path, f"{where}: {exc}") from None


def _text(path: str | Path, key: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FormatError(path, f"{key} must be a non-empty string, got {value!r}")
    if choices and value not in choices:
        raise FormatError(path, f"{key} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _ids(path: str | Path, key: str, value: Any) -> tuple[Hashable, ...]:
    if not isinstance(value, list) or not value:
        raise FormatError(path, f"{key} must be a non-empty list of server ids, got {value!r}")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise FormatError(path, f"{key}: a server id is a whole number or a name, got {v!r}")
    return tuple(value)
