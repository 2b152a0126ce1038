"""Trino's JSON wire encoding of values (server/protocol/JsonEncodingUtils.java)."""

from __future__ import annotations

import base64
import datetime as dt
import math
from decimal import Decimal
from functools import lru_cache
from typing import Any, Callable
from zoneinfo import ZoneInfo

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


@lru_cache(maxsize=64)
def zone(name: str) -> dt.tzinfo:
    if name in ("UTC", "Z", "utc"):
        return UTC
    if name and name[0] in "+-" and ":" in name:
        sign = 1 if name[0] == "+" else -1
        h, m = name[1:].split(":")
        return dt.timezone(sign * dt.timedelta(hours=int(h), minutes=int(m)))
    return ZoneInfo(name)


def zone_label(name: str) -> str:
    """How Trino prints the session zone id after a timestamp with time zone."""
    if name.upper() in ("UTC", "Z", "ETC/UTC", "GMT", "UT"):
        return "UTC"
    return name


def _frac(us: int, p: int) -> str:
    if p == 0:
        return ""
    if p <= 6:
        return "." + f"{us:06d}"[:p]
    return "." + f"{us:06d}" + "0" * (p - 6)


def _round_us(us: int, p: int) -> int:
    if p >= 6:
        return us
    q = 10 ** (6 - p)
    return (us + q // 2) // q * q


def format_timestamp_tz(epoch_us: int, p: int, zone_name: str) -> str:
    epoch_us = _round_us(epoch_us, p)
    d = EPOCH + dt.timedelta(microseconds=epoch_us)
    local = d.astimezone(zone(zone_name))
    return local.strftime("%Y-%m-%d %H:%M:%S") + _frac(local.microsecond, p) + " " + zone_label(zone_name)


def format_timestamp(d: dt.datetime, p: int) -> str:
    us = (d.replace(tzinfo=None) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    us = _round_us(us, p)
    d = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)
    return d.strftime("%Y-%m-%d %H:%M:%S") + _frac(d.microsecond, p)


def to_epoch_us(v: Any) -> int:
    if isinstance(v, int):
        return v
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        return (v - EPOCH) // dt.timedelta(microseconds=1)
    raise TypeError(f"not a timestamp: {v!r}")


def _double(v: float) -> Any:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def map_key_text(t, v: Any) -> str:
    """Map keys are always strings: the key type's object value .toString()."""
    k = t[0]
    if k == "boolean":
        return "true" if v else "false"
    if k in ("double", "real"):
        return repr(float(v))
    if k == "date":
        return v.isoformat() if isinstance(v, dt.date) else str(v)
    enc = encoder(t)
    out = enc(v)
    return out if isinstance(out, str) else str(out)


def encoder(t, session_zone: str = "UTC") -> Callable[[Any], Any]:
    """A function encoding one value of parsed Trino type `t` for the wire."""
    k = t[0]
    if k in ("bigint", "integer", "smallint", "tinyint"):
        return lambda v: None if v is None else int(v)
    if k in ("double", "real"):
        return lambda v: None if v is None else _double(float(v))
    if k == "decimal":
        scale = t[2]

        def dec(v):
            if v is None:
                return None
            d = v if isinstance(v, Decimal) else Decimal(str(v))
            return f"{d.quantize(Decimal(1).scaleb(-scale)):f}" if scale else f"{d.quantize(Decimal(1)):f}"
        return dec
    if k == "boolean":
        return lambda v: None if v is None else bool(v)
    if k in ("varchar", "char", "json", "uuid", "unknown"):
        return lambda v: None if v is None else str(v)
    if k == "date":
        return lambda v: None if v is None else (v.isoformat() if isinstance(v, dt.date) else str(v))
    if k == "timestamp":
        p, tz = t[1], t[2]
        if tz:
            # Iceberg's timestamptz values (timestamp(6) with time zone: data columns, partition
            # values) carry the UTC zone whatever the session's; the metadata tables' own
            # timestamp(3) with time zone columns are rendered in the session zone
            zone = "UTC" if p >= 6 else session_zone
            return lambda v: None if v is None else format_timestamp_tz(to_epoch_us(v), p, zone)
        return lambda v: None if v is None else format_timestamp(v, p)
    if k == "time":
        p = t[1]
        return lambda v: None if v is None else (v.strftime("%H:%M:%S") + _frac(v.microsecond, p))
    if k == "varbinary":
        return lambda v: None if v is None else base64.b64encode(bytes(v)).decode()
    if k == "array":
        inner = encoder(t[1], session_zone)
        return lambda v: None if v is None else [inner(x) for x in v]
    if k == "map":
        kt, vt = t[1], t[2]
        venc = encoder(vt, session_zone)

        def enc_map(v):
            if v is None:
                return None
            items = v.items() if isinstance(v, dict) else v
            return {map_key_text(kt, a): venc(b) for a, b in items}
        return enc_map
    if k == "row":
        names = [n for n, _ in t[1]]
        encs = [encoder(ft, session_zone) for _, ft in t[1]]

        def enc_row(v):
            if v is None:
                return None
            if isinstance(v, dict):
                return [e(v.get(n)) for n, e in zip(names, encs)]
            return [e(x) for x, e in zip(v, encs)]
        return enc_row
    if k == "interval":
        def interval(v):
            if v is None:
                return None
            if isinstance(v, dt.timedelta):
                total = v.total_seconds()
                sign = "-" if total < 0 else ""
                total = abs(total)
                days = int(total // 86400)
                rem = total - days * 86400
                h = int(rem // 3600)
                m = int(rem % 3600 // 60)
                s = rem % 60
                return f"{sign}{days} {h:02d}:{m:02d}:{s:06.3f}"
            return str(v)
        return interval
    return lambda v: v
