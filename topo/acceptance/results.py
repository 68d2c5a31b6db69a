"""A kit's logs read back: one pass/fail table, and ``explain`` on each failure.

:func:`read_results` reads every log in a folder (nccl-tests text or ``-J`` JSON, NCCL
Inspector records: :func:`topo.formats.nccl_log.read_nccl_log`) and matches each test in it to
the kit's manifest: by file name first (``<id>.log``, ``<id>.json``, as the kit's scripts
write them), else by its header (the op, the ranks and the ranks per server its rank lines
give; a ``servers`` scale before a plane or EP group of the same size): every log named after
a test is that test's, and the headers of the other tests in the folder's logs only fill the
tests still without a log. Each matched test is held against the design (the kit's
``design.json``) twice, as the two commands do:

- :func:`topo.collective.compare_log`, the rows of ``topo collective --compare`` (measured
  and expected time and busbw per size, and their ratio);
- :func:`topo.collective.explain.explain_test`, whose score (RMS of the log time ratio over
  the rows of 32 MiB and more) decides: the test **passes** when it agrees with the design
  (within :data:`topo.collective.explain.AGREE`, about 15%) or is faster, and **fails**
  otherwise; a failure carries the causes explain ranks, best first.

DeepEP's tests are listed with the status ``not read`` (their output is not an nccl-tests
log), as is an nccl-tests test whose log (named after it) cannot be read or holds no test of
its op (:attr:`AcceptanceResult.unreadable`); a test without a log has the status ``no log``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from topo.acceptance.kit import KIT_VERSION
from topo.collective import compare_log
from topo.collective.explain import explain_test
from topo.errors import FormatError, TopoError
from topo.fabric import load
from topo.files import parse_json, read_text
from topo.formats.nccl_log import read_nccl_log
from topo.formats.nccl_tests_checks import validated_tests
from topo.formats.nccl_tests_records import NcclTest

MAX_LOGS = 100_000
"""Most files a results folder may hold: a folder of more is refused before any is read."""

LOG_SUFFIXES = (".log", ".json", ".txt", ".out")
"""The suffixes a log named after its test may carry (``<id><suffix>``)."""


@dataclass(frozen=True)
class TestResult:
    """One test of the kit against its log.

    Attributes
    ----------
    id, tool, op, scale, kind : str
        As the manifest's test (``tool``: ``nccl-tests`` or ``deepep``).
    ranks, nodes, gpus_per_node : int
        As the manifest's test.
    status : str
        ``pass``, ``fail``, ``no log``, ``not read`` (DeepEP's output; an nccl-tests log that
        cannot be read, or that holds no test of the op, with the reason in ``verdict``).
    log : str or None
        The log read (its path), and ``matched_by``: ``file name`` or ``header``.
    measured_busbw_GBps, expected_busbw_GBps : float or None
        At the log's largest size (GB/s).
    median_ratio : float or None
        ``topo collective --compare``'s median expected / measured time (1 GiB and more, or
        every size).
    score : float or None
        explain's RMS of log(expected / measured time) over the scored rows.
    verdict : str
        explain's sentence (``not read``: why).
    causes : list of dict
        explain's causes, best first (failures only; each with name, description, score,
        fits, evidence, check, predicted rows).
    rows : list of dict
        The ``topo collective --compare`` rows (:class:`topo.collective.compare.CompareRow`).
    """

    __test__ = False  # (not a pytest class)

    id: str
    tool: str
    op: str
    scale: str
    kind: str
    ranks: int
    nodes: int
    gpus_per_node: int
    status: str
    log: str | None = None
    matched_by: str = ""
    measured_busbw_GBps: float | None = None
    expected_busbw_GBps: float | None = None
    median_ratio: float | None = None
    score: float | None = None
    verdict: str = ""
    causes: list[dict[str, Any]] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    measured_sizes: list[int] = field(default_factory=list, repr=False)
    measured_curve_GBps: list[float] = field(default_factory=list, repr=False)
    expected_curve_GBps: list[float] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("measured_sizes", "measured_curve_GBps", "expected_curve_GBps"):
            d.pop(k)
        return d


@dataclass(frozen=True)
class AcceptanceResult:
    """Every test of a kit against the logs of a folder (see :func:`read_results`).

    ``unmatched``: the logs (or tests in them) that match no test of the kit, one line each;
    ``warnings``: rows left out by the readers, tests of a cut-off log read from their rows
    or left out (:attr:`~topo.formats.nccl_tests_records.NcclTest.notes`,
    :attr:`~topo.formats.nccl_tests_records.NcclTest.left_out_tests`), one line each.
    """

    kit: str
    fabric: str
    results: list[TestResult]
    unmatched: list[str]
    warnings: list[str]

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def failed(self) -> bool:
        return self.count("fail") > 0

    @property
    def unreadable(self) -> list[TestResult]:
        """The nccl-tests tests whose log (named after the test) could not be read, or holds
        no test of the op: status ``not read``, the reason in ``verdict``."""
        return [r for r in self.results if r.status == "not read" and r.tool == "nccl-tests"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: kit, fabric, counts per status (``unreadable``: the nccl-tests logs
        among ``not_read``), tests, unmatched, warnings."""
        return {
            "kit": self.kit,
            "fabric": self.fabric,
            "passed": self.count("pass"),
            "failed": self.count("fail"),
            "no_log": self.count("no log"),
            "not_read": self.count("not read"),
            "unreadable": len(self.unreadable),
            "tests": [r.to_dict() for r in self.results],
            "unmatched": self.unmatched,
            "warnings": self.warnings,
        }


