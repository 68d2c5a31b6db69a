"""Read ``ibnetdiscover`` topology dumps (and ibsim net files) into a fabric graph.

``ibnetdiscover`` (infiniband-diags, rdma-core) walks an InfiniBand subnet and prints one record
per device: a header line (``Switch 65 "S-<guid>" # "<description>" ...`` or
``Ca 1 "H-<guid>" # "<description>"``) followed by one line per cabled port
(``[p] "<remote id>"[q] # "<remote description>" lid N 4xNDR``). Every cable therefore appears
twice, once from each end; :func:`read_ibnetdiscover` pairs the two ends, checks that they agree,
and builds one graph following the schema of :mod:`topo.fabric`.

The same reader accepts the net files of the ibsim simulator (``Switch 8 "Switch1"``,
``[1] "Hca1"[1]``, optional ``w=``), which carry no GUIDs and no link speeds: their links are
4xSDR, ibsim's own default (``DEFAULT_LINKWIDTH`` 4x, ``DEFAULT_LINKSPEED`` SDR in ibsim's
``sim.h``), unless a port line says otherwise. The ``ibnetdiscover -p`` ports report and the
``-l``/``-S``/``-H`` node lists are other formats; they are recognised and refused with a message
that says what to run instead. See ``docs/import.md``.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from topo.errors import FormatError, SpecError
from topo.files import long_number
from topo.units import gbps_to_Bps
from topo.wording import count

LANE_RATES_GBPS: dict[str, tuple[float, float]] = {
    "SDR": (2.5, 2.0),
    "DDR": (5.0, 4.0),
    "QDR": (10.0, 8.0),
    "FDR10": (10.3125, 10.0),
    "FDR": (14.0625, 13.64),
    "EDR": (25.78125, 25.0),
    "HDR": (53.125, 50.0),
    "NDR": (106.25, 100.0),
    "XDR": (212.5, 200.0),
}
"""InfiniBand lane rates, Gb/s per lane: speed -> (signalling rate, data rate).

