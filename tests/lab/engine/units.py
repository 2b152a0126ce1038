"""Airlift's Duration and DataSize, as Trino parses and prints them in procedure arguments
and error messages (e.g. "Retention specified (1.00d) ...")."""

from __future__ import annotations

import re

_NUM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$")

# seconds per unit, in airlift's order (TimeUnit.values(): ns .. d)
_DURATION_UNITS = [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0), ("d", 86400.0)]
_DURATION = dict(_DURATION_UNITS)

_SIZE_UNITS = [("B", 1), ("kB", 1 << 10), ("MB", 1 << 20), ("GB", 1 << 30), ("TB", 1 << 40), ("PB", 1 << 50)]
_SIZE = dict(_SIZE_UNITS)


class UnitError(ValueError):
    pass


def parse_duration(text: str) -> float:
    """Seconds. Raises UnitError with airlift's message for a malformed value."""
    m = _NUM.match(text)
    if not m or m.group(2) not in _DURATION:
        raise UnitError(f"duration is not a valid data duration string: {text}")
    return float(m.group(1)) * _DURATION[m.group(2)]


def format_duration(seconds: float) -> str:
    """airlift Duration.toString(): the most succinct unit, two decimals."""
    unit, factor = "ns", 1e-9
    for name, f in _DURATION_UNITS:
        if seconds / f > 0.9999:
            unit, factor = name, f
        else:
            break
    return f"{seconds / factor:.2f}{unit}"


def parse_data_size(text: str) -> int:
    m = _NUM.match(text)
    if not m or m.group(2) not in _SIZE:
        raise UnitError(f"size is not a valid data size string: {text}")
    return int(round(float(m.group(1)) * _SIZE[m.group(2)]))


def format_data_size(n: int) -> str:
    unit, factor = "B", 1
    for name, f in _SIZE_UNITS:
        if n / f >= 1.0:
            unit, factor = name, f
    v = n / factor
    if v == int(v):
        return f"{int(v)}{unit}"
    return f"{v:.2f}{unit}"
