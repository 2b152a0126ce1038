"""Trino type strings -> the client protocol's `typeSignature`, and the server-side effects of
the PARAMETRIC_DATETIME client capability.

Trino builds `typeSignature` from the type's TypeSignature (ProtocolUtil#toClientTypeSignature):
`{"rawType": base, "arguments": [{"kind": "LONG"|"TYPE"|"NAMED_TYPE", "value": ...}]}`.
Row fields are NAMED_TYPE with `{"fieldName": {"name": n}, "typeSignature": ...}` (no
`fieldName` for anonymous fields). Unbounded varchar carries LONG 2147483647.

Servers from the Presto era spelled the kinds LONG_LITERAL / TYPE_SIGNATURE /
NAMED_TYPE_SIGNATURE, added `typeArguments` and `literalArguments`, and gave row field names
a `delimited` flag; `legacy=True` renders that shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

UNBOUNDED_VARCHAR = 2147483647

# Types whose name is several words; matched longest first.
_MULTIWORD = (
    "interval day to second",
    "interval year to month",
    "double precision",
    "with time zone",
)


@dataclass
class TypeNode:
    base: str                                   # e.g. "timestamp with time zone", "row"
    params: list = field(default_factory=list)  # int | TypeNode | (name|None, TypeNode)
    # For rows: the field name exactly as written (quoted if it was), for re-rendering.
    raw_names: list = field(default_factory=list)

    def render(self) -> str:
        if self.base == "row":
            parts = []
            for (name, node), raw in zip(self.params, self.raw_names):
                parts.append((raw + " " if raw else "") + node.render())
            return "row(" + ", ".join(parts) + ")"
        if self.base in ("timestamp", "time", "timestamp with time zone", "time with time zone"):
            head = self.base.split(" ", 1)
            if self.params:
                s = f"{head[0]}({self.params[0]})"
            else:
                s = head[0]
            return s + (" " + head[1] if len(head) > 1 else "")
        if not self.params:
            return self.base
        inner = ", ".join(str(p) if isinstance(p, int) else p.render() for p in self.params)
        return f"{self.base}({inner})"


class _Parser:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, ch: str) -> None:
        self.ws()
        if self.s[self.i:self.i + 1] != ch:
            raise ValueError(f"expected {ch!r} at {self.i} in {self.s!r}")
        self.i += 1

    def word(self) -> str:
        self.ws()
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(self.s, self.i)
        if not m:
            raise ValueError(f"expected a name at {self.i} in {self.s!r}")
        self.i = m.end()
        return m.group(0)

    def quoted(self) -> tuple[str, str]:
        self.ws()
        start = self.i
        assert self.s[self.i] == '"'
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                raise ValueError(f"unterminated quoted name in {self.s!r}")
            c = self.s[self.i]
            if c == '"':
                if self.s[self.i + 1:self.i + 2] == '"':
                    out.append('"')
                    self.i += 2
                    continue
                self.i += 1
                break
            out.append(c)
            self.i += 1
        return "".join(out), self.s[start:self.i]

    def number(self) -> int:
        self.ws()
        m = re.compile(r"\d+").match(self.s, self.i)
        if not m:
            raise ValueError(f"expected a number at {self.i} in {self.s!r}")
        self.i = m.end()
        return int(m.group(0))

    def type(self) -> TypeNode:
        name = self.word().lower()
        # multi-word names: "timestamp(3) with time zone", "interval day to second", ...
        if name == "interval":
            rest = self.s[self.i:].lstrip().lower()
            for mw in ("day to second", "year to month"):
                if rest.startswith(mw):
                    self.ws()
                    self.i += len(mw)
                    return TypeNode("interval " + mw)
        if name == "double":
            rest = self.s[self.i:].lstrip().lower()
            if rest.startswith("precision"):
                self.ws()
                self.i += len("precision")
                return TypeNode("double")
        node = TypeNode(name)
        if self.peek() == "(":
            self.expect("(")
            if name == "row":
                self._row_fields(node)
            else:
                while True:
                    if self.peek().isdigit():
                        node.params.append(self.number())
                    else:
                        node.params.append(self.type())
                    if self.peek() == ",":
                        self.expect(",")
                        continue
                    break
            self.expect(")")
        if name in ("timestamp", "time"):
            rest = self.s[self.i:].lstrip().lower()
            if rest.startswith("with time zone"):
                self.ws()
                self.i += len("with time zone")
                node.base = name + " with time zone"
            elif rest.startswith("without time zone"):
                self.ws()
                self.i += len("without time zone")
        return node

    def _row_fields(self, node: TypeNode) -> None:
        while True:
            self.ws()
            save = self.i
            fname = None
            raw = None
            if self.peek() == '"':
                fname, raw = self.quoted()
            else:
                w = self.word()
                # Is this word a field name followed by a type, or an anonymous field's type?
                j = self.i
                while j < len(self.s) and self.s[j].isspace():
                    j += 1
                nxt = self.s[j:j + 1]
                if nxt and (nxt.isalpha() or nxt == '"' or nxt == "_"):
                    fname, raw = w, w
                else:
                    self.i = save
            t = self.type()
            node.params.append((fname, t))
            node.raw_names.append(raw)
            if self.peek() == ",":
                self.expect(",")
                continue
            break


def parse_type(text: str) -> TypeNode:
    p = _Parser(text)
    node = p.type()
    p.ws()
    if p.i != len(p.s):
        raise ValueError(f"trailing text at {p.i} in {text!r}")
    return node


def _signature(node: TypeNode, legacy: bool) -> dict:
    args: list[dict] = []
    long_kind = "LONG_LITERAL" if legacy else "LONG"
    type_kind = "TYPE_SIGNATURE" if legacy else "TYPE"
    named_kind = "NAMED_TYPE_SIGNATURE" if legacy else "NAMED_TYPE"
    params = list(node.params)
    if node.base == "varchar" and not params:
        params = [UNBOUNDED_VARCHAR]
    for p in params:
        if isinstance(p, int):
            args.append({"kind": long_kind, "value": p})
        elif isinstance(p, tuple):
            name, sub = p
            value: dict = {}
            if name is not None:
                value["fieldName"] = {"name": name, "delimited": False} if legacy else {"name": name}
            value["typeSignature"] = _signature(sub, legacy)
            args.append({"kind": named_kind, "value": value})
        else:
            args.append({"kind": type_kind, "value": _signature(p, legacy)})
    sig: dict = {"rawType": node.base, "arguments": args}
    if legacy:
        sig["typeArguments"] = [a["value"] for a in args if a["kind"] == "TYPE_SIGNATURE"]
        sig["literalArguments"] = []
    return sig


def type_signature(type_string: str, legacy: bool = False) -> dict:
    return _signature(parse_type(type_string), legacy)


_DATETIME = ("timestamp", "time", "timestamp with time zone", "time with time zone")


def strip_datetime_precision(node: TypeNode) -> TypeNode:
    """The column type a client without PARAMETRIC_DATETIME sees (precision 3, unwritten)."""
    if node.base in _DATETIME:
        return TypeNode(node.base)
    if node.base == "row":
        return TypeNode("row", [(n, strip_datetime_precision(t)) for n, t in node.params], list(node.raw_names))
    return TypeNode(node.base, [p if isinstance(p, int) else strip_datetime_precision(p) for p in node.params])


def has_datetime(node: TypeNode) -> bool:
    if node.base in _DATETIME:
        return True
    for p in node.params:
        if isinstance(p, tuple):
            if has_datetime(p[1]):
                return True
        elif isinstance(p, TypeNode) and has_datetime(p):
            return True
    return False


_TS_RE = re.compile(r"^(\d{4,}-\d{2}-\d{2} )?(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(.*)$")


def _round_datetime_text(text: str) -> str:
    """Round a timestamp/time literal's fraction to 3 digits (half up), as Trino does for
    clients without PARAMETRIC_DATETIME."""
    m = _TS_RE.match(text)
    if not m:
        return text
    date_part, hh, mi, ss, frac, rest = m.groups()
    frac = frac or ""
    if date_part:
        base = datetime.strptime(date_part.strip() + f" {hh}:{mi}:{ss}", "%Y-%m-%d %H:%M:%S")
    else:
        base = datetime(2000, 1, 1, int(hh), int(mi), int(ss))
    # picoseconds are possible (precision up to 12); work in integer units of 10^-12 s
    pico = int((frac + "0" * 12)[:12]) if frac else 0
    millis, rem = divmod(pico, 10**9)
    if rem >= 5 * 10**8:
        millis += 1
    value = base + timedelta(milliseconds=millis)
    if date_part:
        out = value.strftime("%Y-%m-%d %H:%M:%S")
    else:
        out = value.strftime("%H:%M:%S")
    return f"{out}.{value.microsecond // 1000:03d}{rest}"


def round_value(node: TypeNode, value):
    if value is None:
        return None
    if node.base in _DATETIME:
        return _round_datetime_text(value) if isinstance(value, str) else value
    if node.base == "array" and isinstance(value, list):
        return [round_value(node.params[0], v) for v in value]
    if node.base == "map" and isinstance(value, dict):
        return {k: round_value(node.params[1], v) for k, v in value.items()}
    if node.base == "row" and isinstance(value, list):
        return [round_value(t, v) for (_, t), v in zip(node.params, value)]
    return value
