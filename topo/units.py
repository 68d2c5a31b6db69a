"""Unit conversions, in one place.

Inside topo every rate is in bytes per second (B/s) and every time in seconds. At the edges:
link rates in Gb/s as vendors state them (400G = 400e9 bit/s = 50e9 B/s), bandwidth reports in
GB/s (1e9 B/s, as nccl-tests prints), latencies in microseconds.
"""

from __future__ import annotations

BITS_PER_BYTE = 8
GIGA = 1e9


def gbps_to_Bps(gbps: float) -> float:
    """Convert a link rate in Gb/s (1e9 bit/s) to bytes per second. ``400`` -> ``5e10``."""
    return gbps * GIGA / BITS_PER_BYTE


def GBps_to_Bps(GBps: float) -> float:
    """Convert GB/s (1e9 B/s) to bytes per second."""
    return GBps * GIGA


def Bps_to_GBps(Bps: float) -> float:
    """Convert bytes per second to GB/s (1e9 B/s), the unit nccl-tests prints."""
    return Bps / GIGA


def Bps_to_gbps(Bps: float) -> float:
    """Convert bytes per second to Gb/s (1e9 bit/s)."""
    return Bps * BITS_PER_BYTE / GIGA


def s_to_us(seconds: float) -> float:
    """Convert seconds to microseconds."""
    return seconds * 1e6
