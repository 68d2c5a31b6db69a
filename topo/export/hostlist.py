"""Host names for the exports: Slurm's hostlist ranges, and one name per server.

Slurm reads every ``Nodes=`` and ``Switches=`` value with its hostlist parser and prints them
back with ``hostlist_ranged_string`` (``scontrol show hostlist``). :func:`hostlist_ranged` writes
names the way that function does, in the order given: a name is split into a prefix and its
trailing decimal digits; a run of names with the same prefix, consecutive numbers and
compatible digit widths becomes one range ``lo-hi``; adjacent ranges of one prefix share a
bracket (``node[1-3,5]``); a single number alone stays bare (``node5``). (Slurm's
``src/common/hostlist.c``; the tests hold this to the real ``scontrol show hostlist``.)

python-hostlist (``collect_hostlist``) was considered and not used: it folds every numeric field
(``pod[0-1]-leaf[0-1]``), which Slurm reads but never writes, and it sorts the names.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Hashable, Sequence

from topo.errors import SpecError
from topo.export.patterns import check_name_pattern
from topo.files import read_text
from topo.wording import shown

__all__ = ["HOST_NAME", "HOST_NAME_MAX", "host_names", "hostlist_ranged"]

HOST_NAME_MAX = 64
"""The longest host name every export accepts, in characters."""

HOST_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{HOST_NAME_MAX - 1}}}")
"""A host name every export accepts: a letter or digit, then up to 63 letters, digits, ``.``,
``_`` or ``-`` (RFC 1123 host-name characters plus ``_``; no hostlist metacharacters such as
``[``, ``]``, ``,`` or spaces, which Slurm's parser would split on)."""

_SUFFIX = re.compile(r"^(.*?)(\d+)$")


def _split(name: str) -> tuple[str, str | None]:
    m = _SUFFIX.match(name)
    return (m.group(1), m.group(2)) if m else (name, None)


def _width_ok(lo: str, digits: str) -> bool:
    """Slurm joins numbers into one range if their widths match or neither is zero-padded."""
    if len(lo) == len(digits):
        return True
    return not _padded(lo) and not _padded(digits)


def _padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def hostlist_ranged(names: Sequence[str]) -> str:
    """Names as one Slurm hostlist expression, as ``scontrol show hostlist`` writes them.

    Parameters
    ----------
    names : sequence of str
        Host or switch names, in the order Slurm should list them (not sorted here).

    Returns
    -------
    str
        The hostlist, e.g. ``node[0-3,7]`` or ``leaf[0-1],spine``.

    Examples
    --------
    >>> hostlist_ranged(["node0", "node1", "node2", "node5", "node10"])
    'node[0-2,5,10]'
    >>> hostlist_ranged(["node01", "node02", "node9"])
    'node[01-02,9]'
    """
    ranges: list[tuple[str, str | None, str | None]] = []  # prefix, lo digits, hi digits
    for name in names:
        prefix, digits = _split(name)
        if ranges and digits is not None:
            p, lo, hi = ranges[-1]
            if (
                p == prefix
                and lo is not None
                and hi is not None
                and int(digits) == int(hi) + 1
                and _width_ok(lo, digits)
            ):
                ranges[-1] = (p, lo, digits)
                continue
        ranges.append((prefix, digits, digits))
    out: list[str] = []
    i = 0
    while i < len(ranges):
        prefix, lo, hi = ranges[i]
        if lo is None:
            out.append(prefix)
            i += 1
            continue
        j = i
        while j + 1 < len(ranges) and ranges[j + 1][0] == prefix and ranges[j + 1][1] is not None:
            j += 1
        parts = [r[1] if r[1] == r[2] else f"{r[1]}-{r[2]}" for r in ranges[i : j + 1]]
        single = j == i and lo == hi
        out.append(f"{prefix}{lo}" if single else f"{prefix}[{','.join(parts)}]")  # type: ignore[arg-type]
        i = j + 1
    return ",".join(out)


def host_names(
    server_ids: Sequence[Hashable], hosts: str | None = None, default: Sequence[str] | None = None
) -> list[str]:
    """One host name per server, from a pattern, a file of names, or the given default.

    Parameters
    ----------
    server_ids : sequence of hashable
        The servers in order (``topo.fabric.servers(G)``).
    hosts : str, optional
        A pattern with the field ``{node}`` (the server's position, 0-based; format specs
        allowed, e.g. ``gpu{node:03d}``, as :func:`topo.export.patterns.check_name_pattern`
        allows them for names of :data:`HOST_NAME_MAX` characters), or the path of a file
        with one name per line (blank lines and ``#`` comments skipped). None: ``default``.
    default : sequence of str, optional
        The names to use without ``hosts`` (an imported fabric's host names); None: the
        pattern ``node{node}``.

    Returns
    -------
    list of str
        ``len(server_ids)`` names, each matching :data:`HOST_NAME`, no two alike.

    Raises
    ------
    SpecError
        If the pattern has other fields or is refused by
        :func:`topo.export.patterns.check_name_pattern` (checked before any name is built), the
        file has another count of names, or a name is invalid or repeated (``.param``
        ``hosts``). Messages quote at most 80 characters of a pattern or name.
    """
    if hosts is not None and os.path.isfile(hosts):
        lines = [ln.split("#", 1)[0].strip() for ln in read_text(hosts).splitlines()]
        names = [ln for ln in lines if ln]
        if len(names) != len(server_ids):
            raise SpecError(
                f"hosts {hosts}: {len(names)} names for {len(server_ids)} servers "
                "(one name per server, in order)",
                param="hosts",
            )
    elif hosts is None and default is not None:
        names = [str(n) for n in default]
    else:
        names = _from_pattern(hosts or "node{node}", len(server_ids))
    _check(names, hosts)
    return names


def _from_pattern(pattern: str, count: int) -> list[str]:
    check_name_pattern(pattern, "node", max_chars=HOST_NAME_MAX, param="hosts", noun="host name")
    try:
        return [pattern.format(node=i) for i in range(count)]
    except (KeyError, IndexError, ValueError) as exc:
        raise SpecError(
            f"hosts {shown(pattern)}: not a pattern with the one field {{node}} ({exc})",
            param="hosts",
        ) from None


def _check(names: Sequence[str], source: str | None) -> None:
    where = f"hosts {shown(source)}" if source else "host names"
    for i, name in enumerate(names):
        if not HOST_NAME.fullmatch(name):
            raise SpecError(
                f"{where}: server {i} gets the invalid host name {shown(name)} (letters, "
                f"digits, '.', '_', '-', starting with a letter or digit, at most "
                f"{HOST_NAME_MAX} characters)",
                param="hosts",
            )
    repeated = [n for n, c in Counter(names).items() if c > 1]
    if repeated:
        first = [i for i, n in enumerate(names) if n == repeated[0]]
        raise SpecError(
            f"{where}: the host name {shown(repeated[0])} is given to servers "
            f"{', '.join(map(str, first[:4]))}; every server needs its own name",
            param="hosts",
        )