The data rate is what is left after line encoding (8b/10b up to QDR, 64b/66b from FDR10 on,
PAM4 with FEC from HDR on) and is the rate a link carries; a cable's capacity is its lane count
times the data rate (4x NDR: 4 x 100 = 400 Gb/s = 50e9 B/s). Source: InfiniBand Architecture
Specification (Vol. 2, physical layer: lane rates and line encodings).
"""

LINK_WIDTHS: dict[str, int] = {"1x": 1, "2x": 2, "4x": 4, "8x": 8, "12x": 12}
"""InfiniBand link widths (as ``ibnetdiscover`` prints them) -> lanes."""

IBSIM_DEFAULT_WIDTH = "4x"
IBSIM_DEFAULT_SPEED = "SDR"
_IBSIM_SPEED_BITS = ((4, "QDR"), (2, "DDR"), (1, "SDR"))  # ibsim's LinkSpeedEnabled bits

_GUID_ID = re.compile(r"^[SHR]-([0-9a-fA-F]{16})$")
_HEADER = re.compile(r'^(Switch|Ca|Hca|Rt)\s+(\d+)\s+"([^"]*)"(.*)$')
_HEADER_START = re.compile(r"^(Switch|Ca|Hca|Rt)\b")
_PORT = re.compile(
    r"^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*"
    r'"([^"]*)"\s*(?:\[(\d+)\])?(?:\[ext \d+\])?\s*(?:\(([0-9a-fA-F]+)\))?(.*)$'
)
_RATE_IN_COMMENT = re.compile(r'"(.*)"\s+lid\s+\d+\s+(\S+)')
_RATE = re.compile(r"^(\d+x)([A-Za-z0-9]+)$")
_IBSIM_OPTION = re.compile(r"^([ws])=(\d+)$")
_PORTS_REPORT = re.compile(r"^(CA|SW|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")
_NODE_LIST = re.compile(r"^(Switch|Ca|Router)\s*:\s*0x[0-9a-fA-F]+")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*\s*=")
_CHASSIS = re.compile(r"^(Non-Chassis Nodes|Chassis \d+|Hostname:)")
_DIAGNOSTIC = re.compile(r"^(\S+\.c:\d+;|ibwarn:|iberror:|ibnetdiscover:|\S+: iberror:)")
_DEFAULT_DESCRIPTION = re.compile(r"^MT\d+\b|(Mellanox|NVIDIA) Technologies\s*$", re.IGNORECASE)
_MAP_LINE = re.compile(r"^(?:[SHR]-|0x)([0-9a-fA-F]{1,16})\s+(\S.*)$")

_PORT_SYNTAX = (
    'expected [<port>] "<remote id>"[<remote port>] # "<remote description>" lid <lid> '
    "<width><speed>"
)
_RATE_SYNTAX = (
    f"expected <width><speed> with width one of {', '.join(LINK_WIDTHS)} and speed one of "
    f"{', '.join(LANE_RATES_GBPS)}"
)


def link_rate_Bps(width: str, speed: str) -> float:
    """Data rate of one InfiniBand link, in bytes per second per direction.

    Parameters
    ----------
    width : str
        Link width as ``ibnetdiscover`` prints it: ``"1x"``, ``"2x"``, ``"4x"``, ``"8x"`` or
        ``"12x"`` (number of lanes).
    speed : str
        Lane speed: ``"SDR"``, ``"DDR"``, ``"QDR"``, ``"FDR10"``, ``"FDR"``, ``"EDR"``,
        ``"HDR"``, ``"NDR"`` or ``"XDR"`` (case-insensitive).

    Returns
    -------
    float
        Lanes times the per-lane *data* rate (after encoding, see :data:`LANE_RATES_GBPS`),
        in B/s: 4x NDR -> 400 Gb/s -> 50e9 B/s.

    Raises
    ------
    SpecError
        If the width or the speed is not one of the above.

    Examples
    --------
    >>> link_rate_Bps("4x", "NDR")
    50000000000.0
    >>> link_rate_Bps("1x", "SDR")
    250000000.0

    References
    ----------
    InfiniBand Architecture Specification, Vol. 2 (physical layer): lane signalling rates and
    encodings; the table is in ``docs/import.md``.
    """
    lanes = LINK_WIDTHS.get(str(width).strip().lower())
    if lanes is None:
        raise SpecError(
            f"unknown InfiniBand link width {width!r}: expected one of {', '.join(LINK_WIDTHS)}"
        )
    rates = LANE_RATES_GBPS.get(str(speed).strip().upper())
    if rates is None:
        raise SpecError(
            f"unknown InfiniBand link speed {speed!r}: expected one of {', '.join(LANE_RATES_GBPS)}"
        )
    return gbps_to_Bps(lanes * rates[1])


@dataclass
class _Device:
    """One record of the dump: a switch, a CA or a router."""

    id: str
    type: str  # "switch", "ca" or "router"
    nports: int
    description: str
    guid: str | None
    line: int


@dataclass
class _PortEnd:
    """One port line: one end of a cable, as the device at this end sees it."""

    device: str
    port: int
    remote: str
    remote_port: int
    width: str
    speed: str
    line: int

    @property
    def rate_Bps(self) -> float:
        return link_rate_Bps(self.width, self.speed)


def read_ibnetdiscover(path: str | Path, *, name_map: str | Path | None = None) -> nx.Graph:
    """Read an ``ibnetdiscover`` topology dump (or an ibsim net file) into a fabric graph.

    Parameters
    ----------
    path : str or Path
        The output of plain ``ibnetdiscover`` (no ``-p``), or an ibsim net file.
    name_map : str or Path, optional
        A GUID -> name map for dumps whose CA descriptions are default strings such as
        ``"MT25408 ConnectX Mellanox Technologies"``: lines ``H-<guid> <hostname>`` (or
        ``0x<guid> "<name>"`` as in an ibnetdiscover/OpenSM node-name map). A name with a
        space (``"node01 HCA-1"``) gives the hostname and the CA name; a bare name is the
        hostname. Entries for switch GUIDs name the switch.

    Returns
    -------
    networkx.Graph
        A fabric following :mod:`topo.fabric`:

        - one node per switch, named by its description when that is unique (else by its id,
          ``S-<guid>``), with ``kind`` ``"switch"``, ``tier`` (1 = a host CA port is cabled to
          it; the others 1 + their hop distance from the nearest such switch; switches with no
          path to one get the largest tier + 1), ``plane`` 0, ``rail`` -1, ``ports`` (its port
          count, less its ports cabled to SHARP Aggregation Nodes: a Quantum-2 reports 65, of
          which port 65 is its internal Aggregation Node's), ``guid`` (16 hex digits, ``None``
          in ibsim files) and ``description``;
        - one node per host CA port cabled to a switch, named ``<hostname>/<CA name>/p<port>``
          (from a description ``"<hostname> <CA name>"``, or the name map), or
          ``H-<guid>/p<port>`` when no hostname is known, with ``kind`` ``"nic"``, ``node``
          (the hostname, or ``H-<guid>``), ``index`` (the CA port number), ``guid`` (the CA's
          node GUID) and ``description`` (as in the dump);
        - NIC-switch edges of ``kind`` ``"endpoint"`` and switch-switch edges of ``kind``
          ``"fabric"`` with ``capacity`` (B/s per direction, summed over parallel cables),
          ``links`` (cables) and ``speed`` (``"4xNDR"``; different speeds joined with ``+``).

        ``G.graph`` holds ``family`` (``"ibnetdiscover"``), ``name`` (the file's stem),
        ``source`` (``path`` as given), ``format`` (``"ibnetdiscover"`` or ``"ibsim"``),
        ``name_map`` (its path or ``None``), ``planes`` (connected components of the
        switch-only graph), ``aggregation_nodes`` (SHARP Aggregation Node CAs, left out),
        ``link_speeds`` (cables per speed over all edges), ``loopback_cables`` (switch ports
        cabled to the same switch, left out), ``unconnected_cas`` (CAs with no cabled port),
        ``ca_to_ca_cables`` (host-to-host cables, left out), ``routers`` (router records, left
        out with their cables), ``mismatched_cables`` (cables whose two ends report different
        widths or speeds; the slower is kept), ``unreachable_switches`` (switches with no path
        to a tier-1 switch) and ``skipped_lines`` (tool diagnostics such as
        ``src/query_smp.c:195; ...`` mixed into the dump).

    Raises
    ------
    FormatError
        If a file is missing, unreadable or binary; if it is the ``-p`` ports report or a node
        list; if a line is malformed (port line outside a record, bad port number, unknown
        width or speed, a cable described from one end only or whose ends disagree); if it
        has no switch or no cable. The message names the file, the line and what was
        expected.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> net = pathlib.Path(tempfile.mkdtemp()) / "net"
    >>> _ = net.write_text('Switch 8 "sw1"\\n[1] "h1"[1]\\n\\nHca 1 "h1"\\n[1] "sw1"[1]\\n')
    >>> G = read_ibnetdiscover(net)
    >>> sorted(G.nodes)
    ['h1/p1', 'sw1']
    >>> G.edges["h1/p1", "sw1"]["speed"], G.edges["h1/p1", "sw1"]["capacity"]
    ('4xSDR', 1000000000.0)

    References
    ----------
    ``ibnetdiscover(8)`` man page and ``infiniband-diags/ibnetdiscover.c`` (rdma-core);
    ibsim ``net-examples`` and ``ibsim/sim_net.c`` (linux-rdma/ibsim).
    """
    return read_ibnetdiscover_dumps([path], name_map=name_map)[0]


def read_ibnetdiscover_dumps(
    paths: Sequence[str | Path], *, name_map: str | Path | None = None
) -> list[nx.Graph]:
    """Read several ``ibnetdiscover`` dumps (one per plane) that name their switches together.

    Each dump is read as :func:`read_ibnetdiscover` reads it, except that a switch keeps its
    description (or map name) only when no other switch *of any of the dumps* has the same
    one; the others are named by their id ``S-<guid>``, as ``ibnetdiscover`` itself names
    them. Planes of the same switch models, discovered one by one, so get the names they get
    when their dumps are concatenated into one file.

    Parameters
    ----------
    paths : sequence of str or Path
        The dumps.
    name_map : str or Path, optional
        One GUID -> name map for all of them (see :func:`read_ibnetdiscover`).

    Returns
    -------
    list of networkx.Graph
        One fabric per dump, in the order of ``paths``.

    Raises
    ------
    FormatError
        As :func:`read_ibnetdiscover`, for the first dump at fault.
    """
    names = _read_name_map(name_map) if name_map is not None else {}
    dumps = [(path, _read_dump(path)) for path in paths]
    used = Counter(
        label
        for _, (dump, _) in dumps
        for label in _switch_labels(dump.devices, names).values()
        if label
    )
    graphs = []
    for path, (dump, cables) in dumps:
        G = _build_graph(path, dump.devices, cables, names, used)
        G.graph.update(
            format="ibsim" if dump.ibsim else "ibnetdiscover",
            name_map=None if name_map is None else str(name_map),
            skipped_lines=dump.skipped,
        )
        graphs.append(G)
    return graphs


def _read_dump(path: str | Path) -> tuple[_Dump, list[tuple[_PortEnd, _PortEnd]]]:
    """The records of one dump and its cables, each paired with its far end."""
    dump = _parse(path, _read_text(path))
    devices = dump.devices
    if not any(d.type == "switch" for d in devices.values()):
        cas = sum(d.type == "ca" for d in devices.values())
        raise FormatError(
            path,
            f"no switches: the file describes {count(cas, 'CA')} and no switch; expected the "
            "ibnetdiscover topology of a switched fabric",
        )
    return dump, _pair_cables(path, devices, dump.ends)


def read_name_map(path: str | Path) -> dict[str, str]:
    """Read a GUID -> name map (``H-<guid> <name>`` or ``0x<guid> "<name>"`` lines).

    Parameters
    ----------
    path : str or Path
        The map; ``#`` starts a comment line, blank lines are skipped.

    Returns
    -------
    dict of str to str
        Node GUID as 16 lowercase hex digits -> name (quotes removed).

    Raises
    ------
    FormatError
        If the file is missing or unreadable, a line is not ``<guid> <name>``, or a GUID is
        mapped to two different names (naming both lines).
    """
    return _read_name_map(path)


# -- reading ---------------------------------------------------------------------------------


def _read_text(path: str | Path) -> str:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise FormatError(path, "no such file") from None
    except OSError as exc:
        raise FormatError(path, f"cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise FormatError(path, "binary file: expected the text output of ibnetdiscover")
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark (Windows editors)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    too_long = long_number(path, text)
    if too_long is not None:
        raise too_long
    return text


def _read_name_map(path: str | Path) -> dict[str, str]:
    names: dict[str, str] = {}
    lines: dict[str, int] = {}
    for lineno, raw in enumerate(_read_text(path).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _MAP_LINE.match(line)
        if not m:
            raise FormatError(
                path,
                "expected '<guid> <name>', e.g. 'H-0002c90300080e84 node01' or "
                "'0x0002c90300080e84 \"node01 HCA-1\"'",
                lineno,
            )
        name = m[2].strip()
        if len(name) >= 2 and name[0] == name[-1] == '"':
            name = name[1:-1].strip()
        guid = f"{int(m[1], 16):016x}"
        if guid in names and names[guid] != name:
            raise FormatError(
                path,
                f"GUID {guid} is mapped twice, to {names[guid]!r} (line {lines[guid]}) and to "
                f"{name!r}: a GUID names one device",
                lineno,
            )
        names[guid], lines[guid] = name, lineno
    return names


@dataclass
class _Dump:
    """What the lines of a dump say, each line checked on its own."""

    devices: dict[str, _Device] = field(default_factory=dict)
    ends: dict[tuple[str, int], _PortEnd] = field(default_factory=dict)
    ibsim: bool | None = None  # decided by the first header: an id without a GUID is ibsim's
    skipped: int = 0  # tool diagnostics mixed into the dump


def _parse(path: str | Path, text: str) -> _Dump:
    """Read the records and port lines; check each line on its own."""
    dump = _Dump()
    current: _Device | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            current = None  # a blank line ends a record
        elif line.startswith("#"):
            continue
        elif line.startswith("["):
            _add_port_line(path, lineno, line, current, dump)
        elif m := _HEADER.match(line):
            current = _parse_header(path, lineno, m, dump.devices)
            if dump.ibsim is None:
                dump.ibsim = _GUID_ID.match(current.id) is None
            dump.devices[current.id] = current
        elif _other_line(path, lineno, line):
            current = None
        else:
            dump.skipped += 1
    if not dump.devices:
        what = "empty file" if not text.strip() else "no Switch or Ca records"
        raise FormatError(
            path, f"{what}: expected ibnetdiscover topology output (e.g. 'Switch 36 \"S-...\"')"
        )
    return dump


def _add_port_line(
    path: str | Path, lineno: int, line: str, current: _Device | None, dump: _Dump
) -> None:
    """Record the port line ``line`` of device ``current``, refusing a port described twice."""
    if current is None:
        raise FormatError(
            path,
            "port line outside a device record: expected a 'Switch <ports> \"<id>\"' "
            "or 'Ca <ports> \"<id>\"' header line before it",
            lineno,
        )
    end = _parse_port(path, lineno, line, current, bool(dump.ibsim))
    key = (current.id, end.port)
    if key in dump.ends:
        raise FormatError(
            path,
            f'port [{end.port}] of "{current.id}" is described twice (first at line '
            f"{dump.ends[key].line}); expected one line per cabled port",
            lineno,
        )
    dump.ends[key] = end


def _other_line(path: str | Path, lineno: int, line: str) -> bool:
    """A line that is neither a header nor a port line: True if it ends the current record
    (a ``key=value`` or chassis line), False for a tool diagnostic to skip; else refuse it
    with what the file is (a node list, the ports report) or what was expected."""
    if _NODE_LIST.match(line):
        raise FormatError(
            path,
            "this is an ibnetdiscover node list (-l, -S or -H), not a topology: run plain "
            "'ibnetdiscover > fabric.topo' and import that file",
            lineno,
        )
    if _HEADER_START.match(line):
        raise FormatError(
            path,
            'malformed device header: expected \'Switch <ports> "S-<guid>" # '
            '"<description>" ...\' or \'Ca <ports> "H-<guid>" # "<description>"\'',
            lineno,
        )
    if _PORTS_REPORT.match(line):
        raise FormatError(
            path,
            "this is the 'ibnetdiscover -p' ports report, not the topology: it lists ports "
            "but not each device's port count or record; run plain 'ibnetdiscover > "
            "fabric.topo' (without -p) and import that file",
            lineno,
        )
    if _ASSIGNMENT.match(line):
        setting = line.split("=", 1)[0].strip().lower()
        if setting in ("width", "speed"):
            raise FormatError(
                path,
                f"ibsim's net-wide '{setting}=' line is not supported: give 'w=<lanes>' or "
                "'s=<speed mask>' on each port line instead",
                lineno,
            )
        return True  # vendid=, devid=, sysimgguid=, switchguid=, caguid= open a record
    if _CHASSIS.match(line):
        return True
    if _DIAGNOSTIC.match(line):
        return False
    raise FormatError(
        path,
        f"unrecognised line {line[:60]!r}: expected a device header ('Switch' or 'Ca'), a "
        "port line ('[<port>] ...'), a 'key=value' line or a '#' comment",
        lineno,
    )


def _parse_header(
    path: str | Path, lineno: int, m: re.Match[str], devices: dict[str, _Device]
) -> _Device:
    kind = {"Switch": "switch", "Ca": "ca", "Hca": "ca", "Rt": "router"}[m[1]]
    nports = int(m[2])
    dev_id = m[3]
    if not 1 <= nports <= 255:
        raise FormatError(
            path, f'bad port count {nports} for "{dev_id}": expected 1 to 255', lineno
        )
    if not dev_id:
        raise FormatError(path, 'empty device id: expected "S-<guid>" or "H-<guid>"', lineno)
    if dev_id in devices:
        raise FormatError(
            path,
            f'second record for "{dev_id}" (first at line {devices[dev_id].line}); expected '
            "one record per device",
            lineno,
        )
    before, hashmark, comment = m[4].partition("#")
    if before.strip():
        raise FormatError(
            path,
            f"unexpected text {before.strip()!r} after the device id: expected '# "
            '"<description>"\'',
            lineno,
        )
    description = _header_description(comment) if hashmark else ""
    guid_match = _GUID_ID.match(dev_id)
    return _Device(
        id=dev_id,
        type=kind,
        nports=nports,
        description=description or ("" if guid_match else dev_id),
        guid=guid_match[1].lower() if guid_match else None,
        line=lineno,
    )


def _header_description(comment: str) -> str:
    comment = comment.strip()
    if comment.startswith('"'):
        close = comment.rfind('"')
        return comment[1:close] if close > 0 else comment[1:]
    for stop in (" enhanced port ", " base port ", " lid ", " lmc "):  # ibsim's unquoted form
        comment = comment.split(stop, 1)[0]
    return comment.strip()


def _parse_port(path: str | Path, lineno: int, line: str, dev: _Device, ibsim: bool) -> _PortEnd:
    m = _PORT.match(line)
    if not m:
        raise FormatError(path, f"malformed port line: {_PORT_SYNTAX}", lineno)
    port, remote, rest = int(m[1]), m[3], m[6]
    if not 1 <= port <= dev.nports:
        raise FormatError(
            path,
            f'bad port number [{port}] on "{dev.id}": expected 1 to {dev.nports} (its header '
            f"says {dev.nports} ports)",
            lineno,
        )
    if not remote:
        raise FormatError(path, f"empty remote id: {_PORT_SYNTAX}", lineno)
    if m[4] is None:
        if not ibsim:
            raise FormatError(
                path, f'missing remote port number after "{remote}": {_PORT_SYNTAX}', lineno
            )
        remote_port = 1  # ibsim's default
    else:
        remote_port = int(m[4])
        if remote_port < 1:
            raise FormatError(
                path, f"bad remote port number [{remote_port}]: expected 1 or more", lineno
            )
    before, hashmark, comment = rest.partition("#")
    options = before.split()
    width, speed = (IBSIM_DEFAULT_WIDTH, IBSIM_DEFAULT_SPEED) if ibsim else ("", "")
    rate = _RATE_IN_COMMENT.search(comment) if hashmark else None
    if rate:
        width, speed = _parse_rate(path, lineno, rate[2])
    elif not ibsim:
        raise FormatError(
            path,
            'missing link width and speed: expected \'# "<remote description>" lid <lid> '
            "<width><speed>' (e.g. 4xNDR) after the remote port",
            lineno,
        )
    if options and not ibsim:
        raise FormatError(
            path, f"unexpected text {before.strip()!r} before the '#': {_PORT_SYNTAX}", lineno
        )
    for option in options:
        width, speed = _ibsim_option(path, lineno, option, width, speed)
    return _PortEnd(dev.id, port, remote, remote_port, width, speed, lineno)


def _parse_rate(path: str | Path, lineno: int, token: str) -> tuple[str, str]:
    m = _RATE.match(token)
    if m:
        width, speed = m[1].lower(), m[2].upper()
        if width in LINK_WIDTHS and speed in LANE_RATES_GBPS:
            return width, speed
    raise FormatError(path, f"unknown link width/speed {token!r}: {_RATE_SYNTAX}", lineno)


def _ibsim_option(
    path: str | Path, lineno: int, option: str, width: str, speed: str
) -> tuple[str, str]:
    """Apply an ibsim port option: ``w=<lanes>`` or ``s=<LinkSpeedEnabled mask 1-7>``."""
    m = _IBSIM_OPTION.match(option)
    if m and m[1] == "w" and f"{int(m[2])}x" in LINK_WIDTHS:
        return f"{int(m[2])}x", speed
    if m and m[1] == "s" and 1 <= int(m[2]) <= 7:
        return width, next(name for bit, name in _IBSIM_SPEED_BITS if int(m[2]) & bit)
    raise FormatError(
        path,
        f"bad port option {option!r}: expected w=<lanes> (1, 2, 4, 8 or 12) or s=<speed mask> "
        "(1 SDR, 2 DDR, 4 QDR)",
        lineno,
    )


# -- checking and building -------------------------------------------------------------------


def _pair_cables(
    path: str | Path, devices: dict[str, _Device], ends: dict[tuple[str, int], _PortEnd]
) -> list[tuple[_PortEnd, _PortEnd]]:
    """Pair each port line with the far end's line; one (end, far end) pair per cable."""
    cables = []
    for key, end in ends.items():
        where = f'"{end.device}"[{end.port}] is cabled to "{end.remote}"[{end.remote_port}]'
        far_dev = devices.get(end.remote)
        if far_dev is None:
            raise FormatError(
                path,
                f'{where}, but the file has no record for "{end.remote}" (a truncated or '
                "partial dump?); expected every device that a port line names to have a record",
                end.line,
            )
        if end.remote_port > far_dev.nports:
            raise FormatError(
                path,
                f'bad remote port number: {where}, but "{end.remote}" has {far_dev.nports} '
                f"ports (line {far_dev.line})",
                end.line,
            )
        far_key = (end.remote, end.remote_port)
        far = ends.get(far_key)
        if far is None:
            raise FormatError(
                path,
                f'{where}, but the record of "{end.remote}" (line {far_dev.line}) has no line '
                f"for port [{end.remote_port}]; expected each cable to be described from both "
                "ends",
                end.line,
            )
        if (far.remote, far.remote_port) != key:
            raise FormatError(
                path,
                f"the two ends of a cable disagree: {where} (line {end.line}), but "
                f'"{far.device}"[{far.port}] is cabled to "{far.remote}"[{far.remote_port}] '
                f"(line {far.line})",
                max(end.line, far.line),
            )
        if key <= far_key:
            cables.append((end, far))
    return cables


def _aggregation_ports(
    devices: dict[str, _Device], cables: list[tuple[_PortEnd, _PortEnd]]
) -> Counter[str]:
    """Per switch id, its ports cabled to a SHARP Aggregation Node: a Quantum-2 (QM9700/9701)
    reports 65 ports, port 65 being its internal Aggregation Node's, not a port a cable can
    use (the switch has 64 NDR ports, 32 OSFP cages of two)."""
    out: Counter[str] = Counter()
    for a, b in cables:
        for end, other in ((a, b), (b, a)):
            if devices[end.device].type == "switch" and _is_aggregation_node(devices[other.device]):
                out[end.device] += 1
    return out


def _is_aggregation_node(dev: _Device) -> bool:
    return dev.type == "ca" and "aggregation node" in dev.description.lower()


def _host_and_ca(dev: _Device, names: dict[str, str]) -> tuple[str | None, str]:
    """(hostname, CA name) of a CA; hostname None when the dump and the map give none."""
    mapped = names.get(dev.guid) if dev.guid else None
    if mapped is not None:
        parts = mapped.split(None, 1)
        return parts[0], (parts[1].strip() if len(parts) == 2 else dev.id)
    description = dev.description.strip()
    parts = description.split(None, 1)
    if len(parts) < 2 or _DEFAULT_DESCRIPTION.search(description):
        return None, dev.id
    return parts[0], parts[1].strip()


@dataclass
class _Cables:
    """The paired cables sorted by what they join, and the counts of those left out."""

    endpoints: list[tuple[_Device, int, str, str, float]]  # CA, port, switch id, speed, B/s
    fabric: dict[tuple[str, str], list[tuple[str, float]]]  # switch pair -> (speed, B/s) each
    counts: Counter[str]  # mismatched_cables, loopback_cables, ca_to_ca_cables


def _sort_cables(devices: dict[str, _Device], cables: list[tuple[_PortEnd, _PortEnd]]) -> _Cables:
    """Sort cables into host ports and switch-switch links; each at its slower end's rate."""
    sorted_ = _Cables(endpoints=[], fabric={}, counts=Counter())
    for a, b in cables:
        slow = min((a, b), key=lambda e: (e.rate_Bps, e.line))
        if (a.width, a.speed) != (b.width, b.speed):
            sorted_.counts["mismatched_cables"] += 1
        speed, capacity = f"{slow.width}{slow.speed}", slow.rate_Bps
        da, db = devices[a.device], devices[b.device]
        types = {da.type, db.type}
        if a.device == b.device:
            sorted_.counts["loopback_cables"] += 1
        elif "router" in types or _is_aggregation_node(da) or _is_aggregation_node(db):
            continue
        elif types == {"switch"}:
            pair = (a.device, b.device) if a.device < b.device else (b.device, a.device)
            sorted_.fabric.setdefault(pair, []).append((speed, capacity))
        elif types == {"ca"}:
            sorted_.counts["ca_to_ca_cables"] += 1
        else:
            sw_end, ca_end = (a, b) if da.type == "switch" else (b, a)
            sorted_.endpoints.append(
                (devices[ca_end.device], ca_end.port, sw_end.device, speed, capacity)
            )
    return sorted_


def _build_graph(
    path: str | Path,
    devices: dict[str, _Device],
    cables: list[tuple[_PortEnd, _PortEnd]],
    names: dict[str, str],
    used: Counter[str],
) -> nx.Graph:
    """The fabric of one dump; ``used`` counts the switch labels over all dumps read together."""
    sorted_ = _sort_cables(devices, cables)
    switch_names, nic_names = _node_names(path, devices, sorted_.endpoints, names, used)
    sharp = _aggregation_ports(devices, cables)
    G = nx.Graph()
    for dev in devices.values():
        if dev.type == "switch":
            G.add_node(
                switch_names[dev.id],
                kind="switch",
                tier=0,
                plane=0,
                rail=-1,
                ports=max(1, dev.nports - sharp[dev.id]),
                guid=dev.guid,
                description=dev.description,
            )
    link_speeds = _add_links(G, sorted_, switch_names, nic_names, names)
    if G.number_of_edges() == 0:
        n = G.number_of_nodes()
        raise FormatError(
            path,
            f"no links: {count(n, 'switch', 'switches')} but no cable from a switch to a host "
            "or to another switch; expected a cabled fabric",
        )
    leaves = {switch_names[sw] for _, _, sw, *_ in sorted_.endpoints}
    unreachable = _assign_tiers(G, leaves)
    switches = [v for v, k in G.nodes(data="kind") if k == "switch"]
    connected = {
        dev.id
        for a, b in cables
        for dev in (devices[a.device], devices[b.device])
        if dev.type == "ca" and a.device != b.device
    }
    cas = [d for d in devices.values() if d.type == "ca" and not _is_aggregation_node(d)]
    G.graph.update(
        family="ibnetdiscover",
        name=Path(path).stem,
        source=str(path),
        planes=nx.number_connected_components(G.subgraph(switches)),
        aggregation_nodes=sum(_is_aggregation_node(d) for d in devices.values()),
        link_speeds=dict(sorted(link_speeds.items())),
        loopback_cables=sorted_.counts["loopback_cables"],
        unconnected_cas=sum(d.id not in connected for d in cas),
        ca_to_ca_cables=sorted_.counts["ca_to_ca_cables"],
        routers=sum(d.type == "router" for d in devices.values()),
        mismatched_cables=sorted_.counts["mismatched_cables"],
        unreachable_switches=unreachable,
    )
    return G


def _node_names(
    path: str | Path,
    devices: dict[str, _Device],
    endpoints: list[tuple[_Device, int, str, str, float]],
    names: dict[str, str],
    used: Counter[str],
) -> tuple[dict[str, str], dict[tuple[str, int], str]]:
    """Switch id -> node name and (CA id, port) -> node name, refusing a collision."""
    switch_names = _switch_names(devices, names, used)
    nic_names = _nic_names([(ca, port) for ca, port, *_ in endpoints], names)
    for dev_id, name in switch_names.items():
        if name in nic_names.values() and name != dev_id:
            switch_names[dev_id] = dev_id
    if len(set(switch_names.values()) | set(nic_names.values())) != len(switch_names) + len(
        nic_names
    ):
        raise FormatError(path, "device ids collide with host port names; cannot name the nodes")
    return switch_names, nic_names


def _add_links(
    G: nx.Graph,
    sorted_: _Cables,
    switch_names: dict[str, str],
    nic_names: dict[tuple[str, int], str],
    names: dict[str, str],
) -> Counter[str]:
    """Add the host ports with their endpoint cables, then the switch-switch edges (parallel
    cables summed); return the cables per speed."""
    link_speeds: Counter[str] = Counter()
    for host_ca, port, sw_id, speed, capacity in sorted_.endpoints:
        nic = nic_names[(host_ca.id, port)]
        host, _ = _host_and_ca(host_ca, names)
        G.add_node(
            nic,
            kind="nic",
            node=host or host_ca.id,
            index=port,
            guid=host_ca.guid,
            description=host_ca.description,
        )
        G.add_edge(
            nic, switch_names[sw_id], kind="endpoint", capacity=capacity, links=1, speed=speed
        )
        link_speeds[speed] += 1
    for (u, v), links in sorted_.fabric.items():
        speeds = sorted({s for s, _ in links})
        link_speeds.update(s for s, _ in links)
        G.add_edge(
            switch_names[u],
            switch_names[v],
            kind="fabric",
            capacity=sum(c for _, c in links),
            links=len(links),
            speed="+".join(speeds),
        )
    return link_speeds


def _switch_labels(devices: dict[str, _Device], names: dict[str, str]) -> dict[str, str]:
    """Switch id -> its map name, else its description (stripped; may be empty)."""
    return {
        d.id: (names[d.guid] if d.guid and d.guid in names else d.description).strip()
        for d in devices.values()
        if d.type == "switch"
    }


def _switch_names(
    devices: dict[str, _Device], names: dict[str, str], used: Counter[str]
) -> dict[str, str]:
    """Switch id -> node name: its label (:func:`_switch_labels`) if no other switch of the
    dumps read together (``used`` counts their labels) has it, else its id ``S-<guid>``."""
    labels = _switch_labels(devices, names)
    return {i: label if label and used[label] == 1 else i for i, label in labels.items()}


def _nic_names(
    ports: list[tuple[_Device, int]], names: dict[str, str]
) -> dict[tuple[str, int], str]:
    """(CA id, port) -> node name; names shared by different CAs fall back to the CA id."""
    wanted: dict[tuple[str, int], tuple[str | None, str]] = {}
    for ca, port in ports:
        wanted[(ca.id, port)] = _host_and_ca(ca, names)

    def name(key: tuple[str, int], host: str | None, ca_name: str) -> str:
        return f"{host}/{ca_name}/p{key[1]}" if host else f"{key[0]}/p{key[1]}"

    used = Counter(name(k, h, c) for k, (h, c) in wanted.items())
    return {
        k: name(k, h, c) if used[name(k, h, c)] == 1 else name(k, h, k[0])
        for k, (h, c) in wanted.items()
    }


def _assign_tiers(G: nx.Graph, leaves: set[str]) -> int:
    """Set ``tier`` on every switch, breadth-first from the leaves; return how many are cut off."""
    switches = [v for v, k in G.nodes(data="kind") if k == "switch"]
    tier = dict.fromkeys(leaves, 1)
    queue = deque(leaves)
    while queue:
        u = queue.popleft()
        for v in G.adj[u]:
            if v not in tier and G.nodes[v]["kind"] == "switch":
                tier[v] = tier[u] + 1
                queue.append(v)
    top = max(tier.values(), default=0) + 1
    for v in switches:
        G.nodes[v]["tier"] = tier.get(v, top)
    return sum(v not in tier for v in switches)