def read_manifest(kit: str | Path) -> dict[str, Any]:
    """A kit's ``manifest.json``, checked.

    Parameters
    ----------
    kit : str or Path
        The kit's folder.

    Returns
    -------
    dict
        The manifest (:meth:`topo.acceptance.Kit.manifest`).

    Raises
    ------
    TopoError
        ``kit`` is not a folder with a manifest of this version.
    FormatError
        The manifest is not JSON, or lacks ``tests``.
    """
    kit = Path(kit)
    path = kit / "manifest.json"
    if not kit.is_dir():
        raise TopoError(f"{kit}: not a folder (a kit written by topo acceptance DESIGN -o KIT)")
    if not path.is_file():
        raise TopoError(f"{kit}: no manifest.json (not a kit written by topo acceptance -o)")
    doc = parse_json(path, read_text(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise FormatError(path, "not a kit manifest: no 'tests' list")
    if doc.get("version") != KIT_VERSION:
        raise FormatError(
            path, f"manifest version {doc.get('version')!r}; this topo reads version {KIT_VERSION}"
        )
    for i, t in enumerate(doc["tests"]):
        missing = {"id", "op", "tool", "scale", "kind", "ranks", "nodes", "gpus_per_node"} - set(t)
        if missing:
            raise FormatError(path, f"tests[{i}] lacks {', '.join(sorted(missing))}")
    return doc


def _logs(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise TopoError(f"{folder}: not a folder of logs")
    found = []
    for root, _, names in os.walk(folder):
        for name in names:
            if not name.startswith("."):
                found.append(Path(root) / name)
                if len(found) > MAX_LOGS:
                    raise TopoError(
                        f"{folder}: more than the {MAX_LOGS} files a results folder may hold"
                    )
    return sorted(found)


def _by_name(path: Path, ids: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    name = path.name
    for suffix in LOG_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in ids:
            return ids[name[: -len(suffix)]]
    return ids.get(name)


_KIND_ORDER = {"servers": 0, "plane": 1, "rail": 1, "ep": 2}

DEEPEP_NOT_READ = "DeepEP's output: topo explain reads it (given its ranks and ranks per server)"


@dataclass(frozen=True)
class _Found:
    """A test's log: its path, how it was matched, the measured test (None: not read) and,
    for a log that was not read, why."""

    path: Path
    how: str
    measured: NcclTest | None
    why: str = ""


def _header_fits(t: NcclTest, tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kit's nccl-tests tests a measured test's header fits (op, ranks, ranks per
    server), hosts of the kit first, a servers scale before a plane or EP group."""
    fits = [
        k
        for k in tests
        if k["tool"] == "nccl-tests"
        and k["op"] == t.op
        and k["ranks"] == t.ranks
        and (t.gpus_per_node is None or k["gpus_per_node"] == t.gpus_per_node)
    ]
    hosts = set(t.hosts)
    return sorted(
        fits,
        key=lambda k: (
            not (hosts and hosts <= set(k.get("hosts", []))),
            _KIND_ORDER.get(k["kind"], 3),
        ),
    )


def _match_by_name(
    logs: list[Path], ids: dict[str, dict[str, Any]]
) -> tuple[dict[str, _Found], list[tuple[Path, NcclTest]], list[str], list[str]]:
    """Every log named after a test of the kit, matched to it; the other tests read.

    Returns the matches (test id: its log), the measured tests left for the headers to
    match (in the logs' order), the unmatched lines and the warnings.
    """
    matched: dict[str, _Found] = {}
    left: list[tuple[Path, NcclTest]] = []
    unmatched: list[str] = []
    warnings: list[str] = []
    for path in logs:
        named = _by_name(path, ids)
        claim = matched.get(named["id"]) if named is not None else None
        if named is not None and named["tool"] != "nccl-tests":
            if claim is None:
                matched[named["id"]] = _Found(path, "file name", None, DEEPEP_NOT_READ)
            continue
        try:
            measured, dropped = validated_tests(read_nccl_log(path), path)
        except FormatError as exc:
            if named is not None and claim is None:
                matched[named["id"]] = _Found(path, "file name", None, str(exc))
            else:
                unmatched.append(f"{exc} (skipped)")
            continue
        left_tests = measured[0].left_out_tests  # (the same on every test of the log)
        warnings += [line for t in measured for line in t.notes + t.left_out] + dropped
        warnings += [line for _, line in left_tests]
        own = None
        # a second log named after a test is read when the first could not be
        if named is not None and (claim is None or claim.measured is None):
            own = next((t for t in measured if t.op == named["op"]), None)
            if own is not None:
                if claim is not None:
                    unmatched.append(f"{claim.why} (skipped: {path} is read instead)")
                matched[named["id"]] = _Found(path, "file name", own)
                if own.ranks != named["ranks"] or own.gpus_per_node not in (
                    None, named["gpus_per_node"],
                ):  # fmt: skip
                    warnings.append(
                        f"{path}: named after {named['id']} ({named['ranks']} ranks, "
                        f"{named['gpus_per_node']} per server), its {own.op}_perf test ran "
                        f"{own.ranks} ranks, {own.gpus_per_node or '?'} per server: held "
                        "against the design at its own ranks"
                    )
            elif claim is None:
                ops = ", ".join(f"{t.op}_perf" for t in measured)
                why = f"{path}: holds no {named['op']}_perf test with rows left (only {ops})"
                why += "".join(  # its test of the op left out (no result row), and why
                    f"; {line.removeprefix(f'{path}: ')}"
                    for name, line in left_tests
                    if name in ("", named["op"])
                )
                matched[named["id"]] = _Found(path, "file name", None, why)
        left += [(path, t) for t in measured if t is not own]
    return matched, left, unmatched, warnings


def read_results(
    kit: str | Path, results: str | Path, G: nx.Graph | None = None
) -> AcceptanceResult:
    """Read a folder of logs against a kit: one result per test of the kit.

    Every log named after a test of the kit (``<id>.log``, ``.json``, ``.txt``, ``.out``) is
    that test's: its test of the test's op is read against the design, and the test is
    ``not read`` when the log cannot be read or holds no test of that op. Only then are the
    other tests of the logs (of other ops, or in logs named after no test) matched by their
    headers, and only to the tests still without a log.

    Parameters
    ----------
    kit : str or Path
        A kit's folder (``topo acceptance DESIGN -o KIT``).
    results : str or Path
        A folder of logs (searched with its sub-folders).
    G : networkx.Graph, optional
        The design (default: the kit's ``design.json``).

    Returns
    -------
    AcceptanceResult
        Results in the manifest's order; bandwidths in GB/s, scores dimensionless.

    Raises
    ------
    TopoError
        Not a kit or not a folder; more than :data:`MAX_LOGS` files; no log of the folder
        is named after an nccl-tests test of the kit or holds a test that matches one.
    FormatError
        The manifest or design is malformed.
    """
    kit = Path(kit)
    results = Path(results)
    manifest = read_manifest(kit)
    logs = _logs(results)
    if G is None:
        G = load(kit / manifest.get("design", "design.json"))
    tests: list[dict[str, Any]] = manifest["tests"]
    ids = {t["id"]: t for t in tests}
    matched, left, unmatched, warnings = _match_by_name(logs, ids)
    for path, t in left:
        fits = _header_fits(t, tests)
        free = [k for k in fits if k["id"] not in matched]
        if free:
            matched[free[0]["id"]] = _Found(path, "header", t)
            continue
        what = (
            f"{path}: its {t.op}_perf test ({t.ranks} ranks, {t.gpus_per_node or '?'} per server)"
        )
        if fits:
            has = ", ".join(f"{k['id']} ({matched[k['id']].path})" for k in fits[:3])
            more = f" and {len(fits) - 3} more" if len(fits) > 3 else ""
            unmatched.append(f"{what} is left out: the tests it fits have their logs: {has}{more}")
        else:
            unmatched.append(f"{what} matches no test of the kit")
    if not any(ids[i]["tool"] == "nccl-tests" for i in matched):
        raise TopoError(f"{results}: no nccl-tests log that matches a test of the kit {kit}")
    out = [_result(G, t, matched.get(t["id"])) for t in tests]
    return AcceptanceResult(
        kit=str(kit),
        fabric=str(manifest.get("fabric", "")),
        results=out,
        unmatched=unmatched,
        warnings=warnings,
    )


def _result(G: nx.Graph, t: dict[str, Any], found: _Found | None) -> TestResult:
    keys = ("id", "tool", "op", "scale", "kind", "ranks", "nodes", "gpus_per_node")
    base = {k: t[k] for k in keys}
    if found is None:
        return TestResult(**base, status="no log")
    measured = found.measured
    if measured is None:
        return TestResult(
            **base, status="not read", log=str(found.path), matched_by=found.how,
            verdict=found.why,
        )  # fmt: skip
    cmp = compare_log(G, measured)
    e = explain_test(G, measured)
    passed = e.agrees or e.faster
    return TestResult(
        **base,
        status="pass" if passed else "fail",
        log=str(found.path),
        matched_by=found.how,
        measured_busbw_GBps=cmp.rows[-1].measured_busbw_GBps,
        expected_busbw_GBps=cmp.rows[-1].predicted_busbw_GBps,
        median_ratio=cmp.median_ratio,
        score=e.design.score,
        verdict=e.verdict,
        causes=[c.to_dict() for c in e.causes],
        rows=[asdict(r) for r in cmp.rows],
        measured_sizes=[r.size_bytes for r in cmp.rows],
        measured_curve_GBps=[r.measured_busbw_GBps for r in cmp.rows],
        expected_curve_GBps=[r.predicted_busbw_GBps for r in cmp.rows],
    )


def plot_results(result: AcceptanceResult) -> Any:
    """busbw (GB/s) against size (B, log x) of every test read: measured, and expected with
    its band (dashed).

    Parameters
    ----------
    result : AcceptanceResult
        From :func:`read_results`.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    import math

    import plotly.graph_objects as go

    from topo.collective.explain import AGREE

    band = math.exp(AGREE)
    fig = go.Figure()
    for r in result.results:
        if not r.measured_sizes:
            continue
        x = r.measured_sizes
        name = f"{r.id}: measured ({r.status})"
        fig.add_trace(go.Scatter(x=x, y=r.measured_curve_GBps, name=name, mode="markers+lines"))
        fig.add_trace(go.Scatter(x=x, y=r.expected_curve_GBps, name=f"{r.id}: expected",
                                 mode="lines"))  # fmt: skip
        for f, label in ((1 / band, "low"), (band, "high")):
            fig.add_trace(
                go.Scatter(x=x, y=[b * f for b in r.expected_curve_GBps],
                           name=f"{r.id}: band {label}", mode="lines",
                           line={"dash": "dash", "width": 1}, showlegend=False)
            )  # fmt: skip
    fig.update_layout(
        title=f"acceptance of {result.fabric}: measured busbw against the expected band",
        xaxis={"title": "size (B)", "type": "log"},
        yaxis={"title": "busbw (GB/s)", "rangemode": "tozero"},
        template="plotly_white",
    )
    return fig


__all__ = [
    "LOG_SUFFIXES",
    "MAX_LOGS",
    "AcceptanceResult",
    "TestResult",
    "plot_results",
    "read_manifest",
    "read_results",
]
