"""What an ``ibnetdiscover`` dump (or an ibsim net file) says, line by line: its device records,
its port lines and its cables, each checked on its own and paired with its far end.

:func:`read_dump` gives the records (:class:`Dump`, :class:`Device`, :class:`PortEnd`) that
:func:`topo.formats.ibnetdiscover.read_ibnetdiscover` turns into a fabric; the InfiniBand link
rates (:data:`LANE_RATES_GBPS`, :func:`link_rate_Bps`) and GUID -> name maps
(:func:`read_name_map`) are read here too. The formats are described in
:mod:`topo.formats.ibnetdiscover` and ``docs/import.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from topo.errors import FormatError, SpecError
from topo.files import long_number
from topo.units import gbps_to_Bps
from topo.wording import count

__all__ = [
    "DEFAULT_DESCRIPTION",
    "IBSIM_DEFAULT_SPEED",
    "IBSIM_DEFAULT_WIDTH",
    "LANE_RATES_GBPS",
    "LINK_WIDTHS",
    "Device",
    "Dump",
    "PortEnd",
    "link_rate_Bps",
    "read_dump",
    "read_name_map",
]

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
DEFAULT_DESCRIPTION = re.compile(r"^MT\d+\b|(Mellanox|NVIDIA) Technologies\s*$", re.IGNORECASE)
"""A CA description that names no host (the adapter's model string, as a CA without a
node description reports): its hostname comes from a name map, else its id."""
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
class Device:
    """One record of the dump: a switch, a CA or a router."""

    id: str
    type: str  # "switch", "ca" or "router"
    nports: int
    description: str
    guid: str | None
    line: int


@dataclass
class PortEnd:
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


def read_dump(path: str | Path) -> tuple[Dump, list[tuple[PortEnd, PortEnd]]]:
    """The records of one dump and its cables, each paired with its far end.

    Parameters
    ----------
    path : str or Path
        An ``ibnetdiscover`` dump or an ibsim net file.

    Returns
    -------
    (Dump, list of (PortEnd, PortEnd))
        The records, line by line, and one (end, far end) pair per cable, in file order.

    Raises
    ------
    FormatError
        As :func:`topo.formats.ibnetdiscover.read_ibnetdiscover`: the file, a line, a cable
        described from one end only or whose ends disagree; a dump without a switch.
    """
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
class Dump:
    """What the lines of a dump say, each line checked on its own."""

    devices: dict[str, Device] = field(default_factory=dict)
    ends: dict[tuple[str, int], PortEnd] = field(default_factory=dict)
    ibsim: bool | None = None  # decided by the first header: an id without a GUID is ibsim's
    skipped: int = 0  # tool diagnostics mixed into the dump


def _parse(path: str | Path, text: str) -> Dump:
    """Read the records and port lines; check each line on its own."""
    dump = Dump()
    current: Device | None = None
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
    path: str | Path, lineno: int, line: str, current: Device | None, dump: Dump
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
    path: str | Path, lineno: int, m: re.Match[str], devices: dict[str, Device]
) -> Device:
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
    return Device(
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


def _parse_port(path: str | Path, lineno: int, line: str, dev: Device, ibsim: bool) -> PortEnd:
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
    return PortEnd(dev.id, port, remote, remote_port, width, speed, lineno)


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


def _pair_cables(
    path: str | Path, devices: dict[str, Device], ends: dict[tuple[str, int], PortEnd]
) -> list[tuple[PortEnd, PortEnd]]:
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
